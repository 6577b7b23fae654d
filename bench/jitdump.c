/*
 * jitdump.c (bench) — what the jitdump channel costs, and what perf then costs.
 *
 *  1. ns per jh_code_add for N functions (each with a 2-row line table and frame-pointer
 *     unwind info): no channel, the perf map (the cheap peer: one text line per function),
 *     and jitdump (DEBUG_INFO + UNWINDING_INFO + LOAD with the code bytes, one writev).
 *     Median of 5 runs. Default N = 1,000 and 100,000.
 *  2. The price perf pays later: `perf record -k 1` of a process announcing N functions,
 *     then the wall time of `perf inject --jit`, which writes one ELF file per function.
 *     This is the number the elfmap channel has to beat. Default N = 1,000 and 10,000;
 *     JH_BENCH_INJECT_BIG=1 adds 100,000 (minutes).
 *
 * `bench/jitdump` runs both; `bench/jitdump --emit N` is the child perf records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "jitherald.h"

#define RUNS 5
#define STRIDE 32
static uint8_t *region;
static char (*names)[32];
static const char *files[] = { "bench.mini" };

static double now(void) { return bench_now_ns(); }

static int setup(size_t n)
{
    region = mmap(NULL, n * STRIDE, PROT_READ | PROT_WRITE | PROT_EXEC,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    names = malloc(n * sizeof *names);
    if (region == MAP_FAILED || !names)
        return -1;
    for (size_t i = 0; i < n; i++) {
        /* push rbp; mov rbp,rsp; nop x10; pop rbp; ret */
        uint8_t *p = region + i * STRIDE;
        static const uint8_t code[16] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x90, 0x90,
                                          0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x5d, 0xc3 };
        memcpy(p, code, sizeof code);
        snprintf(names[i], sizeof names[i], "jit_fn_%zu", i);
    }
    return 0;
}

static int add_all(jh_ctx *jh, size_t n)
{
    struct jh_line lines[2] = { { 0, 1, 0, 0 }, { 4, 2, 0, 0 } };
    struct jh_code c = { .sz = sizeof c, .size = 16, .files = files, .nfiles = 1,
                         .lines = lines, .nlines = 2, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = 1, .fp_set_end = 4 };
    for (size_t i = 0; i < n; i++) {
        c.name = names[i];
        c.start = region + i * STRIDE;
        lines[0].line = (uint32_t)i;
        if (jh_code_add(jh, &c, NULL) != 0)
            return -1;
    }
    return 0;
}

static double run(unsigned channels, size_t n, const char *dir, long *bytes)
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = channels, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV };
    if (jh_open(&jh, &o) != 0 || jh_channels(jh) != channels)
        return -1;
    double t0 = now();
    int err = add_all(jh, n);
    double dt = now() - t0;
    jh_close(jh);
    char p[300];
    struct stat st;
    if (channels == JH_PERFMAP)
        snprintf(p, sizeof p, "/tmp/perf-%d.map", (int)getpid());
    else
        snprintf(p, sizeof p, "%s/jit-%d.dump", dir, (int)getpid());
    if (bytes)
        *bytes = channels && stat(p, &st) == 0 ? (long)st.st_size : 0;
    if (channels)
        unlink(p);
    return err ? -1 : dt / n;
}

static void per_add(const char *dir)
{
    static const size_t ns[] = { 1000, 100000 };
    printf("jh_code_add cost, ns per function (median of %d; 16-byte functions, 2 lines, "
           "frame-pointer unwind)\n", RUNS);
    printf("%10s %12s %12s %12s %16s %16s\n", "functions", "no channel", "perfmap",
           "jitdump", "jitdump/perfmap", "jitdump B/fn");
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        size_t n = ns[k];
        double v[3][RUNS];
        long bytes = 0;
        static const unsigned ch[3] = { 0, JH_PERFMAP, JH_JITDUMP };
        for (int r = 0; r < RUNS; r++)
            for (int c = 0; c < 3; c++)
                v[c][r] = run(ch[c], n, dir, c == 2 ? &bytes : NULL);
        for (int c = 0; c < 3; c++)
            bench_median(v[c], RUNS);
        double none = v[0][RUNS / 2], pm = v[1][RUNS / 2], jd = v[2][RUNS / 2];
        printf("%10zu %12.0f %12.0f %12.0f %15.1fx %16.0f\n", n, none, pm, jd, jd / pm,
               (double)bytes / n);
    }
}

/* perf record -k 1 of `self --emit N`, then time perf inject --jit. */
static void inject(const char *self, const char *dir)
{
    size_t ns[3] = { 1000, 10000, 0 };
    const char *big = getenv("JH_BENCH_INJECT_BIG");
    if (big && *big && strcmp(big, "0"))
        ns[2] = 100000;
    if (system("perf --version >/dev/null 2>&1") != 0) {
        printf("\nperf inject --jit: perf not installed, not measured\n");
        return;
    }
    printf("\nperf inject --jit on the resulting file (one ELF per function; the cost the "
           "elfmap channel must beat)\n");
    printf("%10s %14s %16s %14s %14s\n", "functions", "dump bytes", "inject seconds",
           "ms/function", "jitted-*.so");
    for (int k = 0; k < 3 && ns[k]; k++) {
        char cmd[16384];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'/rec && mkdir -m 700 '%s'/rec && cd '%s'/rec && "
                 "JITHERALD=jitdump JITHERALD_DIR='%s'/rec perf --buildid-dir '%s'/rec/bid "
                 "record -q -k 1 -o perf.data '%s' --emit %zu >/dev/null 2>&1",
                 dir, dir, dir, dir, dir, self, ns[k]);
        if (system(cmd) != 0) {
            printf("%10zu   perf record failed\n", ns[k]);
            continue;
        }
        snprintf(cmd, sizeof cmd, "cd '%s'/rec && perf --buildid-dir '%s'/rec/bid inject --jit "
                 "-i perf.data -o perf.jit.data >/dev/null 2>&1", dir, dir);
        double t0 = now();
        int rc = system(cmd);
        double dt = (now() - t0) / 1e9;
        snprintf(cmd, sizeof cmd, "ls '%s'/rec | grep -c '^jitted-.*\\.so$'", dir);
        FILE *p = popen(cmd, "r");
        long nso = 0;
        if (p) {
            if (fscanf(p, "%ld", &nso) != 1)
                nso = 0;
            pclose(p);
        }
        snprintf(cmd, sizeof cmd, "stat -c %%s '%s'/rec/jit-*.dump", dir);
        p = popen(cmd, "r");
        long bytes = 0;
        if (p) {
            if (fscanf(p, "%ld", &bytes) != 1)
                bytes = 0;
            pclose(p);
        }
        printf("%10zu %14ld %16.2f %14.3f %14ld%s\n", ns[k], bytes, dt, dt * 1e3 / ns[k], nso,
               rc ? "  (inject failed)" : "");
        snprintf(cmd, sizeof cmd, "rm -rf '%s'/rec", dir);
        if (system(cmd) != 0)
            break;
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--emit")) {
        size_t n = strtoul(argv[2], NULL, 10);
        jh_ctx *jh;
        if (!n || setup(n) || jh_open(&jh, NULL) != 0 || !(jh_channels(jh) & JH_JITDUMP))
            return 1;
        int err = add_all(jh, n);
        jh_close(jh);
        return err ? 1 : 0;
    }
    char dir[] = "/tmp/jh-bench-jitdump.XXXXXX";
    if (!mkdtemp(dir) || setup(100000))
        return 1;
    per_add(dir);
    char self[2048];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
        self[k] = 0;
        inject(self, dir);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 0;
}
