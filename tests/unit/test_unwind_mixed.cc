// test_unwind_mixed.cc — a process holding two unwinders: libgcc_s (libstdc++'s exceptions,
// glibc's backtrace) and LLVM's libunwind (loaded here with dlopen, as a clang/libc++-built
// library would bring it). Each sees only what is registered with it, so the channel must
// feed both: the C++ exception (libgcc) crosses the JIT frames, and LLVM's own
// _Unwind_Backtrace walks through them to main as well.
#include <dlfcn.h>
#include <execinfo.h>
#include <stdexcept>
#include <unwind.h>

#include "check.h"
#include "jitherald.h"
#include "minijit.h"
#include "channels/unwind_stats.h"

int main();

static const char *const source =
    "fn d(x) {\n    return callback(x + 1) + 1\n}\n"
    "fn c(x) {\n    return d(x + 1) + 1\n}\n"
    "fn b(x) {\n    return c(x + 1) + 1\n}\n"
    "fn a(x) {\n    return b(x + 1) + 1\n}\n"
    "fn main() {\n    return a(1) + 1\n}\n";

typedef _Unwind_Reason_Code trace_fn(_Unwind_Trace_Fn, void *);
typedef void *enclosing_fn(void *);
typedef uintptr_t getip_fn(struct _Unwind_Context *);
static trace_fn *llvm_backtrace;
static enclosing_fn *llvm_enclosing;
static getip_fn *llvm_getip;

enum { CB_THROW, CB_GLIBC, CB_LLVM };
static int mode, npcs;
static void *pcs[128];

static _Unwind_Reason_Code collect(struct _Unwind_Context *uc, void *)
{
    if (npcs < 128)
        pcs[npcs++] = (void *)llvm_getip(uc);
    return _URC_NO_REASON;
}

static int64_t host(int64_t x)
{
    if (mode == CB_THROW)
        throw std::runtime_error("below JIT frames");
    npcs = 0;
    if (mode == CB_GLIBC)
        npcs = backtrace(pcs, 128);
    else
        llvm_backtrace(collect, nullptr);
    return x;
}

// the 5 JIT frames in order, then main (found with the given unwinder's own FDE lookup)
static bool complete(mj_program *p, enclosing_fn *enclosing, const char *what)
{
    static const char *const order[] = { "d", "c", "b", "a", "main" };
    int next = 0;
    bool reached = false;
    for (int i = 0; i < npcs; i++) {
        uintptr_t pc = (uintptr_t)pcs[i];
        if (next < 5) {
            const mj_function *f = mj_function_get(p, order[next]);
            if (pc > (uintptr_t)f->code && pc <= (uintptr_t)f->code + f->code_size)
                next++;
        }
        if (next == 5 && enclosing((void *)(pc - 1)) == (void *)&main)
            reached = true;
    }
    printf("%s: %d frames, %d of 5 JIT frames, main %sreached\n", what, npcs, next,
           reached ? "" : "NOT ");
    return next == 5 && reached;
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
    jh_ctx *jh = nullptr;
    struct jh_options o = {};
    o.sz = sizeof o;
    o.channels = JH_UNWIND;
    o.flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT;
    CHECK_EQ(jh_open(&jh, &o), 0);
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.mode, JH__UW_LIST);
    CHECK_EQ(st.llvm, 1);

    for (int round = 0; round < 2; round++) {
        char err[256];
        mj_program *p = mj_compile(source, "chain.mini", jh, err, sizeof err);
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
