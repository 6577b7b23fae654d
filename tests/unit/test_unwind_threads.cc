// test_unwind_threads.cc — 8 threads compile, run and free minijit programs (jh_code_add /
// jh_code_remove, runs rebuilt and retired all the time) while 2 threads unwind through
// their own long-lived JIT frames in a loop: C++ exceptions thrown below the JIT frames and
// caught above them, backtrace() and _Unwind_Backtrace reaching the thread's start routine.
// Nothing may crash, every walk must be complete. Run under `make tsan` and `make asan` too.
#include <atomic>
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <time.h>
#include <unistd.h>

#include "chain.h"
#include "check.h"
#include "channels/unwind_stats.h"

enum { MIN_WALKS = 20000, MIN_THROWS = 10000, MIN_CHURNS = 4000 };
static jh_ctx *jh;
static std::atomic<bool> stop{false};
static std::atomic<long> walks{0}, throws{0}, churns{0}, bad{0};

static thread_local int cb_mode;    // enum chain_mode
static thread_local void *pcs[128];
static thread_local int npcs;

struct jit_error : std::runtime_error {
    jit_error() : std::runtime_error("below JIT frames") {}
};

static int64_t host_callback(int64_t x)
{
    if (cb_mode == CHAIN_THROW)
        throw jit_error();
    npcs = chain_collect(cb_mode, pcs, 128);
    return x;
}

static void *unwinder(void *);

// d, c, b, a in order, then the thread's start routine.
static bool complete(mj_program *p)
{
    return chain_check(p, "a", (const void *)unwinder, nullptr, pcs, npcs, nullptr, true);
}

static double now()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void *unwinder(void *)
{
    mj_program *p = chain_compile(jh, "chain.mini");
    if (!p) {
        bad++;
        return nullptr;
    }
    int64_t arg = 1;
    for (unsigned i = 0; !stop.load(); i++) {
        cb_mode = CHAIN_THROW + i % 3;
        if (cb_mode == CHAIN_THROW) {
            bool caught = false;
            try {
                mj_run(p, "a", &arg, 1);
            } catch (const jit_error &) {
                caught = true;
            }
            if (!caught)
                bad++;
            throws++;
        } else {
            npcs = 0;
            mj_run(p, "a", &arg, 1);
            if (!complete(p)) {
                if (bad++ < 3)
                    fprintf(stderr, "incomplete walk (%s): %d frames\n",
                            cb_mode == CHAIN_BACKTRACE ? "backtrace" : "_Unwind_Backtrace", npcs);
            }
            walks++;
        }
    }
    mj_free(p);
    return nullptr;
}

static void *churner(void *arg)
{
    long id = (long)(intptr_t)arg;
    char err[256];
    for (unsigned i = 0; !stop.load(); i++) {
        // programs of 1..6 functions, so runs of many sizes come and go
        std::string src;
        int nf = 1 + (int)((id + i) % 6);
        for (int k = 0; k < nf; k++)
            src += "fn f" + std::to_string(k) + "(x) {\n    return callback(x) + " +
                   std::to_string(k) + "\n}\n";
        mj_program *p = mj_compile(src.c_str(), "churn.mini", jh, err, sizeof err);
        if (!p) {
            fprintf(stderr, "compile: %s\n", err);
            bad++;
            return nullptr;
        }
        cb_mode = CHAIN_PASS;
        int64_t x = 7;
        if (mj_run(p, "f0", &x, 1) != 7)
            bad++;
        if (i % 4 == 0)
            jh_flush(jh);
        mj_free(p);
        churns++;
    }
    return nullptr;
}

int main()
{
    mj_set_callback(host_callback);
    jh = chain_open(JH_UNWIND);
    CHECK(jh);
    if (!jh)
        return check_done();

    pthread_t t[10];
    for (long i = 0; i < 8; i++)
        CHECK_EQ(pthread_create(&t[i], nullptr, churner, (void *)(intptr_t)i), 0);
    for (int i = 8; i < 10; i++)
        CHECK_EQ(pthread_create(&t[i], nullptr, unwinder, nullptr), 0);
    // At least two seconds, and at least a set amount of work however slow the machine (a
    // busy one, a sanitizer build): a quiet machine does ten times this in two seconds.
    double t0 = now();
    auto enough = [] { return walks.load() >= MIN_WALKS && throws.load() >= MIN_THROWS &&
                              churns.load() >= MIN_CHURNS; };
    while ((now() - t0 < 2.0 || !enough()) && now() - t0 < 300 && bad.load() == 0)
        usleep(50 * 1000);
    stop = true;
    for (int i = 0; i < 10; i++)
        pthread_join(t[i], nullptr);

    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    printf("%ld walks, %ld exceptions, %ld programs compiled and freed; %zu runs, "
           "%zu retired\n", walks.load(), throws.load(), churns.load(), st.segments,
           st.retired);
    CHECK_EQ(bad.load(), 0);
    CHECK(walks.load() >= MIN_WALKS);
    CHECK(throws.load() >= MIN_THROWS);
    CHECK(churns.load() >= MIN_CHURNS);
    jh_close(jh);
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.live, 0);
    return check_done();
}
