/*
 * test_unwind_llvm.c — test_unwind_groups.c against LLVM's libunwind (libunwind-14), the
 * unwinder of clang/libc++ programs: one __unw_add_dynamic_fde per function, looked up
 * through LLVM's own _Unwind_Find_FDE. The library is loaded with dlopen(RTLD_GLOBAL)
 * before the channel opens, as if the program had been linked with it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define UW_FORCE JH__UW_LLVM
#define UW_N 2000
#define UW_SETUP                                                                         \
    {                                                                                    \
        void *h = dlopen("libunwind.so.1", RTLD_NOW | RTLD_GLOBAL);                      \
        if (!h || !dlsym(h, "__unw_add_dynamic_fde")) {                                  \
            printf("SKIP LLVM libunwind (libunwind.so.1, Debian libunwind-14) not installed\n"); \
            return 77;                                                                   \
        }                                                                                \
        find_fde = (find_fde_fn *)dlsym(h, "_Unwind_Find_FDE");                          \
    }
#include "test_unwind_groups.c"
