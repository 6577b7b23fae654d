/*
 * elfmap_churn.c (bench) — what a tracing JIT like LuaJIT does to the channels, in C:
 *
 *   - machine code lives in 64 KiB areas (mmap'd RW, made RX once written: W^X) and is
 *     allocated top-down inside each, the next area mapped just below the last;
 *   - every new function (a "trace") but the first of a cycle links to an earlier one: the
 *     parent's exit stub is patched to jump to it (jh_code_patched), as a side trace does;
 *   - every FLUSH_EVERY functions everything is flushed: the areas are unmapped first and
 *     only then is each function removed (LuaJIT reports a flush after freeing its code).
 *
 * Announcements follow the JIT's order: jh_code_add for the new function, then
 * jh_code_patched for its parent, with no jh_flush anywhere (LuaJIT never calls it).
 * Prints µs per function for no channel, perfmap, jitdump and elfmap (same run, same
 * code), plus what elfmap left behind: image files on disk and mappings of them.
 *
 *   bench/elfmap_churn [FUNCTIONS]       default 3000
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "elfmap_witness.h"
#include "jitherald.h"

#define AREA (64 * 1024)
#define MAX_AREAS 64
#define FLUSH_EVERY 300
#define STUB 16                 /* each function ends with a 16-byte exit stub */

struct fn {
    uint8_t *p;
    size_t size;
    uint64_t id;
    char name[48];
};

struct jit {
    jh_ctx *jh;
    double in_jh;               /* ns spent inside jitherald's calls */
    uint8_t *area[MAX_AREAS];
    int nareas;
    size_t top;                 /* next allocation ends here, in area[nareas - 1] */
    struct fn *fns;
    size_t nfns;
    uint32_t rng;
    unsigned long serial;
};

/* CPU time of this thread: the machine these run on is shared, and wall time then
 * measures the neighbours as much as the code. */
static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint32_t rnd(struct jit *j)
{
    j->rng = j->rng * 1103515245u + 12345u;
    return j->rng >> 8;
}

static const char *const src_files[] = { "churn.lua" };
/* DW_CFA_advance_loc 1; DW_CFA_def_cfa_offset 16: a frame the size of LuaJIT's */
static const uint8_t cfi[] = { 0x41, 0x0e, 0x10 };

static int new_area(struct jit *j)
{
    if (j->nareas == MAX_AREAS)
        return -1;
    void *hint = j->nareas ? j->area[j->nareas - 1] - AREA : NULL;
    uint8_t *a = mmap(hint, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return -1;
    memset(a, 0xcc, AREA);
    mprotect(a, AREA, PROT_READ | PROT_EXEC);
    j->area[j->nareas++] = a;
    j->top = AREA;
    return 0;
}

/* The area holding p. */
static uint8_t *area_of(struct jit *j, const uint8_t *p)
{
    for (int i = 0; i < j->nareas; i++)
        if (p >= j->area[i] && p < j->area[i] + AREA)
            return j->area[i];
    return NULL;
}

/* One trace: written below the last one, then announced; then its parent is patched. */
static int trace(struct jit *j)
{
    size_t size = 128 + (rnd(j) % 56) * 16;
    if (!j->nareas || j->top < size)
        if (new_area(j))
            return -1;
    uint8_t *a = j->area[j->nareas - 1];
    j->top -= size;
    uint8_t *p = a + j->top;
    mprotect(a, AREA, PROT_READ | PROT_WRITE);
    memset(p, 0x90, size - STUB);               /* nops, then the exit stub: ret + int3s */
    p[size - STUB] = 0xc3;
    memset(p + size - STUB + 1, 0xcc, STUB - 1);
    mprotect(a, AREA, PROT_READ | PROT_EXEC);

    struct fn *f = &j->fns[j->nfns];
    unsigned long n = ++j->serial;
    snprintf(f->name, sizeof f->name, "TRACE_%lu churn.lua:%lu", n, 10 + n % 500);
    struct jh_line lines[4];
    for (uint32_t k = 0; k < 4; k++)
        lines[k] = (struct jh_line){ .offset = k * (uint32_t)(size / 4), .line = 10 + k };
    struct jh_code c = { .sz = sizeof c, .name = f->name, .start = p, .size = size,
                         .files = src_files, .nfiles = 1, .lines = lines, .nlines = 4,
                         .unwind = JH_UNWIND_CFI, .cfi = cfi, .cfi_len = sizeof cfi };
    f->p = p;
    f->size = size;
    double t0 = cpu_ns();
    int err = jh_code_add(j->jh, &c, &f->id);
    j->in_jh += cpu_ns() - t0;
    if (err)
        return -1;
    if (j->nfns) {
        /* the side trace links: a parent's exit stub becomes jmp rel32 to it */
        struct fn *parent = &j->fns[rnd(j) % j->nfns];
        uint8_t *stub = parent->p + parent->size - STUB, *pa = area_of(j, stub);
        int32_t rel = (int32_t)(p - (stub + 5));
        mprotect(pa, AREA, PROT_READ | PROT_WRITE);
        stub[0] = 0xe9;
        memcpy(stub + 1, &rel, 4);
        mprotect(pa, AREA, PROT_READ | PROT_EXEC);
        t0 = cpu_ns();
        err = jh_code_patched(j->jh, stub, 5);
        j->in_jh += cpu_ns() - t0;
        if (err)
            return -1;
    }
    j->nfns++;
    return 0;
}

/* jit.flush(): the machine code goes first, the announcements of its removal after. */
static void flush_all(struct jit *j)
{
    for (int i = 0; i < j->nareas; i++)
        munmap(j->area[i], AREA);
    j->nareas = 0;
    double t0 = cpu_ns();
    for (size_t i = 0; i < j->nfns; i++)
        jh_code_remove(j->jh, j->fns[i].id);
    j->in_jh += cpu_ns() - t0;
    j->nfns = 0;
}

static size_t count_files(const char *dir, size_t *bytes)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "find '%s' -name '*.elf' -printf '%%b\\n'", dir);
    FILE *p = popen(cmd, "r");
    size_t n = 0, blocks;
    *bytes = 0;
    while (p && fscanf(p, "%zu", &blocks) == 1) {
        n++;
        *bytes += blocks * 512;
    }
    if (p)
        pclose(p);
    return n;
}

static size_t count_mappings(const char *dir)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    size_t n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, dir) != NULL;
    if (f)
        fclose(f);
    return n;
}

struct result {
    double us, jh_us;
    size_t files, bytes, maps, named, live;
};

/* How many live functions a profiler reading the image files now would name right. */
static size_t named(const struct jit *j)
{
    struct ew_fn *w = calloc(j->nfns, sizeof *w);
    for (size_t i = 0; w && i < j->nfns; i++)
        w[i] = (struct ew_fn){ .addr = j->fns[i].p, .size = j->fns[i].size, .name = j->fns[i].name };
    size_t ok = w ? ew_check(w, j->nfns, NULL) : 0;
    free(w);
    return ok;
}

static int run(unsigned channels, size_t nfns, struct result *r)
{
    char dir[64] = "/tmp/jh-bench-churn-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    struct jit j = { .rng = 42 };
    j.fns = calloc(FLUSH_EVERY, sizeof *j.fns);
    struct jh_options o = { .sz = sizeof o, .channels = channels, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "churn" };
    if (!j.fns || jh_open(&j.jh, &o) != 0 || jh_channels(j.jh) != channels)
        return -1;
    double t0 = cpu_ns();
    for (size_t i = 0; i < nfns; i++) {
        if (j.nfns == FLUSH_EVERY)
            flush_all(&j);
        if (trace(&j))
            return -1;
    }
    r->us = (cpu_ns() - t0) / 1e3 / (double)nfns;
    r->jh_us = j.in_jh / 1e3 / (double)nfns;
    r->files = count_files(dir, &r->bytes);
    r->maps = count_mappings(dir);
    r->live = j.nfns;
    r->named = channels == JH_ELFMAP ? named(&j) : 0;
    flush_all(&j);
    jh_close(j.jh);
    free(j.fns);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 3000;
    static const struct { const char *name; unsigned ch; } chans[] = {
        { "none", 0 }, { "perfmap", JH_PERFMAP }, { "jitdump", JH_JITDUMP },
        { "elfmap", JH_ELFMAP },
    };
    printf("%zu functions of 128-1008 bytes, top-down in 64 KiB W^X areas, each patching an\n"
           "earlier one, everything flushed (unmapped, then removed) every %d; no jh_flush.\n"
           "CPU µs per function, all of it (the JIT's writes and mprotects too) and inside\n"
           "jitherald's calls (add, the parent's patch, removal), median of 3 runs; elfmap's files and\n"
           "mappings, and how many live functions the image at their address names with\n"
           "their bytes, as they stand before the last flush:\n\n", n, FLUSH_EVERY);
    printf("%-8s %10s %10s %12s %12s %14s %16s\n", "channel", "µs/fn", "in jh", "image files",
           "image MiB", "image mappings", "named by image");
    for (size_t k = 0; k < sizeof chans / sizeof chans[0]; k++) {
        double us[3], jh_us[3];
        struct result r = { 0 };
        for (int rep = 0; rep < 3; rep++) {
            if (run(chans[k].ch, n, &r)) {
                printf("%-8s failed\n", chans[k].name);
                return 1;
            }
            us[rep] = r.us;
            jh_us[rep] = r.jh_us;
        }
        char map[64];
        snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
        unlink(map);
        if (chans[k].ch == JH_ELFMAP)
            printf("%-8s %10.1f %10.1f %12zu %12.1f %14zu %9zu of %zu\n", chans[k].name,
                   bench_median(us, 3), bench_median(jh_us, 3), r.files, r.bytes / 1048576.0,
                   r.maps, r.named, r.live);
        else
            printf("%-8s %10.1f %10.1f %12s %12s %14s\n", chans[k].name, bench_median(us, 3),
                   bench_median(jh_us, 3), "-", "-", "-");
    }
    return 0;
}
