/*
 * guard.c — see preload.h. Why interpose: the elfmap channel replaces announced code pages
 * by a private mapping of a file holding the same bytes, and relies on its caller holding
 * the code lock, so that no byte is written between its snapshot and the swap
 * (docs/elfmap.md, "contract"). A VM that does not know about jitherald cannot take part,
 * but every way it has to make a page writable, unmap it or map over it goes through
 * these five calls: taking one lock around them and around each announcement serialises
 * them with the swap. What remains is what does not call libc: a raw `syscall` instruction
 * for mprotect, or code written through a second, shared mapping of the same memory (a
 * double-mapped buffer): elfmap never swaps shared pages, nor writable ones
 * (docs/run.md, "what is not covered").
 *
 * The calls themselves go to the kernel by syscall(2), not through dlsym(RTLD_NEXT): dlsym
 * may allocate, and an allocation may mmap, before this library's constructor has run.
 */
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <valgrind/valgrind.h>

#include "base/lock.h"

atomic_bool jhp_guard_on;
static struct jh__lock guard = JH__LOCK_INIT("run guard");
static __thread bool follower;          /* the follower thread: never waits for itself */

void jhp_guard_lock(void) { jh__lock(&guard); }
void jhp_guard_unlock(void) { jh__unlock(&guard); }
void jhp_guard_thread_is_follower(void) { follower = true; }

/* The fork path of the guard: a fork while the follower announces waits for it to finish,
 * so the child never inherits the lock held. */
static void prepare(void) { jh__lock(&guard); }
static void release(void) { jh__unlock(&guard); }
void jhp_guard_atfork(void) { pthread_atfork(prepare, release, release); }

static bool guarded(void)
{
    return !follower && atomic_load_explicit(&jhp_guard_on, memory_order_acquire);
}

bool jhp_readable(uint64_t start, uint64_t size)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t a = start & ~(uint64_t)(pg - 1);
    for (; a < start + size; a += (uint64_t)pg) {
        uint8_t b;
        uint64_t at = a < start ? start : a;
        struct iovec local = { &b, 1 }, remote = { (void *)(uintptr_t)at, 1 };
        if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1)
            return false;
    }
    return true;
}

/* ---- the jitdump, found as perf finds it ---------------------------------------------- */

static struct jh__lock dump_lock = JH__LOCK_INIT("run dump path");
static char dump_path[PATH_MAX];

bool jhp_take_dump_path(char *path, size_t len)
{
    jh__lock(&dump_lock);
    bool got = dump_path[0] != 0;
    if (got) {
        snprintf(path, len, "%s", dump_path);
        dump_path[0] = 0;
    }
    jh__unlock(&dump_lock);
    return got;
}

/* perf takes a jitdump from the process's mmap of it with PROT_EXEC, basename
 * jit-<pid>.dump (tools/perf/util/jitdump.c, jit_detect): so does this. */
static void saw_exec_map(int fd)
{
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return;
    path[n] = 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char want[40];
    snprintf(want, sizeof want, "jit-%d.dump", (int)getpid());
    if (strcmp(base, want))
        return;
    jh__lock(&dump_lock);
    snprintf(dump_path, sizeof dump_path, "%s", path);
    jh__unlock(&dump_lock);
    jhp_wake();
}

/* ---- the interposed calls ----------------------------------------------------------- */

#define JHP_EXPORT __attribute__((visibility("default")))

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

JHP_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    /* Only a fixed mapping can replace code; a new one lands where nothing is. */
    bool g = (flags & MAP_FIXED) && guarded();
    if (g)
        jh__lock(&guard);
    void *p = raw_mmap(addr, len, prot, flags, fd, off);
    if (g)
        jh__unlock(&guard);
    if (p != MAP_FAILED && fd >= 0 && (prot & PROT_EXEC) && !follower)
        saw_exec_map(fd);
    return p;
}

JHP_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

JHP_EXPORT int munmap(void *addr, size_t len)
{
    bool g = guarded();
    if (g)
        jh__lock(&guard);
    int rc = (int)syscall(SYS_munmap, addr, len);
    if (g)
        jh__unlock(&guard);
    return rc;
}

JHP_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    bool g = guarded();
    if (g)
        jh__lock(&guard);
    void *p = (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
    if (g)
        jh__unlock(&guard);
    return p;
}

/* Code made executable again may have been rewritten while it was writable. Valgrind
 * watches anonymous code for that, but not code in a file mapping, which a swapped page
 * is (--smc-check=all-non-file): its translations of the range go. Natively this is a
 * few instructions that do nothing. */
static void after_protect(void *addr, size_t len, int prot, int rc)
{
    if (rc == 0 && (prot & PROT_EXEC) && RUNNING_ON_VALGRIND)
        VALGRIND_DISCARD_TRANSLATIONS(addr, len);
}

JHP_EXPORT int mprotect(void *addr, size_t len, int prot)
{
    bool g = guarded();
    if (g)
        jh__lock(&guard);
    int rc = (int)syscall(SYS_mprotect, addr, len, prot);
    if (g)
        jh__unlock(&guard);
    after_protect(addr, len, prot, rc);
    return rc;
}

#ifdef SYS_pkey_mprotect
JHP_EXPORT int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
    bool g = guarded();
    if (g)
        jh__lock(&guard);
    int rc = (int)syscall(SYS_pkey_mprotect, addr, len, prot, pkey);
    if (g)
        jh__unlock(&guard);
    after_protect(addr, len, prot, rc);
    return rc;
}
#endif
