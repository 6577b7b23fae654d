/*
 * test_auditlog_signal.c — jh_log_memory / jh_log_event from a signal handler (a VM's
 * profiler, its crash handler) that interrupts a thread while that thread holds the audit
 * log's grow lock: growing the file (here every time: preparing ahead is off, and this
 * program's own fallocate raises the signal inside the growth), or inside fork()'s window
 * (the fork handler holds it). The handler's record cannot wait for the lock its own
 * thread holds: it is dropped and counted, the thread carries on, and the log reads back
 * whole (the reader `jitherald log` uses). A signal raised while a writer prepares the file
 * ahead (this program's pwritev, the zeros, raises it there) is held until the preparation
 * is over: its records are all kept. And a thread cancelled (pthread_cancel) at one of those
 * calls, a cancellation point, while it holds the lock: it is cancelled at its next
 * cancellation point instead, outside, and the others log on. And a fork child whose first
 * jitherald call is a signal handler's jh_log_event: the child's log starts there without
 * a single allocation or thread (this program's malloc family and pthread_create count
 * them), holds the event and the code that was live, and the other channels' files start
 * at the child's next call.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "jitherald.h"
#include "lib/auditlog_read.h"

static char dir[256];

/* What the child saw, for the parent: in a shared mapping. */
struct seen {
    int in_grow, outside, in_fork, grows, prepares, in_prepare, after_prepare, bad_returns;
    int allocs, threads, errno_kept, dump_early, grandchild;
    size_t handler_stack;       /* bytes of the alternate stack the first call used */
};
static struct seen *seen;
static jh_ctx *ctx;
static _Thread_local int raise_in_grow;
static _Thread_local int raise_in_prepare;
static _Thread_local int cancel_here;   /* the library's next fallocate or pwritev cancels */

/* The thread asks for its own cancellation inside the library's call, and reaches a
 * cancellation point there, as a cancel from another thread would be acted on. */
static void cancel_now(void)
{
    if (cancel_here) {
        cancel_here = 0;
        pthread_cancel(pthread_self());
        pthread_testcancel();
    }
}
static volatile sig_atomic_t in_handler, in_fallocate, in_fork, in_prepare, raised_in_prepare;

static struct { uint32_t n; char what[12]; } small = { 0, "handler" };

static void on_usr1(int sig)
{
    (void)sig;
    in_handler = 1;
    bool after_prepare = !in_prepare && raised_in_prepare;
    const char *what = in_fallocate ? "in_grow" : in_fork ? "in_fork" : in_prepare ? "in_prepare"
                     : after_prepare ? "after_prepare" : "outside";
    if (in_fallocate)
        seen->in_grow++;
    else if (in_fork)
        seen->in_fork++;
    else if (in_prepare)
        seen->in_prepare++;
    else if (after_prepare)
        seen->after_prepare++;
    else
        seen->outside++;
    raised_in_prepare = 0;
    struct jh_attr a = { "what", JH_ATTR_STR, { .s = what } };
    small.n++;
    seen->bad_returns += jh_log_event(ctx, "handler", &a, 1) != 0;
    static uint8_t big[4 << 20];
    if (in_fork) {              /* past what is allocated: this one must grow the file */
        seen->bad_returns += jh_log_memory(ctx, big, sizeof big, "big") != 0;
    } else if (in_prepare || after_prepare) {   /* past the mark: prepares again */
        seen->bad_returns += jh_log_memory(ctx, big, 300 << 10, "big") != 0;
    } else {
        seen->bad_returns += jh_log_memory(ctx, &small, sizeof small, "small") != 0;
    }
    in_handler = 0;
}

/* What a signal handler's call allocates or starts, while watched. Under a sanitizer its
 * runtime owns malloc and nothing is counted (the rest of the test runs the same). */
static volatile sig_atomic_t watch_alloc;
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static void alloc_seen(void)
{
    if (watch_alloc && seen)
        seen->allocs++;
}
void *malloc(size_t n) { alloc_seen(); return __libc_malloc(n); }
void *calloc(size_t n, size_t k) { alloc_seen(); return __libc_calloc(n, k); }
void *realloc(void *p, size_t n) { alloc_seen(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { alloc_seen(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { alloc_seen(); return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n)
{
    alloc_seen();
    *p = __libc_memalign(a, n);
    return *p ? 0 : ENOMEM;
}
void free(void *p)
{
    if (p)
        alloc_seen();
    __libc_free(p);
}
#endif

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (watch_alloc && seen)
        seen->threads++;
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
            dlsym(RTLD_NEXT, "pthread_create");
    return real(t, a, fn, arg);
}

/* The library's fallocate: the signal arrives while the writer grows the file. */
int fallocate(int fd, int mode, off_t off, off_t len)
{
    cancel_now();
    if (raise_in_grow && !in_handler) {
        seen->grows++;
        in_fallocate = 1;
        raise(SIGUSR1);
        in_fallocate = 0;
    }
    return (int)syscall(SYS_fallocate, fd, mode, off, len);
}

/* The library's zeros written ahead of the writers (prepare_ahead, under the grow lock). */
ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real)
        real = (ssize_t(*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev");
    cancel_now();
    if (raise_in_prepare && !in_handler) {
        seen->prepares++;
        in_prepare = raised_in_prepare = 1;
        raise(SIGUSR1);
        in_prepare = 0;
    }
    return real(fd, iov, iovcnt, off);
}

static void open_child_ctx(const char *engine, bool ahead)
{
    unsetenv("JITHERALD");
    unsetenv("JITHERALD_DIR");
    /* without it every growth is the writer's own, record by record */
    setenv("JITHERALD_AUDITLOG_HELPER", ahead ? "1" : "0", 1);
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir,
                            .engine = engine, .auditlog_limit = 64 << 20 };
    if (jh_open(&ctx, &o) != 0 || jh_channels(ctx) != JH_AUDITLOG)
        _exit(2);
    struct sigaction sa = { .sa_handler = on_usr1 };
    sigaction(SIGUSR1, &sa, NULL);
}

/* The child, killed if it hangs; 0 when it exited by itself. */
static int run_child(void (*body)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        body();
        _exit(0);
    }
    int status;
    CHECK(wait_child(pid, 30, &status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return pid;
}

static int read_log(const char *engine, pid_t pid, struct jhr_al *lf)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s-%d.jhlog", dir, engine, (int)pid);
    int rc = jhr_al_open(lf, path, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", path, err);
    CHECK_EQ(rc, 0);
    if (rc == 0) {
        CHECK_EQ(lf->cut + lf->bad + lf->resyncs, 0);
        CHECK(lf->closed);
        CHECK(!lf->limit_hit);
    }
    return rc;
}

static size_t count_events(const struct jhr_al *lf, const char *attr)
{
    size_t n = 0, len = strlen(attr);
    for (size_t i = 0; i < lf->nrecs; i++) {
        struct jhr_mp attrs;
        const char *s = "";
        uint32_t sl = 0;
        if (lf->recs[i].kind == JHR_AL_EVENT && jhr_mp_get(&lf->recs[i].map, "attrs", &attrs) == 0 &&
            jhr_mp_get_str(&attrs, "what", &s, &sl) && sl == len && !memcmp(s, attr, len))
            n++;
    }
    return n;
}

#define NBLOBS 24
#define BLOB (600u << 10)
static uint8_t blob[BLOB];

/* The writer logs 14 MiB in 600 KiB snapshots; the file grows each MiB, and each growth
 * brings the signal. After each snapshot the signal comes again, outside the growth. */
static void grow_body(void)
{
    open_child_ctx("grow", false);
    raise_in_grow = 1;
    for (int i = 0; i < NBLOBS; i++) {
        memset(blob, 'a' + i, sizeof blob);
        seen->bad_returns += jh_log_memory(ctx, blob, sizeof blob, "blob") != 0;
        raise(SIGUSR1);
    }
    raise_in_grow = 0;
    jh_close(ctx);
}

static void test_in_grow(void)
{
    memset(seen, 0, sizeof *seen);
    pid_t pid = run_child(grow_body);
    CHECK(seen->grows >= 12);
    CHECK_EQ(seen->in_grow, seen->grows);
    CHECK_EQ(seen->outside, NBLOBS);
    CHECK_EQ(seen->bad_returns, 0);
    struct jhr_al lf;
    if (read_log("grow", pid, &lf) != 0)
        return;
    /* the handler's records inside the growth dropped and counted, none lost otherwise */
    CHECK_EQ(lf.dropped, 2 * (uint64_t)seen->in_grow);
    CHECK_EQ(count_events(&lf, "in_grow"), 0);
    CHECK_EQ(count_events(&lf, "outside"), NBLOBS);
    size_t blobs = 0, smalls = 0;
    for (size_t i = 0; i < lf.nmems; i++) {
        const struct jhr_al_mem *m = &lf.mems[i];
        if (m->hint && !strcmp(m->hint, "blob") && m->size == BLOB) {
            bool same = true;           /* the snapshot's bytes, intact */
            for (size_t j = 0; j < BLOB && same; j += 4093)
                same = m->data[j] == 'a' + (int)blobs;
            CHECK(same);
            blobs++;
        } else if (m->hint && !strcmp(m->hint, "small")) {
            smalls++;
        }
    }
    CHECK_EQ(blobs, NBLOBS);
    CHECK_EQ(smalls, NBLOBS);
    jhr_al_free(&lf);
}

/* Registered before jh_open registers the library's: its prepare runs after the
 * library's (reverse order), while the library holds its locks. */
static void fork_prepare(void)
{
    in_fork = 1;
    raise(SIGUSR1);
    in_fork = 0;
}

static void fork_body(void)
{
    pthread_atfork(fork_prepare, NULL, NULL);
    open_child_ctx("fork", false);
    jh_log_event(ctx, "before", NULL, 0);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int status = 0;
    waitpid(pid, &status, 0);
    jh_log_event(ctx, "after", NULL, 0);
    jh_close(ctx);
}

static void test_in_fork(void)
{
    memset(seen, 0, sizeof *seen);
    pid_t pid = run_child(fork_body);
    CHECK_EQ(seen->in_fork, 1);
    CHECK_EQ(seen->bad_returns, 0);
    struct jhr_al lf;
    if (read_log("fork", pid, &lf) != 0)
        return;
    /* its event fits in the file as it is; its snapshot would grow it: dropped */
    CHECK_EQ(lf.dropped, 1);
    CHECK_EQ(count_events(&lf, "in_fork"), 1);
    jhr_al_free(&lf);
}

/* The writer prepares the file ahead about every 128 KiB: each time the signal comes while
 * it holds the lock to do so, and is held until the preparation is over. */
static void prepare_body(void)
{
    open_child_ctx("prepare", true);
    raise_in_prepare = 1;
    for (int i = 0; i < 160; i++)
        seen->bad_returns += jh_log_memory(ctx, blob, 64 << 10, "blob") != 0;
    raise_in_prepare = 0;
    jh_close(ctx);
}

static void test_in_prepare(void)
{
    memset(seen, 0, sizeof *seen);
    pid_t pid = run_child(prepare_body);
    CHECK(seen->prepares >= 20);    /* 10 MiB, a stretch of at most 256 KiB at a time */
    CHECK_EQ(seen->in_prepare, 0);
    CHECK_EQ(seen->after_prepare, seen->prepares);
    CHECK_EQ(seen->bad_returns, 0);
    struct jhr_al lf;
    if (read_log("prepare", pid, &lf) != 0)
        return;
    /* nothing dropped: the handler's records waited for no lock */
    CHECK_EQ(lf.dropped, 0);
    CHECK_EQ(count_events(&lf, "after_prepare"), (size_t)seen->prepares);
    CHECK_EQ(count_events(&lf, "in_prepare"), 0);
    size_t blobs = 0, bigs = 0;
    for (size_t i = 0; i < lf.nmems; i++) {
        blobs += lf.mems[i].hint && !strcmp(lf.mems[i].hint, "blob");
        bigs += lf.mems[i].hint && !strcmp(lf.mems[i].hint, "big");
    }
    CHECK_EQ(blobs, 160);
    CHECK_EQ(bigs, (size_t)seen->prepares);
    jhr_al_free(&lf);
}

/* A logging thread cancelled inside the grow lock: growing the file (ahead off: every
 * growth is the writer's, its fallocate) or preparing ahead (its pwritev). */
static void *cancelled_logger(void *arg)
{
    cancel_here = 1;
    for (;;) {
        jh_log_memory(ctx, blob, 4000, arg);
        pthread_testcancel();
    }
    return NULL;
}

static bool cancel_ahead;
static void cancel_body(void)
{
    open_child_ctx("cancel", cancel_ahead);
    pthread_t t;
    if (pthread_create(&t, NULL, cancelled_logger, "cancelled") != 0)
        _exit(4);
    void *res = NULL;
    pthread_join(t, &res);
    if (res != PTHREAD_CANCELED)
        _exit(5);
    for (int i = 0; i < 1000; i++)      /* 4 MB: past where the thread was cancelled */
        seen->bad_returns += jh_log_memory(ctx, blob, 4000, "after") != 0;
    jh_close(ctx);
}

static void test_cancelled(bool ahead)
{
    memset(seen, 0, sizeof *seen);
    cancel_ahead = ahead;
    pid_t pid = run_child(cancel_body);         /* fails if the child hangs */
    CHECK_EQ(seen->bad_returns, 0);
    struct jhr_al lf;
    if (read_log("cancel", pid, &lf) != 0)
        return;
    size_t after = 0;
    for (size_t i = 0; i < lf.nmems; i++)
        after += lf.mems[i].hint && !strcmp(lf.mems[i].hint, "after");
    CHECK_EQ(after, 1000);
    jhr_al_free(&lf);
}

/* ---- a fork child's first call, a signal handler's ---- */

static char dump_path[600];    /* the child's jitdump */

/* The handler runs on an alternate stack of ALT_STACK bytes above a guard page, painted
 * first, as a crash handler's would be (SIGSTKSZ is 8 KiB in glibc's static definition,
 * and the kernel's signal frame takes 1-3 KiB of it on x86-64 with AVX): the restart must
 * fit, and its depth below the handler's own frame is measured. */
#define ALT_STACK (16 << 10)
#define HANDLER_STACK_MAX 3072
#define ALT_PAINT 0xa5
static uint8_t *alt_lo;
static volatile uintptr_t handler_sp;

static void alt_stack_setup(void)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, page + ALT_STACK, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) != 0)
        _exit(8);
    alt_lo = m + page;
    memset(alt_lo, ALT_PAINT, ALT_STACK);
    stack_t ss = { .ss_sp = alt_lo, .ss_size = ALT_STACK };
    if (sigaltstack(&ss, NULL) != 0)
        _exit(9);
}

/* How deep the handler's callees went below its frame: the lowest byte no longer paint. */
static size_t alt_stack_depth(void)
{
    size_t lo = 0;
    while (lo < ALT_STACK && alt_lo[lo] == ALT_PAINT)
        lo++;
    uintptr_t low = (uintptr_t)(alt_lo + lo);
    return handler_sp > low ? handler_sp - low : 0;
}

static void on_usr2(int sig)
{
    (void)sig;
    char here;
    handler_sp = (uintptr_t)&here;
    int saved = errno;
    watch_alloc = 1;
    errno = EXDEV;
    struct jh_attr a = { "what", JH_ATTR_STR, { .s = "first" } };
    seen->bad_returns += jh_log_event(ctx, "handler", &a, 1) != 0;
    seen->errno_kept = errno == EXDEV;
    watch_alloc = 0;
    /* the child's jitdump waits for its next call: only the audit log restarts here */
    seen->dump_early = access(dump_path, F_OK) == 0;
    errno = saved;
}

static void forked_first_body(void)
{
    unsetenv("JITHERALD");
    unsetenv("JITHERALD_DIR");
    unsetenv("JITHERALD_ATTACH");
    setenv("JITHERALD_AUDITLOG_HELPER", "1", 1);
    /* standby: attachable, the control socket's thread started in each process; not
     * under TSan (die_after_fork) nor qemu-user (its own assertion), where a fork child
     * of a threaded process cannot start a thread (test_forked_first_in_handler says so) */
#ifdef __SANITIZE_THREAD__
    const bool attachable = false;
#else
    const bool attachable = !getenv("JH_QEMU_USER");
#endif
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG | JH_JITDUMP, .dir = dir,
                            .engine = "forkfirst", .auditlog_limit = 64 << 20,
                            .flags = attachable ? JH_OPT_STANDBY : 0 };
    if (jh_open(&ctx, &o) != 0 || jh_channels(ctx) != (JH_AUDITLOG | JH_JITDUMP))
        _exit(2);
    static const uint8_t fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        _exit(3);
    memcpy(code, fn, sizeof fn);
    memcpy(code + 64, fn, sizeof fn);
    struct jh_code c = { .sz = sizeof c, .name = "before_fork", .start = code, .size = sizeof fn };
    uint64_t id;
    if (jh_code_add(ctx, &c, &id) != 0)
        _exit(4);
    pid_t pid = fork();
    if (pid == 0) {
        snprintf(dump_path, sizeof dump_path, "%s/jit-%d.dump", dir, (int)getpid());
        alt_stack_setup();
        struct sigaction sa = { .sa_handler = on_usr2, .sa_flags = SA_ONSTACK };
        sigaction(SIGUSR2, &sa, NULL);
        raise(SIGUSR2);
        seen->handler_stack = alt_stack_depth();
        /* the child's first other call: the rest restarts */
        c.name = "in_child";
        c.start = code + 64;
        if (jh_code_add(ctx, &c, &id) != 0)
            _exit(5);
        char sock[600];
        snprintf(sock, sizeof sock, "%s/attach-%d.sock", dir, (int)getpid());
        if (access(dump_path, F_OK) != 0 || (attachable && access(sock, F_OK) != 0))
            _exit(6);
        jh_close(ctx);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        _exit(7);
    seen->grandchild = pid;
    jh_close(ctx);
    _exit(WEXITSTATUS(status));
}

static void test_forked_first_in_handler(void)
{
    memset(seen, 0, sizeof *seen);
    run_child(forked_first_body);
#ifdef __SANITIZE_THREAD__
    SKIP_PART("forked_first: the child's attach socket (a thread a fork child of a threaded "
              "process starts, which TSan refuses)");
#else
    if (getenv("JH_QEMU_USER"))
        SKIP_PART("forked_first: the child's attach socket (a thread a fork child of a "
                  "threaded process starts, which qemu-user asserts on)");
#endif
    CHECK_EQ(seen->bad_returns, 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    CHECK_EQ(seen->allocs, 0);
#endif
    CHECK_EQ(seen->threads, 0);
    CHECK(seen->errno_kept);
    fprintf(stderr, "forked_first: the restart used %zu bytes of the handler's stack\n",
            seen->handler_stack);
    /* a crash handler's alternate stack of SIGSTKSZ (8 KiB) keeps room for the kernel's
     * frame (1-3 KiB) and the handler's own; sanitizers' frames are bigger by design */
    CHECK(seen->handler_stack > 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    CHECK(seen->handler_stack <= HANDLER_STACK_MAX);
#endif
    CHECK(!seen->dump_early);
    struct jhr_al lf;
    if (!seen->grandchild || read_log("forkfirst", (pid_t)seen->grandchild, &lf) != 0)
        return;
    CHECK(lf.parent_pid != 0);
    CHECK_EQ(count_events(&lf, "first"), 1);
    CHECK_EQ(lf.dropped, 0);
    bool before = false, after = false;
    for (size_t i = 0; i < lf.nfns; i++) {
        before |= !strcmp(lf.fns[i].name, "before_fork") && lf.fns[i].code &&
                  lf.fns[i].code[0] == 0x55;
        after |= !strcmp(lf.fns[i].name, "in_child");
    }
    CHECK(before);                  /* the live code, bytes and all, in the child's log */
    CHECK(after);
    jhr_al_free(&lf);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-test-alsig.XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    seen = mmap(NULL, sizeof *seen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (seen == MAP_FAILED)
        SKIP("mmap");
    test_in_grow();
    test_in_fork();
    test_in_prepare();
    test_cancelled(false);
    test_cancelled(true);
    test_forked_first_in_handler();
    rm_tree(dir);
    return check_done();
}
