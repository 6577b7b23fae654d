/* files.c — see files.h. */
#include "lib/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "base/vec.h"

int jhr_read_file(const char *path, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = jh__open_regular(path, 0);
    if (fd == -EINVAL) {
        /* What read(2) said of a directory before regular files were required. */
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    }
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    /* One byte more than the size, so that a file that has not grown ends in one read. */
    size_t cap = 0, n = 0;
    uint8_t *p = NULL;
    int err = JH__VEC_RESERVE(p, cap, st.st_size > 0 ? (size_t)st.st_size + 1 : 4096);
    while (!err) {
        if (n == cap && (err = JH__VEC_RESERVE(p, cap, n + 1)))
            break;
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            err = -errno;
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    close(fd);
    if (err) {
        free(p);
        return err;
    }
    *data = p;
    *len = n;
    return 0;
}

void jhr_dir(char *buf, size_t len)
{
    const char *dir = getenv("JITHERALD_DIR");
    if (dir && *dir)
        snprintf(buf, len, "%s", dir);
    else
        jh__default_dir(buf, len);
}
