/*
 * test_api_contract.c — promises of include/jitherald.h that a careless JIT, a small
 * limit or an unlucky address once broke (issue 11):
 *   ids       -ENOENT for any id that is not live, with or without channels, also after
 *             every channel was switched off (item 16);
 *   ranges    a range ending at the top of the address space is one range, overlap checks
 *             and lookups included (item 18);
 *   CFI       a description a channel's encoder would refuse is refused by jh_code_add
 *             (-EINVAL), before any channel sees it (item 7);
 *   moves     an ordinary jh_code_move never switches the gdb channel off, also with eight
 *             threads adding, moving and removing (item 6);
 *   limits    a file-size limit makes a file channel report and stop, never kills the JIT
 *             with SIGXFSZ, for every channel that writes a file, also with 8 threads
 *             (item 5);
 *   contexts  two contexts with the same engine name each keep their own audit log while
 *             the other one writes (item 1: SIGBUS in the JIT).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

static char dir[64];
static uint8_t *code;           /* RWX: every channel but elfmap */
static uint8_t *rx;             /* r-x, as a W^X JIT leaves its code: elfmap swaps these */
enum { NCODE = 4096 };

static struct jh_options opts(unsigned channels)
{
    return (struct jh_options){ .sz = sizeof(struct jh_options), .channels = channels,
                                .dir = dir, .flags = JH_OPT_IGNORE_ENV };
}

static struct jh_code fn(const void *start, size_t size)
{
    return (struct jh_code){ .sz = sizeof(struct jh_code), .name = "f", .start = start,
                             .size = size };
}

/* ---- ids ---------------------------------------------------------------------------- */
static void ids_without_channels(void)
{
    jh_ctx *jh;
    struct jh_options o = opts(0);
    CHECK_EQ(jh_open(&jh, &o), 0);
    struct jh_code c = fn(code, 16);
    uint64_t a, b;
    CHECK_EQ(jh_code_add(jh, &c, &a), 0);
    CHECK_EQ(jh_code_add(jh, &c, &b), 0);       /* not stored: no overlap check */
    CHECK_EQ(jh_code_move(jh, a, code + 64), 0);
    CHECK_EQ(jh_code_remove(jh, a), 0);
    CHECK_EQ(jh_code_remove(jh, a), -ENOENT);   /* twice: not live any more */
    CHECK_EQ(jh_code_move(jh, a, code + 128), -ENOENT);
    CHECK_EQ(jh_code_remove(jh, b + 1000), -ENOENT);
    CHECK_EQ(jh_code_remove(jh, 0), -ENOENT);
    CHECK_EQ(jh_code_remove(jh, b), 0);
    jh_close(jh);
}

/* Every channel switched off by a failure: what was added stays removable, once. */
static void ids_after_channels_failed(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        struct rlimit r = { 0, 0 };
        setrlimit(RLIMIT_FSIZE, &r);            /* the jitdump's first record fails */
        jh_ctx *jh;
        struct jh_options o = opts(JH_JITDUMP);
        if (jh_open(&jh, &o) != 0)
            _exit(1);
        struct jh_code c = fn(code, 16);
        uint64_t a = 0, b = 0;
        int rc = jh_code_add(jh, &c, &a);
        if (rc != 0 || jh_channels(jh) != 0)
            _exit(2);                           /* the channel failed, the call did not */
        struct jh_code d = fn(code + 64, 16);
        if (jh_code_add(jh, &d, &b) != 0)
            _exit(3);
        if (jh_code_remove(jh, a) != 0 || jh_code_remove(jh, a) != -ENOENT)
            _exit(4);
        if (jh_code_remove(jh, b) != 0 || jh_code_remove(jh, b) != -ENOENT)
            _exit(5);
        jh_close(jh);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        fprintf(stderr, "ids after the channels failed: status %#x\n", status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- the top of the address space --------------------------------------------------- */
static void top_of_address_space(void)
{
    jh_ctx *jh;
    struct jh_options o = opts(JH_GDB);         /* gdb never reads the bytes */
    CHECK_EQ(jh_open(&jh, &o), 0);
    struct jh_code top = fn((const void *)(uintptr_t)0xfffffffffffff000ull, 0x1000);
    struct jh_code inside = fn((const void *)(uintptr_t)0xfffffffffffff800ull, 0x100);
    struct jh_code wraps = fn((const void *)(uintptr_t)0xfffffffffffff000ull, 0x1001);
    uint64_t id;
    CHECK_EQ(jh_code_add(jh, &wraps, NULL), -EINVAL);
    CHECK_EQ(jh_code_add(jh, &top, &id), 0);
    CHECK(jh_channels(jh) & JH_GDB);            /* its image could be built */
    CHECK_EQ(jh_code_add(jh, &inside, NULL), JH_EOVERLAP);
    uint64_t got = 0;
    size_t size = 0;
    CHECK_EQ(jh_lookup(jh, (const void *)(uintptr_t)0xffffffffffffffffull, &got, NULL, &size,
                       NULL, 0), 0);
    CHECK_EQ(got, id);
    CHECK_EQ(size, 0x1000);
    CHECK_EQ(jh_code_move(jh, id, (const void *)(uintptr_t)0xfffffffffffff001ull), -EINVAL);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    jh_close(jh);
}

/* ---- raw CFI ------------------------------------------------------------------------ */
static void bad_cfi(void)
{
    jh_ctx *jh;
    struct jh_options o = opts(JH_GDB | JH_UNWIND);
    CHECK_EQ(jh_open(&jh, &o), 0);
    unsigned live = jh_channels(jh);
    static const uint8_t set_loc[] = { 0x01, 0, 0, 0, 0, 0, 0, 0, 0 };  /* DW_CFA_set_loc */
    static const uint8_t unknown[] = { 0x3f };
    static const uint8_t past_end[] = { 0x02, 200 };                     /* advance_loc1 */
    static const uint8_t good[] = { 0x41, 0x0e, 0x10, 0x86, 0x02 };     /* +1: cfa+16, rbp */
    const uint8_t *bad[] = { set_loc, unknown, past_end };
    size_t len[] = { sizeof set_loc, sizeof unknown, sizeof past_end };
    for (int i = 0; i < 3; i++) {
        struct jh_code c = fn(code, 64);
        c.unwind = JH_UNWIND_CFI;
        c.cfi = bad[i];
        c.cfi_len = len[i];
        CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    }
    struct jh_code c = fn(code, 64);
    c.unwind = JH_UNWIND_CFI;
    c.cfi = good;
    c.cfi_len = sizeof good;
    CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    CHECK_EQ(jh_channels(jh), live);            /* nothing got switched off */
    jh_close(jh);
}

/* ---- moves under the gdb channel ---------------------------------------------------- */
static int gdb_off;
static void on_log(void *arg, int level, const char *msg)
{
    (void)arg;
    if (level == JH_LOG_ERROR && strstr(msg, "gdb")) {
        __atomic_store_n(&gdb_off, 1, __ATOMIC_RELAXED);
        fprintf(stderr, "unexpected: %s\n", msg);
    }
}

static void gdb_moves(void)
{
    jh_ctx *jh;
    struct jh_options o = opts(JH_GDB);
    o.log = on_log;
    CHECK_EQ(jh_open(&jh, &o), 0);
    uint64_t id[16];
    for (int i = 0; i < 16; i++) {
        struct jh_code c = fn(code + i * 64, 48);
        CHECK_EQ(jh_code_add(jh, &c, &id[i]), 0);
    }
    CHECK_EQ(jh_code_remove(jh, id[15]), 0);
    CHECK_EQ(jh_code_move(jh, id[0], code + 15 * 64), 0);
    CHECK(jh_channels(jh) & JH_GDB);
    jh_close(jh);
}

static jh_ctx *mt;
static void *mover(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t id[8] = { 0 };
    for (int n = 0; n < 3000; n++) {
        int k = n % 8, slot = t * 64 + k * 2;
        if (id[k] && n % 3 == 0) {
            jh_code_move(mt, id[k], code + (slot + (n / 8) % 2) * 32);
        } else {
            if (id[k])
                jh_code_remove(mt, id[k]);
            id[k] = 0;
            struct jh_code c = fn(code + slot * 32, 24);
            jh_code_add(mt, &c, &id[k]);
        }
    }
    return NULL;
}

static void gdb_moves_threads(void)
{
    struct jh_options o = opts(JH_GDB);
    o.log = on_log;
    CHECK_EQ(jh_open(&mt, &o), 0);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, mover, (void *)(intptr_t)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    CHECK(jh_channels(mt) & JH_GDB);
    jh_close(mt);
    CHECK_EQ(gdb_off, 0);
}

/* ---- file-size limits --------------------------------------------------------------- */
static void *writer(void *arg)
{
    jh_ctx *jh = arg;
    for (int i = 0; i < 200; i++) {
        struct jh_code c = fn(rx + (i % 64) * 64, 48);
        uint64_t id;
        if (jh_code_add(jh, &c, &id) == 0)
            jh_code_remove(jh, id);
        struct jh_attr a = { .key = "i", .kind = JH_ATTR_INT, .v.i = i };
        jh_log_event(jh, "e", &a, 1);
    }
    return NULL;
}

static void file_limits(void)
{
    static const unsigned chans[] = { JH_PERFMAP, JH_JITDUMP, JH_AUDITLOG, JH_ELFMAP };
    static const char *const names[] = { "perfmap", "jitdump", "auditlog", "elfmap" };
    static const rlim_t limits[] = { 0, 8, 512 * 1024 };
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 3; l++) {
            /* qemu-user answers a read of /proc/self/maps (elfmap reads it) from a file it
             * writes under the guest's file-size limit: SIGXFSZ there is qemu's, not ours */
            if (chans[c] == JH_ELFMAP && limits[l] < 65536 && getenv("JH_QEMU_USER")) {
                SKIP_PART("elfmap under a file-size limit below 64 KiB: qemu-user's stand-in "
                          "/proc/self/maps is a file it writes under that limit");
                continue;
            }
            for (int threads = 1; threads <= 8; threads += 7) {
                pid_t pid = fork();
                if (pid == 0) {
                    alarm(20);
                    struct rlimit r = { limits[l], limits[l] };
                    setrlimit(RLIMIT_FSIZE, &r);
                    jh_ctx *jh;
                    struct jh_options o = opts(chans[c]);
                    o.auditlog_limit = 4u << 20;
                    if (jh_open(&jh, &o) != 0)
                        _exit(1);
                    pthread_t t[8];
                    for (int i = 0; i < threads; i++)
                        pthread_create(&t[i], NULL, writer, jh);
                    for (int i = 0; i < threads; i++)
                        pthread_join(t[i], NULL);
                    jh_close(jh);
                    _exit(0);
                }
                int status;
                waitpid(pid, &status, 0);
                if (!WIFEXITED(status) || WEXITSTATUS(status))
                    fprintf(stderr, "%s, file-size limit %lu, %d thread(s): %s %d\n", names[c],
                            (unsigned long)limits[l], threads,
                            WIFSIGNALED(status) ? "killed by signal" : "exit",
                            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                char path[64];
                snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
                unlink(path);
            }
        }
    }
}

/* ---- two contexts, one engine name -------------------------------------------------- */
static _Atomic int logging = 1;
static void *events(void *arg)
{
    jh_ctx *jh = arg;
    struct jh_attr a = { .key = "n", .kind = JH_ATTR_UINT };
    while (atomic_load(&logging)) {
        a.v.u++;
        jh_log_event(jh, "tick", &a, 1);
    }
    return NULL;
}

static void same_engine(void)
{
    jh_ctx *a, *b;
    struct jh_options o = opts(JH_AUDITLOG);    /* engine NULL: "jit" for both */
    CHECK_EQ(jh_open(&a, &o), 0);
    pthread_t t;
    pthread_create(&t, NULL, events, a);
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(jh_open(&b, &o), 0);
        struct jh_attr x = { .key = "i", .kind = JH_ATTR_INT, .v.i = i };
        CHECK_EQ(jh_log_event(b, "b", &x, 1), 0);
        jh_close(b);
    }
    atomic_store(&logging, 0);
    pthread_join(t, NULL);
    jh_close(a);
    char path[128];
    snprintf(path, sizeof path, "%s/jit-%d.jhlog", dir, (int)getpid());
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);               /* A's log, whole: a header and events */
    CHECK(st.st_size > 4096);
    snprintf(path, sizeof path, "%s/jit-%d-20.jhlog", dir, (int)getpid());   /* A was 0 */
    CHECK_EQ(stat(path, &st), 0);               /* B's logs each got their own name */
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-contract-%d", (int)getpid());
    code = mmap(NULL, NCODE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    memset(code, 0xc3, NCODE);
    rx = mmap(NULL, NCODE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(rx, 0xc3, NCODE);
    mprotect(rx, NCODE, PROT_READ | PROT_EXEC);
    ids_without_channels();
    ids_after_channels_failed();
    top_of_address_space();
    bad_cfi();
    gdb_moves();
    gdb_moves_threads();
    file_limits();
    same_engine();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s /tmp/perf-%d.map", dir, (int)getpid());
    CHECK_EQ(system(cmd), 0);
    return check_done();
}
