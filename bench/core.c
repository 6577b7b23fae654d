/*
 * core.c (bench) — what jh_code_add costs per function: with no channel (the price of
 * leaving jitherald compiled in), and with the perf map, beside the peer a VM would write
 * itself: a CPython-style writer doing fprintf + fflush per line into its own FILE.
 * Median of 5 runs, ns per call. `bench/core [MAXN]` (default 1000000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "jitherald.h"

#define RUNS 5
static char *region;
static char (*names)[24];   /* made up front so the loops time only the calls */

static double now(void) { return bench_now_ns(); }
static double median(double *v) { return bench_median(v, RUNS); }

static void map_path(char *buf, size_t n) { snprintf(buf, n, "/tmp/perf-%d.map", (int)getpid()); }

/* ns per jh_code_add, then remove everything (not timed) */
static double run_jh(unsigned channels, size_t n)
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = channels, .flags = JH_OPT_IGNORE_ENV };
    if (jh_open(&jh, &o) != 0)
        return -1;
    struct jh_code c = { .sz = sizeof c, .size = 48 };
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        c.name = names[i];
        c.start = region + i * 64;
        jh_code_add(jh, &c, NULL);
    }
    double dt = now() - t0;
    jh_close(jh);
    char p[64]; map_path(p, sizeof p); unlink(p);
    return dt / n;
}

static double run_naive(size_t n)
{
    char p[64]; map_path(p, sizeof p);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%lx %x %s\n", (unsigned long)(region + i * 64), 48, names[i]);
        fflush(f);
    }
    double dt = now() - t0;
    fclose(f);
    unlink(p);
    return dt / n;
}

int main(int argc, char **argv)
{
    size_t maxn = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000;
    region = mmap(NULL, maxn * 64, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    names = malloc(maxn * sizeof *names);
    if (region == MAP_FAILED || !names)
        return 1;
    for (size_t i = 0; i < maxn; i++)
        snprintf(names[i], sizeof names[i], "fn_%zu", i);
    size_t ns[] = { 1000, 100000, 1000000 };
    printf("jh_code_add cost, ns per function (median of %d runs)\n", RUNS);
    printf("%10s %12s %12s %16s %8s\n", "functions", "no channel", "perfmap", "naive perfmap*", "ratio");
    for (size_t k = 0; k < 3 && ns[k] <= maxn; k++) {
        double a[RUNS], b[RUNS], c[RUNS];
        for (int r = 0; r < RUNS; r++) {
            a[r] = run_jh(0, ns[k]);
            b[r] = run_jh(JH_PERFMAP, ns[k]);
            c[r] = run_naive(ns[k]);
        }
        double ma = median(a), mb = median(b), mc = median(c);
        printf("%10zu %12.1f %12.1f %16.1f %7.2fx\n", ns[k], ma, mb, mc, mb / mc);
    }
    printf("* peer: fprintf+fflush per line into the VM's own FILE (CPython's perf map writer);\n"
           "  ratio = jitherald perfmap / peer (the jitherald column also validates, copies the\n"
           "  description into the registry and checks overlaps).\n");
    return 0;
}
