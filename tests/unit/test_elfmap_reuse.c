/*
 * test_elfmap_reuse.c — elfmap's pages must behave as the memory the JIT allocated, after
 * the JIT is done with them (issue 22, defects 7-9):
 *   - a page re-mapped fresh by the JIT (munmap + mmap at the same address, the functions
 *     it held never removed) is named again when new code lands on it;
 *   - a page whose functions were all removed reads zeros after madvise(MADV_DONTNEED), as
 *     anonymous memory does, not the image's old bytes;
 *   - a sealed page (mseal) is left as it is, said once, and elfmap goes on naming the
 *     rest (before: "noexec file system?" and the channel switched off).
 * /proc/self/maps and the image files are the witness (tests/support/elfmap_witness.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"
#include <valgrind/valgrind.h>

#ifndef SYS_mseal
#define SYS_mseal 462
#endif

static char dir[64], logbuf[4096];
static size_t page;

static void logger(void *arg, int level, const char *msg)
{
    (void)arg; (void)level;
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", msg);
}

static jh_ctx *open_ctx(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir, .engine = "r",
                            .flags = JH_OPT_IGNORE_ENV, .log = logger };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

/* `mov eax, k; ret` at p, padded with int3 up to size. */
static void emit(uint8_t *p, uint32_t k, size_t size)
{
    memset(p, 0xcc, size);
    p[0] = 0xb8;
    memcpy(p + 1, &k, 4);
    p[5] = 0xc3;
}

static uint8_t *area(void *at, size_t len)
{
    void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
                   (at ? MAP_FIXED : 0), -1, 0);
    CHECK(p != MAP_FAILED);
    return p;
}

static uint64_t announce(jh_ctx *jh, const char *name, uint8_t *p, size_t size)
{
    struct jh_code c = { .sz = sizeof c, .name = name, .start = p, .size = size };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    return id;
}

static void test_remapped_page(void)
{
    jh_ctx *jh = open_ctx();
    uint8_t *a = area(NULL, 4 * page);
    emit(a, 1, 64);
    CHECK_EQ(mprotect(a, 4 * page, PROT_READ | PROT_EXEC), 0);
    announce(jh, "before", a, 64);
    struct ew_fn f = { a, 64, "before" };
    CHECK_EQ(ew_check_one(&f, NULL, 0), EW_OK);

    /* The JIT frees its area without telling, and gets a fresh one at the same place. */
    CHECK_EQ(munmap(a, 4 * page), 0);
    uint8_t *b = area(a, 4 * page);
    CHECK(b == a);
    emit(b + 0x800, 2, 64);             /* on the page "before" was on, not over it */
    CHECK_EQ(mprotect(b, 4 * page, PROT_READ | PROT_EXEC), 0);
    announce(jh, "after", b + 0x800, 64);
    struct ew_fn g = { b + 0x800, 64, "after" };
    char path[256] = "";
    enum ew_verdict v = ew_check_one(&g, path, sizeof path);
    if (v != EW_OK)
        fprintf(stderr, "remapped page: %s (%s)\n", ew_verdict_str(v), path);
    CHECK_EQ(v, EW_OK);
    CHECK_EQ(((int (*)(void))(b + 0x800))(), 2);
    jh_close(jh);
    munmap(b, 4 * page);
}

/* The JIT moves its area with mremap inside one image window (its pages keep the file
 * offsets of the old address) and gets a fresh area at the old address for new code: the
 * image's file must not take the new code at the old offsets, which the moved pages still
 * read (their bytes the JIT never wrote since: a table kept beside the code). */
static void test_moved_area(void)
{
    if (RUNNING_ON_VALGRIND)        /* (windows are one page there, and mremap emulated) */
        return;
    jh_ctx *jh = open_ctx();
    size_t len = 16 * page, win = (size_t)1 << 20;
    uint8_t *res = mmap(NULL, 2 * win, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(res != MAP_FAILED);
    uint8_t *a = (uint8_t *)(((uintptr_t)res + win - 1) & ~(uintptr_t)(win - 1));
    uint8_t *b = a + win / 2;       /* the same window */
    a = area(a, len);
    emit(a, 1, 64);
    static const char table[] = "the JIT's table, written before the code was announced";
    memcpy(a + page, table, sizeof table);
    CHECK_EQ(mprotect(a, len, PROT_READ | PROT_EXEC), 0);
    uint64_t id = announce(jh, "moved", a, 64);
    CHECK(mremap(a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, b) == b);
    CHECK_EQ(jh_code_move(jh, id, b), 0);
    uint8_t *c = area(a, len);      /* fresh code where the area was */
    CHECK(c == a);
    emit(c + page, 2, 64);          /* at the old address of the table's page */
    CHECK_EQ(mprotect(c, len, PROT_READ | PROT_EXEC), 0);
    announce(jh, "fresh", c + page, 64);
    CHECK(!memcmp(b + page, table, sizeof table));
    CHECK_EQ(((int (*)(void))b)(), 1);
    CHECK_EQ(((int (*)(void))(c + page))(), 2);
    struct ew_fn f[2] = { { b, 64, "moved" }, { c + page, 64, "fresh" } };
    CHECK_EQ(ew_check(f, 2, NULL), 2);
    jh_close(jh);
    munmap(res, 2 * win);
}

static void test_dontneed_gives_zeros(void)
{
    jh_ctx *jh = open_ctx();
    uint8_t *a = area(NULL, 2 * page);
    emit(a, 3, 64);
    emit(a + page, 4, 64);
    CHECK_EQ(mprotect(a, 2 * page, PROT_READ | PROT_EXEC), 0);
    uint64_t x = announce(jh, "x", a, 64);
    announce(jh, "y", a + page, 64);
    struct ew_fn f = { a, 64, "x" };
    CHECK_EQ(ew_check_one(&f, NULL, 0), EW_OK);

    CHECK_EQ(jh_code_remove(jh, x), 0);         /* the JIT is done with x's page */
    CHECK_EQ(madvise(a, page, MADV_DONTNEED), 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < page; i++)
        nonzero += a[i] != 0;
    CHECK_EQ(nonzero, 0);                       /* before: x's bytes, read from the image */
    /* y, on the next page and still live, is untouched and still named */
    struct ew_fn g = { a + page, 64, "y" };
    CHECK_EQ(ew_check_one(&g, NULL, 0), EW_OK);
    CHECK_EQ(((int (*)(void))(a + page))(), 4);
    jh_close(jh);
    munmap(a, 2 * page);
}

static void test_sealed_page(void)
{
    jh_ctx *jh = open_ctx();
    uint8_t *a = area(NULL, 2 * page);
    emit(a, 5, 64);
    emit(a + page, 6, 64);
    CHECK_EQ(mprotect(a, 2 * page, PROT_READ | PROT_EXEC), 0);
    if (syscall(SYS_mseal, a, page, 0) != 0) {
        if (errno == ENOSYS || errno == EINVAL) {
            SKIP_PART("this kernel has no mseal(2) (Linux >= 6.10): the sealed page not tested");
            jh_close(jh);
            return;
        }
        CHECK(!"mseal failed");
    }
    logbuf[0] = 0;
    announce(jh, "sealed", a, 64);
    CHECK(jh_channels(jh) & JH_ELFMAP);                 /* still on */
    CHECK(strstr(logbuf, "sealed") != NULL);            /* said, with the reason */
    CHECK(strstr(logbuf, "noexec") == NULL);
    announce(jh, "free", a + page, 64);
    struct ew_fn g = { a + page, 64, "free" };
    CHECK_EQ(ew_check_one(&g, NULL, 0), EW_OK);
    struct ew_fn f = { a, 64, "sealed" };
    CHECK_EQ(ew_check_one(&f, NULL, 0), EW_ANON);
    CHECK_EQ(((int (*)(void))a)(), 5);
    CHECK_EQ(((int (*)(void))(a + page))(), 6);
    fputs(logbuf, stdout);
    jh_close(jh);
}

int main(void)
{
    page = (size_t)sysconf(_SC_PAGESIZE);
    snprintf(dir, sizeof dir, "/tmp/jh-reuse-%d", (int)getpid());
    mkdir(dir, 0700);
    test_remapped_page();
    test_moved_area();
    test_dontneed_gives_zeros();
    test_sealed_page();
    CHECK_EQ(rm_tree(dir), 0);
    return check_done();
}
