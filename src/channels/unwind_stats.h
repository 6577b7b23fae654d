/*
 * unwind_stats.h — what the unwind channel (unwind*.c) shows to its tests and benchmark.
 * Nothing here is part of the public API.
 */
#ifndef JH__CHANNELS_UNWIND_STATS_H
#define JH__CHANNELS_UNWIND_STATS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How FDEs reach the process's unwinders (decided once per process, at the first open). */
enum jh__uw_mode {
    JH__UW_NONE = 0,     /* no libgcc found (LLVM's or nongnu libunwind may still be fed) */
    JH__UW_LIST = 1,     /* libgcc <= 12: objects in a linear list -> few grouped, sorted runs */
    JH__UW_PERFN = 2,    /* libgcc >= 13 (b-tree lookup): one run per function */
    JH__UW_LLVM = 3      /* only LLVM libunwind: __unw_add_dynamic_fde, one FDE per call */
};

struct jh__unwind_stats {
    int mode;                   /* enum jh__uw_mode */
    int llvm;                   /* 1: LLVM libunwind's __unw_add_dynamic_fde is fed */
    int libunwind;              /* 1: nongnu libunwind's _U_dyn_register is fed too */
    size_t segments;            /* grouped runs registered now */
    size_t largest;             /* FDEs in the largest of them */
    size_t live, dead;          /* functions described; removed but still in a run */
    uint64_t fdes_copied;       /* FDE copies made while (re)building runs, ever */
    uint64_t rebuilds;          /* runs built, ever */
    size_t retired;             /* old runs waiting for their grace period */
    size_t shadowed;            /* functions left to unwind info the process already had */
    size_t hosted;              /* functions described inside such a region, on request */
    uint64_t fill_grown;        /* times the lists a hosted run is built from grew, ever */
    uint64_t fdes_reused;       /* FDEs copied from one encoded for the same CFI, ever */
};

void jh__unwind_get_stats(struct jh__unwind_stats *st);

/* Tests and benchmarks: feed only libgcc in this mode (JH__UW_LIST on libgcc 13+ is refused:
 * it would be wrong there), or only LLVM libunwind (JH__UW_LLVM), instead of detecting.
 * Only before the first context opens the channel; -EBUSY after. */
int jh__unwind_force_mode(int mode);

/* Tests and benchmarks: grouping limits (0 leaves a value as it is): at most max_fdes FDEs
 * per run when merging by size, and the number of runs beyond which neighbours are merged
 * whatever their size. */
void jh__unwind_tune(size_t max_fdes, size_t max_runs);

/* Tests: how long a libunwind entry replaced by a newer one stays linked for walks under
 * way (dyn_delay_ns, default 20 ms), and how long a deregistered run stays allocated for
 * an unwinder still reading it (grace_ns, default 2 s). 0: reclaimed at the next call
 * into the channel; JH__UNWIND_KEEP leaves a value as it is. */
#define JH__UNWIND_KEEP UINT64_MAX
void jh__unwind_tune_delays(uint64_t dyn_delay_ns, uint64_t grace_ns);

#ifdef __cplusplus
}
#endif

#endif
