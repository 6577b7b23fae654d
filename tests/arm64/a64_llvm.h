/*
 * a64_llvm.h — for the tests arm64.mk builds twice, the second time (NAME_llvm, with
 * JH_A64_LLVM_UNWIND) linked with LLVM's libunwind ahead of libgcc_s: A64_LLVM_CHECK()
 * skips, saying how to get it, when that build found no LLVM libunwind to link, and checks
 * that the program's _Unwind_* entry points (libstdc++'s throw included) are LLVM's, so
 * that what the test then walks or throws is LLVM's doing. In the first build it is
 * nothing. C and C++.
 */
#ifndef JH_TESTS_A64_LLVM_H
#define JH_TESTS_A64_LLVM_H

#include <stdbool.h>

#ifdef JH_A64_LLVM_UNWIND
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "channels/unwind_stats.h"

#ifdef __cplusplus
extern "C"
#endif
/* Weak: a build without LLVM's libunwind links, and skips. */
void __unw_add_dynamic_fde(uintptr_t fde) __attribute__((weak));

static inline void a64_llvm_check(void)
{
    if (!__unw_add_dynamic_fde)
        SKIP("LLVM libunwind for arm64 was not linked: $JH_ARM64_DEBS (default "
             "/opt/jitherald/arm64-debs) had no usr/lib/llvm-14/lib/libunwind.so.1 when "
             "make test-arm64 built this; run scripts/install-deps.sh test (it runs "
             "scripts/arm64-debs.sh), then make test-arm64 again");
    static const char *const fns[] = { "_Unwind_Backtrace", "_Unwind_RaiseException",
                                       "_Unwind_Find_FDE" };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        Dl_info di;
        void *f = dlsym(RTLD_DEFAULT, fns[i]);
        bool llvm = f && dladdr(f, &di) && di.dli_fname && strstr(di.dli_fname, "libunwind.so.1");
        printf("%s: %s\n", fns[i], f && di.dli_fname ? di.dli_fname : "?");
        CHECK(llvm);
    }
}

/* After jh_open: the channel feeds LLVM's libunwind (one FDE per function). */
static inline void a64_llvm_check_fed(void)
{
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.llvm, 1);
}
/*
 * Whether a backtrace from a signal stopped before instruction brk_at of emit_signed's
 * function gets through it. LLVM's libunwind 14 looks up the interrupted pc of a signal
 * frame as if it were a return address (pc - 1), so it applies the rule of the
 * instruction before the one interrupted: at the first instruction it finds no FDE and the
 * walk ends; after paciasp, ldp or autiasp it takes the wrong signing state or CFA and
 * returns to a bad address, whose two words it then reads (its sigreturn-trampoline
 * check) and crashes. Only the body, where the rule does not change, walks.
 */
static inline bool a64_stop_walks(int brk_at)
{
    return brk_at >= 3 && brk_at <= 5;
}
#define A64_UNWINDER "LLVM libunwind"
#define A64_LLVM_CHECK() a64_llvm_check()
#define A64_LLVM_CHECK_FED() a64_llvm_check_fed()
#else
static inline bool a64_stop_walks(int brk_at)
{
    (void)brk_at;
    return true;
}
#define A64_UNWINDER "libgcc"
#define A64_LLVM_CHECK() ((void)0)
#define A64_LLVM_CHECK_FED() ((void)0)
#endif

#endif
