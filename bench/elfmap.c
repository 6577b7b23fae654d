/*
 * elfmap.c (bench) — the elfmap channel in process.
 *
 *   bench/elfmap                 ns per jh_code_add (jh_flush included) for 1k/10k/100k
 *                                functions: elfmap beside its peer jitdump (and the perf
 *                                map, and no channel), plus the image files elfmap wrote:
 *                                how many, and their apparent and on-disk size per 1,000
 *                                functions beside the jitdump file's
 *   bench/elfmap --workload N S  the workload of bench/elfmap.sh: N small JIT functions
 *                                announced (channels from $JITHERALD), jh_flush, then all
 *                                called in turn for S seconds, for perf record to sample.
 *                                N a multiple of 256 fills its last page: jh_flush then
 *                                swaps every page (see "jh_flush" in docs/elfmap.md)
 *
 * The code is real: each function is `push rbp; mov rbp,rsp; mov ecx,K; 1: dec ecx; jnz 1b;
 * pop rbp; ret`, 16 bytes apart in pages made r-x before they are announced (W^X, as
 * elfmap wants), with a two-row line table and frame-pointer unwind info.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "jitherald.h"

#define STRIDE 16

static double now(void) { return bench_now_ns(); }

/* CPU time of this thread, for the per-function costs: the machines these run on are
 * shared, and wall time then measures the neighbours as much as the code. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint8_t *make_code(size_t n, uint32_t iters)
{
    size_t len = (n * STRIDE + 4095) & ~(size_t)4095;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    memset(p, 0xcc, len);
    for (size_t i = 0; i < n; i++) {
        uint8_t *c = p + i * STRIDE;
        static const uint8_t head[] = { 0x55, 0x48, 0x89, 0xe5, 0xb9 };   /* push; mov; mov ecx */
        memcpy(c, head, sizeof head);
        memcpy(c + 5, &iters, 4);
        static const uint8_t tail[] = { 0xff, 0xc9, 0x75, 0xfc, 0x5d, 0xc3 }; /* dec; jnz; pop; ret */
        memcpy(c + 9, tail, sizeof tail);
    }
    if (mprotect(p, len, PROT_READ | PROT_EXEC) != 0)
        return NULL;
    return p;
}

#define CODE_SIZE 15

static const char *src_files[] = { "bench.x" };

static int announce(jh_ctx *jh, uint8_t *code, size_t n, char (*names)[32])
{
    for (size_t i = 0; i < n; i++) {
        struct jh_line lines[2] = { { .offset = 0, .line = (uint32_t)(2 * i + 1) },
                                    { .offset = 9, .line = (uint32_t)(2 * i + 2) } };
        struct jh_code c = { .sz = sizeof c, .name = names[i], .start = code + i * STRIDE,
                             .size = CODE_SIZE, .files = src_files, .nfiles = 1, .lines = lines,
                             .nlines = 2, .unwind = JH_UNWIND_FRAME_POINTER,
                             .fp_push_end = 1, .fp_set_end = 4 };
        int err = jh_code_add(jh, &c, NULL);
        if (err)
            return err;
    }
    return jh_flush(jh);
}

static char (*make_names(size_t n))[32]
{
    char (*names)[32] = malloc(n * sizeof *names);
    for (size_t i = 0; names && i < n; i++)
        snprintf(names[i], sizeof names[i], "jitfn_%zu", i);
    return names;
}

static int workload(size_t n, double seconds)
{
    uint8_t *code = make_code(n, 2000);
    char (*names)[32] = make_names(n);
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .engine = "bench" };
    if (!code || !names || jh_open(&jh, &o) != 0)
        return 1;
    double t0 = now();
    if (announce(jh, code, n, names) != 0)
        return 1;
    fprintf(stderr, "workload: %zu functions announced in %.3f s (channels %#x)\n", n,
            (now() - t0) / 1e9, jh_channels(jh));
    double end = now() + seconds * 1e9;
    size_t calls = 0;
    while (now() < end)
        for (size_t i = 0; i < n; i++, calls++)
            ((void (*)(void))(void *)(code + i * STRIDE))();
    fprintf(stderr, "workload: %zu calls\n", calls);
    jh_close(jh);
    return 0;
}

/* The files a run left: how many, their apparent size (st_size: what tar, cp to a host
 * without holes, perf buildid-cache and debuginfod move) and what they hold on disk. */
struct files {
    size_t n;
    uint64_t apparent, disk;
};

static struct files count_files(const char *dir, const char *suffix)
{
    struct files f = { 0, 0, 0 };
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name), s = strlen(suffix);
        struct stat st;
        if (l > s && !strcmp(de->d_name + l - s, suffix) &&
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            f.n++;
            f.apparent += (uint64_t)st.st_size;
            f.disk += (uint64_t)st.st_blocks * 512;
        }
    }
    if (d)
        closedir(d);
    return f;
}

static void rm_rf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* ns per announcement (announce + jh_flush), best of `runs`. */
static double cost(unsigned channels, size_t n, int runs, struct files *files_out,
                   const char *suffix)
{
    char (*names)[32] = make_names(n);
    double best = -1;
    for (int r = 0; r < runs; r++) {
        char dir[64] = "/tmp/jh-bench-elfmap-XXXXXX";
        if (!mkdtemp(dir))
            break;
        uint8_t *code = make_code(n, 1);
        jh_ctx *jh;
        struct jh_options o = { .sz = sizeof o, .channels = channels, .dir = dir,
                                .flags = JH_OPT_IGNORE_ENV, .engine = "bench" };
        if (!code || jh_open(&jh, &o) != 0 || jh_channels(jh) != channels)
            break;
        double t0 = cpu_now();
        announce(jh, code, n, names);
        double t = (cpu_now() - t0) / (double)n;
        jh_close(jh);
        if (files_out)
            *files_out = count_files(dir, suffix);
        munmap(code, (n * STRIDE + 4095) & ~(size_t)4095);
        rm_rf(dir);
        if (best < 0 || t < best)
            best = t;
    }
    free(names);
    return best;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--workload"))
        return workload(strtoul(argv[2], NULL, 10), atof(argv[3]));
    if (argc > 1) {
        fprintf(stderr, "usage: %s [--workload NFUNCS SECONDS]\n", argv[0]);
        return 2;
    }
    printf("CPU ns per jh_code_add (best of 3, jh_flush included), %d-byte functions %d apart,\n"
           "W^X pages; elfmap beside jitdump, its peer for perf, and the perf map:\n\n",
           CODE_SIZE, STRIDE);
    printf("%9s %10s %10s %10s %10s %12s %14s\n", "functions", "none", "perfmap", "jitdump",
           "elfmap", "elfmap files", "elfmap/jitdump");
    size_t sizes[] = { 1000, 10000, 100000 };
    struct files ef[3], jf[3];
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        int runs = n >= 100000 ? 1 : 3;
        double none = cost(0, n, runs, NULL, NULL);
        double pm = cost(JH_PERFMAP, n, runs, NULL, NULL);
        char map[64];
        snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
        unlink(map);
        double jd = cost(JH_JITDUMP, n, runs, &jf[k], ".dump");
        double em = cost(JH_ELFMAP, n, runs, &ef[k], ".elf");
        printf("%9zu %10.0f %10.0f %10.0f %10.0f %12zu %13.2fx\n", n, none, pm, jd, em,
               ef[k].n, em / jd);
    }
    /* issue 29: an image's apparent size is what copies without hole support move */
    printf("\nFiles per 1,000 functions, KiB: elfmap's images beside the jitdump file\n"
           "(apparent: st_size, what tar, perf buildid-cache and debuginfod move; disk: "
           "blocks held):\n\n%9s %16s %12s %16s %12s\n", "functions", "elfmap apparent",
           "elfmap disk", "jitdump apparent", "jitdump disk");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        double per = 1000.0 / (double)sizes[k] / 1024.0;
        printf("%9zu %16.0f %12.0f %16.0f %12.0f\n", sizes[k], (double)ef[k].apparent * per,
               (double)ef[k].disk * per, (double)jf[k].apparent * per, (double)jf[k].disk * per);
    }
    return 0;
}
