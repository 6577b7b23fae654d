#!/usr/bin/env bash
# nongnu libunwind (libunwind-dev) walks through JIT frames: a program linked with -lunwind
# runs four minijit frames below main; from the host callback, unw_step + unw_get_proc_info
# must give every JIT frame its function's start address (only the unwind channel's
# _U_dyn_register tables can tell libunwind that), unw_backtrace must reach main, and both
# still hold after the code is freed and compiled again at the same addresses, and while
# other threads compile and free code (libunwind reads its list without a lock: no crash,
# at most 1 walk in 1,000 missing a frame's proc info). The same
# program with the channel off must NOT see the JIT functions: the check can fail.
set -eu
: "${JH_BUILD:?}" "${JH_ROOT:?}"
if ! echo '#include <libunwind.h>' | g++ -x c++ -fsyntax-only - 2>/dev/null; then
    echo "SKIP libunwind.h missing (Debian package libunwind-dev)"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.cc" <<'EOF'
#define UNW_LOCAL_ONLY
#include <atomic>
#include <libunwind.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include "jitherald.h"
#include "minijit.h"

static const char *src =
    "fn d(x) {\n    return callback(x + 1) + 1\n}\n"
    "fn c(x) {\n    return d(x + 1) + 1\n}\n"
    "fn b(x) {\n    return c(x + 1) + 1\n}\n"
    "fn a(x) {\n    return b(x + 1) + 1\n}\n"
    "fn main() {\n    return a(1) + 1\n}\n";
static thread_local mj_program *prog;
static thread_local int jit_found, main_found, bt_main, bt_depth;
static thread_local void *root;     /* main, or a thread's start routine */
static thread_local bool churning;
int main(int argc, char **argv);

static int64_t cb(int64_t x)
{
    static const char *const order[] = { "d", "c", "b", "a", "main" };
    if (churning)
        return x;
    unw_context_t uc;
    unw_cursor_t cur;
    unw_getcontext(&uc);
    unw_init_local(&cur, &uc);
    jit_found = main_found = 0;
    while (unw_step(&cur) > 0) {
        unw_word_t ip;
        unw_proc_info_t pi;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        if (unw_get_proc_info(&cur, &pi) < 0)
            continue;
        if (jit_found < 5) {
            const mj_function *f = mj_function_get(prog, order[jit_found]);
            if (pi.start_ip == (unw_word_t)f->code &&
                pi.end_ip == (unw_word_t)f->code + f->code_size)
                jit_found++;
        }
        if (pi.start_ip == (unw_word_t)root)
            main_found = 1;
    }
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

static int round_(jh_ctx *jh, const char *what)
{
    char err[256];
    prog = mj_compile(src, "chain.mini", jh, err, sizeof err);
    if (!prog) {
        fprintf(stderr, "compile: %s\n", err);
        return 2;
    }
    mj_run(prog, "main", nullptr, 0);
    printf("%s: unw_step: %d of 5 JIT frames with their proc info, main %s; "
           "unw_backtrace: %d frames, main %s\n", what, jit_found,
           main_found ? "reached" : "NOT reached", bt_depth, bt_main ? "reached" : "NOT reached");
    return jit_found == 5 && main_found && bt_main ? 0 : 1;
}

// threads: 4 threads compile and free programs (runs rebuilt, cancelled, retired) while 2
// threads walk through their own JIT frames with unw_step and unw_backtrace.
static jh_ctx *shared;
static std::atomic<bool> stop{false};
static std::atomic<long> walks{0}, bad{0};

static void *walker(void *)
{
    root = (void *)walker;
    char err[256];
    prog = mj_compile(src, "chain.mini", shared, err, sizeof err);
    if (!prog) {
        bad++;
        return nullptr;
    }
    while (!stop) {
        mj_run(prog, "main", nullptr, 0);
        if (jit_found != 5 || !main_found || !bt_main) {
            if (bad++ < 5)
                printf("incomplete: %d of 5 JIT frames, start routine %s, unw_backtrace %s\n",
                       jit_found, main_found ? "found" : "NOT found", bt_main ? "found" : "NOT found");
        }
        walks++;
    }
    mj_free(prog);
    return nullptr;
}

static void *churner(void *)
{
    churning = true;
    char err[256];
    while (!stop) {
        mj_program *p = mj_compile(src, "churn.mini", shared, err, sizeof err);
        if (!p) {
            bad++;
            return nullptr;
        }
        mj_run(p, "main", nullptr, 0);
        mj_free(p);
    }
    return nullptr;
}

static int threads(jh_ctx *jh)
{
    shared = jh;
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], nullptr, i < 4 ? churner : walker, nullptr);
    sleep(2);
    stop = true;
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], nullptr);
    printf("threads: %ld walks while 4 threads compiled and freed code, %ld incomplete\n",
           walks.load(), bad.load());
    // libunwind reads its list without a lock: a walk preempted across a replacement can
    // still miss one frame's proc info (see docs/unwind.md); it must stay that rare.
    return bad * 1000 > walks || walks < 10;
}

int main(int argc, char **argv)
{
    root = (void *)&main;
    mj_set_callback(cb);
    jh_ctx *jh = nullptr;
    jh_options o = {};
    o.sz = sizeof o;
    o.channels = argc > 1 && !strcmp(argv[1], "control") ? 0 : JH_UNWIND;
    o.flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT;
    if (jh_open(&jh, &o))
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
EOF
g++ -std=c++17 -O1 -g -fno-omit-frame-pointer -D_GNU_SOURCE -I"$JH_ROOT/include" \
    -I"$JH_ROOT/examples/minijit" -o "$tmp/t" "$tmp/t.cc" "$JH_BUILD/libminijit.a" \
    "$JH_BUILD/libjitherald.a" -lunwind -lpthread -ldl
ldd "$tmp/t" | grep -q 'libunwind\.so\.8' || { echo "FAIL: not linked with nongnu libunwind"; exit 1; }

echo "-- with JH_UNWIND"
"$tmp/t" || { echo "FAIL: libunwind does not walk through the JIT frames"; exit 1; }
echo "-- 4 threads compiling and freeing code, 2 threads walking"
"$tmp/t" threads || { echo "FAIL: walks incomplete or crashed under churn"; exit 1; }
echo "-- control, channel off (must not see the JIT functions)"
if "$tmp/t" control; then
    echo "FAIL: the control run passed: the test cannot tell"; exit 1
fi
echo PASS
