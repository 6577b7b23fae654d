/*
 * test_jitdump.c — the jitdump channel through the public API, read back with the
 * bounds-checked reader that `jitherald check` uses (tools/lib, the reader library):
 *   - the header, the marker mapping perf looks for (r-x, private, in /proc/self/maps while
 *     open, gone after jh_close), file mode 0600;
 *   - [DEBUG_INFO][UNWINDING_INFO]LOAD per function, absolute line addresses plus the end
 *     sentinel, code bytes equal to the live code, unique indices, MOVE, re-LOAD on patch,
 *     CLOSE;
 *   - unwind data left out when perf's widened mapping would cover the next function;
 *   - fork: the child writes jit-<child>.dump with the live code, the parent's file is
 *     untouched by the child;
 *   - two contexts in one process share one file; 4 threads per context announce at once:
 *     every function arrives as a whole unit, one CLOSE when the last context closes;
 *   - records past the first 4 MiB window of the file, read while open and after close;
 *   - bad places: symlink, file owned by someone else, unwritable directory: jh_open still
 *     succeeds, the channel is off, the error reached the log callback.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "channels/jitdump_stats.h"
#include "fmt/arch.h"
#include "jitherald.h"
#include "lib/files.h"
#include "lib/jitdump_check.h"

static char dir[] = "/tmp/jh-test-jitdump.XXXXXX";
static char logbuf[4096];

static void logcb(void *arg, int level, const char *msg)
{
    (void)arg;
    (void)level;
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", msg);
}

/* push rbp; mov rbp,rsp; nop*N; pop rbp; ret */
static size_t emit(uint8_t *p, size_t nops)
{
    size_t n = 0;
    p[n++] = 0x55;
    p[n++] = 0x48; p[n++] = 0x89; p[n++] = 0xe5;
    for (size_t i = 0; i < nops; i++)
        p[n++] = 0x90;
    p[n++] = 0x5d;
    p[n++] = 0xc3;
    return n;
}

static jh_ctx *open_ctx(const char *d)
{
    jh_ctx *c = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_JITDUMP, .dir = d,
                            .flags = JH_OPT_IGNORE_ENV, .log = logcb };
    CHECK_EQ(jh_open(&c, &o), 0);
    return c;
}

static int add(jh_ctx *c, const char *name, uint8_t *code, size_t len, uint64_t *id)
{
    static const char *files[] = { "fib.mini", "lib.mini" };
    struct jh_line lines[] = { { 0, 3, 0, 0 }, { 4, 4, 0, 0 }, { 6, 10, 0, 1 } };
    struct jh_code k = { .sz = sizeof k, .name = name, .start = code, .size = len,
                         .files = files, .nfiles = 2, .lines = lines, .nlines = 3,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    return jh_code_add(c, &k, id);
}

static int marker_mapped(const char *path)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, path) && strstr(line, " r-xp "))
            found = 1;
    if (f)
        fclose(f);
    return found;
}

struct seen { int loads, debug, unwind, moves, closes; uint64_t idx[64]; };

static void read_back(const char *path, uint8_t *code, struct seen *s, int print)
{
    uint8_t *data;
    size_t len;
    memset(s, 0, sizeof *s);
    CHECK_EQ(jhr_read_file(path, &data, &len), 0);
    struct jhr_jd r;
    struct jhr_jd_stats st;
    int rc = jhr_jd_check(&r, data, len, print ? stdout : NULL, true, NULL, &st);
    CHECK_EQ(rc, 0);
    if (rc)
        fprintf(stderr, "%s: %s\n", path, r.err);
    CHECK_EQ(r.hdr.version, 1);
    CHECK_EQ(r.hdr.total_size, 40);
    CHECK_EQ(r.hdr.pid, getpid());
    CHECK_EQ(r.hdr.flags, 0);
    CHECK_EQ(r.hdr.elf_mach, JH__ARCH_HOST->e_machine);
    jhr_jd_open(&r, data, len);
    struct jhr_jd_rec rec;
    while (jhr_jd_next(&r, &rec) > 0) {
        switch (rec.id) {
        case JH__JD_CODE_LOAD:
            if (s->loads < 64)
                s->idx[s->loads] = rec.u.load.code_index;
            s->loads++;
            CHECK_EQ(rec.u.load.pid, getpid());
            /* the bytes perf will disassemble are the live ones */
            if (code && rec.u.load.code_addr >= (uintptr_t)code &&
                rec.u.load.code_addr < (uintptr_t)code + 4096)
                CHECK(!memcmp(rec.u.load.code, (void *)(uintptr_t)rec.u.load.code_addr,
                              rec.u.load.code_size));
            break;
        case JH__JD_CODE_DEBUG_INFO: {
            s->debug++;
            CHECK_EQ(rec.u.debug.nr_entry, 4);   /* 3 rows + the end sentinel */
            size_t pos = 0;
            struct jhr_jd_line l[4];
            for (int i = 0; i < 4; i++)
                CHECK_EQ(jhr_jd_debug_entry(&r, &rec, &pos, &l[i]), 0);
            CHECK_EQ(l[0].addr, rec.u.debug.code_addr);         /* absolute, no +0x40 */
            CHECK_EQ(l[1].addr, rec.u.debug.code_addr + 4);
            CHECK_EQ(l[1].lineno, 4);
            CHECK_STR(l[0].name, "fib.mini");
            CHECK_STR(l[2].name, "lib.mini");
            CHECK_EQ(l[3].lineno, 10);
            break;
        }
        case JH__JD_CODE_UNWINDING_INFO:
            s->unwind++;
            CHECK_EQ(rec.u.unwind.eh_frame_hdr_size, 20);
            CHECK_EQ(rec.u.unwind.mapped_size % 8, 0);
            break;
        case JH__JD_CODE_MOVE: s->moves++; break;
        case JH__JD_CODE_CLOSE: s->closes++; break;
        }
    }
    free(data);
}

static void test_channel(void)
{
    logbuf[0] = 0;
    uint8_t *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    jh_ctx *c = open_ctx(dir);
    CHECK_EQ(jh_channels(c), JH_JITDUMP);
    char path[300];
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0600);
    CHECK(marker_mapped(path));

    /* f1 at 0, f2 at 64, f3 at 0x400. f1's widened mapping (ALIGN_8(size) + unwind data)
     * would not reach f2 only if f2 were added first: add f2 first, then f1 must lose its
     * unwind data; f3 keeps it. */
    uint64_t id1, id2, id3;
    size_t n1 = emit(code, 2), n2 = emit(code + 64, 8), n3 = emit(code + 0x400, 20);
    CHECK_EQ(add(c, "f2", code + 64, n2, &id2), 0);
    CHECK_EQ(add(c, "f1", code, n1, &id1), 0);
    CHECK_EQ(add(c, "f3 with spaces", code + 0x400, n3, &id3), 0);
    /* patched: written again under the index it has (one row in perf report), its
     * records copied from those kept since its add (restamped), not encoded again */
    uint64_t reused = jh__jitdump_reused();
    code[0x404] = 0x90;
    CHECK_EQ(jh_code_patched(c, code + 0x404, 1), 0);
    CHECK_EQ(jh__jitdump_reused(), reused + 1);
    /* moved: f3 copied to 0x800; patched there: its records name the new place (encoded
     * again: what was kept is the old place's) */
    memcpy(code + 0x800, code + 0x400, n3);
    CHECK_EQ(jh_code_move(c, id3, code + 0x800), 0);
    code[0x805] = 0x90;
    CHECK_EQ(jh_code_patched(c, code + 0x805, 1), 0);
    CHECK_EQ(jh__jitdump_reused(), reused + 1);
    CHECK_EQ(jh_channels(c), JH_JITDUMP);

    struct seen s;
    read_back(path, code, &s, 0);
    CHECK_EQ(s.loads, 5);
    CHECK_EQ(s.debug, 5);
    CHECK_EQ(s.unwind, 4);          /* f1 left out */
    CHECK_EQ(s.moves, 1);
    CHECK_EQ(s.closes, 0);
    /* f2, f1, f3 under three indices; f3's patches again under f3's */
    CHECK(s.idx[0] != s.idx[1] && s.idx[1] != s.idx[2] && s.idx[0] != s.idx[2]);
    CHECK_EQ(s.idx[3], s.idx[2]);
    CHECK_EQ(s.idx[4], s.idx[2]);

    /* fork: the child restarts its own file and re-announces the 3 live functions */
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t id4;
        int rc = add(c, "child_fn", code + 0xc00, emit(code + 0xc00, 1), &id4);
        jh_close(c);
        _exit(rc == 0 ? 0 : 3);
    }
    int wst = 0;
    waitpid(pid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    char cpath[300];
    snprintf(cpath, sizeof cpath, "%s/jit-%d.dump", dir, (int)pid);
    uint8_t *cdata;
    size_t clen;
    CHECK_EQ(jhr_read_file(cpath, &cdata, &clen), 0);
    struct jhr_jd cr;
    struct jhr_jd_stats cst;
    CHECK_EQ(jhr_jd_check(&cr, cdata, clen, NULL, false, stderr, &cst), 0);
    CHECK_EQ(cr.hdr.pid, pid);
    CHECK_EQ(cst.loads, 4);         /* f1, f2, f3 (at its new place), child_fn */
    CHECK_EQ(cst.closes, 1);
    free(cdata);
    unlink(cpath);
    /* the parent's file got nothing from the child */
    read_back(path, code, &s, 0);
    CHECK_EQ(s.loads, 5);
    CHECK_EQ(s.closes, 0);

    jh_close(c);
    CHECK(!marker_mapped(path));
    read_back(path, code, &s, getenv("JH_VERBOSE") != NULL);
    CHECK_EQ(s.closes, 1);
    unlink(path);
    munmap(code, 8192);
}

static void test_refused(const char *what, const char *d)
{
    logbuf[0] = 0;
    jh_ctx *c = open_ctx(d);
    CHECK(c != NULL);
    CHECK_EQ(jh_channels(c), 0);
    if (!strstr(logbuf, "jitdump"))
        fprintf(stderr, "%s: log was: %s\n", what, logbuf);
    CHECK(strstr(logbuf, "jitdump") != NULL);
    /* the JIT carries on */
    uint8_t code[8];
    uint64_t id;
    CHECK_EQ(add(c, "f", code, emit(code, 2), &id), 0);
    jh_close(c);
}

static void test_bad_places(void)
{
    char path[300], sub[300];
    /* a symlink where the file goes */
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
    CHECK_EQ(symlink("/tmp/jh-victim-does-not-exist", path), 0);
    test_refused("symlink", dir);
    CHECK(access("/tmp/jh-victim-does-not-exist", F_OK) != 0);
    unlink(path);
    /* a file owned by someone else (we are root in CI; elsewhere a SKIP, the test exits 77) */
    if (geteuid() == 0) {
        int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0644);
        CHECK(fd >= 0);
        if (write(fd, "theirs", 6) != 6)
            CHECK(0);
        close(fd);
        CHECK_EQ(chown(path, 65534, 65534), 0);
        test_refused("foreign owner", dir);
        char buf[16] = { 0 };
        fd = open(path, O_RDONLY);
        CHECK(fd >= 0 && read(fd, buf, sizeof buf) == 6);   /* untouched: not truncated */
        CHECK_STR(buf, "theirs");
        close(fd);
        unlink(path);
    } else {
        SKIP_PART("not root: the foreign-owner case needs root to create such a file (CI "
                  "runs as root)");
    }
    /* the directory path is a regular file */
    snprintf(sub, sizeof sub, "%s/notadir", dir);
    int fd = open(sub, O_CREAT | O_WRONLY, 0600);
    close(fd);
    test_refused("not a directory", sub);
    unlink(sub);
}

struct worker { jh_ctx *c; uint8_t *code; int base; };

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 200; i++) {
        uint8_t *p = w->code + (size_t)(w->base + i) * 16;
        char name[32];
        snprintf(name, sizeof name, "w%d_%d", w->base, i);
        if (add(w->c, name, p, emit(p, 2), NULL) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_threads_two_contexts(void)
{
    uint8_t *code = mmap(NULL, 8 * 200 * 16, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    jh_ctx *c1 = open_ctx(dir), *c2 = open_ctx(dir);
    CHECK_EQ(jh_channels(c1), JH_JITDUMP);
    CHECK_EQ(jh_channels(c2), JH_JITDUMP);
    pthread_t t[8];
    struct worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){ i % 2 ? c2 : c1, code, i * 200 };
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        CHECK(rc == NULL);
    }
    char path[300];
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
    jh_close(c1);               /* c2 still uses the file: no CLOSE yet */
    uint8_t *data;
    size_t len;
    struct jhr_jd r;
    struct jhr_jd_stats st;
    CHECK_EQ(jhr_read_file(path, &data, &len), 0);
    CHECK_EQ(jhr_jd_check(&r, data, len, NULL, false, NULL, &st), 0);
    CHECK_EQ(st.loads, 1600);
    CHECK_EQ(st.debug, 1600);
    CHECK_EQ(st.closes, 0);
    free(data);
    jh_close(c2);
    CHECK_EQ(jhr_read_file(path, &data, &len), 0);
    int rc = jhr_jd_check(&r, data, len, NULL, false, NULL, &st);
    CHECK_EQ(rc, 0);
    if (rc)
        fprintf(stderr, "%s\n", r.err);
    CHECK_EQ(st.loads, 1600);
    CHECK_EQ(st.closes, 1);
    free(data);
    unlink(path);
    munmap(code, 8 * 200 * 16);
}

/* The records go through a 4 MiB window of the file that moves along as it grows
 * (src/channels/jitdump.c): 3,000 functions of 4 KiB, ~12 MiB, cross it twice and grow the
 * file ~30 times. Read back while open (the zeros ahead: "not written yet", the records
 * before them whole) and after jh_close (trimmed to the last record): every LOAD carries
 * its function's own bytes, in order. */
static void test_window(void)
{
    enum { N = 3000, SZ = 4096 };
    uint8_t *code = mmap(NULL, (size_t)N * SZ, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    jh_ctx *c = open_ctx(dir);
    CHECK_EQ(jh_channels(c), JH_JITDUMP);
    for (int i = 0; i < N; i++) {
        uint8_t *p = code + (size_t)i * SZ;
        size_t n = emit(p, SZ - 8);
        memset(p + 4, i & 0xff, SZ - 8);    /* each function's bytes its own */
        char name[32];
        snprintf(name, sizeof name, "big%d", i);
        CHECK_EQ(add(c, name, p, n, NULL), 0);
    }
    char path[300];
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
    for (int closed = 0; closed < 2; closed++) {
        uint8_t *data;
        size_t len;
        struct jhr_jd r;
        CHECK_EQ(jhr_read_file(path, &data, &len), 0);
        CHECK(len > (size_t)N * SZ);
        CHECK_EQ(jhr_jd_open(&r, data, len), 0);
        struct jhr_jd_rec rec;
        int loads = 0, rc;
        while ((rc = jhr_jd_next(&r, &rec)) > 0) {
            if (rec.id != JH__JD_CODE_LOAD)
                continue;
            uintptr_t want = (uintptr_t)code + (size_t)loads * SZ;
            CHECK_EQ(rec.u.load.code_addr, want);
            CHECK_EQ(rec.u.load.code_size, SZ - 2);
            CHECK(!memcmp(rec.u.load.code, (void *)want, SZ - 2));
            loads++;
        }
        CHECK_EQ(rc, 0);
        CHECK_EQ(loads, N);
        if (!closed)
            CHECK(r.unwritten > 0);         /* zeros written ahead, not yet trimmed */
        else
            CHECK_EQ(r.unwritten, 0);       /* trimmed: the file ends at CLOSE */
        free(data);
        if (!closed)
            jh_close(c);
    }
    unlink(path);
    munmap(code, (size_t)N * SZ);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_channel();
    test_threads_two_contexts();
    test_window();
    test_bad_places();
    rmdir(dir);
    return check_done();
}
