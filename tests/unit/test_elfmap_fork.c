/*
 * test_elfmap_fork.c — elfmap writes code bytes into a window's file in place, and a page a
 * process has not written reads that file: after fork() the parent and the child share
 * such pages. So neither may change the code bytes of a file the other may run from:
 *   - the child patches its copy of g: its image goes to a file named with its own pid;
 *     the parent's g, whose page reads the shared file, keeps its code;
 *   - the parent patches f, which the child runs from the shared file without having
 *     written its page: the parent's image takes a new generation, and the child's f keeps
 *     its code.
 */
#include <fcntl.h>
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

typedef uint32_t fn_t(void);

/* The 6 bytes the file behind p's mapping holds for p. */
static int file_bytes(const void *p, uint8_t out[6])
{
    char path[512];
    struct ew_fn f = { p, 6, "" };
    ew_check_one(&f, path, sizeof path);
    FILE *m = fopen("/proc/self/maps", "r");
    char line[1024];
    unsigned long off = 0, start = 0;
    while (m && fgets(line, sizeof line, m)) {
        unsigned long s, e, o;
        if (sscanf(line, "%lx-%lx %*s %lx", &s, &e, &o) == 3 && (uintptr_t)p >= s &&
            (uintptr_t)p < e) {
            start = s;
            off = o;
            break;
        }
    }
    if (m)
        fclose(m);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? pread(fd, out, 6, (off_t)(off + ((uintptr_t)p - start))) : -1;
    if (fd >= 0)
        close(fd);
    return n == 6 ? 0 : -1;
}

/*
 * RWX code (JH_OPT_CODE_RWX) whose page a fork child runs from the shared file without
 * writing it; the parent then removes the code (its page anonymous memory again, in the
 * parent only; the window lives on with code on the next page) and writes new code on that
 * page: the file's bytes there must stay what the
 * child reads (a table beside the code, then the new code's place).
 */
static void removed_after_fork(const char *dir)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_CODE_RWX, .engine = "fork" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 0xcc, 2 * pg);
    ew_emit_ret(p, 1);
    ew_emit_ret(p + pg, 3);                        /* h: keeps the image window alive */
    static const char table[] = "a table the JIT keeps beside its code";
    memcpy(p + pg / 2, table, sizeof table);
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = p, .size = 6 };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    struct jh_code ch = { .sz = sizeof ch, .name = "h", .start = p + pg, .size = 6 };
    CHECK_EQ(jh_code_add(jh, &ch, NULL), 0);
    struct ew_fn wf = { p, 6, "f" };
    CHECK_EQ(ew_check_one(&wf, NULL, 0), EW_OK);

    int to_child[2];
    CHECK(pipe(to_child) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        char go = 0;
        int bad = read(to_child[0], &go, 1) != 1;
        bad += memcmp(p + pg / 2, table, sizeof table) != 0;
        bad += ((fn_t *)(void *)p)() != 1;
        _exit(bad);
    }
    CHECK(pid > 0);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    ew_emit_ret(p + pg / 2, 2);                    /* over the parent's own table */
    c.name = "g";
    c.start = p + pg / 2;
    CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    CHECK_EQ(((fn_t *)(void *)(p + pg / 2))(), 2);
    struct ew_fn wg = { p + pg / 2, 6, "g" };
    CHECK_EQ(ew_check_one(&wg, NULL, 0), EW_OK);
    CHECK(write(to_child[1], "g", 1) == 1);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    jh_close(jh);
    munmap(p, 2 * pg);
}

int main(void)
{
    char dir[64] = "/tmp/jh-test-elfmap-fork-XXXXXX";
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "fork" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    /* f and g 4 MiB apart: in image windows of their own, so that what the child does for
     * g's window leaves f's page as fork left it */
    size_t len = 6u << 20;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    uint8_t *f = p, *g = p + (4u << 20);
    memset(f, 0xcc, pg);
    memset(g, 0xcc, pg);
    ew_emit_ret(f, 1);
    ew_emit_ret(g, 10);
    CHECK_EQ(mprotect(p, len, PROT_READ | PROT_EXEC), 0);
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = f, .size = 6 };
    CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    c.name = "g";
    c.start = g;
    CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    char parent_file[512];
    struct ew_fn wf = { f, 6, "f" }, wg = { g, 6, "g" };
    CHECK_EQ(ew_check_one(&wf, parent_file, sizeof parent_file), EW_OK);
    CHECK_EQ(ew_check_one(&wg, NULL, 0), EW_OK);
    uint8_t g_orig[6], now[6];
    memcpy(g_orig, g, 6);

    int to_child[2], to_parent[2];
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        /* the child patches g (its own copy of g's page) and tells jitherald */
        mprotect(g, pg, PROT_READ | PROT_WRITE);
        ew_emit_ret(g, 20);
        mprotect(g, pg, PROT_READ | PROT_EXEC);
        bad += jh_code_patched(jh, g + 1, 4) != 0;
        bad += ((fn_t *)(void *)g)() != 20;
        char child_file[512], want[64];
        bad += ew_check_one(&wg, child_file, sizeof child_file) != EW_OK;
        snprintf(want, sizeof want, "/jit-%d-", (int)getpid());
        bad += !strstr(child_file, want);           /* in a file of the child's own */
        char go = 0;
        bad += write(to_parent[1], "r", 1) != 1;
        bad += read(to_child[0], &go, 1) != 1;
        /* the parent patched f meanwhile: the child never wrote f's page, which still
         * reads the parent's first file, and must still hold the code the child got */
        bad += ((fn_t *)(void *)f)() != 1;
        _exit(bad);
    }
    char ready = 0;
    CHECK(pid > 0 && read(to_parent[0], &ready, 1) == 1);
    /* the child's patch reached neither the parent's g nor the parent's file */
    CHECK_EQ(((fn_t *)(void *)g)(), 10);
    CHECK_EQ(file_bytes(g, now), 0);
    CHECK(!memcmp(now, g_orig, 6));
    /* the parent patches f while the child runs from the shared file */
    CHECK_EQ(mprotect(f, pg, PROT_READ | PROT_WRITE), 0);
    ew_emit_ret(f, 4);
    CHECK_EQ(mprotect(f, pg, PROT_READ | PROT_EXEC), 0);
    CHECK_EQ(jh_code_patched(jh, f + 1, 4), 0);
    CHECK_EQ(((fn_t *)(void *)f)(), 4);
    CHECK_EQ(ew_check_one(&wf, NULL, 0), EW_OK);  /* named, with its new bytes */
    char gen_file[512];
    ew_check_one(&wf, gen_file, sizeof gen_file);
    CHECK(strcmp(gen_file, parent_file) != 0);   /* from a new generation of the image */
    CHECK(write(to_child[1], "g", 1) == 1);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    jh_close(jh);
    removed_after_fork(dir);
    rm_tree(dir);
    return check_done();
}
