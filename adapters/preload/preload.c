/*
 * preload.c — libjitherald-run.so: every jitherald channel for a VM that already writes a
 * perf map or a jitdump, with no change to the VM.
 *
 *     $ MVM_JIT_PERF_MAP=1 jitherald run -c elfmap -- valgrind --tool=callgrind rakudo x.raku
 *     $ callgrind_annotate callgrind.out.*
 *     1,578,166 ( 0.14%)  ???:find_method(gen/moar/stage2/nqpmo.nqp:1391) [/tmp/jitherald-0/jit-4242-1.elf]
 *     $ jitherald run -c gdb -- gdb -ex run -ex bt --args node --perf-basic-prof app.js
 *     #7  0x00007fffc8024d1c in JS:~kill node:internal/process/per_thread:202 () ...
 *
 * `jitherald run` sets LD_PRELOAD to this library (beside libjitherald.so) and
 * JITHERALD_RUN to the channels; LD_PRELOAD=libjitherald-run.so JITHERALD_RUN=elfmap works
 * as well. In each process that loads it (every process the command starts: wrappers,
 * shells and the VM after their exec), the VM is heard as it writes its perf map or
 * jitdump: the interposed write and stdio calls (hear.c) hand the bytes to a parser
 * (stream.c), and each complete line or record is announced through the ordinary library
 * (announce.c) before the VM's call returns, so the tools know the code before it runs.
 * A process that writes neither file costs a few instructions per write and opens nothing.
 *
 * Environment, read once here: JITHERALD_RUN (channels: gdb, unwind, elfmap, auditlog,
 * all; perfmap and jitdump are the VM's own files and are refused), JITHERALD_RUN_STATS (a
 * file to which each process appends one line of counts at exit), JITHERALD_RUN_FP=0 (no
 * frame described from the code's bytes, proven or not), JITHERALD_RUN_ROOT (the pid
 * `jitherald run` exec'd: it says at exit when no process of the run wrote a map),
 * JITHERALD_DEBUG=1 (the library's diagnostics, and the counts, on stderr). The library's JITHERALD_DIR is read as usual; JITHERALD, if
 * set, chooses the channels the library's way.
 */
#include "preload.h"

#include "base/chanlist.h"
#include "base/files.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/files.h"
#include "base/lock.h"
#include "base/run_close.h"

struct jhp_config jhp_cfg;
struct jhp_stats jhp_st;
pid_t jhp_pid;
jh_ctx *jhp_tools, *jhp_elf;
JHP_TLS unsigned jhp_inside;

static bool open_failed;
static pid_t root;              /* JITHERALD_RUN_ROOT */
/* The announcement lock (preload.h): 0 free, 1 held, 2 held and waited for. */
atomic_int jhp_ann;

void jhp_lock_wait(int c)
{
    JHP_KEEP_ERRNO;                     /* (the VM's call's, as a mutex leaves it) */
    if (c != 2)
        c = atomic_exchange_explicit(&jhp_ann, 2, memory_order_acquire);
    while (c) {
        syscall(SYS_futex, &jhp_ann, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange_explicit(&jhp_ann, 2, memory_order_acquire);
    }
}

void jhp_unlock_wake(void)
{
    JHP_KEEP_ERRNO;
    syscall(SYS_futex, &jhp_ann, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
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

static void unknown_channel(void *arg, const char *name, size_t n)
{
    if (n == 7 && !strncmp(name, "standby", 7)) {
        *(bool *)arg = true;
        return;
    }
    char can[128];
    jh__channel_names(jh__channels_run(), ", ", can, sizeof can);
    jhp_warn("JITHERALD_RUN: '%.*s' is not a channel jitherald run can add (%s, all)",
             (int)n, name, can);
}

static unsigned parse_channels(const char *s, bool *standby)
{
    *standby = false;
    return jh__channels_parse(s, jh__channels_run(), unknown_channel, standby);
}

static void log_fn(void *arg, int level, const char *msg)
{
    (void)arg;
    if (level <= JH_LOG_WARN || jhp_cfg.debug)
        jhp_warn("%s", msg);
}

/* jh_options.attach_channels with no channel bit: `jitherald attach` switches nothing */
#define JH__ATTACH_NONE (1u << 31)

static jh_ctx *open_one(unsigned bits)
{
    if (!bits && !jhp_cfg.library_rule)
        return NULL;
    /* In standby each context retains what it hears and `jitherald attach` may switch on
     * its share of the channels, never elfmap: its page swaps must be kept apart from the
     * VM's page calls (guard.c), which only an announcement here does. */
    unsigned attach = bits & ~(unsigned)JH_ELFMAP;
    struct jh_options o = { .sz = sizeof o, .engine = "run", .log = log_fn,
                            .channels = jhp_cfg.standby ? bits & jhp_cfg.asked : bits,
                            .flags = jhp_cfg.standby ? JH_OPT_STANDBY : 0,
                            .attach_channels = attach ? attach : JH__ATTACH_NONE };
    jh_ctx *ctx = NULL;
    if (jh_open(&ctx, &o) < 0 || (!jh_channels(ctx) && !(jhp_cfg.standby && attach))) {
        jh_close(ctx);
        ctx = NULL;
    }
    return ctx;
}

/*
 * The contexts, opened by the first announcement: a wrapper, a shell or a helper that never
 * writes a map opens no file of the library's. Two (preload.h): the tools' and the
 * record's, one store of every function (gdb and unwind stay open to the end: a debugger,
 * callgrind's last dump and the unwinder need the code named as long as the process has
 * threads; the audit log alone is closed at exit, which writes its `close` record:
 * `jitherald log` then says the process ended, not that it was cut), and elfmap's (the
 * only one that touches pages). With JITHERALD set, the library's own rule chooses, in
 * one context.
 *
 * They were four (issue 30): JIT code and the code in a loaded object's text (V8's
 * builtins, handed over in batches, JH_GDB_DEFER) had a context each, for gdb and unwind,
 * and the record a third, so that it could be closed alone. Each of node's ~2,200
 * builtins was stored twice (entry, name, symbol, CFI: ~350 bytes each), inserted,
 * validated and asked for a removal twice. A batch is now one image in the gdb channel
 * without deferring (jh_code_add_many), and the record closes alone without a context of
 * its own (jh_run_auditlog_close).
 */
bool jhp_open(void)
{
    if (jhp_tools || jhp_elf || open_failed)
        return !open_failed;
    unsigned ch = jhp_cfg.channels;
    if (jhp_cfg.library_rule) {
        jhp_tools = open_one(ch);
    } else {
        jhp_tools = open_one(ch & (JH_GDB | JH_UNWIND | JH_AUDITLOG));
        jhp_elf = open_one(ch & JH_ELFMAP);
    }
    open_failed = !jhp_tools && !jhp_elf;
    if (open_failed)
        jhp_warn("no channel could be opened: nothing is announced");
    atomic_store(&jhp_guard_on, jh_channels(jhp_tools) & JH_ELFMAP || jhp_elf != NULL);
    return !open_failed;
}

/* Fork: the announcement lock is taken first (prepare handlers run in the reverse order of
 * their registration: ours after the library's, see jhp_init), so a child never inherits
 * it held, and the order is the announcements' own (ours, then the library's). While it is
 * held, this thread counts as inside: a signal handler here passes straight through. A
 * fork from a handler that interrupted this thread inside jitherald cannot take the lock
 * (the thread holds it): the child hears nothing (its state may be half updated). */
static JHP_TLS bool fork_took;
static void fork_prepare(void)
{
    fork_took = !jhp_inside++;
    if (fork_took)
        jhp_lock();
}
static void fork_parent(void)
{
    if (fork_took)
        jhp_unlock();
    jhp_inside--;
}
static void fork_child(void)
{
    if (fork_took)
        jhp_unlock();
    else
        jhp_cfg.channels = 0;
    jhp_inside--;
    jhp_pid = getpid();
    jhp_guard_child();
    memset(&jhp_st, 0, sizeof jhp_st);
}

static void stats_line(void)
{
    if (!jhp_cfg.stats[0] && !jhp_cfg.debug)
        return;
    char exe[256] = "?";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 1] = 0;
    char line[1600];
    const struct jhp_stats *s = &jhp_st;
    snprintf(line, sizeof line, "pid=%d exe=%s map_lines=%llu dump_loads=%llu dump_moves=%llu "
             "dump_debug=%llu announced=%llu with_lines=%llu realigned=%llu with_cfi=%llu "
             "cfi_refused=%llu fp_frames=%llu no_frame=%llu replaced=%llu same=%llu moved=%llu "
             "unreadable=%llu "
             "malformed=%llu rewrites=%llu failed=%llu forgotten=%llu no_swap=%llu keyed=%llu "
             "file_text=%llu batches=%llu "
             "in_jh_p50_ns=%llu in_jh_p99_ns=%llu in_jh_max_ns=%llu in_jh_sum_us=%llu "
             "vm_write_p50_ns=%llu "
             "vm_write_p99_ns=%llu vm_write_max_ns=%llu\n", (int)getpid(), exe,
             (unsigned long long)s->map_lines, (unsigned long long)s->dump_loads,
             (unsigned long long)s->dump_moves, (unsigned long long)s->dump_debug,
             (unsigned long long)s->announced, (unsigned long long)s->with_lines,
             (unsigned long long)s->realigned, (unsigned long long)s->with_cfi,
             (unsigned long long)s->cfi_refused, (unsigned long long)s->fp_frames,
             (unsigned long long)s->no_frame, (unsigned long long)s->replaced,
             (unsigned long long)s->same, (unsigned long long)s->moved,
             (unsigned long long)s->unreadable, (unsigned long long)s->malformed,
             (unsigned long long)s->rewrites, (unsigned long long)s->failed,
             (unsigned long long)__atomic_load_n(&s->forgotten, __ATOMIC_RELAXED),
             (unsigned long long)s->no_swap, (unsigned long long)s->keyed,
             (unsigned long long)s->file_text, (unsigned long long)s->batches,
             (unsigned long long)jhp_hist_pct(&s->in_jh, 50),
             (unsigned long long)jhp_hist_pct(&s->in_jh, 99), (unsigned long long)s->in_jh.max,
             (unsigned long long)(s->in_jh.sum / 1000),
             (unsigned long long)jhp_hist_pct(&s->vm_write, 50),
             (unsigned long long)jhp_hist_pct(&s->vm_write, 99),
             (unsigned long long)s->vm_write.max);
    if (jhp_cfg.debug)
        fprintf(stderr, "jitherald run: %s", line);
    if (jhp_cfg.stats[0]) {
        int fd = open(jhp_cfg.stats, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            ssize_t w = write(fd, line, strlen(line));     /* one write: lines never tear */
            (void)w;
            close(fd);
        }
    }
}

/*
 * A run in which no process wrote a map ends with one line saying so, from the process
 * `jitherald run` exec'd (the others may be wrappers, shells, helpers that never write
 * one). Each process that heard a map or dump leaves a mark in the jitherald directory,
 * named by that root's pid; the root looks for it at exit.
 */
static void mark_path(char *buf, size_t len)
{
    char dir[512];
    const char *d = getenv("JITHERALD_DIR");
    if (d && *d)
        snprintf(dir, sizeof dir, "%s", d);
    else
        jh__default_dir(dir, sizeof dir);
    snprintf(buf, len, "%s/run-%d.heard", dir, (int)root);
}

static char mark[600];
static bool marked;

void jhp_heard_something(void)
{
    if (marked || !root || !mark[0])
        return;
    marked = true;
    if (jhp_pid == root)
        return;
    char dir[sizeof mark];
    snprintf(dir, sizeof dir, "%s", mark);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    jh__ensure_dir(dir);
    int fd = jh__open_private(mark, O_WRONLY | O_CREAT | O_APPEND, 0);
    if (fd >= 0)
        close(fd);
}

static void say_if_silent(void)
{
    if (!root || jhp_pid != root || !mark[0])
        return;
    bool others = jh__unlink_private(mark) == 0;
    bool heard = marked || others;
    if (!heard)
        jhp_warn("no process of this run wrote a perf map or a jitdump, so nothing was "
                 "announced: switch the VM's on (node --perf-basic-prof, MVM_JIT_PERF_MAP=1 "
                 "rakudo, erl +JPperf true, mono --jitmap, php -d opcache.jit_debug=0x10, "
                 "java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, python3 -X "
                 "perf, wasmtime --profile=perfmap); docs/run.md");
}

__attribute__((constructor)) static void jhp_init(void)
{
    const char *ch = getenv("JITHERALD_RUN");
    const char *d = getenv("JITHERALD_DEBUG");
    jhp_cfg.debug = d && *d && strcmp(d, "0");
    if (!ch || !*ch)
        return;
    bool standby;
    unsigned bits = parse_channels(ch, &standby);
    if (!bits && !standby)
        return;
    jhp_cfg.asked = bits;
    jhp_cfg.standby = standby;
    if (standby)                    /* every context, each retaining what it hears */
        bits = jh__channels_run() & ~(unsigned)(JH_ELFMAP & ~jhp_cfg.asked);
    const char *fp = getenv("JITHERALD_RUN_FP");
    jhp_cfg.guess_fp = !(fp && !strcmp(fp, "0"));
    const char *lib = getenv("JITHERALD");
    jhp_cfg.library_rule = lib && *lib;
    const char *st = getenv("JITHERALD_RUN_STATS");
    if (st && strlen(st) < sizeof jhp_cfg.stats)
        snprintf(jhp_cfg.stats, sizeof jhp_cfg.stats, "%s", st);
    jhp_cfg.timed = jhp_cfg.stats[0] || jhp_cfg.debug;
    const char *r = getenv("JITHERALD_RUN_ROOT");
    root = r ? (pid_t)atoi(r) : 0;
    jhp_pid = getpid();
    if (root)
        mark_path(mark, sizeof mark);
    /* The library's fork handler is installed first, by a context with no channel, so that
     * ours runs before it at fork: the announcement lock, then the library's locks, the
     * order in which an announcement takes them. */
    jh_ctx *none;
    struct jh_options no = { .sz = sizeof no, .flags = JH_OPT_IGNORE_ENV };
    if (jh_open(&none, &no) == 0)
        jh_close(none);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    jh__kfd_reserve();              /* while the VM has one thread: base/files.h */
    jhp_cfg.channels = bits;       /* from here on, what the VM writes is heard */
}

__attribute__((destructor)) static void jhp_fini(void)
{
    /* exit() from a signal handler that interrupted this thread inside jitherald: the lock
     * is this thread's own, the work is left as it is */
    if (!jhp_cfg.channels || jhp_inside)
        return;
    /* The record closes; nothing is added to it from now on (the VM's other threads may
     * still write: they reach gdb, unwind and elfmap, which stay open with their files, for
     * perf report, and the guard stays on for elfmap's swaps; a removal from one of them
     * waits for the context's lock, under which the record closes). This thread is inside
     * from here: closing unmaps the log without an intent, and a signal handler here
     * passes straight through instead of waiting for the lock it holds. No jh_log_* call
     * is ever made on the contexts (jh_run_auditlog_close's contract). */
    jhp_inside++;
    jhp_lock();
    jhp_flush_all();
    if (jhp_tools)
        jh_run_auditlog_close(jhp_tools);
    stats_line();
    jhp_unlock();
    jhp_inside--;
    say_if_silent();
}
