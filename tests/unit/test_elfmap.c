/*
 * test_elfmap.c — the elfmap channel in process: which pages it swaps and which it leaves,
 * that no byte of code changes, and how it follows the JIT (new code in a page's free
 * tail, patches, removal and re-use, moves, a burst of thousands of functions, threads
 * compiling into shared pages). /proc/self/maps is the witness.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#include "check.h"
#include "base/files.h"
#include "minijit.h"
#include "channels/elfmap_tune.h"
#include "channels/pageswap.h"
#include "elfmap_witness.h"
#include <valgrind/valgrind.h>

static char dir[64];
static char logbuf[8192];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void logger(void *arg, int level, const char *msg)
{
    (void)arg; (void)level;
    pthread_mutex_lock(&log_lock);
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", msg);
    pthread_mutex_unlock(&log_lock);
}

static jh_ctx *open_ctx(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .log = logger, .engine = "t" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK_EQ(jh_channels(jh), JH_ELFMAP);
    return jh;
}

static int swapped(const void *addr)
{
    char perms[5], path[512];
    if (!ew_mapping_of(addr, perms, path, sizeof path))
        return 0;
    return !strcmp(perms, "r-xp") && !strncmp(path, dir, strlen(dir)) && strstr(path, "/jit-");
}

static int count_files(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^jit-.*\\.elf$'", dir);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p && fscanf(p, "%d", &n) != 1)
        n = 0;
    if (p)
        pclose(p);
    return n;
}

/* mov eax, imm32; ret */
static uint64_t add(jh_ctx *jh, const char *name, const void *code, size_t size)
{
    struct jh_code c = { .sz = sizeof c, .name = name, .start = code, .size = size };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    return id;
}

typedef uint32_t fn_t(void);

static void test_wx_page(jh_ctx *jh)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 0xcc, 2 * pg);
    ew_emit_ret(p, 11);
    ew_emit_ret(p + 64, 22);
    uint8_t before[8192];
    memcpy(before, p, 2 * pg);
    CHECK_EQ(mprotect(p, 2 * pg, PROT_READ | PROT_EXEC), 0);
    add(jh, "f11", p, 6);
    add(jh, "f22", p + 64, 6);
    CHECK(swapped(p));
    /* no code there, but part of a small mapping of the JIT's: mapped from the file with
     * the rest, so that it stays one mapping (mremap) */
    CHECK(swapped(p + pg) || RUNNING_ON_VALGRIND);
    CHECK(!memcmp(before, p, 2 * pg));
    CHECK_EQ(((fn_t *)(void *)p)(), 11);
    CHECK_EQ(((fn_t *)(void *)(p + 64))(), 22);

    /* New code in the page's free tail, the W^X way: copy-on-write of our file page. The
     * image follows in place: same file, the new symbol, the page's new bytes. */
    char old_path[512], path[512], perms[5];
    ew_mapping_of(p, perms, old_path, sizeof old_path);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_WRITE), 0);
    ew_emit_ret(p + 128, 33);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_EXEC), 0);
    uint64_t id33 = add(jh, "f33", p + 128, 6);
    CHECK(swapped(p));
    ew_mapping_of(p, perms, path, sizeof path);
    CHECK_STR(path, old_path);
    CHECK_EQ(((fn_t *)(void *)(p + 128))(), 33);
    CHECK_EQ(((fn_t *)(void *)p)(), 11);
    struct ew_fn w[3] = { { p, 6, "f11" }, { p + 64, 6, "f22" }, { p + 128, 6, "f33" } };
    CHECK_EQ(ew_check(w, 3, NULL), 3);

    /* Patched in place: the file's bytes follow, no flush needed. */
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_WRITE), 0);
    ew_emit_ret(p + 64, 44);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_EXEC), 0);
    CHECK_EQ(jh_code_patched(jh, p + 65, 4), 0);
    CHECK_EQ(((fn_t *)(void *)(p + 64))(), 44);
    CHECK_EQ(ew_check(w, 3, NULL), 3);
    char path2[512];
    ew_mapping_of(p, perms, path2, sizeof path2);
    CHECK_STR(path2, path);             /* a patch changes no symbol: same file */
    CHECK_EQ(jh_code_patched(jh, p + 500, 4), -ENOENT);

    /* Removed, then its bytes re-used for other code: the file still names f33 (perf reads
     * it for samples taken before), so the page moves to a new generation of the image:
     * same file name (perf keeps one row per surviving function), its own directory. */
    CHECK_EQ(jh_code_remove(jh, id33), 0);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_WRITE), 0);
    memset(p + 120, 0x90, 8);
    ew_emit_ret(p + 128, 55);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_EXEC), 0);
    uint64_t id55 = add(jh, "f55", p + 120, 14);
    CHECK_EQ(((fn_t *)(void *)(p + 120))(), 55);
    CHECK(swapped(p));
    char path3[512];
    ew_mapping_of(p, perms, path3, sizeof path3);
    w[2] = (struct ew_fn){ p + 120, 14, "f55" };
    CHECK_EQ(ew_check(w, 3, NULL), 3);
    if (RUNNING_ON_VALGRIND) {
        /* no history needed there: the same file, its image started again */
        CHECK_STR(path3, path);
    } else {
        CHECK(strcmp(path3, path) != 0);
        CHECK_STR(strrchr(path3, '/'), strrchr(path, '/'));
        CHECK(strstr(path3, "-g2/") != NULL);
        int fd = open(path, O_RDONLY);        /* the old generation: still there, f33 too */
        CHECK(fd >= 0);
        struct stat st;
        CHECK(fstat(fd, &st) == 0);
        uint8_t *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        CHECK(img != MAP_FAILED && memmem(img, (size_t)st.st_size, "f33", 4));
        munmap(img, (size_t)st.st_size);
        close(fd);
    }

    /* Exactly f55's range, another name: perf would merge the two into one row if the
     * files had the same name, so this generation gets a new one. */
    CHECK_EQ(jh_code_remove(jh, id55), 0);
    add(jh, "f66", p + 120, 14);
    char path4[512];
    ew_mapping_of(p, perms, path4, sizeof path4);
    if (!RUNNING_ON_VALGRIND)
        CHECK(strcmp(strrchr(path4, '/'), strrchr(path, '/')) != 0);
    w[2] = (struct ew_fn){ p + 120, 14, "f66" };
    CHECK_EQ(ew_check(w, 3, NULL), 3);
    CHECK_EQ(((fn_t *)(void *)(p + 120))(), 55);

    /* Moved: the new copy's page is swapped too. */
    uint8_t *q = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(q, p + 128, 6);
    CHECK_EQ(mprotect(q, pg, PROT_READ | PROT_EXEC), 0);
    uint64_t idm;
    struct jh_code c = { .sz = sizeof c, .name = "mover", .start = p + 192, .size = 6 };
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_WRITE), 0);
    memcpy(p + 192, p + 128, 6);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_EXEC), 0);
    CHECK_EQ(jh_code_add(jh, &c, &idm), 0);
    CHECK_EQ(jh_code_move(jh, idm, q), 0);
    CHECK_EQ(jh_flush(jh), 0);
    CHECK(swapped(q));
    CHECK_EQ(((fn_t *)(void *)q)(), 55);
    munmap(q, pg);
    /* freeing the memory under registered code is the JIT's business; unregister first */
    CHECK_EQ(jh_code_remove(jh, idm), 0);
}

/* The swap itself (src/pageswap.c): a file whose bytes are not the code's is caught
 * after the mmap, and the code is put back. */
static void test_swap_pages(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 0xcc, pg);
    ew_emit_ret(p, 5);
    uint8_t *code = malloc(pg);
    memcpy(code, p, pg);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_EXEC), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/swap-test", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    uint8_t *wrong = malloc(pg);
    memcpy(wrong, code, pg);
    wrong[1] = 6;                                   /* mov eax, 6 */
    CHECK(fd >= 0 && pwrite(fd, wrong, pg, 0) == (ssize_t)pg);
    CHECK_EQ(jh__vma_check(-1, (uintptr_t)p, (uintptr_t)p + pg, NULL, NULL, false), JH__VMA_OK);
    CHECK_EQ(jh__swap_pages((uintptr_t)p, pg, fd, 0, code, 0), -EIO);
    char perms[5], mpath[512];
    CHECK(ew_mapping_of(p, perms, mpath, sizeof mpath) && !strcmp(perms, "r-xp") && !mpath[0]);
    CHECK(!memcmp(p, code, pg));
    CHECK_EQ(((fn_t *)(void *)p)(), 5);
    /* the right bytes: swapped */
    CHECK(pwrite(fd, code, pg, 0) == (ssize_t)pg);
    CHECK_EQ(jh__swap_pages((uintptr_t)p, pg, fd, 0, code, 0), 0);
    CHECK(ew_mapping_of(p, perms, mpath, sizeof mpath) && !strcmp(mpath, path));
    CHECK_EQ(((fn_t *)(void *)p)(), 5);
    /* ours only when the caller says so; writable never */
    CHECK_EQ(jh__vma_check(-1, (uintptr_t)p, (uintptr_t)p + pg, NULL, NULL, false), JH__VMA_FOREIGN);
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
    CHECK_EQ(jh__vma_check(-1, (uintptr_t)p, (uintptr_t)p + pg, NULL, NULL, false), JH__VMA_WRITABLE);
    munmap(p, pg);
    CHECK_EQ(jh__vma_check(-1, (uintptr_t)p, (uintptr_t)p + pg, NULL, NULL, false), JH__VMA_UNMAPPED);
    close(fd);
    unlink(path);
    free(code);
    free(wrong);
}

/* A fork child's new code goes to files named with the child's pid; memory named with
 * prctl(PR_SET_VMA_ANON_NAME) is still anonymous memory. */
static void test_fork_and_named(jh_ctx *jh)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    pid_t pid = fork();
    if (pid == 0) {
        uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ew_emit_ret(p, 77);
        mprotect(p, pg, PROT_READ | PROT_EXEC);
        struct jh_code c = { .sz = sizeof c, .name = "child", .start = p, .size = 6 };
        char perms[5], path[512], want[64];
        snprintf(want, sizeof want, "/jit-%d-", (int)getpid());
        int ok = jh_code_add(jh, &c, NULL) == 0 && swapped(p) &&
                 ew_mapping_of(p, perms, path, sizeof path) && strstr(path, want) &&
                 ((fn_t *)(void *)p)() == 77;
        _exit(ok ? 0 : 1);
    }
    int st = -1;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ew_emit_ret(p, 78);
    if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, pg, "jitcode") != 0) {
        printf("PR_SET_VMA_ANON_NAME not supported: named anonymous memory not tested\n");
    } else {
        char perms[5], path[512];
        CHECK(ew_mapping_of(p, perms, path, sizeof path) && !strcmp(path, "[anon:jitcode]"));
    }
    mprotect(p, pg, PROT_READ | PROT_EXEC);
    add(jh, "named", p, 6);
    CHECK(swapped(p));
    CHECK_EQ(((fn_t *)(void *)p)(), 78);
}

static void test_left_alone(jh_ctx *jh)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    /* RWX: the JIT may be writing it right now. */
    uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    ew_emit_ret(p, 7);
    logbuf[0] = 0;
    add(jh, "rwx", p, 6);
    CHECK(!swapped(p));
    CHECK(strstr(logbuf, "writable") != NULL);
    CHECK_EQ(((fn_t *)(void *)p)(), 7);
    CHECK_EQ(jh_channels(jh), JH_ELFMAP);     /* a fallback, not a failure */

    /* A double-mapped code buffer (memfd: RW view + RX view): swapping the RX view would
     * cut it off from the writes through the other view. */
    int fd = memfd_create("jitcode", 0);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)pg) == 0);
    uint8_t *w = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    uint8_t *x = mmap(NULL, pg, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
    CHECK(w != MAP_FAILED && x != MAP_FAILED);
    ew_emit_ret(w, 8);
    logbuf[0] = 0;
    add(jh, "dual", x, 6);
    CHECK(!swapped(x));
    CHECK(strstr(logbuf, "shared") != NULL);
    ew_emit_ret(w + 64, 9);                      /* still reaches the executable view */
    CHECK_EQ(((fn_t *)(void *)(x + 64))(), 9);
    close(fd);
}

/* Code announced while its page could not be mapped over (still writable), then code on
 * the same page once it is r-x, in a window of its own (its first file): the image names
 * both, the one announced earlier too. */
static void test_left_then_named(jh_ctx *jh)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    /* far from the other tests' code, so that the window (1 MiB) is new: the middle of a
     * 64 MiB reservation of our own (a fixed address is not free under TSan, whose
     * interceptor then maps at 0) */
    size_t resv = 64u << 20;
    uint8_t *r = mmap(NULL, resv, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(r != MAP_FAILED);
    uint8_t *p = mmap(r + resv / 2, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
                      MAP_FIXED, -1, 0);
    CHECK(p == r + resv / 2);
    ew_emit_ret(p, 11);
    ew_emit_ret(p + 64, 12);
    uint64_t early = add(jh, "early", p, 6);
    CHECK(!swapped(p));
    CHECK_EQ(mprotect(p, pg, PROT_READ | PROT_EXEC), 0);
    uint64_t late = add(jh, "late", p + 64, 6);
    CHECK(swapped(p));
    struct ew_fn we = { p, 6, "early" }, wl = { p + 64, 6, "late" };
    CHECK_EQ(ew_check_one(&we, NULL, 0), EW_OK);
    CHECK_EQ(ew_check_one(&wl, NULL, 0), EW_OK);
    CHECK_EQ(((fn_t *)(void *)p)(), 11);
    CHECK_EQ(((fn_t *)(void *)(p + 64))(), 12);
    CHECK_EQ(jh_code_remove(jh, early), 0);
    CHECK(swapped(p));                          /* late still lives there */
    CHECK_EQ(jh_code_remove(jh, late), 0);
    CHECK(!swapped(p));                         /* no code of ours left: anonymous again */
    munmap(r, resv);
}

/* Thousands of functions announced back to back into one buffer: every one is named by
 * the image mapped at its address when jh_code_add returns, no jh_flush needed, and they
 * share one file (the window's), mapped as one run. */
static void test_burst(jh_ctx *jh)
{
    /* (under valgrind, where every add makes a file, fewer) */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = RUNNING_ON_VALGRIND ? 2000 : 5000;
    size_t len = n * 16, maplen = (len + pg - 1) / pg * pg;
    uint8_t *p = mmap(NULL, maplen + pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    /* inside one 1 MiB window (a window boundary is not what this is about) */
    uint8_t *base = (uint8_t *)(((uintptr_t)p + pg - 1) & ~(uintptr_t)(pg - 1));
    if (((uintptr_t)base & ((1u << 20) - 1)) + maplen > (1u << 20))
        base = (uint8_t *)(((uintptr_t)base + (1u << 20)) & ~(uintptr_t)((1u << 20) - 1));
    munmap(p, maplen + pg);
    p = mmap(base, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
             -1, 0);
    if (p == MAP_FAILED)
        p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 0xcc, maplen);
    for (size_t i = 0; i < n; i++)
        ew_emit_ret(p + i * 16, (uint32_t)i);
    CHECK_EQ(mprotect(p, maplen, PROT_READ | PROT_EXEC), 0);
    int files0 = count_files();
    static char names[5000][16];
    static struct ew_fn w[5000];
    size_t late = 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "b%zu", i);
        add(jh, names[i], p + i * 16, 6);
        w[i] = (struct ew_fn){ p + i * 16, 6, names[i] };
        if (i % 499 == 0)
            late += ew_check_one(&w[i], NULL, 0) != EW_OK;
    }
    CHECK_EQ(late, 0);
    int made = count_files() - files0;
    printf("burst: %zu functions on %zu pages -> %d image files\n", n, maplen / pg, made);
    /* One file for them all (the window's: it may be older than the burst when earlier code
     * was in the same window, and start a generation if the burst lands on removed code). */
    char first[512], last[512];
    CHECK_EQ(ew_check_one(&w[0], first, sizeof first), EW_OK);
    CHECK_EQ(ew_check_one(&w[n - 1], last, sizeof last), EW_OK);
    if (!RUNNING_ON_VALGRIND) {
        CHECK_STR(first, last);
        CHECK(made <= 2);
    } else {            /* one window per page there */
        CHECK((size_t)made <= maplen / pg + 2);
    }
    CHECK_EQ(ew_check(w, n, NULL), n);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += ((fn_t *)(void *)(p + i * 16))() != (uint32_t)i;
    CHECK_EQ(bad, 0);
}

/*
 * Issue 11, item 4: jh_flush runs outside the JIT's lock (docs/elfmap.md allows it) while a
 * JIT thread, under its own lock, patches a function that fills the end of a page and then
 * writes its next function below it (top-down, as LuaJIT allocates). The swap hook plays
 * that thread at the worst moment: after elfmap last compared the bytes, before it
 * replaces the page. Whatever elfmap does at flush, the JIT's bytes must survive.
 */
struct jit_writes {
    uint8_t *page;
    size_t pg;
    int fired;
};

static void jit_thread_writes(void *arg, uintptr_t lo, uintptr_t hi)
{
    struct jit_writes *w = arg;
    if (w->fired || (uintptr_t)w->page < lo || (uintptr_t)w->page >= hi)
        return;
    w->fired = 1;
    mprotect(w->page, w->pg, PROT_READ | PROT_WRITE);
    ew_emit_ret(w->page + w->pg - 64, 0x6bcc);       /* the patch */
    ew_emit_ret(w->page + w->pg - 128, 0x6bcd);      /* the next function, below */
    mprotect(w->page, w->pg, PROT_READ | PROT_EXEC);
}

static void test_flush_race(jh_ctx *jh)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *other = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(other != MAP_FAILED && p != MAP_FAILED);
    memset(p, 0xcc, pg);
    ew_emit_ret(other, 1);
    ew_emit_ret(p + pg - 64, 0x1111);                /* fills the page's end: "settled" */
    mprotect(other, pg, PROT_READ | PROT_EXEC);
    mprotect(p, pg, PROT_READ | PROT_EXEC);
    add(jh, "other", other, 6);
    uint64_t id = add(jh, "filler", p + pg - 64, 64);
    struct jit_writes w = { .page = p, .pg = pg };
    jh__elfmap_swap_hook(jit_thread_writes, &w);
    CHECK_EQ(jh_flush(jh), 0);                    /* outside the JIT's lock */
    jh__elfmap_swap_hook(NULL, NULL);
    if (!w.fired)                                 /* elfmap swapped nothing at flush: the */
        jit_thread_writes(&w, (uintptr_t)p, (uintptr_t)p + pg);  /* thread runs now */
    /* the JIT thread, still under its lock, announces what it did */
    CHECK_EQ(jh_code_patched(jh, p + pg - 64, 6), 0);
    add(jh, "next", p + pg - 128, 6);
    uint8_t want[6];
    ew_emit_ret(want, 0x6bcc);
    CHECK(!memcmp(p + pg - 64, want, 6));
    ew_emit_ret(want, 0x6bcd);
    CHECK(!memcmp(p + pg - 128, want, 6));
    CHECK_EQ(((fn_t *)(void *)(p + pg - 64))(), 0x6bcc);
    CHECK_EQ(((fn_t *)(void *)(p + pg - 128))(), 0x6bcd);
    CHECK(strstr(logbuf, "changed by") == NULL);
    CHECK_EQ(jh_code_remove(jh, id), 0);
}

/* How many mappings of /proc/self/maps lie in [lo, hi). */
static int mappings_in(const void *lo, const void *hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s < (uintptr_t)hi && e > (uintptr_t)lo)
            n++;
    }
    if (f)
        fclose(f);
    return n;
}

/*
 * Issue 11, item 10: mremap. A code mapping of up to 1 MiB is mapped from its image file
 * whole at its first code, so it stays one mapping: the JIT can still move it and grow it
 * (then jh_code_move). A bigger one is swapped page by page and so split: moving it works
 * from Linux 6.17 (which moves several mappings at once) and fails with EFAULT before;
 * growing it fails with EFAULT. Either way the JIT's code stays as it was and runs.
 */
static void test_mremap(jh_ctx *jh)
{
    if (RUNNING_ON_VALGRIND) {
        /* valgrind emulates mremap (one segment at a time), and elfmap's windows are one
         * page there: nothing of this holds under it */
        printf("under valgrind: mremap not tested\n");
        return;
    }
    size_t len = 64 * 1024, pg = (size_t)sysconf(_SC_PAGESIZE);
    /* between guard pages: not merged with a neighbour into a bigger mapping */
    uint8_t *g = mmap(NULL, len + 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *a = mmap(g + pg, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                      -1, 0);
    CHECK(g != MAP_FAILED && a != MAP_FAILED);
    memset(a, 0xcc, len);
    ew_emit_ret(a + 100, 1);
    ew_emit_ret(a + 8192, 2);
    CHECK_EQ(mprotect(a, len, PROT_READ | PROT_EXEC), 0);
    uint64_t id1 = add(jh, "m1", a + 100, 6), id2 = add(jh, "m2", a + 8192, 6);
    CHECK(swapped(a + 100) && swapped(a + 8192));
    CHECK_EQ(mappings_in(a, a + len), 1);

    uint8_t *dst = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *b = mremap(a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    CHECK(b == dst);
    if (b == MAP_FAILED)
        return;
    CHECK_EQ(((fn_t *)(void *)(b + 100))(), 1);
    CHECK_EQ(jh_code_move(jh, id1, b + 100), 0);
    CHECK_EQ(jh_code_move(jh, id2, b + 8192), 0);
    struct ew_fn w[2] = { { b + 100, 6, "m1" }, { b + 8192, 6, "m2" } };
    CHECK_EQ(ew_check(w, 2, NULL), 2);
    CHECK_EQ(mappings_in(b, b + len), 1);

    /* grown: one mapping, so the kernel can; the new pages read (no SIGBUS past the file) */
    uint8_t *c = mremap(b, len, 2 * len, MREMAP_MAYMOVE);
    CHECK(c != MAP_FAILED);
    if (c == MAP_FAILED)
        return;
    unsigned sum = 0;
    for (size_t i = len; i < 2 * len; i += 512)
        sum += c[i];
    (void)sum;
    CHECK_EQ(((fn_t *)(void *)(c + 8192))(), 2);
    CHECK_EQ(jh_code_move(jh, id1, c + 100), 0);
    CHECK_EQ(jh_code_move(jh, id2, c + 8192), 0);
    w[0].addr = c + 100;
    w[1].addr = c + 8192;
    CHECK_EQ(ew_check(w, 2, NULL), 2);
    CHECK_EQ(jh_code_remove(jh, id1), 0);
    CHECK_EQ(jh_code_remove(jh, id2), 0);
    munmap(c, 2 * len);

    /* 4 MiB: swapped page by page */
    size_t big = 4u << 20;
    uint8_t *d = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(d != MAP_FAILED);
    ew_emit_ret(d + 16, 3);
    ew_emit_ret(d + big / 2 + 16, 4);
    CHECK_EQ(mprotect(d, big, PROT_READ | PROT_EXEC), 0);
    uint64_t id3 = add(jh, "big1", d + 16, 6), id4 = add(jh, "big2", d + big / 2 + 16, 6);
    CHECK(swapped(d + 16) && swapped(d + big / 2 + 16));
    uint8_t *to = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *e = mremap(d, big, big, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    if (e == MAP_FAILED) {
        printf("mremap of a split code mapping: %s (before Linux 6.17)\n", strerror(errno));
        CHECK_EQ(errno, EFAULT);
        munmap(to, big);
        e = d;
    } else {
        CHECK_EQ(jh_code_move(jh, id3, e + 16), 0);
        CHECK_EQ(jh_code_move(jh, id4, e + big / 2 + 16), 0);
    }
    CHECK_EQ(((fn_t *)(void *)(e + 16))(), 3);
    CHECK_EQ(((fn_t *)(void *)(e + big / 2 + 16))(), 4);
    CHECK(mremap(e, big, 2 * big, MREMAP_MAYMOVE) == MAP_FAILED && errno == EFAULT);
    CHECK_EQ(((fn_t *)(void *)(e + 16))(), 3);
    CHECK_EQ(jh_code_remove(jh, id3), 0);
    CHECK_EQ(jh_code_remove(jh, id4), 0);
    munmap(e, big);
}

/* minijit: threads compiling into shared pages (announcing under the arena lock) while
 * others run the code. */
static jh_ctx *shared_jh;
static atomic_int thread_bad;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    mj_program *live[25];
    int nlive = 0;
    for (int k = 0; k < 25; k++) {
        char src[256], err[256];
        snprintf(src, sizeof src, "fn sq(x) { return x * x + %d }\nfn main(n) { return sq(n) + %d }",
                 t, k);
        mj_program *p = mj_compile(src, "w.mini", shared_jh, err, sizeof err);
        if (!p) {
            fprintf(stderr, "compile: %s\n", err);
            atomic_fetch_add(&thread_bad, 1);
            continue;
        }
        int64_t a = 7;
        if (mj_run(p, "main", &a, 1) != 49 + t + k)
            atomic_fetch_add(&thread_bad, 1);
        if (k % 3 == 0)
            mj_free(p);         /* freed code gets re-used by other threads' compiles */
        else
            live[nlive++] = p;
    }
    for (int i = 0; i < nlive; i++)
        mj_free(live[i]);
    return NULL;
}

static void test_threads(jh_ctx *jh)
{
    shared_jh = jh;
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    CHECK_EQ(atomic_load(&thread_bad), 0);
    CHECK_EQ(jh_channels(jh), JH_ELFMAP);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-test-elfmap-XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    test_swap_pages();
    jh_ctx *jh = open_ctx();
    test_wx_page(jh);
    test_left_alone(jh);
    test_left_then_named(jh);
    test_fork_and_named(jh);
    test_burst(jh);
    test_flush_race(jh);
    test_mremap(jh);
    test_threads(jh);
    jh_close(jh);
    if (logbuf[0])
        printf("log:\n%s", logbuf);
    rm_tree(dir);
    return check_done();
}
