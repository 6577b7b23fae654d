/*
 * clean_fork.c — a JIT that forks and exits while its child goes on running the code the
 * parent compiled, from the parent's elfmap image (jit-PARENT-N.elf): the file
 * `jitherald clean` must keep as long as the child maps it (issue 22, defect 12).
 *
 *     JITHERALD=elfmap JITHERALD_DIR=DIR clean_fork READY STOP
 *
 * The parent compiles fib with the demo JIT and runs it (its pages are then mapped from the
 * image), forks and exits 0. The child writes its pid to READY (renamed into place), runs
 * fib(15) every 10 ms until STOP exists, then prints "child fib(20)=6765" and exits 0: the
 * code still runs after whatever clean did meanwhile. With CLEAN_FORK_UNDUMPABLE=1 the
 * child makes itself non-dumpable first, so that its /proc/PID/maps cannot be read by a
 * process of its user without CAP_SYS_PTRACE. Used by tests/integration/elfmap_clean.sh.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jitherald.h"
#include "minijit.h"

static const char src[] =
    "fn fib(n) {\n"
    "    if n < 2 { return n }\n"
    "    return fib(n - 1) + fib(n - 2)\n"
    "}\n";

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: clean_fork READY STOP\n");
        return 2;
    }
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .engine = "clean_fork" };
    int rc = jh_open(&jh, &o);
    if (rc < 0) {
        fprintf(stderr, "jh_open: %s\n", jh_strerror(rc));
        return 1;
    }
    char err[256];
    mj_program *p = mj_compile(src, "fork.mini", jh, err, sizeof err);
    if (!p) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int64_t (*fib)(int64_t) = (int64_t (*)(int64_t))mj_lookup(p, "fib");
    if (fib(10) != 55)
        return 1;
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child > 0)
        _exit(0);       /* the parent is gone; its image stays mapped in the child */
    const char *nd = getenv("CLEAN_FORK_UNDUMPABLE");
    if (nd && !strcmp(nd, "1") && prctl(PR_SET_DUMPABLE, 0) != 0) {
        perror("prctl");
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0 ||
        rename(tmp, argv[1]) != 0) {
        fprintf(stderr, "clean_fork: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    struct stat st;
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    for (long waited = 0; stat(argv[2], &st) != 0 && waited < 100L * 600; waited++) {
        if (fib(15) != 610)
            return 1;
        nanosleep(&ts, NULL);
    }
    printf("child fib(20)=%lld\n", (long long)fib(20));
    return 0;
}
