// attach_unwind.cc — for tests/integration/attach_unwind.sh (issue 27): a JIT in standby
// (JITHERALD=standby) compiles the chain (tests/support/chain.h), writes its pid to the file
// named by argv[1] and waits until that file is gone (`jitherald attach PID -c unwind`
// meanwhile); then a C++ exception thrown by the host below the five JIT frames must be
// caught above them, and backtrace() from there must reach main. Exit 0 when both hold,
// 1 when the walk does not; an exception that finds no handler terminates (the script's
// control run, with no attach).
#include <stdexcept>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "chain.h"

int main(int argc, char **argv);

static int mode;                // enum chain_mode
static void *pcs[128];
static int npcs;

static int64_t cb(int64_t x)
{
    if (mode == CHAIN_THROW)
        throw std::runtime_error("below the JIT frames");
    npcs = chain_collect(mode, pcs, 128);
    return x;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: attach_unwind PAUSE-FILE\n");
        return 2;
    }
    mj_set_callback(cb);
    jh_ctx *jh = nullptr;
    jh_options o = {};
    o.sz = sizeof o;
    o.engine = "attach_unwind";
    if (jh_open(&jh, &o) != 0)
        return 2;
    mj_program *p = chain_compile(jh, "chain.mini");
    if (!p)
        return 2;
    FILE *f = fopen(argv[1], "w");
    if (!f)
        return 2;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    while (access(argv[1], F_OK) == 0)
        nanosleep(&ts, nullptr);
    bool caught = false;
    mode = CHAIN_THROW;
    try {
        mj_run(p, "main", nullptr, 0);
    } catch (const std::runtime_error &) {
        caught = true;
    }
    mode = CHAIN_BACKTRACE;
    mj_run(p, "main", nullptr, 0);
    bool walked = chain_check(p, "main", (const void *)&main, nullptr, pcs, npcs,
                              "backtrace()", false);
    printf("exception %s; backtrace() %s\n", caught ? "caught above the JIT frames" : "lost",
           walked ? "reaches main" : "stops early");
    mj_free(p);
    jh_close(jh);
    return caught && walked ? 0 : 1;
}
