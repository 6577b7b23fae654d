/*
 * main.c — the `minijit` program: compile a .mini file to x86-64, announce every function
 * through jitherald (channels from $JITHERALD), run main.
 *
 *     $ JITHERALD=perfmap perf record -g -o perf.data minijit examples/minijit/fib.mini
 *     9227465
 *     $ perf report --stdio -i perf.data | grep fib
 *         97.12%  minijit  perf-4242.map  [.] fib
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jitherald.h"
#include "minijit.h"

static const char usage[] =
    "usage: minijit [options] PROGRAM.mini [ARG...]\n"
    "Compile PROGRAM.mini to x86-64 machine code, announce every function through\n"
    "jitherald (channels from $JITHERALD, e.g. JITHERALD=perfmap,gdb) and run main(ARG...).\n"
    "\n"
    "  --threads N        N threads each compile their own copy of the program into the\n"
    "                     shared code arena at the same time, then run main; each prints\n"
    "                     'thread I: main returned R' (all R must agree, else exit 1)\n"
    "  --repeat N         run main N times (a longer profile)\n"
    "  --pause-file PATH  after compiling and announcing, write our pid to PATH, then wait\n"
    "                     until PATH is deleted before running main (debugger attach)\n"
    "  --remove           jh_code_remove every function after running\n"
    "  --recompile        with --remove: free the code, compile again (same addresses\n"
    "                     are reused), announce and run main again\n"
    "  --recompile-from OTHER.mini  as --remove --recompile, but compile OTHER.mini the\n"
    "                     second time: other functions at the same addresses\n"
    "  --log-structs      audit log: log each function's struct mj_function and a\n"
    "                     'compile' event (no-op unless JITHERALD includes auditlog)\n"
    "  --print-result     print 'main returned R' after running\n"
    "  --rwx              keep code pages writable and executable (as HotSpot, Mono and\n"
    "                     node do) instead of read+exec once written (W^X)\n"
    "  --rwx-flag         as --rwx, and tell jitherald so (JH_OPT_CODE_RWX): the code is\n"
    "                     written only under the lock it is announced under, so elfmap\n"
    "                     may map its images over it\n"
    "  --no-frame-pointer compile without a frame record (rbp is no frame pointer a\n"
    "                     walker can follow) and describe each frame with raw CFI\n"
    "  --no-unwind-info   announce every function without unwind information\n"
    "                     (JH_UNWIND_NONE): a control for unwinding tests\n"
    "  --help             this text\n"
    "\n"
    "Exit status: 0 on success, 1 on a compile or run error, 2 on a usage error.\n";

struct config {
    const char *path, *path2;           /* path2: --recompile-from, else path */
    char *source, *source2;
    int threads;
    long repeat;
    const char *pause_file;
    int remove, recompile, log_structs, print_result, rwx;
    int64_t args[6];
    int nargs;
    jh_ctx *jh;
    pthread_barrier_t compiled, go;
};

struct worker {
    struct config *cfg;
    int index;
    pthread_t tid;
    int failed;
    int64_t result;
};

static mj_program *compile(struct config *cfg, int again)
{
    char err[512];
    const char *path = again ? cfg->path2 : cfg->path;
    mj_program *p = mj_compile_ex(again ? cfg->source2 : cfg->source, path, cfg->jh,
                                  cfg->log_structs ? MJ_LOG_STRUCTS : 0, err, sizeof err);
    if (!p) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    const struct mj_function *m = mj_function_get(p, "main");
    if (!m) {
        fprintf(stderr, "%s: error: no function 'main'\n", path);
        mj_free(p);
        return NULL;
    }
    if (cfg->nargs > m->nparams) {
        fprintf(stderr, "%s:%u:%u: error: main takes %d argument%s, %d given on the command line\n",
                path, m->line, m->column, m->nparams, m->nparams == 1 ? "" : "s", cfg->nargs);
        mj_free(p);
        return NULL;
    }
    return p;
}

static int64_t run_main(struct config *cfg, mj_program *p)
{
    int64_t r = 0;
    for (long i = 0; i < cfg->repeat; i++)
        r = mj_run(p, "main", cfg->args, cfg->nargs);
    return r;
}

static void wait_for_pause_file(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    /* Written under another name and renamed, so a poller never reads a half-written pid. */
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0 || rename(tmp, path) < 0) {
        fprintf(stderr, "minijit: cannot write pause file %s: %s\n", path, strerror(errno));
        return;
    }
    struct stat st;
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    for (long waited = 0; stat(path, &st) == 0; waited++) {
        if (waited == 100L * 600) {     /* ten minutes: a test forgot us */
            fprintf(stderr, "minijit: %s still there after 10 minutes, going on\n", path);
            break;
        }
        nanosleep(&ts, NULL);
    }
}

/* One compile/run cycle. Threads meet at the barriers so that all code is compiled (and
 * the pause file honoured) before any main runs. */
static void *work(void *arg)
{
    struct worker *w = arg;
    struct config *cfg = w->cfg;
    mj_program *p = compile(cfg, 0);
    w->failed = !p;
    if (cfg->threads > 1) {
        pthread_barrier_wait(&cfg->compiled);
        pthread_barrier_wait(&cfg->go);
    } else if (p && cfg->pause_file) {
        wait_for_pause_file(cfg->pause_file);
    }
    if (!p)
        return NULL;
    w->result = run_main(cfg, p);
    if (cfg->remove) {
        int rc = mj_remove_all(p);
        if (rc < 0) {
            fprintf(stderr, "minijit: jh_code_remove: %s\n", jh_strerror(rc));
            w->failed = 1;
        }
        if (cfg->recompile) {
            mj_free(p);
            if (!(p = compile(cfg, 1))) {
                w->failed = 1;
                return NULL;
            }
            int64_t again = run_main(cfg, p);
            if (again != w->result && cfg->source2 == cfg->source) {
                fprintf(stderr, "minijit: recompiled main returned %" PRId64 ", first %" PRId64 "\n",
                        again, w->result);
                w->failed = 1;
            }
        }
    }
    mj_free(p);
    return NULL;
}

static long number(const char *opt, const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < min || v > max) {
        fprintf(stderr, "minijit: %s needs a number from %ld to %ld\n%s", opt, min, max, usage);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    struct config cfg = { .threads = 1, .repeat = 1 };
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--")) {
            i++;
            break;
        } else if (!strcmp(o, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(o, "--threads")) {
            cfg.threads = (int)number(o, i + 1 < argc ? argv[++i] : NULL, 1, 256);
        } else if (!strcmp(o, "--repeat")) {
            cfg.repeat = number(o, i + 1 < argc ? argv[++i] : NULL, 1, 1000000000L);
        } else if (!strcmp(o, "--pause-file")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "minijit: --pause-file needs a path\n%s", usage);
                return 2;
            }
            cfg.pause_file = argv[++i];
        } else if (!strcmp(o, "--remove")) {
            cfg.remove = 1;
        } else if (!strcmp(o, "--recompile")) {
            cfg.recompile = 1;
        } else if (!strcmp(o, "--recompile-from")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "minijit: --recompile-from needs a path\n%s", usage);
                return 2;
            }
            cfg.path2 = argv[++i];
            cfg.remove = cfg.recompile = 1;
        } else if (!strcmp(o, "--log-structs")) {
            cfg.log_structs = 1;
        } else if (!strcmp(o, "--print-result")) {
            cfg.print_result = 1;
        } else if (!strcmp(o, "--rwx")) {
            mj_set_code_rwx(1);
        } else if (!strcmp(o, "--rwx-flag")) {
            mj_set_code_rwx(1);
            cfg.rwx = 1;
        } else if (!strcmp(o, "--no-frame-pointer")) {
            mj_set_no_frame_pointer(1);
        } else if (!strcmp(o, "--no-unwind-info")) {
            mj_set_no_unwind_info(1);
        } else {
            fprintf(stderr, "minijit: unknown option %s\n%s", o, usage);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "minijit: no program given\n%s", usage);
        return 2;
    }
    if (cfg.recompile && !cfg.remove) {
        fprintf(stderr, "minijit: --recompile needs --remove\n");
        return 2;
    }
    cfg.path = argv[i++];
    for (; i < argc; i++) {
        if (cfg.nargs == 6) {
            fprintf(stderr, "minijit: at most 6 arguments for main\n");
            return 2;
        }
        char *end;
        errno = 0;
        long long v = strtoll(argv[i], &end, 0);
        if (errno || end == argv[i] || *end) {
            fprintf(stderr, "minijit: argument '%s' is not an integer\n", argv[i]);
            return 2;
        }
        cfg.args[cfg.nargs++] = v;
    }

    char err[512];
    if (!(cfg.source = mj_read_file(cfg.path, err, sizeof err))) {
        fprintf(stderr, "minijit: %s\n", err);
        return 1;
    }
    cfg.source2 = cfg.source;
    if (!cfg.path2) {
        cfg.path2 = cfg.path;
    } else if (!(cfg.source2 = mj_read_file(cfg.path2, err, sizeof err))) {
        fprintf(stderr, "minijit: %s\n", err);
        free(cfg.source);
        return 1;
    }
    /* --rwx-flag: RWX code is written only under the arena lock, where minijit also
     * announces it, so elfmap may map its images over it (JH_OPT_CODE_RWX) */
    struct jh_options o = { .sz = sizeof o, .engine = "minijit",
                            .flags = cfg.rwx ? JH_OPT_CODE_RWX : 0 };
    int rc = jh_open(&cfg.jh, &o);
    if (rc < 0) {
        fprintf(stderr, "minijit: jh_open: %s\n", jh_strerror(rc));
        if (cfg.source2 != cfg.source)
            free(cfg.source2);
        free(cfg.source);
        return 1;
    }

    struct worker *w = calloc((size_t)cfg.threads, sizeof *w);
    if (!w) {
        fprintf(stderr, "minijit: out of memory\n");
        return 1;
    }
    int failed = 0;
    if (cfg.threads == 1) {
        w[0] = (struct worker){ .cfg = &cfg };
        work(&w[0]);
        failed = w[0].failed;
        if (!failed && cfg.print_result)
            printf("main returned %" PRId64 "\n", w[0].result);
    } else {
        pthread_barrier_init(&cfg.compiled, NULL, (unsigned)cfg.threads + 1);
        pthread_barrier_init(&cfg.go, NULL, (unsigned)cfg.threads + 1);
        int started = 0;
        for (int t = 0; t < cfg.threads; t++) {
            w[t] = (struct worker){ .cfg = &cfg, .index = t };
            if ((rc = pthread_create(&w[t].tid, NULL, work, &w[t])) != 0) {
                fprintf(stderr, "minijit: pthread_create: %s\n", strerror(rc));
                return 1;       /* the started threads wait at a barrier: just leave */
            }
            started++;
        }
        pthread_barrier_wait(&cfg.compiled);
        if (cfg.pause_file)
            wait_for_pause_file(cfg.pause_file);
        pthread_barrier_wait(&cfg.go);
        for (int t = 0; t < started; t++)
            pthread_join(w[t].tid, NULL);
        for (int t = 0; t < cfg.threads; t++) {
            failed |= w[t].failed;
            if (!w[t].failed)
                printf("thread %d: main returned %" PRId64 "\n", t, w[t].result);
            if (!w[t].failed && !w[0].failed && w[t].result != w[0].result) {
                fprintf(stderr, "minijit: thread %d disagrees with thread 0\n", t);
                failed = 1;
            }
        }
        pthread_barrier_destroy(&cfg.compiled);
        pthread_barrier_destroy(&cfg.go);
    }
    fflush(stdout);
    jh_close(cfg.jh);
    free(w);
    if (cfg.source2 != cfg.source)
        free(cfg.source2);
    free(cfg.source);
    return failed ? 1 : 0;
}
