/*
 * hear.c — see preload.h. The VM's calls that open and write its perf map and jitdump,
 * interposed, so that what it writes is announced in its own thread before the call
 * returns (the code it describes has not run yet: VMs write the line first):
 *
 *     VM thread:  fprintf(map, "%lx %lx %s\n", ...)    (V8: vfprintf; MoarVM: __fprintf_chk)
 *                   -> the real call, unchanged        (the file gets exactly its bytes)
 *                   -> stream.c: a complete line       -> announce.c: gdb, unwind, elfmap...
 *                   <- returns to the VM, which runs the code
 *
 * What each VM calls, measured here with a tracing preload: node 20 opens the map with
 * fopen64 and writes it with vfprintf, opens the jitdump with open64 + fdopen and writes it
 * with fwrite and fputc (through a 4 KiB stdio buffer: heard at fwrite, not at the flush);
 * rakudo's MoarVM fopen64 + __fprintf_chk + fflush; Erlang fopen + fprintf for the map,
 * fwrite for the dump. stdio's own flushes reach the kernel through libc's internal write,
 * which no preload sees: nothing is heard twice.
 *
 * This file holds the table of heard files and the calls that open, duplicate, close and
 * cut them; writes.c the calls that write them.
 * A file is heard when it is opened for writing under the name perf tools look for:
 * perf-<pid>.map or jit-<pid>.dump, <pid> this process (jhp_kind_of), and when a
 * jitdump is mapped executable (perf's own way of finding one: guard.c). Its descriptor and
 * FILE go into a small table; every other write pays a load and a compare.
 * Not heard: writes by raw system calls, by statically linked code, stdio's inlined
 * putc_unlocked, and files written through a mapping (docs/run.md says which VMs).
 * Libraries loaded with RTLD_DEEPBIND (PHP's opcache) are bound to these calls by
 * deepbind.c.
 */
#include "hear.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"


/* ---- the table of heard files ------------------------------------------------------- */

struct watch jhp_watches[JHP_SLOTS];
atomic_int jhp_nwatch;          /* slots in use: 0 and every call goes straight on */
atomic_int jhp_watch_hi;        /* slots ever used (only grows): the lookups stop there */

/* jhp_lock held. */
static void watch_add(int fd, FILE *f, struct jhp_stream *s, bool append)
{
    for (int i = 0; i < JHP_SLOTS; i++) {
        struct watch *w = &jhp_watches[i];
        if (atomic_load(&w->fd1) || atomic_load(&w->file))
            continue;
        w->stream = s;
        w->append = append;
        atomic_store(&w->file, f);
        atomic_store(&w->fd1, fd + 1);
        if (i >= atomic_load(&jhp_watch_hi))
            atomic_store(&jhp_watch_hi, i + 1);     /* after the slot: a lookup sees it whole */
        atomic_fetch_add(&jhp_nwatch, 1);
        return;
    }
    jhp_warn("%s: more than %d descriptors of heard files: not heard", jhp_stream_path(s), JHP_SLOTS);
}

/* jhp_lock held. The descriptor (and every FILE on it: closed under them, or replaced by
 * dup2) or the FILE is closed. */
static void watch_drop(int fd, FILE *f)
{
    for (int i = 0; i < JHP_SLOTS; i++) {
        struct watch *w = &jhp_watches[i];
        bool hit = (fd >= 0 && atomic_load(&w->fd1) == fd + 1) ||
                   (f && atomic_load(&w->file) == f);
        if (!hit)
            continue;
        atomic_store(&w->fd1, 0);
        atomic_store(&w->file, NULL);
        atomic_fetch_sub(&jhp_nwatch, 1);
    }
}

/* A vfork child (no fork handlers ran: jhp_pid is the parent's) shares our memory: its
 * close() of a heard descriptor must not change the parent's table. */
static bool in_owner(void)
{
    return getpid() == jhp_pid;
}

/* ---- hearing ------------------------------------------------------------------------ */

/* While this thread hears, it is inside jitherald: a signal handler running on it calls
 * libc straight through (its writes are not heard, its page calls neither wait nor
 * forget), so it can never wait for a lock this thread holds. (Blocking signals instead
 * cost two system calls per write: 13% of an Erlang run, which writes each jitdump record
 * in pieces.) stream.c leaves errno as the VM's call left it. */
static void hear(struct watch *w, const struct iovec *iov, int cnt, size_t n,
                 const struct jhp_map_line *line, uint64_t t0)
{
    static uint64_t vm_ns, in_ns;       /* since the last announcement; under the lock */
    uint64_t t1 = jhp_now();
    jhp_inside++;
    jhp_lock();
    uint64_t said = jhp_st.records;
    if (!(line && w->stream && jhp_stream_map_line(w->stream, line))) {
        for (int i = 0; i < cnt && n && w->stream; i++) {
            size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;
            jhp_stream_feed(w->stream, iov[i].iov_base, k);
            n -= k;
        }
    }
    if (jhp_cfg.timed) {
        JHP_KEEP_ERRNO;
        vm_ns += t1 - t0;
        in_ns += jhp_now() - t1;
        if (jhp_st.records != said) {   /* a function described: what its writes cost */
            jhp_hist_add(&jhp_st.vm_write, vm_ns);
            jhp_hist_add(&jhp_st.in_jh, in_ns);
            vm_ns = in_ns = 0;
        }
    }
    jhp_unlock();
    jhp_inside--;
}

void jhp_hear_iov(struct watch *w, const struct iovec *iov, int cnt, size_t n, uint64_t t0)
{
    hear(w, iov, cnt, n, NULL, t0);
}

void jhp_hear_line(struct watch *w, const struct jhp_map_line *l, uint64_t t0)
{
    struct iovec v = { (void *)l->text, l->n };
    hear(w, &v, 1, l->n, l, t0);
}

enum jhp_kind jhp_kind_of(const char *path)
{
    if (!path || !jhp_cfg.channels)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char want[48];
    snprintf(want, sizeof want, "perf-%d.map", (int)jhp_pid);
    if (!strcmp(b, want))
        return JHP_MAP;
    snprintf(want, sizeof want, "jit-%d.dump", (int)jhp_pid);
    return strcmp(b, want) ? 0 : JHP_DUMP;
}

/* The VM opened path (fd, and the FILE f if through stdio) for writing. */
static void opened(const char *path, int fd, FILE *f, bool trunc, bool append)
{
    JHP_KEEP_ERRNO;
    enum jhp_kind k = jhp_inside ? 0 : jhp_kind_of(path);
    struct stat st;
    if (!k || fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    jhp_inside++;
    jhp_lock();
    /* The contexts now, not at the first announcement: opening them (the audit log's file,
     * the debugger interface, the unwinder) must not delay code that is about to run. */
    jhp_open();
    struct jhp_stream *s = jhp_stream_get(k, path);
    if (s) {
        if (trunc || st.st_size == 0) {
            jhp_st.rewrites += jhp_stream_at(s, 0) ? 0 : 1;
            jhp_stream_reset(s);
        }
        watch_add(fd, f, s, append);
    }
    jhp_unlock();
    jhp_inside--;
}

static bool writes(int flags) { return (flags & O_ACCMODE) != O_RDONLY; }

void jhp_hear_mapped(int fd)
{
    JHP_KEEP_ERRNO;
    if (jhp_inside || !jhp_cfg.channels || jhp_by_fd(fd))
        return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return;
    path[n] = 0;
    if (jhp_kind_of(path) != JHP_DUMP)
        return;
    /* Opened by a call we did not see: what it holds so far is read once, from now on it
     * is heard. (Its descriptor, not a new one: nothing of ours stays open.) */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || !writes(fl))
        return;
    jhp_inside++;
    jhp_lock();
    struct jhp_stream *s = jhp_stream_get(JHP_DUMP, path);
    if (s) {
        jhp_stream_reset(s);
        jhp_stream_catch_up(s, fd);
        watch_add(fd, NULL, s, fl & O_APPEND);
    }
    jhp_unlock();
    jhp_inside--;
}

/* ---- open ----------------------------------------------------------------------------- */

NEXT_DECL(open);
NEXT_DECL(open64);
NEXT_DECL(openat);
NEXT_DECL(openat64);
NEXT_DECL(__open_2);
NEXT_DECL(__open64_2);
NEXT_DECL(__openat_2);
NEXT_DECL(__openat64_2);
NEXT_DECL(creat);
NEXT_DECL(creat64);

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

static int after_open(const char *path, int flags, int fd)
{
    if (fd >= 0 && writes(flags))
        opened(path, fd, NULL, flags & O_TRUNC, flags & O_APPEND);
    return fd;
}

JHP_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return after_open(path, flags, NEXT(open)(path, flags, m));
}

JHP_EXPORT int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return after_open(path, flags, NEXT(open64)(path, flags, m));
}

JHP_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return after_open(path, flags, NEXT(openat)(dirfd, path, flags, m));
}

JHP_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return after_open(path, flags, NEXT(openat64)(dirfd, path, flags, m));
}

/* _FORTIFY_SOURCE's checked forms. */
JHP_EXPORT int __open_2(const char *path, int flags)
{
    return after_open(path, flags, NEXT(__open_2)(path, flags));
}
JHP_EXPORT int __open64_2(const char *path, int flags)
{
    return after_open(path, flags, NEXT(__open64_2)(path, flags));
}
JHP_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return after_open(path, flags, NEXT(__openat_2)(dirfd, path, flags));
}
JHP_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return after_open(path, flags, NEXT(__openat64_2)(dirfd, path, flags));
}

JHP_EXPORT int creat(const char *path, mode_t m)
{
    return after_open(path, O_WRONLY | O_CREAT | O_TRUNC, NEXT(creat)(path, m));
}
JHP_EXPORT int creat64(const char *path, mode_t m)
{
    return after_open(path, O_WRONLY | O_CREAT | O_TRUNC, NEXT(creat64)(path, m));
}

/* ---- stdio opens and closes ------------------------------------------------------------- */

NEXT_DECL(fopen);
NEXT_DECL(fopen64);
NEXT_DECL(freopen);
NEXT_DECL(freopen64);
NEXT_DECL(fdopen);
NEXT_DECL(fclose);

/* "w": truncated; "a": appended to; "r" alone: not written. */
static void fopened(const char *path, const char *mode, FILE *f)
{
    if (f && mode && (mode[0] == 'w' || mode[0] == 'a' || strchr(mode, '+')))
        opened(path, fileno(f), f, mode[0] == 'w', mode[0] == 'a');
}

JHP_EXPORT FILE *fopen(const char *path, const char *mode)
{
    FILE *f = NEXT(fopen)(path, mode);
    fopened(path, mode, f);
    return f;
}

JHP_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    FILE *f = NEXT(fopen64)(path, mode);
    fopened(path, mode, f);
    return f;
}

static void closing(int fd, FILE *f)
{
    JHP_KEEP_ERRNO;
    if (!(f ? jhp_by_file(f) : jhp_by_fd(fd)) || !in_owner())
        return;
    jhp_inside++;
    jhp_lock();
    watch_drop(f ? fileno(f) : fd, f);
    jhp_unlock();
    jhp_inside--;
}

JHP_EXPORT FILE *freopen(const char *path, const char *mode, FILE *f)
{
    closing(-1, f);
    FILE *g = NEXT(freopen)(path, mode, f);
    if (path)
        fopened(path, mode, g);
    return g;
}

JHP_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f)
{
    closing(-1, f);
    FILE *g = NEXT(freopen64)(path, mode, f);
    if (path)
        fopened(path, mode, g);
    return g;
}

JHP_EXPORT FILE *fdopen(int fd, const char *mode)
{
    FILE *f = NEXT(fdopen)(fd, mode);
    struct watch *w = f ? jhp_by_fd(fd) : NULL;
    if (w) {
        JHP_KEEP_ERRNO;
        jhp_inside++;
        jhp_lock();
        if (atomic_load(&w->fd1) == fd + 1)
            watch_add(fd, f, w->stream, w->append);
        jhp_unlock();
        jhp_inside--;
    }
    return f;
}

JHP_EXPORT int fclose(FILE *f)
{
    closing(-1, f);
    return NEXT(fclose)(f);
}

/* ---- descriptors closed or replaced --------------------------------------------------- */

NEXT_DECL(close);
NEXT_DECL(dup);
NEXT_DECL(dup2);
NEXT_DECL(dup3);
NEXT_DECL(close_range);
NEXT_DECL(closefrom);

JHP_EXPORT int close(int fd)
{
    closing(fd, NULL);
    return NEXT(close)(fd);
}

/* Every heard descriptor in [lo, hi] is about to close. */
static void closing_range(unsigned lo, unsigned hi)
{
    if (!atomic_load(&jhp_nwatch) || jhp_inside || !in_owner())
        return;
    JHP_KEEP_ERRNO;
    jhp_inside++;
    jhp_lock();
    for (int i = 0; i < JHP_SLOTS; i++) {
        int fd = atomic_load(&jhp_watches[i].fd1) - 1;
        if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi)
            watch_drop(fd, NULL);
    }
    jhp_unlock();
    jhp_inside--;
}

JHP_EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
    NEXT_OR_ENOSYS(close_range);
    if (!(flags & CLOSE_RANGE_CLOEXEC))
        closing_range(lo, hi);
    return NEXT(close_range)(lo, hi, flags);
}

JHP_EXPORT void closefrom(int lo)
{
    if (!next_fn(&next_closefrom, "closefrom"))
        return;
    closing_range(lo < 0 ? 0 : (unsigned)lo, ~0u);
    NEXT(closefrom)(lo);
}

/* new names old's file: heard too; new's previous file, if heard, no longer under new. */
static int duped(int old, int new)
{
    JHP_KEEP_ERRNO;
    if (new < 0 || old == new)
        return new;
    struct watch *was = jhp_by_fd(new), *w = jhp_by_fd(old);
    if (!was && !w)
        return new;
    jhp_inside++;
    jhp_lock();
    if (was)
        watch_drop(new, NULL);
    if (w && atomic_load(&w->fd1) == old + 1)
        watch_add(new, NULL, w->stream, w->append);
    jhp_unlock();
    jhp_inside--;
    return new;
}

JHP_EXPORT int dup(int old) { return duped(old, NEXT(dup)(old)); }
JHP_EXPORT int dup2(int old, int new)
{
    int r = NEXT(dup2)(old, new);
    return r < 0 ? r : duped(old, r);
}
JHP_EXPORT int dup3(int old, int new, int flags)
{
    int r = NEXT(dup3)(old, new, flags);
    return r < 0 ? r : duped(old, r);
}

/* A heard file cut to nothing is written again from its start (a VM restarting its map, a
 * JVM's second `jcmd Compiler.perfmap`): what it says again about code already announced
 * changes nothing (announce.c). */
NEXT_DECL(ftruncate);
NEXT_DECL(ftruncate64);

static int truncated(int fd, off_t len, int rc)
{
    struct watch *w = rc == 0 && len == 0 ? jhp_by_fd(fd) : NULL;
    if (w) {
        JHP_KEEP_ERRNO;
        jhp_inside++;
        jhp_lock();
        jhp_stream_reset(w->stream);
        jhp_st.rewrites++;
        jhp_unlock();
        jhp_inside--;
    }
    return rc;
}

JHP_EXPORT int ftruncate(int fd, off_t len) { return truncated(fd, len, NEXT(ftruncate)(fd, len)); }
JHP_EXPORT int ftruncate64(int fd, off_t len)
{
    return truncated(fd, len, NEXT(ftruncate64)(fd, len));
}

