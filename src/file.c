/*
 * file.c — files in places other users can write to. perf insists on /tmp/perf-<pid>.map,
 * a predictable name in a world-writable directory: whoever creates it first could make us
 * write through a symlink or append into their file. So: never follow a symlink, create
 * with 0600, and refuse anything that is not a regular file of ours with a single link.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int jh__open_private(const char *path, int flags)
{
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == ELOOP ? -ELOOP : -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
        close(fd);
        return S_ISREG(st.st_mode) ? -EPERM : -EINVAL;
    }
    return fd;
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

int jh__write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int jh__writev_all(int fd, struct iovec *iov, int iovcnt)
{
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

uint64_t jh__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
