/*
 * test_elfmap_churn.c — elfmap under a tracing JIT's pattern (LuaJIT's): machine code in 64
 * KiB W^X areas allocated top-down, the next area mapped just below the last; each new
 * function patches an earlier one (a side trace linking to its parent); now and then
 * everything is flushed: the areas unmapped first, each function removed after. Never a
 * jh_flush. Checked from /proc/self/maps, the way perf and valgrind see it
 * (tests/support/elfmap_witness):
 *   - issue 13, item 3: when jh_code_add returns, the new function and the parent it just
 *     patched are named by the image mapped at their address, with identical bytes; and
 *     every live function is, at every check;
 *   - issue 13, item 4: files and mappings follow the live code, not its history: after
 *     each flush no mapping and no open file of ours is left, and on disk there are no more
 *     image files than the retention limit (set low here) plus the live windows'.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "channels/elfmap_tune.h"
#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"

#define AREA (64 * 1024)
#define MAX_AREAS 64
#define FLUSH_EVERY 150
#define CYCLES 8
#define KEEP 6
#define STUB 16

struct fn {
    uint8_t *p;
    size_t size;
    uint64_t id;
    char name[40];
};

static char dir[64];
static jh_ctx *jh;
static uint8_t *areas[MAX_AREAS];
static int nareas;
static size_t top;
static struct fn fns[FLUSH_EVERY];
static int nfns;
static uint32_t rng = 7;
static unsigned long serial;
static const char *const files[] = { "churn.lua" };

static uint32_t rnd(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

static uint8_t *area_of(const uint8_t *p)
{
    for (int i = 0; i < nareas; i++)
        if (p >= areas[i] && p < areas[i] + AREA)
            return areas[i];
    return NULL;
}

static void new_area(void)
{
    void *hint = nareas ? areas[nareas - 1] - AREA : NULL;
    uint8_t *a = mmap(hint, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED);
    memset(a, 0xcc, AREA);
    mprotect(a, AREA, PROT_READ | PROT_EXEC);
    areas[nareas++] = a;
    top = AREA - 64;            /* not flush with the end: see tests/programs/churn_rows.c */
}

static struct ew_fn wit(const struct fn *f)
{
    return (struct ew_fn){ f->p, f->size, f->name };
}

static int late_checks, late_bad;

static void trace(void)
{
    size_t size = 128 + (rnd() % 56) * 16;
    if (!nareas || top < size)
        new_area();
    uint8_t *a = areas[nareas - 1];
    top -= size;
    struct fn *f = &fns[nfns];
    f->p = a + top;
    f->size = size;
    mprotect(a, AREA, PROT_READ | PROT_WRITE);
    memset(f->p, 0x90, size - STUB);
    f->p[size - STUB] = 0xc3;
    memset(f->p + size - STUB + 1, 0xcc, STUB - 1);
    mprotect(a, AREA, PROT_READ | PROT_EXEC);
    serial++;
    snprintf(f->name, sizeof f->name, "TRACE_%lu churn.lua:%lu", serial, 10 + serial % 97);
    struct jh_line lines[2] = { { .offset = 0, .line = 10 }, { .offset = 16, .line = 11 } };
    struct jh_code c = { .sz = sizeof c, .name = f->name, .start = f->p, .size = size,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 2 };
    CHECK_EQ(jh_code_add(jh, &c, &f->id), 0);
    struct ew_fn w[2] = { wit(f) };
    int nw = 1;
    if (nfns) {
        struct fn *parent = &fns[rnd() % nfns];
        uint8_t *stub = parent->p + parent->size - STUB, *pa = area_of(stub);
        int32_t rel = (int32_t)(f->p - (stub + 5));
        mprotect(pa, AREA, PROT_READ | PROT_WRITE);
        stub[0] = 0xe9;
        memcpy(stub + 1, &rel, 4);
        mprotect(pa, AREA, PROT_READ | PROT_EXEC);
        CHECK_EQ(jh_code_patched(jh, stub, 5), 0);
        w[nw++] = wit(parent);
    }
    nfns++;
    late_checks += nw;
    for (int i = 0; i < nw; i++) {
        enum ew_verdict v = ew_check_one(&w[i], NULL, 0);
        if (v != EW_OK && late_bad++ < 5)
            fprintf(stderr, "%s: %s\n", w[i].name, ew_verdict_str(v));
    }
    ((void (*)(void))(void *)f->p)();           /* the code runs */
}

static void check_all(void)
{
    struct ew_fn w[FLUSH_EVERY];
    for (int i = 0; i < nfns; i++)
        w[i] = wit(&fns[i]);
    size_t counts[EW_NVERDICT];
    size_t ok = ew_check(w, (size_t)nfns, counts);
    if (ok != (size_t)nfns)
        fprintf(stderr, "live %d named %zu: anon %zu nofile %zu nosym %zu bytes %zu\n", nfns,
                ok, counts[EW_ANON], counts[EW_NOFILE], counts[EW_NOSYM], counts[EW_BYTES]);
    CHECK_EQ(ok, nfns);
}

/* Lines of /proc/self/maps, or open descriptors, naming our directory. */
static int ours_in_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, dir) != NULL;
    if (f)
        fclose(f);
    return n;
}

static int ours_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d))) {
        char p[300], t[512];
        snprintf(p, sizeof p, "/proc/self/fd/%s", de->d_name);
        ssize_t l = readlink(p, t, sizeof t - 1);
        if (l > 0) {
            t[l] = 0;
            n += strstr(t, dir) != NULL;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static int files_on_disk(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "find %s -name '*.elf' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static void flush_all(void)
{
    for (int i = 0; i < nareas; i++)
        munmap(areas[i], AREA);
    nareas = 0;
    for (int i = 0; i < nfns; i++)
        CHECK_EQ(jh_code_remove(jh, fns[i].id), 0);
    nfns = 0;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-test-churn-XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    jh__elfmap_keep(KEEP, 0);
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "churn" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    int max_maps = 0, max_files = 0;
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        for (int i = 0; i < FLUSH_EVERY; i++) {
            trace();
            if (i % 25 == 24)
                check_all();
        }
        int maps = ours_in_maps(), disk = files_on_disk();
        max_maps = maps > max_maps ? maps : max_maps;
        max_files = disk > max_files ? disk : max_files;
        /* the live windows' files are the ones mapped: at most one mapping each here */
        CHECK(disk <= KEEP + maps);
        CHECK(maps <= nareas);
        flush_all();
        CHECK_EQ(ours_in_maps(), 0);            /* nothing of freed code left mapped */
        CHECK_EQ(ours_open(), 0);               /* and no file of it held open */
        CHECK(files_on_disk() <= KEEP);
    }
    printf("%d traces over %d flushes: late %d of %d checks; at most %d mappings and %d files "
           "of ours at a time (retention %d)\n", CYCLES * FLUSH_EVERY, CYCLES, late_bad,
           late_checks, max_maps, max_files, KEEP);
    CHECK_EQ(late_bad, 0);
    CHECK_EQ(jh_channels(jh), JH_ELFMAP);
    jh_close(jh);
    jh__elfmap_keep(0, 0);
    rm_tree(dir);
    return check_done();
}
