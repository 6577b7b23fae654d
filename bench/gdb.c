/*
 * bench/gdb.c — what the gdb channel costs inside the process, with no debugger attached:
 * nanoseconds per jh_code_add for N functions (each with a two-row line table and
 * frame-pointer unwind info), in the default (immediate) and deferred modes, and per
 * jh_code_remove of all of them in a scattered order, beside the
 * strategy of LLVM ORC's listener (one image per function, built by the same ELF builder,
 * registered at once; no packing) as the peer. Also the number of images a debugger
 * attaching at the end would read.
 *
 *   gdb                     the table for N = 1k, 10k, 100k
 *   gdb --run N MODE [remove]  one run (MODE: immediate, defer or single); prints
 *                           "MODE N functions: S s, I images" — bench/gdb.sh times this
 *                           under `gdb -batch -ex run`; with `remove`, then removes
 *                           every function (GC-like order) and prints that time first
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "channels/gdb_jit.h"
#include "fmt/elf_image.h"
#include "jitherald.h"


enum { FN = 48 };
/* Bytes of padding after each function's body in its FN-byte slot (JH_BENCH_GDB_GAP): most
 * JITs align functions, so neighbours are rarely adjacent. */
static size_t gap;
static const char *files[] = { "bench.mini" };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t *region(size_t n)
{
    uint8_t *p = mmap(NULL, n * FN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {     /* push rbp; mov rbp,rsp; ...; pop rbp; ret */
        static const uint8_t fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
        memcpy(p + i * FN, fn, sizeof fn);
    }
    return p;
}

static size_t image_bytes;  /* last count_images: bytes of all images */

static size_t count_images(void)
{
    size_t n = 0;
    image_bytes = 0;
    for (const struct jit_code_entry *e = __jit_debug_descriptor.first_entry; e; e = e->next_entry) {
        n++;
        image_bytes += e->symfile_size;
    }
    return n;
}

static double remove_ns;   /* last run_ours: ns per jh_code_remove of every function */
static int do_remove = 1;

/* Our channel through the public API. */
static double run_ours(size_t n, int defer, size_t *images)
{
    uint8_t *code = region(n);
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB, .flags = JH_OPT_IGNORE_ENV,
                            .gdb_batch = defer ? JH_GDB_DEFER : 0 };
    if (jh_open(&jh, &o) < 0 || !(jh_channels(jh) & JH_GDB)) {
        fprintf(stderr, "bench: gdb channel did not start\n");
        exit(1);
    }
    char name[32];
    uint64_t *ids = malloc(n * sizeof *ids);
    if (!ids)
        exit(1);
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "f%zu", i);
        struct jh_line lines[2] = { { 0, (uint32_t)i + 1, 0, 0 }, { 4, (uint32_t)i + 2, 5, 0 } };
        struct jh_code c = { .sz = sizeof c, .name = name, .start = code + i * FN, .size = FN - gap,
            .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
            .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
        if (jh_code_add(jh, &c, &ids[i]) < 0)
            exit(1);
    }
    jh_flush(jh);
    double t = now() - t0;
    *images = count_images();
    /* remove in a scattered order (every 7th, then the next...), as a GC would */
    double t1 = now();
    for (size_t k = 0; k < 7 && do_remove; k++)
        for (size_t i = k; i < n; i += 7)
            jh_code_remove(jh, ids[i]);
    jh_flush(jh);
    remove_ns = (now() - t1) / (double)n * 1e9;
    free(ids);
    jh_close(jh);
    munmap(code, n * FN);
    return t;
}

/* The peer's strategy: one image per function, registered at once (as LLVM ORC's GDB
 * listener does), same builder, same protocol. */
static double run_single(size_t n, size_t *images)
{
    uint8_t *code = region(n);
    struct jh__func *es = calloc(n, sizeof *es);
    struct jh_line *ls = calloc(n, 2 * sizeof *ls);
    struct jit_code_entry *ce = calloc(n, sizeof *ce);
    struct jh__buf *bufs = calloc(n, sizeof *bufs);
    char (*names)[24] = malloc(n * sizeof *names);
    if (!es || !ls || !ce || !bufs || !names)
        exit(1);
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "f%zu", i);
        ls[2 * i] = (struct jh_line){ 0, (uint32_t)i + 1, 0, 0 };
        ls[2 * i + 1] = (struct jh_line){ 4, (uint32_t)i + 2, 5, 0 };
        es[i] = (struct jh__func){ .start = (uintptr_t)(code + i * FN), .size = FN,
            .name = names[i], .files = files, .nfiles = 1, .lines = &ls[2 * i], .nlines = 2,
            .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
        const struct jh__func *one = &es[i];
        struct jh__elf_spec s = { .fns = &one, .nfns = 1 };
        if (jh__elf_image(&bufs[i], &s, NULL))
            exit(1);
        ce[i].symfile_addr = (const char *)bufs[i].p;
        ce[i].symfile_size = bufs[i].len;
        ce[i].next_entry = __jit_debug_descriptor.first_entry;
        if (ce[i].next_entry)
            ce[i].next_entry->prev_entry = &ce[i];
        __jit_debug_descriptor.first_entry = &ce[i];
        __jit_debug_descriptor.relevant_entry = &ce[i];
        __jit_debug_descriptor.action_flag = 1;
        __jit_debug_register_code();
    }
    double t = now() - t0;
    *images = count_images();
    for (size_t i = 0; i < n; i++) {       /* unregister, so later runs start clean */
        __jit_debug_descriptor.first_entry = ce[i].next_entry;
        __jit_debug_descriptor.relevant_entry = &ce[i];
        __jit_debug_descriptor.action_flag = 2;
    }
    __jit_debug_descriptor.first_entry = NULL;
    for (size_t i = 0; i < n; i++)
        jh__buf_free(&bufs[i]);
    free(es), free(ls), free(ce), free(bufs), free(names);
    munmap(code, n * FN);
    return t;
}

static double run_mode(const char *mode, size_t n, size_t *images)
{
    if (!strcmp(mode, "single"))
        return run_single(n, images);
    return run_ours(n, !strcmp(mode, "defer"), images);
}

int main(int argc, char **argv)
{
    size_t images;
    const char *g = getenv("JH_BENCH_GDB_GAP");
    gap = g ? strtoul(g, NULL, 10) % (FN - 6) : 0;
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "--run")) {
        size_t n = strtoul(argv[2], NULL, 10);
        do_remove = argc == 5 && !strcmp(argv[4], "remove");
        double t = run_mode(argv[3], n, &images);
        if (do_remove)
            printf("%s %zu removals: %.3f s\n", argv[3], n, remove_ns * (double)n / 1e9);
        printf("%s %zu functions: %.3f s, %zu images, %.0f bytes per function\n", argv[3], n,
               t, images, (double)image_bytes / (double)n);
        return 0;
    }
    printf("gdb channel, in-process cost per function, no debugger attached\n");
    printf("%8s  %14s %7s %10s  %14s %7s %10s  %16s %7s  %s\n", "N", "add immediate", "images",
           "remove", "add deferred", "images", "remove", "peer: 1 img/fn", "images",
           "peer/immediate");
    static const size_t ns[] = { 1000, 10000, 100000 };
    for (size_t k = 0; k < 3; k++) {
        size_t n = ns[k], i1, i2, i3;
        double a = run_ours(n, 0, &i1) / (double)n * 1e9, ra = remove_ns;
        double b = run_ours(n, 1, &i2) / (double)n * 1e9, rb = remove_ns;
        double c = run_single(n, &i3) / (double)n * 1e9;
        printf("%8zu  %11.0f ns %7zu %7.0f ns  %11.0f ns %7zu %7.0f ns  %13.0f ns %7zu  %.2fx\n",
               n, a, i1, ra, b, i2, rb, c, i3, c / a);
    }
    printf("(images: what a debugger attaching now would read; gdb's cost per registration\n"
           " grows with that number, see bench/gdb.sh for runs under gdb)\n");
    return 0;
}
