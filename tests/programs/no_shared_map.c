/*
 * no_shared_map.c — an LD_PRELOAD library for jitdump_nomap.sh: a file system that cannot
 * map a file shared and writable (as some FUSE and network file systems), for the jitdump
 * file only. mmap of a `jit-*.dump` with MAP_SHARED and PROT_WRITE fails with ENODEV, as
 * such a file system's would; every other mapping (perf's marker of the same file
 * included: it is private and executable) goes to the C library. Each refusal is counted
 * and the count is printed to stderr at exit ("no_shared_map: N refused"), so that the
 * test knows the channel really took its written path.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static atomic_uint refused;

static int is_jitdump(int fd)
{
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    const char *base = strrchr(path, '/');
    return fnmatch("jit-*.dump", base ? base + 1 : path, 0) == 0;
}

typedef void *mmap_fn(void *, size_t, int, int, int, off_t);

static void *refuse_or_map(const char *name, void *addr, size_t len, int prot, int flags,
                           int fd, off_t off)
{
    if (fd >= 0 && (flags & MAP_SHARED) && (prot & PROT_WRITE) && is_jitdump(fd)) {
        atomic_fetch_add(&refused, 1);
        errno = ENODEV;
        return MAP_FAILED;
    }
    static mmap_fn *_Atomic reals[2];
    _Atomic(mmap_fn *) *slot = &reals[name[4] != '\0'];
    mmap_fn *real = atomic_load(slot);
    if (!real)
        atomic_store(slot, real = (mmap_fn *)dlsym(RTLD_NEXT, name));
    if (!real) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    return real(addr, len, prot, flags, fd, off);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return refuse_or_map("mmap", addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return refuse_or_map("mmap64", addr, len, prot, flags, fd, off);
}

__attribute__((destructor)) static void report(void)
{
    char msg[64];
    int n = snprintf(msg, sizeof msg, "no_shared_map: %u refused\n", atomic_load(&refused));
    if (n > 0 && write(2, msg, (size_t)n) < 0)
        return;
}
