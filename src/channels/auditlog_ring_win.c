/*
 * auditlog_ring_win.c — the audit log's frames on Windows: the same lock-free reservation
 * (one compare-and-swap on the tail, the frame's first byte stored last) into a file
 * mapping, so that finished records survive a crash of the process as on Linux.
 *
 * What differs: a Windows file mapping cannot be larger than its file (CreateFileMapping
 * extends the file to the mapping's size), so the address space cannot be reserved for the
 * whole limit up front with the file growing under it. Instead the file grows by creating
 * a larger mapping of it and a new view of the whole (sizes doubling from 1 MiB up to the
 * limit): the newest view is published before the new size, a writer that sees the size
 * cover its frame takes the newest view, and older views stay mapped until close for
 * writers still filling frames through them — views of one file are coherent. Growing
 * fails cleanly on a full disk (the extension is allocated when the mapping is created, not
 * when a page is first touched), and records are then counted as dropped. Nothing is prepared
 * ahead: a new view costs one call per doubling, not a fault per page as on Linux.
 */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "base/os.h"
#include "channels/auditlog.h"
#include "fmt/msgpack.h"

#define FIRST_SIZE ((uint64_t)AL_CHUNK)

void jh__al_ring_init(struct al_state *st) { st->fd = -1; }
/* No signal interrupts a thread here to log (a console Ctrl-C handler runs in a thread of
 * its own; there is no fork): the lock alone. */
void jh__al_grow_lock(struct al_state *st) { jh__lock(&st->grow_lock); }
void jh__al_grow_unlock(struct al_state *st) { jh__unlock(&st->grow_lock); }
bool jh__al_grow_held(void) { return false; }

static HANDLE file_handle(const struct al_state *st) { return (HANDLE)_get_osfhandle(st->fd); }

/* The file and a view of it grow to `to` bytes. grow_lock held (or in open). */
static int map_to(struct al_state *st, uint64_t to)
{
    if (st->nviews == sizeof st->views / sizeof *st->views)
        return -ENOSPC;
    HANDLE m = CreateFileMappingA(file_handle(st), NULL, PAGE_READWRITE, (DWORD)(to >> 32),
                                  (DWORD)to, NULL);
    if (!m)
        return jh__win_errno(GetLastError());
    void *v = MapViewOfFile(m, FILE_MAP_WRITE, 0, 0, (SIZE_T)to);
    if (!v) {
        int err = jh__win_errno(GetLastError());
        CloseHandle(m);
        return err;
    }
    st->mappings[st->nviews] = m;
    st->views[st->nviews++] = v;
    if (!st->map)
        st->map = v;            /* the file is open: what auditlog.c tests */
    atomic_store_explicit(&st->view, (uint8_t *)v, memory_order_release);
    atomic_store_explicit(&st->file_size, to, memory_order_release);
    return 0;
}

static int grow(struct al_state *st, uint64_t need)
{
    int err = 0;
    jh__lock(&st->grow_lock);
    uint64_t size = atomic_load_explicit(&st->file_size, memory_order_relaxed);
    if (need > size && !atomic_load(&st->stuck)) {
        uint64_t to = size * 2;
        while (to < need)
            to *= 2;
        if (to > st->limit)
            to = st->limit;
        err = map_to(st, to);
        if (err < 0 && !atomic_exchange(&st->stuck, 1))
            jh__diag(st->env->diag, JH_LOG_ERROR, "auditlog: %s cannot grow past %llu bytes: %s; "
                     "later records are dropped", st->path, (unsigned long long)size,
                     jh__file_error(err));
    } else if (need > size) {
        err = -ENOSPC;
    }
    jh__unlock(&st->grow_lock);
    return err;
}

uint8_t *jh__al_reserve_below(struct al_state *st, size_t len, uint64_t cap)
{
    if (!st->map || atomic_load_explicit(&st->stuck, memory_order_relaxed))
        return NULL;
    uint64_t off = atomic_load_explicit(&st->tail, memory_order_relaxed);
    do {
        if (off > cap || len > cap - off)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&st->tail, &off, off + len,
                                                    memory_order_relaxed, memory_order_relaxed));
    if (off + len > atomic_load_explicit(&st->file_size, memory_order_acquire) &&
        grow(st, off + len) < 0)
        return NULL;            /* disk full: a zero-length hole the reader resyncs past */
    uint8_t *p = atomic_load_explicit(&st->view, memory_order_acquire) + off;
    jh__mp_be32(p + 1, (uint32_t)(len - JH__AL_FRAME_HDR));
    return p;
}

int jh__al_put_buf(struct al_state *st, const struct jh__buf *b, uint64_t cap)
{
    if (b->err)
        return b->err;
    uint8_t *p = jh__al_reserve_below(st, JH__AL_FRAME_HDR + b->len, cap);
    if (!p)
        return -ENOSPC;
    memcpy(p + JH__AL_FRAME_HDR, b->p, b->len);
    jh__al_commit(p);
    return 0;
}

int jh__al_file_open(struct al_state *st)
{
    const char *path = st->path;
    int fd = jh__open_private(path, O_RDWR | O_CREAT, JH__OPEN_TRUNCATE);
    if (fd < 0) {
        jh__diag(st->env->diag, JH_LOG_ERROR, "auditlog: %s: %s%s", path, jh__file_error(fd),
                 jh__diag_file_fix(fd, 1));
        jh__al_file_close(st);
        return fd;
    }
    st->fd = fd;
    atomic_store(&st->tail, 0);
    atomic_store(&st->file_size, 0);
    atomic_store(&st->dropped, 0);
    atomic_store(&st->full, 0);
    atomic_store(&st->stuck, 0);
    atomic_store(&st->ahead_mark, UINT64_MAX);
    int err = map_to(st, FIRST_SIZE < st->limit ? FIRST_SIZE : st->limit);
    if (err < 0) {
        jh__al_file_close(st);
        return err;
    }
    return 0;
}

static void unmap_all(struct al_state *st)
{
    for (unsigned i = st->nviews; i-- > 0;) {
        UnmapViewOfFile(st->views[i]);
        CloseHandle(st->mappings[i]);
    }
    st->nviews = 0;
    st->map = NULL;
    atomic_store(&st->view, NULL);
}

/* The file keeps what was written: the mappings go first (Windows refuses to shorten a
 * file that is mapped), then the end moves back to the tail. */
void jh__al_file_trim(struct al_state *st)
{
    if (!st->map)
        return;
    uint64_t tail = atomic_load(&st->tail);
    if (tail > atomic_load(&st->file_size))
        tail = atomic_load(&st->file_size);
    unmap_all(st);
    LARGE_INTEGER at = { .QuadPart = (LONGLONG)tail };
    HANDLE h = file_handle(st);
    if (!SetFilePointerEx(h, at, NULL, FILE_BEGIN) || !SetEndOfFile(h))
        jh__diag(st->env->diag, JH_LOG_WARN, "auditlog: trimming %s: %s", st->path,
                 jh__file_error(jh__win_errno(GetLastError())));
}

void jh__al_file_close(struct al_state *st)
{
    unmap_all(st);
    if (st->fd >= 0)
        _close(st->fd);
    st->fd = -1;
    st->path[0] = 0;
}
