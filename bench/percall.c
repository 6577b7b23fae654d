/*
 * percall.c (bench) — what each call of the core API costs, per channel: ns per
 * jh_code_add, jh_code_patched, jh_code_move and jh_code_remove, for N functions of 48
 * bytes (a two-row line table, frame-pointer unwinding, each in r-x pages the way a W^X JIT
 * leaves them), no debugger or profiler attached. One column per channel alone, then all of
 * them, then "none" (jitherald compiled in, nothing asked for) and "standby" (nothing
 * told, each description kept for a later `jitherald attach`). Median of 5 runs.
 * The peer (the cost without jitherald) is the "none" column: it validates the description
 * and returns. `bench/percall [N]` (default 10000).
 * With JH_BENCH_PERCALL_DOC=FILE (make bench sets docs/cost.md) it also rewrites FILE's
 * table between the lines "<!-- percall -->" and "<!-- /percall -->".
 * JH_BENCH_PERCALL_ONLY=CHANNEL measures that column alone; JH_BENCH_PERCALL_CPU=1 the
 * thread's CPU time instead of wall time (on a loaded machine, where waiting for a CPU
 * swamps the difference).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "jitherald.h"

#define RUNS 5
enum { OPS = 4 };
static const char *const op_names[OPS] = { "add", "patched", "move", "remove" };

static const struct { const char *name; unsigned bits, flags; } chans[] = {
    { "none", 0, 0 }, { "standby", 0, JH_OPT_STANDBY }, { "perfmap", JH_PERFMAP, 0 },
    { "jitdump", JH_JITDUMP, 0 }, { "gdb", JH_GDB, 0 }, { "unwind", JH_UNWIND, 0 },
    { "elfmap", JH_ELFMAP, 0 }, { "auditlog", JH_AUDITLOG, 0 }, { "all", JH_ALL, 0 },
};
#define NCHAN (sizeof chans / sizeof chans[0])

static uint8_t *area[2];        /* the code, and where it moves to */
static char (*names)[24];
static char dir[] = "/tmp/jh-bench-percall.XXXXXX";


static bool cpu_time;

static double now_ns(void)
{
    if (!cpu_time)
        return bench_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per call of each op, over n functions */
static int run(unsigned channels, unsigned flags, size_t n, double out[OPS])
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = channels, .dir = dir, .engine = "percall",
                            .flags = JH_OPT_IGNORE_ENV | flags };
    if (jh_open(&jh, &o) != 0)
        return -1;
    static const char *files[] = { "bench.js" };
    struct jh_line lines[] = { { 0, 10, 0, 0 }, { 4, 11, 0, 0 } };
    struct jh_code c = { .sz = sizeof c, .size = 48, .files = files, .nfiles = 1,
                         .lines = lines, .nlines = 2, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = 1, .fp_set_end = 4 };
    uint64_t *ids = malloc(n * sizeof *ids);
    if (!ids) {
        jh_close(jh);
        return -1;
    }
    double t0 = now_ns();
    for (size_t i = 0; i < n; i++) {
        c.name = names[i];
        c.start = area[0] + i * 64;
        jh_code_add(jh, &c, &ids[i]);
    }
    double t1 = now_ns();
    for (size_t i = 0; i < n; i++)
        jh_code_patched(jh, area[0] + i * 64 + 8, 4);
    double t2 = now_ns();
    for (size_t i = 0; i < n; i++)
        jh_code_move(jh, ids[i], area[1] + i * 64);
    double t3 = now_ns();
    for (size_t i = 0; i < n; i++)
        jh_code_remove(jh, ids[i]);
    double t4 = now_ns();
    jh_close(jh);
    free(ids);
    char p[64];
    snprintf(p, sizeof p, "/tmp/perf-%d.map", (int)getpid());
    unlink(p);
    out[0] = (t1 - t0) / n, out[1] = (t2 - t1) / n, out[2] = (t3 - t2) / n, out[3] = (t4 - t3) / n;
    return 0;
}

/* The table, as markdown: one row per op, one column per channel. */
static void table(FILE *f, size_t n, double m[NCHAN][OPS])
{
    fprintf(f, "| ns per call, %zu functions |", n);
    for (size_t k = 0; k < NCHAN; k++)
        fprintf(f, " %s |", chans[k].name);
    fprintf(f, "\n|---|");
    for (size_t k = 0; k < NCHAN; k++)
        fprintf(f, "---:|");
    fputc('\n', f);
    for (int op = 0; op < OPS; op++) {
        fprintf(f, "| %s |", op_names[op]);
        for (size_t k = 0; k < NCHAN; k++)
            fprintf(f, m[k][op] < 0 ? " - |" : " %.0f |", m[k][op]);
        fputc('\n', f);
    }
}

/* Replace what lies between the markers in path by the table; the rest of the file stays. */
static int update_doc(const char *path, size_t n, double m[NCHAN][OPS])
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    char line[4096];
    int state = 0;              /* 0 before, 1 inside (skipped), 2 after */
    while (mem && fgets(line, sizeof line, f)) {
        if (state == 1 && !strncmp(line, "<!-- /percall -->", 17))
            state = 2;
        if (state != 1)
            fputs(line, mem);
        if (state == 0 && !strncmp(line, "<!-- percall -->", 16)) {
            struct utsname u;
            uname(&u);
            fprintf(mem, "\n");
            table(mem, n, m);
            fprintf(mem, "\n(`make bench`, bench/percall.c: %ld CPUs, Linux %s, median of %d "
                    "runs.)\n\n", sysconf(_SC_NPROCESSORS_ONLN), u.release, RUNS);
            state = 1;
        }
    }
    fclose(f);
    if (!mem || state != 2) {
        if (mem)
            fclose(mem);
        free(text);
        return -1;
    }
    fclose(mem);
    f = fopen(path, "w");
    int ok = f && fwrite(text, 1, len, f) == len;
    if (f)
        ok &= fclose(f) == 0;
    free(text);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 10000;
    names = malloc(n * sizeof *names);
    area[0] = bench_fp_code(n);
    area[1] = bench_fp_code(n);
    if (!names || !area[0] || !area[1] || !mkdtemp(dir))
        return 1;
    for (size_t i = 0; i < n; i++)
        snprintf(names[i], sizeof names[i], "fn_%zu", i);
    /* JH_BENCH_PERCALL_ONLY=elfmap: that column only (the others print "-") */
    const char *only = getenv("JH_BENCH_PERCALL_ONLY");
    cpu_time = getenv("JH_BENCH_PERCALL_CPU") && *getenv("JH_BENCH_PERCALL_CPU") == '1';
    double m[NCHAN][OPS];
    for (size_t k = 0; k < NCHAN; k++) {
        double v[OPS][RUNS];
        if (only && *only && strcmp(only, chans[k].name)) {
            for (int op = 0; op < OPS; op++)
                m[k][op] = -1;
            continue;
        }
        for (int r = 0; r < RUNS; r++) {
            double one[OPS] = { -1, -1, -1, -1 };
            run(chans[k].bits, chans[k].flags, n, one);
            for (int op = 0; op < OPS; op++)
                v[op][r] = one[op];
        }
        for (int op = 0; op < OPS; op++)
            m[k][op] = bench_median(v[op], RUNS);
    }
    printf("The core's cost per call, by channel (no tool attached; median of %d runs%s)\n\n", RUNS,
           cpu_time ? ", CPU time" : "");
    table(stdout, n, m);
    printf("\n\"none\": jitherald compiled in, no channel asked for (the description is "
           "validated, nothing kept);\n\"all\": every channel at once. Files in %s.\n", dir);
    const char *doc = getenv("JH_BENCH_PERCALL_DOC");
    if (doc)
        printf("%s %s\n", update_doc(doc, n, m) ? "could not update" : "updated", doc);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
