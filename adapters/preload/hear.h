/*
 * hear.h — what hear.c (the table of heard files, and the calls that open, close and cut
 * them) and writes.c (the calls that write them) share. Internal to the preload.
 */
#ifndef JHP_HEAR_H
#define JHP_HEAR_H

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <sys/uio.h>

#include "preload.h"
#include "stream.h"

/* The next definition of each call (libc's), looked up once. */
static inline void *next_fn(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load_explicit(slot, memory_order_relaxed);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, p, memory_order_relaxed);
    }
    return p;
}
#define NEXT_DECL(fn) static void *_Atomic next_##fn
#define NEXT(fn) ((__typeof__(&fn))next_fn(&next_##fn, #fn))
/* For a call an older libc lacks (close_range: glibc 2.34, pwritev2: 2.26): a program that
 * finds ours through dlsym gets what that libc would have said, not a call through NULL. */
#define NEXT_OR_ENOSYS(fn)                                                               \
    do {                                                                                 \
        if (!next_fn(&next_##fn, #fn)) {                                                 \
            errno = ENOSYS;                                                              \
            return -1;                                                                   \
        }                                                                                \
    } while (0)

/* One descriptor or FILE of a heard file. */
#define JHP_SLOTS 32
struct watch {
    _Atomic int fd1;            /* the descriptor + 1; 0: none */
    FILE *_Atomic file;         /* NULL: none */
    struct jhp_stream *stream;
    bool append;                /* O_APPEND: pwrite appends too (Linux) */
};
/* The table (hear.c): slots [0, jhp_watch_hi) have been used, jhp_nwatch are in use now. */
extern struct watch jhp_watches[JHP_SLOTS];
extern atomic_int jhp_nwatch, jhp_watch_hi;

/* The heard file behind a descriptor or FILE, or NULL (every other call: a load and a
 * compare; NULL too while this thread is inside jitherald). Inline, newest slot first:
 * node writes its jitdump (~25,000 calls at its start) through the FILE it opened last. */
static inline struct watch *jhp_by_fd(int fd)
{
    if (fd < 0 || !atomic_load_explicit(&jhp_nwatch, memory_order_acquire) || jhp_inside)
        return NULL;
    for (struct watch *w = &jhp_watches[atomic_load_explicit(&jhp_watch_hi,
                                                             memory_order_acquire)];
         w != jhp_watches;)
        if (atomic_load_explicit(&(--w)->fd1, memory_order_acquire) == fd + 1)
            return w;
    return NULL;
}

/* (a walk by pointer: an index the compiler kept apart from its address cost ~10
 * instructions a call more, on each of node's ~28,000 writes to its map and jitdump) */
static inline struct watch *jhp_by_file(FILE *f)
{
    if (!f || !atomic_load_explicit(&jhp_nwatch, memory_order_acquire) || jhp_inside)
        return NULL;
    for (struct watch *w = &jhp_watches[atomic_load_explicit(&jhp_watch_hi,
                                                             memory_order_acquire)];
         w != jhp_watches;)
        if (atomic_load_explicit(&(--w)->file, memory_order_acquire) == f)
            return w;
    return NULL;
}
/* n bytes the VM just wrote to w's file in one call, from the pieces iov[0..cnt); its call
 * began at t0 (jhp_now). The pieces are heard together: another thread's write never
 * lands between them. */
void jhp_hear_iov(struct watch *w, const struct iovec *iov, int cnt, size_t n, uint64_t t0);
/* The same, for a whole perf map line the VM printed with a format writes.c knows: read
 * from its numbers when the map holds no partial line (stream.c), else fed as text. */
void jhp_hear_line(struct watch *w, const struct jhp_map_line *l, uint64_t t0);
/* The same, from one piece: n bytes at p. Untimed (the usual case), inline in each
 * write's wrapper: a lock and stream.h's copy for a piece of a record (node writes its
 * jitdump in ~25,000 of them at its start, fwrite and fputc of each field). */
__attribute__((always_inline)) static inline void jhp_hear(struct watch *w, const void *p,
                                                          size_t n, uint64_t t0)
{
    if (jhp_cfg.timed) {
        struct iovec v = { (void *)p, n };
        jhp_hear_iov(w, &v, 1, n, t0);
        return;
    }
    jhp_inside++;
    jhp_lock();
    if (w->stream)
        jhp_stream_feed(w->stream, p, n);
    jhp_unlock();
    jhp_inside--;
}

#define JHP_EXPORT __attribute__((visibility("default")))

#endif
