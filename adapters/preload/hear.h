/*
 * hear.h — what hear.c (the table of heard files, and the calls that open, close and cut
 * them) and writes.c (the calls that write them) share. Internal to the preload.
 */
#ifndef JHP_HEAR_H
#define JHP_HEAR_H

#include <dlfcn.h>
#include <stdio.h>

#include "preload.h"

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

/* One descriptor or FILE of a heard file. */
#define JHP_SLOTS 32
struct watch {
    _Atomic int fd1;            /* the descriptor + 1; 0: none */
    FILE *_Atomic file;         /* NULL: none */
    struct jhp_stream *stream;
    bool append;                /* O_APPEND: pwrite appends too (Linux) */
};
/* The heard file behind a descriptor or FILE, or NULL (every other call: a load and a
 * compare; NULL too while this thread is inside jitherald). */
struct watch *jhp_by_fd(int fd);
struct watch *jhp_by_file(FILE *f);
/* n bytes the VM just wrote to w's file; its call began at t0 (jh__now_ns). */
void jhp_hear(struct watch *w, const void *p, size_t n, uint64_t t0);

#define JHP_EXPORT __attribute__((visibility("default")))

#endif
