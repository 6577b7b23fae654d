/*
 * test_unwind_llvm.c — unwind_groups.c against LLVM's libunwind (libunwind-14), the
 * unwinder of clang/libc++ programs: one __unw_add_dynamic_fde per function, looked up
 * through LLVM's own _Unwind_Find_FDE. The library is loaded with dlopen(RTLD_GLOBAL)
 * before the channel opens, as if the program had been linked with it. Then the
 * personality and foreign-registration cases of unwind_personality.c, through LLVM's
 * own _Unwind_RaiseException.
 */
#include <dlfcn.h>

#include "check.h"
#include "unwind_groups.h"
#include "unwind_personality.h"
#include "channels/unwind_stats.h"

int main(void)
{
    void *h = dlopen("libunwind.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h || !dlsym(h, "__unw_add_dynamic_fde"))
        SKIP("LLVM libunwind (libunwind.so.1, Debian libunwind-14) not installed");
    struct unwind_groups cfg = { .force_mode = JH__UW_LLVM, .n = 2000,
                                 .find_fde = (find_fde_fn *)dlsym(h, "_Unwind_Find_FDE") };
    int rc = unwind_groups_run(&cfg);
    struct unwind_personality pcfg = { .force_mode = JH__UW_LLVM, .unwinder = h, .llvm = 1 };
    int rc2 = unwind_personality_run(&pcfg);
    return rc ? rc : rc2;
}
