// test_unwind_mixed.cc — a process holding two unwinders: libgcc_s (libstdc++'s exceptions,
// glibc's backtrace) and LLVM's libunwind (loaded here with dlopen, as a clang/libc++-built
// library would bring it). Each sees only what is registered with it, so the channel must
// feed both: the C++ exception (libgcc) crosses the JIT frames, and LLVM's own
// _Unwind_Backtrace walks through them to main as well.
#include <dlfcn.h>
#include <stdexcept>

#include "chain.h"
#include "check.h"
#include "channels/unwind_stats.h"

int main();

static chain_trace_fn *llvm_backtrace;
static chain_enclosing_fn *llvm_enclosing;
static chain_getip_fn *llvm_getip;

enum { CB_THROW, CB_GLIBC, CB_LLVM };
static int mode, npcs;
static void *pcs[128];

static int64_t host(int64_t x)
{
    if (mode == CB_THROW)
        throw std::runtime_error("below JIT frames");
    if (mode == CB_GLIBC)
        npcs = chain_collect(CHAIN_BACKTRACE, pcs, 128);
    else
        npcs = chain_unwind_backtrace(pcs, 128, llvm_backtrace, llvm_getip);
    return x;
}

// the 5 JIT frames in order, then main (found with the given unwinder's own FDE lookup)
static bool complete(mj_program *p, chain_enclosing_fn *enclosing, const char *what)
{
    return chain_check(p, "main", (const void *)&main, enclosing, pcs, npcs, what, false);
}

int main()
{
    void *h = dlopen("libunwind.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h || !dlsym(h, "__unw_add_dynamic_fde"))
        SKIP("LLVM libunwind (libunwind.so.1, Debian libunwind-14) not installed");
    *(void **)&llvm_backtrace = dlsym(h, "_Unwind_Backtrace");
    *(void **)&llvm_enclosing = dlsym(h, "_Unwind_FindEnclosingFunction");
    *(void **)&llvm_getip = dlsym(h, "_Unwind_GetIP");
    CHECK(llvm_backtrace && llvm_enclosing && llvm_getip);
    if (!llvm_backtrace || !llvm_enclosing || !llvm_getip)
        return check_done();

    mj_set_callback(host);
    jh_ctx *jh = chain_open(JH_UNWIND);
    CHECK(jh);
    if (!jh)
        return check_done();
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.mode, JH__UW_LIST);
    CHECK_EQ(st.llvm, 1);

    for (int round = 0; round < 2; round++) {
        mj_program *p = chain_compile(jh, "chain.mini");
        CHECK(p);
        if (!p)
            break;
        mode = CB_THROW;
        bool caught = false;
        try {
            mj_run(p, "main", nullptr, 0);
        } catch (const std::runtime_error &) {
            caught = true;
        }
        CHECK(caught);
        mode = CB_GLIBC;
        mj_run(p, "main", nullptr, 0);
        CHECK(complete(p, _Unwind_FindEnclosingFunction, "glibc backtrace (libgcc)"));
        mode = CB_LLVM;
        mj_run(p, "main", nullptr, 0);
        CHECK(complete(p, llvm_enclosing, "LLVM _Unwind_Backtrace"));
        mj_free(p);             // and again, re-added at the same addresses
    }
    jh_close(jh);
    return check_done();
}
