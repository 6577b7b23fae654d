/*
 * cmd_run.c — `jitherald run [-c CHANNELS] -- COMMAND [ARGS...]`: run COMMAND with the
 * preload library (adapters/preload, libjitherald-run.so) in every process it starts, so
 * that what a VM writes to its perf map or jitdump reaches the channels asked for:
 *
 *     $ MVM_JIT_PERF_MAP=1 jitherald run -c elfmap -- valgrind --tool=callgrind rakudo x.raku
 *
 * It only sets the environment and execs: LD_PRELOAD (the library first, after the core
 * it needs when that lies beside it, what was there after them), JITHERALD_RUN (the channels) and JITHERALD_RUN_ROOT (this pid, which the
 * command keeps: at its exit it says when no process of the run wrote a map). Nothing
 * else of the command's environment changes: the library hears the VM in the VM's own
 * threads, so it needs no thread of its own scheduled (it used to ask valgrind for its
 * fair lock for one). The library is looked for in $JITHERALD_PRELOAD, beside this
 * program (a build tree), in ../lib from it (an install) and in the LIBDIR it was built
 * for.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/chanlist.h"
#include "cli.h"

#ifndef JH_LIBDIR
#define JH_LIBDIR "/usr/local/lib"
#endif
#define RUN_LIB "libjitherald-run.so"
#define CORE_LIB "libjitherald.so.0"       /* what RUN_LIB needs, found beside it */

#define USAGE "usage: jitherald run [-c CHANNELS] -- COMMAND [ARGS...]"

static int help(void)
{
    printf(USAGE "\n"
            "  Runs COMMAND (and every process it starts) with the channels CHANNELS (default\n"
            "  gdb,unwind,elfmap; also auditlog, all) fed from the perf map and the jitdump\n"
            "  the VM writes: /tmp/perf-PID.map, and the jit-PID.dump it maps as perf wants.\n"
            "  Switch those files on with the VM's own option (MVM_JIT_PERF_MAP=1,\n"
            "  node --perf-basic-prof or --perf-prof, erl +JPperf true, ...). Each function\n"
            "  is announced as the VM writes it, before the VM's write returns. docs/run.md.\n"
            "  -c, --channels=CHANNELS  the channels, comma-separated; with standby, the\n"
            "                           VM retains what it wrote for `jitherald attach PID`\n"
            "                           (which switches gdb, unwind and auditlog there)\n"
            "Exit status: COMMAND's; 2 for a usage error, 126 or 127 when COMMAND cannot\n"
            "be run or is not found.\n");
    return 0;
}

static int bad_usage(const char *what, const char *arg)
{
    fprintf(stderr, "jitherald run: %s%s\n", what, arg);
    return jhc_usage_error("run", USAGE);
}

static void refused_channel(void *arg, const char *name, size_t n)
{
    if (n == 7 && !strncmp(name, "standby", 7))
        return;                         /* the preload's: contexts for jitherald attach */
    *(bool *)arg = false;
    char can[128];
    jh__channel_names(jh__channels_run(), ", ", can, sizeof can);
    if (jh__channel_bit(name, n))
        fprintf(stderr, "jitherald run: %.*s: the VM writes that file itself; jitherald "
                "run reads it and adds the other channels\n", (int)n, name);
    else
        fprintf(stderr, "jitherald run: unknown channel '%.*s' (%s, all)\n", (int)n, name, can);
}

static bool check_channels(const char *s)
{
    bool ok = true;
    jh__channels_parse(s, jh__channels_run(), refused_channel, &ok);
    return ok;
}

/* NAME = VALUE, then what NAME held after SEP; 0 or -errno. */
static int prepend_env(const char *name, const char *value, char sep)
{
    const char *old = getenv(name);
    bool keep = old && *old;
    size_t need = strlen(value) + (keep ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(need);
    if (!v)
        return -ENOMEM;
    snprintf(v, need, "%s%s%s", value, keep ? (char[]){ sep, 0 } : "", keep ? old : "");
    int rc = setenv(name, v, 1) ? -errno : 0;
    free(v);
    return rc;
}

static bool usable(const char *path)
{
    return access(path, R_OK) == 0;
}

static bool find_lib(char *out, size_t len)
{
    const char *env = getenv("JITHERALD_PRELOAD");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return usable(out);
    }
    char exe[PATH_MAX - 64];            /* room for the library's name after it */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(out, len, "%s/%s", exe, RUN_LIB);
            if (usable(out))
                return true;
            snprintf(out, len, "%s/../lib/%s", exe, RUN_LIB);
            if (usable(out)) {
                char real[PATH_MAX];
                if (realpath(out, real))
                    snprintf(out, len, "%s", real);
                return true;
            }
        }
    }
    snprintf(out, len, "%s/%s", JH_LIBDIR, RUN_LIB);
    return usable(out);
}

int jhc_cmd_run(int argc, char **argv)
{
    const char *channels = "gdb,unwind,elfmap";
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return help();
        if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--channels")) && i + 1 < argc)
            channels = argv[++i];
        else if (!strncmp(argv[i], "--channels=", 11))
            channels = argv[i] + 11;
        else if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--channels"))
            return bad_usage(argv[i], " needs CHANNELS");
        else if (argv[i][0] == '-')
            return bad_usage("unknown option ", argv[i]);
        else
            break;              /* the command, without "--" */
    }
    if (!*channels)
        return bad_usage("no channel given", "");
    if (!check_channels(channels))
        return jhc_usage_error("run", USAGE);
    if (i >= argc)
        return bad_usage("no COMMAND to run", "");
    char lib[PATH_MAX];
    if (!find_lib(lib, sizeof lib)) {
        fprintf(stderr, "jitherald run: %s not found (set JITHERALD_PRELOAD to it)\n", RUN_LIB);
        return 2;
    }
    if (strchr(lib, ' ') || strchr(lib, ':')) {
        fprintf(stderr, "jitherald run: %s: LD_PRELOAD cannot hold a path with a space or a "
                "colon\n", lib);
        return 2;
    }
    /* The core the run library needs, preloaded by its path before it: found by its
     * soname through the run library's RUNPATH ($ORIGIN), ld.so would first try each of
     * glibc's hwcaps directories under it, 36 failed openat and stat in every process. */
    char pre[2 * PATH_MAX + 1];
    const char *slash = strrchr(lib, '/');
    int dir = slash ? (int)(slash - lib) : 0;
    snprintf(pre, sizeof pre, "%.*s/" CORE_LIB, dir, lib);
    if (slash && usable(pre) && !strchr(pre, ' ') && !strchr(pre, ':'))
        snprintf(pre + strlen(pre), sizeof pre - strlen(pre), ":%s", lib);
    else
        snprintf(pre, sizeof pre, "%s", lib);
    int err = prepend_env("LD_PRELOAD", pre, ':');
    if (!err && setenv("JITHERALD_RUN", channels, 1))
        err = -errno;
    /* The process the command becomes: it says at its exit when no process of the run
     * wrote a map or jitdump (the others may be wrappers that never do). */
    char root[32];
    snprintf(root, sizeof root, "%d", (int)getpid());
    if (!err && setenv("JITHERALD_RUN_ROOT", root, 1))
        err = -errno;
    if (err) {
        fprintf(stderr, "jitherald run: setting the environment: %s\n", strerror(-err));
        return 2;
    }
    execvp(argv[i], argv + i);
    fprintf(stderr, "jitherald run: %s: %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
