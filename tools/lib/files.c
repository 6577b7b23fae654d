/* files.c — see files.h. */
#include "lib/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "base/vec.h"

static int read_path(const char *path, unsigned how, size_t max, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = jh__open_regular(path, how);
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
    /* The file as it was when opened: a writer appending while we read (a live perf map,
     * or one planted to grow forever) cannot make us read more. A size of 0 (a file in
     * /proc, say) is read to its end, at most max bytes. */
    if (st.st_size > 0 && (uint64_t)st.st_size > max) {
        close(fd);
        return -EFBIG;
    }
    size_t want = st.st_size > 0 ? (size_t)st.st_size : max;
    size_t cap = 0, n = 0;
    uint8_t *p = NULL;
    int err = JH__VEC_RESERVE(p, cap, st.st_size > 0 ? want : 4096);
    while (!err && n < want) {
        if (n == cap && (err = JH__VEC_RESERVE(p, cap, n + 1)))
            break;
        size_t room = cap - n < want - n ? cap - n : want - n;
        ssize_t r = read(fd, p + n, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            err = -errno;
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    /* a file of unknown size that filled max: more is there */
    if (!err && st.st_size <= 0 && n == max && max != SIZE_MAX) {
        char c;
        if (read(fd, &c, 1) == 1)
            err = -EFBIG;
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

int jhr_read_file(const char *path, uint8_t **data, size_t *len)
{
    return read_path(path, 0, SIZE_MAX, data, len);
}

int jhr_read_guessed(const char *path, size_t max, uint8_t **data, size_t *len)
{
    return read_path(path, JH__OPEN_OWN | JH__OPEN_NOFOLLOW, max, data, len);
}

const char *jhr_file_error(int err)
{
    return err == -EFBIG ? "refused: larger than a file of this kind should be" :
           jh__file_error(err);
}

void jhr_dir(char *buf, size_t len)
{
    const char *dir = getenv("JITHERALD_DIR");
    if (dir && *dir)
        snprintf(buf, len, "%s", dir);
    else
        jh__default_dir(buf, len);
}
