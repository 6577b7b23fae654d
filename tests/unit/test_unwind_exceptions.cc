// test_unwind_exceptions.cc — with JH_UNWIND, the process's own unwinder crosses JIT frames:
// a C++ exception thrown by the host below four minijit frames is caught above them, and
// backtrace() / _Unwind_Backtrace walk from the host callback through every JIT frame to
// main. The same after the functions are removed and compiled again at the same addresses,
// and in a fork child; and for code compiled in standby, once the channel is switched on.
// A control run without the channel shows the walk stopping at the first JIT frame, so the
// checks cannot pass by accident.
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

#include "chain.h"
#include "check.h"
#include "channels/unwind_stats.h"

int main();

static int cb_mode;             // enum chain_mode
static void *pcs[128];
static int npcs;

struct jit_error : std::runtime_error {
    int64_t value;
    explicit jit_error(int64_t v) : std::runtime_error("thrown below JIT frames"), value(v) {}
};

static int64_t host_callback(int64_t x)
{
    if (cb_mode == CHAIN_THROW)
        throw jit_error(x);
    npcs = chain_collect(cb_mode, pcs, 128);
    return x;
}

// The JIT frames d, c, b, a, main (minijit's) in that order, then main (ours).
static bool trace_complete(mj_program *p, const char *what, bool quiet = false)
{
    return chain_check(p, "main", (const void *)&main, nullptr, pcs, npcs, what, quiet);
}

// One backtrace() from below the JIT frames: does it reach main? (quiet: for the runs
// where it must not)
static bool walk_completes(mj_program *p, const char *what)
{
    cb_mode = CHAIN_BACKTRACE;
    npcs = 0;
    mj_run(p, "main", nullptr, 0);
    return trace_complete(p, what, true);
}

static void exercise(jh_ctx *jh, mj_program *p, const char *round)
{
    char what[64];
    (void)jh;
    cb_mode = CHAIN_THROW;
    bool caught = false;
    try {
        mj_run(p, "main", nullptr, 0);
    } catch (const jit_error &e) {
        caught = true;
        CHECK_EQ(e.value, 5);   // 1 + 1 (a) + 1 (b) + 1 (c) + 1 (d)
    }
    CHECK(caught);

    cb_mode = CHAIN_BACKTRACE;
    npcs = 0;
    CHECK_EQ(mj_run(p, "main", nullptr, 0), 5 + 5);
    snprintf(what, sizeof what, "%s backtrace()", round);
    CHECK(trace_complete(p, what));

    cb_mode = CHAIN_UNWIND_BACKTRACE;
    npcs = 0;
    CHECK_EQ(mj_run(p, "main", nullptr, 0), 5 + 5);
    snprintf(what, sizeof what, "%s _Unwind_Backtrace", round);
    CHECK(trace_complete(p, what));

    // The exception again, after the walks: libgcc sorted the runs at the first lookup.
    cb_mode = CHAIN_THROW;
    caught = false;
    try {
        mj_run(p, "main", nullptr, 0);
    } catch (const jit_error &) {
        caught = true;
    }
    CHECK(caught);
}

int main()
{
    mj_set_callback(host_callback);

    // Control: the same code, not announced. backtrace() stops at the first JIT frame.
    mj_program *p = chain_compile(nullptr, "chain.mini");
    CHECK(p);
    if (!p)
        return check_done();
    cb_mode = CHAIN_BACKTRACE;
    npcs = 0;
    mj_run(p, "main", nullptr, 0);
    CHECK(!trace_complete(p, "control", true));
    CHECK(npcs < 8);
    mj_free(p);

    jh_ctx *jh = chain_open(JH_UNWIND);
    CHECK(jh);
    if (!jh)
        return check_done();
    CHECK_EQ(jh_channels(jh), JH_UNWIND);
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    printf("unwind mode %d, libunwind %d\n", st.mode, st.libunwind);
    CHECK(st.mode != JH__UW_NONE);

    p = chain_compile(jh, "chain.mini");
    CHECK(p);
    if (!p)
        return check_done();
    exercise(jh, p, "first");

    // Remove everything and compile again: minijit's arena reuses the same addresses.
    void *old_d = mj_function_get(p, "d")->code;
    mj_free(p);
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.live, 0);
    p = chain_compile(jh, "chain.mini");
    CHECK(p);
    if (!p)
        return check_done();
    CHECK(mj_function_get(p, "d")->code == old_d);
    exercise(jh, p, "re-added");

    // fork(): the child inherits the registrations (and a usable channel lock): the
    // exception still crosses, and code compiled in the child is covered too.
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        bool ok = true;
        cb_mode = CHAIN_THROW;
        try {
            mj_run(p, "main", nullptr, 0);
            ok = false;
        } catch (const jit_error &) {
        }
        mj_program *q = chain_compile(jh, "chain.mini");
        cb_mode = CHAIN_BACKTRACE;
        npcs = 0;
        ok = ok && q && mj_run(q, "main", nullptr, 0) == 10 && trace_complete(q, "child");
        mj_free(q);
        _exit(ok ? 0 : 1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    // Removed but not freed (announced code gone, bytes still there): no stale FDE after a
    // flush, so the walk stops again.
    CHECK_EQ(mj_remove_all(p), 0);
    CHECK_EQ(jh_flush(jh), 0);
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.live, 0);
    CHECK_EQ(st.dead, 0);
    CHECK_EQ(st.segments, 0);
    cb_mode = CHAIN_BACKTRACE;
    npcs = 0;
    mj_run(p, "main", nullptr, 0);
    CHECK(!trace_complete(p, "after removal", true));
    mj_free(p);
    jh_close(jh);

    // Standby, then the unwinder switched on (jh_channels_set, what `jitherald attach`
    // does): code compiled before is crossed as if the channel had been on from the start;
    // switched off, its registrations are gone and the walk stops again.
    jh_options so = {};
    so.sz = sizeof so;
    so.flags = JH_OPT_IGNORE_ENV | JH_OPT_STANDBY;
    CHECK_EQ(jh_open(&jh, &so), 0);
    p = chain_compile(jh, "chain.mini");
    CHECK(p);
    if (!p)
        return check_done();
    CHECK(!walk_completes(p, "standby"));
    CHECK_EQ(jh_channels_set(jh, JH_UNWIND), JH_UNWIND);
    exercise(jh, p, "switched on");
    CHECK_EQ(jh_channels_set(jh, 0), 0);
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.live, 0);
    CHECK(!walk_completes(p, "switched off"));
    mj_free(p);
    jh_close(jh);
    return check_done();
}
