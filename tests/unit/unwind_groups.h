/*
 * unwind_groups.h — the unwind channel's bookkeeping under churn, checked through the
 * unwinders themselves (unwind_groups.c). Each test_unwind_{groups,perfn,llvm,libunwind}
 * program says which unwinder to ask and in which mode the channel must run, and calls
 * unwind_groups_run().
 */
#ifndef JH_TEST_UNWIND_GROUPS_H
#define JH_TEST_UNWIND_GROUPS_H

#include <stddef.h>
#include <stdint.h>

struct eh_bases { void *tbase, *dbase, *func; };
/* _Unwind_Find_FDE: libgcc's, or LLVM libunwind's. */
typedef const void *find_fde_fn(void *pc, struct eh_bases *bases);
/* nongnu libunwind's unw_get_proc_info_by_ip (its unw_proc_info_t begins with start_ip). */
typedef int proc_info_fn(void *as, uintptr_t ip, void *pi, void *arg);

struct unwind_groups {
    int force_mode;             /* 0: the mode the channel detects; else JH__UW_* forced */
    size_t n;                   /* functions in the first churn (a quarter in the second) */
    find_fde_fn *find_fde;      /* NULL: libgcc's _Unwind_Find_FDE */
    proc_info_fn *unw_proc_info;    /* non-NULL: nongnu libunwind must be fed, and agree */
    void *unw_as;               /* its unw_local_addr_space */
};

/* Runs every phase; returns the exit status (0 pass, 1 fail) after printing the tally. */
int unwind_groups_run(const struct unwind_groups *cfg);

#endif
