// unwind_libunwind.cc — for tests/integration/unwind_libunwind.sh, linked with nongnu
// libunwind (-lunwind): from the host callback below the five JIT frames of the chain
// (tests/support/chain.h), unw_step + unw_get_proc_info must give every JIT frame its
// function's exact range (only the unwind channel's _U_dyn_register tables can tell
// libunwind that) and reach the root (main, or a thread's start routine); unw_backtrace
// must reach the root too. Again after the code is freed and compiled again at the same
// addresses. Arguments:
//   (none)     those two rounds; exit 0 if both walks were complete each time
//   threads    then 4 threads compile and free code while 2 walk through their own JIT
//              frames, until enough of both happened: at most 1 walk in 1,000 may miss
//              a frame's proc info (libunwind reads its list without a lock)
//   control    the channel off: the walks must NOT be complete (exit 1)
#define UNW_LOCAL_ONLY
#include <atomic>
#include <libunwind.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "chain.h"

static thread_local mj_program *prog;
static thread_local int jit_found, main_found, bt_main, bt_depth;
static thread_local const void *root;   // main, or a thread's start routine
static thread_local bool churning;
int main(int argc, char **argv);

static int64_t cb(int64_t x)
{
    if (churning)
        return x;
    unw_context_t uc;
    unw_cursor_t cur;
    unw_getcontext(&uc);
    unw_init_local(&cur, &uc);
    struct chain_walk w;
    chain_walk_begin(&w, prog, "main", root, nullptr);
    main_found = 0;
    while (unw_step(&cur) > 0) {
        unw_proc_info_t pi;
        if (unw_get_proc_info(&cur, &pi) < 0)
            continue;
        const mj_function *f = chain_walk_next(&w);
        if (f && pi.start_ip == (unw_word_t)f->code &&
            pi.end_ip == (unw_word_t)f->code + f->code_size)
            w.found++;
        if (pi.start_ip == (unw_word_t)root)
            main_found = 1;
    }
    jit_found = w.found;
    void *pcs[128];
    bt_depth = unw_backtrace(pcs, 128);
    bt_main = 0;
    for (int i = 0; i < bt_depth; i++) {
        unw_proc_info_t pi;
        if (!unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)pcs[i] - 1, &pi,
                                     nullptr) && pi.start_ip == (unw_word_t)root)
            bt_main = 1;
    }
    return x;
}

static bool walked(void)
{
    return jit_found == 5 && main_found && bt_main;
}

static int round_(jh_ctx *jh, const char *what)
{
    if (!(prog = chain_compile(jh, "chain.mini")))
        return 2;
    mj_run(prog, "main", nullptr, 0);
    printf("%s: unw_step: %d of 5 JIT frames with their proc info, main %s; "
           "unw_backtrace: %d frames, main %s\n", what, jit_found,
           main_found ? "reached" : "NOT reached", bt_depth, bt_main ? "reached" : "NOT reached");
    return walked() ? 0 : 1;
}

// threads: 4 threads compile and free programs (runs rebuilt, cancelled, retired) while 2
// threads walk through their own JIT frames with unw_step and unw_backtrace.
static jh_ctx *shared;
static std::atomic<bool> stop{false};
static std::atomic<long> walks{0}, churns{0}, bad{0};

static void *walker(void *)
{
    root = (const void *)walker;
    if (!(prog = chain_compile(shared, "chain.mini"))) {
        bad++;
        return nullptr;
    }
    while (!stop) {
        mj_run(prog, "main", nullptr, 0);
        if (!walked() && bad++ < 5)
            printf("incomplete: %d of 5 JIT frames, start routine %s, unw_backtrace %s\n",
                   jit_found, main_found ? "found" : "NOT found", bt_main ? "found" : "NOT found");
        walks++;
    }
    mj_free(prog);
    return nullptr;
}

static void *churner(void *)
{
    churning = true;
    while (!stop) {
        mj_program *p = chain_compile(shared, "churn.mini");
        if (!p) {
            bad++;
            return nullptr;
        }
        mj_run(p, "main", nullptr, 0);
        mj_free(p);
        churns++;
    }
    return nullptr;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int threads(jh_ctx *jh)
{
    shared = jh;
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], nullptr, i < 4 ? churner : walker, nullptr);
    // As much churn as two seconds gave on a quiet machine, however long it takes here.
    const double t0 = now();
    while ((walks < 20000 || churns < 20000) && now() - t0 < 60) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, nullptr);
    }
    stop = true;
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], nullptr);
    printf("threads: %ld walks while 4 threads compiled and freed code %ld times, %ld "
           "incomplete\n", walks.load(), churns.load(), bad.load());
    // libunwind reads its list without a lock: a walk preempted across a replacement can
    // still miss one frame's proc info (see docs/unwind.md); it must stay that rare.
    return bad * 1000 > walks || walks < 20000 || churns < 20000;
}

int main(int argc, char **argv)
{
    root = (const void *)&main;
    mj_set_callback(cb);
    jh_ctx *jh = chain_open(argc > 1 && !strcmp(argv[1], "control") ? 0 : JH_UNWIND);
    if (!jh)
        return 2;
    int r = round_(jh, "first");
    void *d = mj_function_get(prog, "d")->code;
    mj_free(prog);
    r |= round_(jh, "re-added");
    if (mj_function_get(prog, "d")->code != d)
        printf("(note: not re-added at the same address)\n");
    mj_free(prog);
    if (argc > 1 && !strcmp(argv[1], "threads"))
        r |= threads(jh);
    jh_close(jh);
    return r;
}
