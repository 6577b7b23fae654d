/*
 * test_elfmap_rwx.c — code pages that stay writable and executable (JH_OPT_CODE_RWX, as
 * HotSpot, Mono and node keep theirs): elfmap maps its images over them as private RWX
 * file mappings, and the JIT goes on writing them. No write is lost (each lands in a
 * copy-on-write page of the process's own), patches run, new code written into a swapped
 * page runs and is named once announced, and a fork child never shares writable code with
 * its parent: each one's writes stay its own. Shared code pages are still left alone, and
 * a range mixing writable and read-only pages too. /proc/self/maps is the witness.
 * Run again under callgrind by tests/integration/elfmap_rwx_callgrind.sh, where a stale
 * translation would return an old value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"
#include <valgrind/valgrind.h>

typedef uint32_t fn_t(void);

static char dir[64] = "/tmp/jh-test-elfmap-rwx-XXXXXX";
static char logbuf[4096];

static void logger(void *arg, int level, const char *msg)
{
    (void)arg; (void)level;
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", msg);
}

static uint32_t call(const uint8_t *p)
{
    return ((fn_t *)(uintptr_t)p)();
}

/* Mapped from one of our images, private, read+write+exec. */
static int swapped_rwx(const void *addr)
{
    char perms[5], path[512];
    return ew_mapping_of(addr, perms, path, sizeof path) && !strcmp(perms, "rwxp") &&
           !strncmp(path, dir, strlen(dir)) && strstr(path, "/jit-");
}

static jh_ctx *open_ctx(unsigned flags)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir, .log = logger,
                            .flags = JH_OPT_IGNORE_ENV | flags, .engine = "rwx" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

static uint64_t add(jh_ctx *jh, const char *name, const uint8_t *p)
{
    struct jh_code c = { .sz = sizeof c, .name = name, .start = p, .size = 6 };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    return id;
}

/* The code at p (which returns v), announced: left where it is (not in an image), for the
 * reason the log gives, and it still runs. */
static void left_alone(jh_ctx *jh, uint8_t *p, uint32_t v, const char *reason)
{
    logbuf[0] = 0;
    add(jh, "left", p);
    char perms[5], path[512];
    CHECK(ew_mapping_of(p, perms, path, sizeof path) && !strstr(path, dir));
    CHECK(strstr(logbuf, reason) != NULL);
    CHECK_EQ(call(p), v);
}

int main(void)
{
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    jh_ctx *jh = open_ctx(JH_OPT_CODE_RWX);
    uint8_t *p = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    uint8_t *f = p, *g = p + 64, *h = p + 128, *k = p + 5 * pg;
    memset(p, 0xcc, 16 * pg);
    ew_emit_ret(f, 1);
    ew_emit_ret(g, 10);
    uint64_t idf = add(jh, "f", f), idg = add(jh, "g", g);
    /* swapped, writable as before, named with the same bytes */
    CHECK(swapped_rwx(f));
    if (!RUNNING_ON_VALGRIND)                   /* (windows are one page there) */
        CHECK(swapped_rwx(k));                  /* the rest of the JIT's mapping too */
    struct ew_fn wf = { f, 6, "f" }, wg = { g, 6, "g" }, wh = { h, 6, "h" };
    CHECK_EQ(ew_check_one(&wf, NULL, 0), EW_OK);
    CHECK_EQ(ew_check_one(&wg, NULL, 0), EW_OK);
    CHECK_EQ(call(f), 1);
    CHECK_EQ(call(g), 10);

    /* patched in place, without any mprotect: the write lands, the patch runs */
    ew_emit_ret(f, 2);
    CHECK_EQ(jh_code_patched(jh, f + 1, 4), 0);
    CHECK_EQ(call(f), 2);
    CHECK(swapped_rwx(f));
    CHECK_EQ(ew_check_one(&wf, NULL, 0), EW_OK);  /* the image has the new bytes */
    /* new code written into the swapped page, run before and after it is announced */
    ew_emit_ret(h, 30);
    CHECK_EQ(call(h), 30);
    uint64_t idh = add(jh, "h", h);
    CHECK_EQ(call(h), 30);
    CHECK_EQ(ew_check_one(&wh, NULL, 0), EW_OK);
    /* and into another page of the mapping, never announced: its bytes are the JIT's */
    ew_emit_ret(k, 40);
    CHECK_EQ(call(k), 40);

    /* fork: each process's writes stay its own, both ways */
    int to_child[2], to_parent[2];
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        char perms[5], path[512];
        bad += !ew_mapping_of(f, perms, path, sizeof path) || perms[3] != 'p';
        ew_emit_ret(f, 3);
        bad += jh_code_patched(jh, f + 1, 4) != 0;
        bad += call(f) != 3;
        bad += call(g) != 10;
        char go = 0;
        bad += write(to_parent[1], "r", 1) != 1;
        bad += read(to_child[0], &go, 1) != 1;
        bad += call(g) != 10;                   /* the parent's patch of g is not ours */
        bad += call(f) != 3;
        bad += call(k) != 40;
        _exit(bad);
    }
    char ready = 0;
    CHECK(pid > 0 && read(to_parent[0], &ready, 1) == 1);
    CHECK_EQ(call(f), 2);                       /* the child's patch is not ours */
    ew_emit_ret(g, 11);
    CHECK_EQ(jh_code_patched(jh, g + 1, 4), 0);
    CHECK_EQ(call(g), 11);
    CHECK_EQ(ew_check_one(&wg, NULL, 0), EW_OK);
    CHECK(write(to_child[1], "g", 1) == 1);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    CHECK_EQ(call(f), 2);
    CHECK_EQ(call(k), 40);

    /* removed: the pages stay the JIT's, writable, whatever backs them now */
    CHECK_EQ(jh_code_remove(jh, idf), 0);
    CHECK_EQ(jh_code_remove(jh, idg), 0);
    CHECK_EQ(jh_code_remove(jh, idh), 0);
    char perms[5], path[512];
    CHECK(ew_mapping_of(f, perms, path, sizeof path) && !strcmp(perms, "rwxp"));
    ew_emit_ret(f, 80);
    CHECK_EQ(call(f), 80);
    CHECK_EQ(call(k), 40);

    /* shared writable code (PHP's JIT buffer is MAP_SHARED|MAP_ANONYMOUS): left alone */
    uint8_t *s = mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED | MAP_ANONYMOUS,
                      -1, 0);
    CHECK(s != MAP_FAILED);
    ew_emit_ret(s, 50);
    left_alone(jh, s, 50, "shared");

    /* a function across a writable page and a read-only one: left anonymous, said once */
    uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    ew_emit_ret(m + pg - 3, 60);
    CHECK_EQ(mprotect(m + pg, pg, PROT_READ | PROT_EXEC), 0);
    left_alone(jh, m + pg - 3, 60, "mix writable and read-only");
    jh_close(jh);

    /* without the flag, RWX code is left alone, as before */
    jh = open_ctx(0);
    uint8_t *q = mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    CHECK(q != MAP_FAILED);
    ew_emit_ret(q, 70);
    left_alone(jh, q, 70, "the pages are writable");
    jh_close(jh);

    rm_tree(dir);
    return check_done();
}
