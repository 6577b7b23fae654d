/*
 * test_unwind_libunwind.c — test_unwind_groups.c with nongnu libunwind loaded (dlopen
 * RTLD_GLOBAL, as if the program were linked with -lunwind): the same runs also go to its
 * _U_dyn_register list as tables carved near the code, and after every churn phase
 * unw_get_proc_info_by_ip must give each live function's start (and none for a removed
 * one after a flush), besides libgcc's _Unwind_Find_FDE.
 */
#include <dlfcn.h>
#include <stdio.h>

#define UW_FORCE 0
#define UW_N 6000
#define UW_DYN 1
#define UW_SETUP                                                                         \
    {                                                                                    \
        void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_GLOBAL);                      \
        void **as = h ? dlsym(h, "_ULx86_64_local_addr_space") : NULL;                   \
        unw_pi = h ? (proc_info_fn *)dlsym(h, "_ULx86_64_get_proc_info_by_ip") : NULL;   \
        if (!as || !unw_pi) {                                                            \
            printf("SKIP nongnu libunwind (libunwind.so.8, Debian libunwind8) not found\n"); \
            return 77;                                                                   \
        }                                                                                \
        unw_as = *as;                                                                    \
    }
#include "test_unwind_groups.c"
