/*
 * elfmap.h — the elfmap channel's state, shared by its two parts:
 *   elfmap.c       what to swap and when: pending code, freed room, the swap budget, hooks
 *   elfmap_swap.c  one swap: the image, its file, the mappings, and which file backs which
 *                  pages (generations)
 * pageswap.c holds the mechanics of replacing live pages and of reading /proc/self/maps.
 */
#ifndef JH__CHANNELS_ELFMAP_H
#define JH__CHANNELS_ELFMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "channels/channel.h"
#include "channels/pageswap.h"

#define ELFMAP_BURST 32
#define ELFMAP_REFILL_NS 10000000ull
#define ELFMAP_MAX_PENDING 4096
#define ELFMAP_SETTLED_GAP 16   /* less room than this after the last function: padding */

/* One image file, while some of its pages are still mapped where we put them. */
struct gen {
    uint64_t n;
    uintptr_t lo, hi;
    size_t live;                /* bytes of [lo, hi) still mapped from this file */
    void *rw;                   /* the R+W mapping valgrind wants, rw_len bytes */
    size_t rw_len;
    dev_t dev;
    ino_t ino;
};

/* Which of our files backs which pages: sorted, not overlapping. */
struct seg {
    uintptr_t lo, hi;
    struct gen *g;
};

/* One-time reports. */
enum { R_VERDICT = 0, R_CHANGED = 16, R_BUILD, R_FILE, R_MAP, R_RANGE };

struct elfmap {
    const struct jh__chan_env *env;
    size_t page;
    int maps_fd;
    struct jh__entry **pend;     /* announced, not yet in an image; e->chan[] = index + 1 */
    size_t npend, cappend;
    struct seg *seg;
    size_t nseg, capseg;
    struct gen **gens;
    size_t ngens, capgens;
    uintptr_t *freed;           /* pages code was removed from (freed_add) */
    size_t nfreed, capfreed;
    const struct jh__func **fns;    /* scratch: the functions of one image */
    size_t capfns;
    struct jh__buf img;
    uint64_t tokens, refill_at;
    uint32_t reported;
    unsigned pid_gen;           /* jh__fork_gen when pid was read */
    pid_t pid;
    uint64_t swaps, fallbacks;
};

#define SLOT(m, e) ((e)->slot[(m)->env->slot])

static inline uintptr_t pg_down(const struct elfmap *m, uintptr_t a)
{
    return a & ~(uintptr_t)(m->page - 1);
}
static inline uintptr_t pg_up(const struct elfmap *m, uintptr_t a)
{
    return pg_down(m, a + m->page - 1);
}


void jh__em_report_once(struct elfmap *m, int bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Swap the pages [lo, hi). 0: swapped; 1: left as they are (reported once); negative
 * errno: something is wrong with the channel itself (the core switches it off). */
int jh__em_swap_range(struct elfmap *m, uintptr_t lo, uintptr_t hi, enum jh__vma_verdict *verdict);
/* Grow [lo, hi) until no announced function straddles its ends (see elfmap.c). */
void jh__em_extend(struct elfmap *m, uintptr_t *lo, uintptr_t *hi, uintptr_t from);

#endif
