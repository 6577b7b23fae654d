/* os_win.c — os.h and clock.h on Windows. */
#include "base/clock.h"
#include "base/os.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <windows.h>

int jh__parent_pid(void) { return 0; }

uint64_t jh__process_start_ns(void) { return 0; }

void jh__exe_path(char *buf, size_t len)
{
    if (!len)
        return;
    DWORD n = GetModuleFileNameA(NULL, buf, (DWORD)(len > MAXDWORD ? MAXDWORD : len));
    buf[n < len ? n : 0] = 0;       /* n == len: truncated, and not NUL-terminated on XP */
}

/* msvcrt's strerror returns its static table's strings for the values it knows, and
 * "Unknown error" for the rest (mingw-w64's POSIX extras, ENOTSUP and friends). */
const char *jh__errno_desc(int e)
{
    const char *s = strerror(e);
    return s && strcmp(s, "Unknown error") ? s : NULL;
}

int jh__win_errno(unsigned long err)
{
    switch (err) {
    case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: case ERROR_INVALID_DRIVE:
        return -ENOENT;
    case ERROR_ACCESS_DENIED: case ERROR_WRITE_PROTECT: return -EACCES;
    case ERROR_FILE_EXISTS: case ERROR_ALREADY_EXISTS: return -EEXIST;
    case ERROR_SHARING_VIOLATION: case ERROR_LOCK_VIOLATION: case ERROR_USER_MAPPED_FILE:
        return -EBUSY;
    case ERROR_DISK_FULL: case ERROR_HANDLE_DISK_FULL: return -ENOSPC;
    case ERROR_FILE_TOO_LARGE: return -EFBIG;
    case ERROR_NOT_ENOUGH_MEMORY: case ERROR_OUTOFMEMORY: case ERROR_COMMITMENT_LIMIT:
        return -ENOMEM;
    case ERROR_INVALID_ADDRESS: return -EFAULT;
    case ERROR_FILENAME_EXCED_RANGE: return -ENAMETOOLONG;
    case ERROR_DIRECTORY: return -ENOTDIR;
    case ERROR_INVALID_NAME: case ERROR_INVALID_PARAMETER: return -EINVAL;
    case ERROR_CALL_NOT_IMPLEMENTED: case ERROR_PROC_NOT_FOUND: return -ENOSYS;
    default: return -EIO;
    }
}

bool jh__mem_readable(const void *p, size_t n)
{
    const char *a = p, *end = a + n;
    while (a < end) {
        MEMORY_BASIC_INFORMATION mi;
        if (!VirtualQuery(a, &mi, sizeof mi) || mi.State != MEM_COMMIT ||
            (mi.Protect & (PAGE_NOACCESS | PAGE_GUARD)) ||
            !(mi.Protect & (PAGE_READONLY | PAGE_READWRITE | PAGE_WRITECOPY | PAGE_EXECUTE_READ |
                            PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY)))
            return false;
        a = (const char *)mi.BaseAddress + mi.RegionSize;
    }
    return true;
}

void *jh__aligned_alloc(size_t align, size_t size) { return _aligned_malloc(size, align); }
void jh__aligned_free(void *p) { _aligned_free(p); }

/* QueryPerformanceCounter: monotonic, what Windows profilers (ETW, WPA) stamp events with.
 * Split so that ticks * 1e9 does not overflow after a few hours at 10 MHz. */
uint64_t jh__now_ns(void)
{
    static LARGE_INTEGER freq;
    LARGE_INTEGER t;
    if (!freq.QuadPart)
        QueryPerformanceFrequency(&freq);   /* fixed at boot: racing writers store the same */
    QueryPerformanceCounter(&t);
    uint64_t f = (uint64_t)freq.QuadPart, c = (uint64_t)t.QuadPart;
    return c / f * 1000000000u + c % f * 1000000000u / f;
}

/* FILETIME counts 100 ns since 1601; the audit log's header wants ns since 1970. */
uint64_t jh__realtime_ns(void)
{
    FILETIME ft;
    GetSystemTimePreciseAsFileTime(&ft);
    uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
    return (t - 116444736000000000ull) * 100;
}

/* Windows unwinds with its own function tables, not DWARF FDEs. */
const void *jh__find_fde(const void *pc)
{
    (void)pc;
    return NULL;
}
