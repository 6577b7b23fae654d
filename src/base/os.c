/* os.c — os.h on POSIX systems. */
#include "base/os.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

int jh__parent_pid(void) { return (int)getppid(); }

uint64_t jh__process_start_ns(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');          /* the command name may hold spaces */
    if (!p)
        return 0;
    /* after ")": field 3 (state) ... field 22 (starttime, clock ticks since boot) */
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    long hz = sysconf(_SC_CLK_TCK);
    if (!p || hz <= 0)
        return 0;
    unsigned long long ticks = strtoull(p + 1, NULL, 10);
    struct timespec boot, real;
    if (clock_gettime(CLOCK_BOOTTIME, &boot) != 0 || clock_gettime(CLOCK_REALTIME, &real) != 0)
        return 0;
    uint64_t boot_ns = (uint64_t)boot.tv_sec * 1000000000u + (uint64_t)boot.tv_nsec;
    uint64_t real_ns = (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec;
    uint64_t start_boot_ns = ticks * (1000000000u / (uint64_t)hz);
    if (start_boot_ns > boot_ns || boot_ns - start_boot_ns > real_ns)
        return 0;
    return real_ns - (boot_ns - start_boot_ns);
}

void jh__exe_path(char *buf, size_t len)
{
    if (!len)
        return;
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    buf[n > 0 ? n : 0] = 0;
}

/* glibc's strerrordesc_np returns its static table's string (strerror may build one in a
 * per-thread buffer for unknown values). */
const char *jh__errno_desc(int e) { return strerrordesc_np(e); }

void *jh__aligned_alloc(size_t align, size_t size)
{
    return aligned_alloc(align, (size + align - 1) / align * align);
}

void jh__aligned_free(void *p) { free(p); }

static bool mapped(const void *p, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1), end = (uintptr_t)p + n;
    unsigned char vec[64];
    while (a < end) {
        size_t len = end - a > sizeof vec * page ? sizeof vec * page : end - a;
        if (mincore((void *)a, len, vec) != 0 && errno == ENOMEM)
            return false;
        a += (len + page - 1) / page * page;
    }
    return true;
}

/* Readable is decided per page: one byte of each page in the range is read, up to PROBES
 * pages a call. Not the whole range through a page-sized buffer: a fork child's audit-log
 * restart calls this in a signal handler, perhaps on a small alternate stack, and copying
 * a builtin's megabyte only to throw it away was the bulk of the call. */
#define PROBES 32
bool jh__mem_readable(const void *p, size_t n)
{
    if (!n)
        return true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p, last = a + n - 1;
    if (last < a)
        return false;
    char sink[PROBES];
    struct iovec local = { sink, 0 }, remote[PROBES];
    while (true) {
        unsigned k = 0;
        for (uintptr_t at = a; k < PROBES; k++) {
            remote[k] = (struct iovec){ (void *)at, 1 };
            uintptr_t next = (at | (page - 1)) + 1;     /* the next page's first byte */
            if (next == 0 || next > last) {
                k++;
                break;
            }
            at = next;
        }
        local.iov_len = k;
        ssize_t r = process_vm_readv(getpid(), &local, 1, remote, k, 0);
        if (r < 0 && errno == EFAULT)
            return false;
        if (r < 0)      /* no process_vm_readv here (qemu-user, seccomp): ask mincore */
            return mapped((const void *)a, last - a + 1);
        if ((size_t)r < k)
            return false;   /* the page of probe r is not readable */
        uintptr_t end = (uintptr_t)remote[k - 1].iov_base;
        uintptr_t next = (end | (page - 1)) + 1;
        if (next == 0 || next > last)
            return true;
        a = next;
    }
}

const void *jh__find_fde(const void *pc)
{
    const void *(*find)(void *pc, void *bases);
    *(void **)&find = dlsym(RTLD_DEFAULT, "_Unwind_Find_FDE");
    void *bases[3] = { 0 };
    return find ? find((void *)(uintptr_t)pc, bases) : NULL;
}
