/*
 * test_unwind_llvm.c — unwind_groups.c against LLVM's libunwind (libunwind-14), the
 * unwinder of clang/libc++ programs: one __unw_add_dynamic_fde per function, looked up
 * through LLVM's own _Unwind_Find_FDE. The library is loaded with dlopen(RTLD_GLOBAL)
 * before the channel opens, as if the program had been linked with it.
 */
#include <dlfcn.h>

#include "check.h"
#include "unwind_groups.h"
#include "channels/unwind_stats.h"

int main(void)
{
    void *h = dlopen("libunwind.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h || !dlsym(h, "__unw_add_dynamic_fde"))
        SKIP("LLVM libunwind (libunwind.so.1, Debian libunwind-14) not installed");
    struct unwind_groups cfg = { .force_mode = JH__UW_LLVM, .n = 2000,
                                 .find_fde = (find_fde_fn *)dlsym(h, "_Unwind_Find_FDE") };
    return unwind_groups_run(&cfg);
}
