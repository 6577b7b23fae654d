/*
 * attach.c (bench) — what standby costs and how long a rundown takes (issue 27):
 *   - bytes of heap per function retained in standby, beside "none" (nothing kept) and
 *     beside gdb on from the start (what the debugger channel holds as well);
 *   - the time jh_channels_set takes to switch a channel on over N live functions (the
 *     rundown: each function handed to it as at jh_code_add, then the debugger told),
 *     for N = 1k, 10k, 100k, per channel, beside the time the same N jh_code_add calls
 *     take with that channel on from the start (the peer: paying as you go).
 * Median of 3. The functions: 48 bytes each at a 64-byte stride, two line rows,
 * frame-pointer unwinding. bench/attach.sh measures `jitherald attach` to a usable gdb.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "jitherald.h"

static uint8_t *area;
static char (*names)[32];
static char dir[] = "/tmp/jh-bench-attach.XXXXXX";


static jh_ctx *open_ctx(unsigned channels, unsigned flags)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = channels, .dir = dir, .engine = "attach",
                            .flags = JH_OPT_IGNORE_ENV | flags };
    return jh_open(&jh, &o) == 0 ? jh : NULL;
}

/* ns for adding n functions */
static double add_all(jh_ctx *jh, size_t n)
{
    static const char *files[] = { "bench.js" };
    struct jh_line lines[] = { { 0, 10, 0, 0 }, { 4, 11, 0, 0 } };
    struct jh_code c = { .sz = sizeof c, .size = 48, .files = files, .nfiles = 1,
                         .lines = lines, .nlines = 2, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = 1, .fp_set_end = 4 };
    double t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        c.name = names[i];
        c.start = area + i * 64;
        jh_code_add(jh, &c, NULL);
    }
    return bench_now_ns() - t0;
}

/* Closed with every page given back (elfmap leaves its images mapped at jh_close, for the
 * profilers: the next context here would find the pages not anonymous). */
static void close_ctx(jh_ctx *jh)
{
    jh_channels_set(jh, 0);
    jh_close(jh);
}

static size_t heap(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static const struct { const char *name; unsigned bits; } chans[] = {
    { "gdb", JH_GDB }, { "unwind", JH_UNWIND }, { "perfmap", JH_PERFMAP },
    { "elfmap", JH_ELFMAP }, { "all", JH_ALL },
};
#define NCHAN (sizeof chans / sizeof chans[0])

int main(int argc, char **argv)
{
    size_t sizes[] = { 1000, 10000, 100000 };
    size_t max = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    if (!mkdtemp(dir) || !(area = bench_fp_code(max)) || !(names = calloc(max, sizeof *names)))
        return 1;
    for (size_t i = 0; i < max; i++)
        snprintf(names[i], sizeof names[i], "js_fn_%zu", i);

    printf("heap bytes per function, %zu functions\n", max);
    printf("| context | bytes/function |\n|---|---:|\n");
    const struct { const char *name; unsigned ch, fl; } mem[] = {
        { "none", 0, 0 }, { "standby", 0, JH_OPT_STANDBY }, { "gdb on", JH_GDB, 0 } };
    for (size_t k = 0; k < 3; k++) {
        size_t h0 = heap();
        jh_ctx *jh = open_ctx(mem[k].ch, mem[k].fl);
        add_all(jh, max);
        size_t h1 = heap();
        close_ctx(jh);
        printf("| %s | %.0f |\n", mem[k].name, ((double)h1 - (double)h0) / (double)max);
    }

    printf("\nswitching a channel on over N live functions (jh_channels_set, the rundown),\n"
           "beside the same N adds with the channel on from the start; ms, median of 3\n");
    printf("| channel | N | rundown ms | adds, on from start ms | ratio |\n|---|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < NCHAN; k++) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes && sizes[s] <= max; s++) {
            size_t n = sizes[s];
            double on[3], live[3];
            for (int r = 0; r < 3; r++) {
                jh_ctx *jh = open_ctx(0, JH_OPT_STANDBY);
                add_all(jh, n);
                double t0 = bench_now_ns();
                jh_channels_set(jh, chans[k].bits);
                on[r] = (bench_now_ns() - t0) / 1e6;
                close_ctx(jh);
                jh = open_ctx(chans[k].bits, 0);
                live[r] = add_all(jh, n) / 1e6;
                close_ctx(jh);
            }
            double a = bench_median(on, 3), b = bench_median(live, 3);
            printf("| %s | %zu | %.1f | %.1f | %.2f |\n", chans[k].name, n, a, b, b > 0 ? a / b : 0);
        }
    }
    char p[64];
    snprintf(p, sizeof p, "/tmp/perf-%d.map", (int)getpid());
    unlink(p);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) != 0;
}
