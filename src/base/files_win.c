/*
 * files_win.c — files.h on Windows. The dangers have other names there: a symbolic link or
 * a junction is a reparse point (opened as itself with FILE_FLAG_OPEN_REPARSE_POINT, then
 * refused), a device ("NUL", "COM1") or a pipe answers CreateFile too (refused by
 * GetFileType), a hard link shows in nNumberOfLinks. Files are shared for reading and
 * deleting while open, so that `jitherald log` can read a log that is still being written.
 * The descriptors handed out are C runtime fds over the handles (_open_osfhandle): close()
 * closes both, _get_osfhandle() gives the handle back to whoever needs one (a file mapping).
 */
#include "base/diag.h"
#include "base/files.h"
#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

const char *jh__file_error(int err)
{
    switch (err) {
    case -ELOOP: return "refused: it is a reparse point (a symbolic link or a junction)";
    case -EPERM: return "refused: a file with several links";
    case -EINVAL: return "refused: not a regular file (a device, pipe or directory?)";
    case -ENOTDIR: return "not a directory";
    default: return err < 0 && err > -4096 && jh__errno_desc(-err) ? jh__errno_desc(-err) :
                    "unknown error";
    }
}

/* What an open handle is: 0 for a regular file with one link, else the refusal. */
static int check_handle(HANDLE h, bool single_link)
{
    if (GetFileType(h) != FILE_TYPE_DISK)
        return -EINVAL;
    BY_HANDLE_FILE_INFORMATION fi;
    if (!GetFileInformationByHandle(h, &fi))
        return jh__win_errno(GetLastError());
    if (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        return -ELOOP;
    if (fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        return -EINVAL;
    if (single_link && fi.nNumberOfLinks != 1)
        return -EPERM;
    return 0;
}

static int to_fd(HANDLE h, int crt_flags)
{
    int fd = _open_osfhandle((intptr_t)h, crt_flags | _O_BINARY);
    if (fd < 0) {
        CloseHandle(h);
        return -EMFILE;
    }
    return fd;
}

int jh__open_private(const char *path, int oflags, unsigned how)
{
    if (oflags & O_TRUNC)
        return -EINVAL;
    DWORD access = (oflags & O_ACCMODE) == O_RDWR ? GENERIC_READ | GENERIC_WRITE : GENERIC_WRITE;
    DWORD disp = (oflags & O_CREAT) ? (oflags & O_EXCL ? CREATE_NEW : OPEN_ALWAYS) : OPEN_EXISTING;
    HANDLE h = CreateFileA(path, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, disp, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return jh__win_errno(GetLastError());
    int err = check_handle(h, true);
    if (!err && (how & JH__OPEN_TRUNCATE)) {
        LARGE_INTEGER zero = { .QuadPart = 0 };
        if (!SetFilePointerEx(h, zero, NULL, FILE_BEGIN) || !SetEndOfFile(h))
            err = jh__win_errno(GetLastError());
    }
    if (err) {
        CloseHandle(h);
        return err;
    }
    int crt = (oflags & O_ACCMODE) == O_RDWR ? _O_RDWR : _O_WRONLY;
    return to_fd(h, crt | (oflags & O_APPEND ? _O_APPEND : 0));
}

int jh__open_regular(const char *path, unsigned how)
{
    DWORD flags = FILE_ATTRIBUTE_NORMAL | (how & JH__OPEN_NOFOLLOW ? FILE_FLAG_OPEN_REPARSE_POINT : 0);
    HANDLE h = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE |
                           FILE_SHARE_DELETE, NULL, OPEN_EXISTING, flags, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return jh__win_errno(GetLastError());
    int err = check_handle(h, how & JH__OPEN_OWN);
    if (err) {
        CloseHandle(h);
        return err;
    }
    return to_fd(h, _O_RDONLY);
}

int jh__unlink_private(const char *path)
{
    DWORD a = GetFileAttributesA(path);
    if (a == INVALID_FILE_ATTRIBUTES)
        return jh__win_errno(GetLastError());
    if (a & (FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE))
        return -EPERM;
    return DeleteFileA(path) ? 0 : jh__win_errno(GetLastError());
}

int jh__ensure_dir(const char *path)
{
    if (!CreateDirectoryA(path, NULL) && GetLastError() != ERROR_ALREADY_EXISTS)
        return jh__win_errno(GetLastError());
    DWORD a = GetFileAttributesA(path);
    if (a == INVALID_FILE_ATTRIBUTES)
        return jh__win_errno(GetLastError());
    if (a & FILE_ATTRIBUTE_REPARSE_POINT)
        return -ELOOP;
    if (!(a & FILE_ATTRIBUTE_DIRECTORY))
        return -ENOTDIR;
    return 0;
}

int jh__dir_get(struct jh__dir *d, const struct jh__diag *diag, const char **path)
{
    if (d->err > 0) {
        d->err = jh__ensure_dir(d->path);
        if (d->err < 0)
            jh__diag(diag, JH_LOG_ERROR, "directory %s: %s%s", d->path, jh__file_error(d->err),
                     jh__diag_file_fix(d->err, 1));
    }
    *path = d->path;
    return d->err;
}

void jh__default_dir(char *buf, size_t len)
{
    char tmp[MAX_PATH + 1];
    DWORD n = GetTempPathA(sizeof tmp, tmp);
    if (n == 0 || n >= sizeof tmp)
        snprintf(tmp, sizeof tmp, ".\\");
    snprintf(buf, len, "%sjitherald", tmp);     /* GetTempPath ends with a backslash */
}

int jh__write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        int w = _write(fd, c, n > 0x40000000 ? 0x40000000u : (unsigned)n);
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
