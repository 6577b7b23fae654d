/*
 * auditlog.h — the audit-log channel's state, shared by its two parts:
 *   auditlog_ring.c  frames reserved lock-free in a MAP_SHARED file mapping, the file
 *                    prepared ahead of the writers by the writers, created and trimmed
 *                    (Windows: auditlog_ring_win.c, a file mapping mapped again, larger,
 *                    as the file grows)
 *   auditlog.c       the records (fmt/auditlog.h is their schema) and the channel's hooks
 */
#ifndef JH__CHANNELS_AUDITLOG_H
#define JH__CHANNELS_AUDITLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/lock.h"
#include "channels/channel.h"
#include "fmt/auditlog.h"

#define AL_RESERVE 512              /* held back for the `limit` and `close` records */
#define AL_CHUNK (1u << 20)         /* file growth step */
#define AL_MIN_LIMIT (64u << 10)

#define JH__AL_PATH_MAX 4096    /* the log's path, with its terminating NUL */

struct al_state {
    /* Read by every record, written rarely. */
    const struct jh__chan_env *env;
    bool ahead;                     /* prepare the file ahead of the writers (opts) */
    uint8_t *map;                   /* `limit` bytes of address space, MAP_SHARED on fd */
    uint64_t limit, data_limit;
    _Atomic uint64_t file_size;     /* bytes the file has been grown to */
    _Atomic int full;               /* the `limit` record has been written */
    _Atomic int stuck;              /* the file could not grow (disk full, quota, EFBIG) */
    _Atomic unsigned gen;           /* jh__fork_gen the file belongs to */
    _Atomic uint64_t ahead_mark;    /* a frame ending past this prepares more */
    struct jh__lock grow_lock;      /* file_size changes; the preparing state below */
#ifdef _WIN32
    int fd;
    _Atomic(uint8_t *) view;        /* the latest view: covers [0, file_size) */
    void *views[64];                /* every view and mapping handle, released at close */
    void *mappings[64];
    unsigned nviews;
#else
    struct jh__kfd fd;              /* checked before each use: base/files.h */
    /* A writer preparing ahead writes zeros over [zero_from, ...) of the file under
     * grow_lock (UINT64_MAX: none does): a frame reserved past it waits for the lock
     * before its stores. */
    _Atomic uint64_t zero_from;
    uint64_t zeroed;                /* zeros have been written up to here */
    uint64_t ahead_populated;       /* the mapping has been populated up to here */
#endif
    /* Held, not allocated: a fork child's restart may run in a signal handler (al_forked_lockfree). */
    char path[JH__AL_PATH_MAX];
    char *exe;                      /* the executable's path, for every header (read at open) */
    bool refs;                      /* record code in loaded objects' files by reference */
    struct al_objs *objs;           /* auditlog_ref.c: the objects met so far */
    struct jh__buf scratch;         /* the header and close records, under the context lock */
    _Atomic uint64_t dropped;
    /* Written by every record: alone on its cache line, so the CAS of one thread does not
     * evict the fields above from the others' caches. */
    _Alignas(64) _Atomic uint64_t tail;     /* next free byte */
    char pad[64 - sizeof(uint64_t)];
};

/* ---- auditlog_ref.c ---- */
/* Is [start, start + size), byte for byte, the file of a loaded object (an executable
 * segment of the program or a library, mapped from that file and unmodified: compared with
 * the file)? Then fills ref (valid until jh__al_refs_free) and returns true. Under the
 * context lock. */
bool jh__al_code_ref(struct al_state *st, uint64_t start, uint64_t size, struct jh__al_ref *ref);
void jh__al_refs_free(struct al_state *st);

/* ---- auditlog_ring.c (auditlog_ring_win.c) ---- */
/* The ring's own state in st, set up at open. */
void jh__al_ring_init(struct al_state *st);
/* Create st->path (checked: ours, regular, single link; then emptied) and map `limit`
 * bytes of it shared. 0 or a negative errno (st->fd and st->map stay unset). */
int jh__al_file_open(struct al_state *st);
/* Unmap the file and trim it to what was written: the zeros allocated ahead exist only
 * while the process runs (or after it crashed, where readers stop). No record after it. */
void jh__al_file_trim(struct al_state *st);
/* Unmap, close. */
void jh__al_file_close(struct al_state *st);
/* A frame of len bytes (header included) ending at or below cap, its length already in its
 * header; NULL when it does not fit or the file cannot grow (or, in a signal handler whose
 * thread holds grow_lock, when it does not fit in the file as it is: jh__al_grow_held()).
 * Fill bytes [5, len), then jh__al_commit(). Lock-free. */
uint8_t *jh__al_reserve_below(struct al_state *st, size_t len, uint64_t cap);
static inline void jh__al_commit(uint8_t *frame)
{
    atomic_store_explicit((_Atomic uint8_t *)frame, JH__AL_FRAME_MARK, memory_order_release);
}
/* grow_lock for a VM thread (the writers' growth, the fork hooks): a signal handler that
 * interrupts the thread in between and logs then never waits for it. */
void jh__al_grow_lock(struct al_state *st);
void jh__al_grow_unlock(struct al_state *st);
bool jh__al_grow_held(void);
/* Copy a record built in b into a frame below cap: 0, -ENOSPC, or b's error. */
int jh__al_put_buf(struct al_state *st, const struct jh__buf *b, uint64_t cap);

#endif
