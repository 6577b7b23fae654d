/*
 * preload.c — libjitherald-run.so: every jitherald channel for a VM that already writes a
 * perf map or a jitdump, with no change to the VM.
 *
 *     $ MVM_JIT_PERF_MAP=1 jitherald run -c elfmap -- valgrind --tool=callgrind rakudo x.raku
 *     $ callgrind_annotate callgrind.out.*
 *     1,578,166 ( 0.14%)  ???:find_method(gen/moar/stage2/nqpmo.nqp:1391) [/tmp/jitherald-0/jit-4242-1.elf]
 *     $ jitherald run -c gdb -- gdb -ex run -ex bt --args node --perf-basic-prof --perf-prof app.js
 *     #0  0x00007fffc800733d in JS:*spin app.js:2:14 () at app.js:1
 *
 * `jitherald run` sets LD_PRELOAD to this library (beside libjitherald.so) and
 * JITHERALD_RUN to the channels; LD_PRELOAD=libjitherald-run.so JITHERALD_RUN=elfmap works
 * as well. In each process that loads it (every process the command starts: wrappers,
 * shells and the VM after their exec), a thread follows /tmp/perf-<pid>.map and the
 * jitdump the process maps executable, and announces each function through the ordinary
 * library (follow.c), under a lock the VM's own page-protection calls take too (guard.c).
 *
 * Environment: JITHERALD_RUN (channels: gdb, unwind, elfmap, auditlog, all; perfmap and
 * jitdump are the VM's own files and are refused), JITHERALD_RUN_STATS (a file to which
 * each process appends one line of counts at exit), JITHERALD_DEBUG=1 (the library's
 * diagnostics, and that line, on stderr). The library's JITHERALD_DIR is read as usual.
 */
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

jh_ctx *jhp_ctx, *jhp_rec;
struct jhp_stats jhp_st;

static unsigned channels;               /* 0: not configured, nothing runs */
static bool open_failed;
static struct jhp_fd wake = { -1, 0, 0 };
static pthread_t thread;
static bool running;
static atomic_bool stopping;
static bool debug;

/*
 * At exit the thread reads what the VM wrote before it, for at most DRAIN_MS: the lines
 * of the last functions a short run compiled reach the audit log (and its counts), and a
 * VM that writes a huge map and exits does not wait for all of it to be announced.
 * JITHERALD_RUN_DRAIN=1 waits for all of it (tests that count), =0 stops at once.
 */
#define DRAIN_MS 250
static enum { DRAIN_NONE, DRAIN_SOME, DRAIN_ALL } drain = DRAIN_SOME;
static _Atomic uint64_t drain_until;    /* jh__now_ns(), set with stopping */

bool jhp_stopping(void)
{
    if (!atomic_load_explicit(&stopping, memory_order_acquire) || drain == DRAIN_ALL)
        return false;
    return drain == DRAIN_NONE || jh__now_ns() > atomic_load(&drain_until);
}

void jhp_warn(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "jitherald run[%d]: %s\n", (int)getpid(), msg);
}

void jhp_fd_take(struct jhp_fd *f, int fd)
{
    f->fd = -1;
    if (fd < 0)
        return;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
    if (hi >= 0) {
        close(fd);
        fd = hi;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return;
    }
    f->fd = fd, f->dev = st.st_dev, f->ino = st.st_ino;
}

bool jhp_fd_ours(const struct jhp_fd *f)
{
    struct stat st;
    return f->fd >= 0 && fstat(f->fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

void jhp_fd_close(struct jhp_fd *f)
{
    if (jhp_fd_ours(f))
        close(f->fd);
    f->fd = -1;
}

void jhp_wake(void)
{
    /* still our eventfd, not a number the process closed and reused for a file of its own
     * (an eventfd takes 8 bytes or fails: nothing else) */
    if (jhp_fd_ours(&wake)) {
        uint64_t one = 1;
        ssize_t n = write(wake.fd, &one, sizeof one);
        (void)n;
    }
}

static unsigned parse_channels(const char *s)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        { "gdb", JH_GDB }, { "unwind", JH_UNWIND }, { "elfmap", JH_ELFMAP },
        { "auditlog", JH_AUDITLOG }, { "all", JH_GDB | JH_UNWIND | JH_ELFMAP | JH_AUDITLOG },
    };
    unsigned bits = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        bool known = false;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == n && !strncmp(s, names[i].name, n))
                bits |= names[i].bit, known = true;
        if (!known && n)
            jhp_warn("JITHERALD_RUN: '%.*s' is not a channel jitherald run can add "
                     "(gdb, unwind, elfmap, auditlog, all)", (int)n, s);
        s += n + (s[n] == ',');
    }
    return bits;
}

static void log_fn(void *arg, int level, const char *msg)
{
    (void)arg;
    if (level <= JH_LOG_WARN || debug)
        jhp_warn("%s", msg);
}

/*
 * The contexts, opened by the first announcement. With the audit log and another channel,
 * two: the tools' (jhp_ctx) and the record's (jhp_rec, the audit log alone), so that at
 * exit the record can be closed, which writes its `close` record (`jitherald log` then
 * says the process ended, not that it was cut), while the tools' stays open: a debugger,
 * callgrind's last dump and the unwinder still need the code named as long as the
 * process has threads (jhp_fini). With JITHERALD set, the library's own rule chooses the
 * channels: one context.
 */
static bool open_one(jh_ctx **ctx, unsigned bits)
{
    /* Debuggers hear of new code once per batch read (jh_flush in follower()), not once per
     * function: with gdb attached each registration is a stop, and a VM announces its
     * thousands of builtins at start (node: 2,400). */
    struct jh_options o = { .sz = sizeof o, .channels = bits, .engine = "run",
                            .log = log_fn, .gdb_batch = JH_GDB_DEFER };
    if (jh_open(ctx, &o) < 0 || !jh_channels(*ctx)) {
        jh_close(*ctx);
        *ctx = NULL;
    }
    return *ctx != NULL;
}

bool jhp_open(void)
{
    if (jhp_ctx || open_failed)
        return jhp_ctx != NULL;
    const char *env = getenv("JITHERALD");
    unsigned tools = channels & ~(unsigned)JH_AUDITLOG;
    bool split = !(env && *env) && tools && (channels & JH_AUDITLOG);
    if (!open_one(&jhp_ctx, split ? tools : channels)) {
        open_failed = true;
        return false;
    }
    if (split && !open_one(&jhp_rec, JH_AUDITLOG))
        jhp_warn("the audit log could not be opened: the other channels carry on");
    return true;
}

static void flush(void)
{
    if (jhp_ctx)
        jh_flush(jhp_ctx);
    if (jhp_rec)
        jh_flush(jhp_rec);
}

/* A jitdump the VM has just mapped (guard.c): followed from now on. */
static void follow_new_dump(void)
{
    char path[4096];
    if (jhp_take_dump_path(path, sizeof path))
        jhp_follow_dump(path);
}

static void *follower(void *arg)
{
    (void)arg;
    jhp_guard_thread_is_follower();
    jhp_follow_all();                   /* what the file held before we watched it */
    flush();
    while (!atomic_load(&stopping)) {
        struct pollfd p[2] = { { wake.fd, POLLIN, 0 }, { jhp_follow_inotify_fd(), POLLIN, 0 } };
        /* Events wake us; the timeout is only for liveness. A descriptor another thread
         * closes while we poll it does not wake poll() (the kernel keeps the file until
         * poll returns), and nobody can write to it any more: without a timeout, a VM that
         * closed every descriptor (close_range) while we waited hung at exit, in jhp_fini's
         * join, until something happened in /tmp (tests/run/sanitize.sh: 1 run in 6). */
        int r = poll(p, p[1].fd >= 0 ? 2 : 1, 250);
        if (r < 0 && errno != EINTR)
            break;
        /* the process closed our descriptors (a helper cleaning up before its work, as
         * Erlang's erl_child_setup does): it is not a VM, or it does not want us */
        if ((p[0].revents & POLLNVAL) || !jhp_fd_ours(&wake)) {
            if (debug)
                jhp_warn("the process closed jitherald run's descriptors: no longer following");
            wake.fd = -1;
            break;
        }
        if (r == 0)
            continue;
        if (p[0].revents) {
            uint64_t v;
            ssize_t n = read(wake.fd, &v, sizeof v);
            (void)n;
            follow_new_dump();
        }
        uint64_t before = jhp_st.announced + jhp_st.moved;
        jhp_follow_events();
        if (jhp_st.announced + jhp_st.moved != before)
            flush();
    }
    if (drain != DRAIN_NONE) {          /* what was written before exit (jhp_stopping) */
        follow_new_dump();
        jhp_follow_events();
        flush();
    }
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void start(double t0)
{
    jhp_fd_take(&wake, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    jhp_follow_init(getpid(), t0);
    atomic_store(&stopping, false);
    /* Signals are the VM's business: a process-directed one (kill, a profiler's timer)
     * must never land on this thread, whose handlers the VM did not expect to run here. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    running = wake.fd >= 0 && pthread_create(&thread, NULL, follower, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!running)
        jhp_warn("cannot start the follower thread: nothing is announced");
}

/* The child of a fork: the thread is the parent's, and so are the files; the code the
 * parent announced is inherited as the library says (jitherald.h, fork). A child that
 * writes its own map or dump gets them followed under its own pid. */
static void child(void)
{
    jhp_fd_close(&wake);
    jhp_follow_forget();
    memset(&jhp_st, 0, sizeof jhp_st);
    running = false;
    start(now());
}

static void stats_line(void)
{
    const char *path = getenv("JITHERALD_RUN_STATS");
    if (!(path && *path) && !debug)
        return;
    char exe[256] = "?";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 1] = 0;
    char line[1024];
    const struct jhp_stats *s = &jhp_st;
    snprintf(line, sizeof line, "pid=%d exe=%s map_lines=%llu dump_loads=%llu dump_moves=%llu "
             "dump_debug=%llu announced=%llu with_lines=%llu with_cfi=%llu cfi_refused=%llu "
             "replaced=%llu same=%llu "
             "moved=%llu unreadable=%llu malformed=%llu failed=%llu partial=%llu "
             "truncations=%llu\n", (int)getpid(), exe,
             (unsigned long long)s->map_lines, (unsigned long long)s->dump_loads,
             (unsigned long long)s->dump_moves, (unsigned long long)s->dump_debug,
             (unsigned long long)s->announced, (unsigned long long)s->with_lines,
             (unsigned long long)s->with_cfi, (unsigned long long)s->cfi_refused,
             (unsigned long long)s->replaced, (unsigned long long)s->same,
             (unsigned long long)s->moved, (unsigned long long)s->unreadable,
             (unsigned long long)s->malformed, (unsigned long long)s->failed,
             (unsigned long long)s->partial, (unsigned long long)s->truncations);
    if (debug)
        fprintf(stderr, "jitherald run: %s", line);
    if (path && *path) {
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            ssize_t w = write(fd, line, strlen(line));     /* one write: lines never tear */
            (void)w;
            close(fd);
        }
    }
}

__attribute__((constructor)) static void jhp_init(void)
{
    const char *ch = getenv("JITHERALD_RUN");
    const char *d = getenv("JITHERALD_DEBUG");
    debug = d && *d && strcmp(d, "0");
    if (!ch || !*ch)
        return;
    unsigned bits = parse_channels(ch);
    if (!bits)
        return;
    channels = bits;
    const char *dr = getenv("JITHERALD_RUN_DRAIN");
    drain = dr && !strcmp(dr, "1") ? DRAIN_ALL : dr && !strcmp(dr, "0") ? DRAIN_NONE : DRAIN_SOME;
    const char *fp = getenv("JITHERALD_RUN_FP");
    jhp_guess_fp = !(fp && !strcmp(fp, "0"));
    double t0 = now();
    /* The context is opened by the first announcement (jhp_open): a wrapper, a shell or a
     * helper that never writes a map opens no file of the library's. But the library's
     * fork handler is installed now, by a context with no channel, so that ours comes
     * after it: prepare handlers run last-registered first, so a fork takes the guard and
     * then the library's locks, the order the follower takes them in (found by TSan: the
     * other order deadlocks a fork against an announcement). */
    jh_ctx *none;
    struct jh_options no = { .sz = sizeof no, .flags = JH_OPT_IGNORE_ENV };
    if (jh_open(&none, &no) == 0)
        jh_close(none);
    jhp_guard_atfork();
    pthread_atfork(NULL, NULL, child);
    if (bits & JH_ELFMAP)
        atomic_store(&jhp_guard_on, true);
    start(t0);
}

__attribute__((destructor)) static void jhp_fini(void)
{
    if (!channels)
        return;
    if (running) {
        atomic_store(&drain_until, jh__now_ns() + (uint64_t)DRAIN_MS * 1000000);
        atomic_store_explicit(&stopping, true, memory_order_release);
        jhp_wake();
        pthread_join(thread, NULL);
        running = false;
    }
    stats_line();
    /* The record closes: nothing is added to it after the follower stopped. The tools'
     * context stays open: the VM's other threads may still run (exit runs destructors
     * while they do), and a debugger, callgrind's dump at exit and the unwinder still need
     * the code named; its files are closed by the kernel, its images stay for perf report.
     * A context with the audit log alone is a record too. The guard goes first: nothing
     * announces any more, and closing unmaps the log under the library's lock, which must
     * not then wait for the guard (the follower takes them in the other order: TSan). */
    atomic_store(&jhp_guard_on, false);
    if (jhp_rec) {
        jh_close(jhp_rec);
        jhp_rec = NULL;
    }
    if (jhp_ctx && jh_channels(jhp_ctx) == JH_AUDITLOG) {
        jh_close(jhp_ctx);
        jhp_ctx = NULL;
    }
    jhp_follow_fini();
}
