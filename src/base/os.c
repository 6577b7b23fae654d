/* os.c — os.h on POSIX systems. */
#include "base/os.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

int jh__parent_pid(void) { return (int)getppid(); }

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
