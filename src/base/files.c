/* files.c — see files.h. */
#include "base/files.h"
#include "base/diag.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static int check_fd(int fd, unsigned how, bool own)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -EINVAL;
    if (own && (st.st_uid != geteuid() || st.st_nlink != 1))
        return -EPERM;
    (void)how;
    /* Back to blocking mode: O_NONBLOCK only had to keep the open itself from blocking. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        return -errno;
    return 0;
}

const char *jh__file_error(int err)
{
    switch (err) {
    case -ELOOP: return "refused: it is a symbolic link";
    case -EPERM: return "refused: another user's file, or a file with several links";
    case -EINVAL: return "refused: not a regular file (a FIFO, device or directory?)";
    case -ENOTDIR: return "not a directory";
    default: return err < 0 && err > -4096 ? strerror(-err) : "unknown error";
    }
}

int jh__open_private(const char *path, int oflags, unsigned how)
{
    if (oflags & O_TRUNC)
        return -EINVAL;
    int fd = open(path, oflags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == ENXIO ? -EINVAL : -errno;   /* ENXIO: a FIFO nobody reads */
    int err = check_fd(fd, how, true);
    if (!err && (how & JH__OPEN_TRUNCATE) && ftruncate(fd, 0) != 0)
        err = -errno;
    if (err) {
        close(fd);
        return err;
    }
    return fd;
}

int jh__open_regular(const char *path, unsigned how)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC |
                  (how & JH__OPEN_NOFOLLOW ? O_NOFOLLOW : 0));
    if (fd < 0)
        return -errno;
    int err = check_fd(fd, how, how & JH__OPEN_OWN);
    if (err) {
        close(fd);
        return err;
    }
    return fd;
}

int jh__kfd_keep(struct jh__kfd *k, int fd)
{
    *k = JH__KFD_NONE;
    if (fd < 0)
        return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, JH__KFD_LOW);   /* fails past RLIMIT_NOFILE: kept low */
    if (hi >= 0) {
        close(fd);
        fd = hi;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    *k = (struct jh__kfd){ fd, st.st_dev, st.st_ino };
    return fd;
}

void jh__kfd_reserve(void)
{
    int e = errno;
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        int hi = fcntl(fd, F_DUPFD_CLOEXEC, JH__KFD_LOW);
        if (hi >= 0)
            close(hi);
        close(fd);
    }
    errno = e;
}

/*
 * Asked before every write: only the inode, never the times. Since Linux 6.13 a stat that
 * reads a file's ctime (fstat does) makes the next write stamp a fine-grained time, an
 * inode update in the journal at every write (ext4, xfs, btrfs, tmpfs: "multigrain
 * timestamps"); measured here, ext4: fstat + a 1 KiB pwrite 5.7 us, statx of the inode
 * alone + the same pwrite 3.4 us, the pwrite alone 2.2 us. elfmap pays it for a LuaJIT
 * trace's code and its parent's patch, jitdump and perfmap for each record.
 */
static bool kfd_ours(const struct jh__kfd *k)
{
    if (k->fd < 0)
        return false;
#ifdef STATX_INO
    struct statx sx;
    if (statx(k->fd, "", AT_EMPTY_PATH, STATX_INO, &sx) == 0 && (sx.stx_mask & STATX_INO))
        return makedev(sx.stx_dev_major, sx.stx_dev_minor) == k->dev && sx.stx_ino == k->ino;
    if (errno == EBADF)
        return false;               /* (else no statx here, or a filter refuses it: fstat) */
#endif
    struct stat st;
    return fstat(k->fd, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino;
}

int jh__kfd_get(struct jh__kfd *k, const char *path, int oflags)
{
    if (kfd_ours(k))
        return k->fd;
    struct jh__kfd was = *k;
    k->fd = -1;
    if (!path || was.fd < 0)
        return -EBADF;
    struct jh__kfd again;
    int fd = jh__kfd_keep(&again, jh__open_private(path, oflags & ~O_CREAT, 0));
    if (fd < 0)
        return -EBADF;
    if (again.dev != was.dev || again.ino != was.ino) {
        close(fd);
        return -EBADF;
    }
    *k = again;
    return fd;
}

void jh__kfd_close(struct jh__kfd *k)
{
    if (kfd_ours(k))
        close(k->fd);
    k->fd = -1;
}

int jh__unlink_private(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
        return -EPERM;
    return unlink(path) == 0 ? 0 : -errno;
}

int jh__ensure_dir(const char *path)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (lstat(path, &st) != 0)
        return -errno;
    if (S_ISLNK(st.st_mode))
        return -ELOOP;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    /* A directory someone else owns, or one others may rename our files in, is not ours. */
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return -EPERM;
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
        return -EPERM;
    return 0;
}

int jh__dir_get(struct jh__dir *d, const struct jh__diag *diag, const char **path)
{
    if (d->err > 0) {
        d->err = jh__ensure_dir(d->path);
        if (d->err < 0)
            jh__diag(diag, JH_LOG_ERROR, "directory %s: %s%s", d->path, d->err == -EPERM ?
                     "refused: owned by another user, or writable by others without the "
                     "sticky bit" : jh__file_error(d->err), d->err == -EPERM ?
                     "; set JITHERALD_DIR to a directory of your own" :
                     jh__diag_file_fix(d->err, 1));
    }
    *path = d->path;
    return d->err;
}

void jh__default_dir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/jitherald-%u", (unsigned)geteuid());
}

/* A write or a growth past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the
 * process: a JIT must never die because a profiling file hit a limit. When a limit is set,
 * the signal is blocked around our own call and a pending one taken back, so the call just
 * fails with EFBIG and the channel reports it. Whether a limit is set is asked again at
 * most every FSIZE_RECHECK_NS (getrlimit is a system call: a third of a perf-map line's
 * cost); a JIT lowering its own limit at run time is covered from then on. */
#define FSIZE_RECHECK_NS 50000000ull
static _Atomic uint64_t fsize_asked_at;     /* coarse ns | 1, 0: never */
static _Atomic bool fsize_limit;

static bool fsize_limited(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    uint64_t now = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) | 1;
    uint64_t at = atomic_load_explicit(&fsize_asked_at, memory_order_relaxed);
    if (at && now >= at && now - at < FSIZE_RECHECK_NS)
        return atomic_load_explicit(&fsize_limit, memory_order_relaxed);
    struct rlimit r;
    bool lim = getrlimit(RLIMIT_FSIZE, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
    atomic_store_explicit(&fsize_limit, lim, memory_order_relaxed);
    atomic_store_explicit(&fsize_asked_at, now, memory_order_relaxed);
    return lim;
}

void jh__fsize_guard_begin(struct jh__fsize_guard *g)
{
    g->on = fsize_limited();
    if (g->on) {
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        g->on = pthread_sigmask(SIG_BLOCK, &xfsz, &g->old) == 0;
    }
}

void jh__fsize_guard_end(struct jh__fsize_guard *g, int err)
{
    if (!g->on)
        return;
    if (err == -EFBIG && !sigismember(&g->old, SIGXFSZ)) {
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        struct timespec zero = { 0, 0 };
        while (sigtimedwait(&xfsz, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

int jh__write_all(int fd, const void *p, size_t n)
{
    struct iovec iov = { (void *)p, n };
    return jh__writev_all(fd, &iov, 1);
}

static int writev_all(int fd, struct iovec *iov, int iovcnt)
{
    while (iovcnt > 0 && iov->iov_len == 0)
        iov++, iovcnt--;
    while (iovcnt > 0) {
        ssize_t w = writev(fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        size_t left = (size_t)w;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

int jh__pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);
    int err = 0;
    while (n > 0 && !err) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0)
            err = errno == EINTR ? 0 : -errno;
        else if (w == 0)
            err = -EIO;
        else {
            p = (const char *)p + w;
            n -= (size_t)w;
            off += (uint64_t)w;
        }
    }
    jh__fsize_guard_end(&g, err);
    return err;
}

int jh__pwrite_zeros(int fd, uint64_t from, uint64_t to, uint64_t *end)
{
    static const uint8_t zeros[64 << 10];
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);
    int err = 0;
    while (from < to && !err) {
        /* the same zeros over and over in one call: a third less time than a call per
         * 64 KiB (the audit log's helper, 2.5 MB a stress.lua run) */
        struct iovec v[16];
        int nv = 0;
        for (uint64_t left = to - from; left && nv < 16; nv++) {
            v[nv].iov_base = (void *)zeros;
            v[nv].iov_len = left < sizeof zeros ? (size_t)left : sizeof zeros;
            left -= v[nv].iov_len;
        }
        ssize_t w = pwritev(fd, v, nv, (off_t)from);
        if (w < 0)
            err = errno == EINTR ? 0 : -errno;
        else if (w == 0)
            err = -EIO;
        else
            from += (uint64_t)w;
    }
    jh__fsize_guard_end(&g, err);
    if (end)
        *end = from;
    return err;
}

int jh__writev_all(int fd, struct iovec *iov, int iovcnt)
{
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);
    int err = writev_all(fd, iov, iovcnt);
    jh__fsize_guard_end(&g, err);
    return err;
}
