/*
 * unwind_win.h — the unwind channel on Windows x64 and its parts (unwind_win.c tells the
 * design):
 *   unwind_win.c        the channel's hooks, regions (one per allocation of JIT code) and
 *                       the callback the system unwinder calls
 *   unwind_index_win.c  each region's sorted table of functions, read without a lock by the
 *                       callback, and the reclaiming of what a reader may still hold
 *   unwind_near_win.c   memory for UNWIND_INFO within 4 GiB above a region's base, shared
 *                       by regions and by functions with the same bytes
 * State is process-wide, not per context: a region's table holds the functions of every
 * context whose code lives in it.
 */
#ifndef JH__CHANNELS_UNWIND_WIN_H
#define JH__CHANNELS_UNWIND_WIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <windows.h>

#include "base/lock.h"
#include "channels/channel.h"

#define WU_WINDOW ((uintptr_t)1 << 31)  /* a region spans at most this much code */
#define WU_REACH ((uint64_t)1 << 32)    /* RUNTIME_FUNCTION's offsets are 32-bit */
#define WU_CHUNK ((size_t)64 << 10)     /* unwind-info memory: one allocation granule */
#define WU_GRACE_NS 2000000000ull       /* what an unwinder got from us stays valid this long */
#define WU_LEAF 64                      /* functions per leaf of a region's table */

struct wu_chunk;
struct wu_region;

/* One function with unwind info. rf is what the callback hands to the unwinder, which reads
 * it (and the UNWIND_INFO it points at) after the callback returned: freed only WU_GRACE_NS
 * after the function is removed. */
struct wu_fn {
    RUNTIME_FUNCTION rf;        /* offsets from the region's base */
    struct wu_region *region;
    struct wu_chunk *chunk;     /* holds the UNWIND_INFO */
    struct wu_ctx *owner;
    struct wu_fn *prev, *next;  /* the owner's live functions */
};

/* A region's table: leaves of entries sorted by begin, found through an index of the first
 * offset each leaf covers. Readers see immutable snapshots, except that a leaf's n grows
 * (entries appended past it are written before n is published). */
struct wu_ent {
    uint32_t begin, end;
    struct wu_fn *fn;
};
struct wu_leaf {
    _Atomic uint32_t n;
    struct wu_ent e[WU_LEAF];
};
struct wu_index {
    uint32_t nleaf;
    struct { uint32_t first; _Atomic(struct wu_leaf *) leaf; } l[];
};

/* The code of one allocation of the JIT's (VirtualAlloc reservation), or a WU_WINDOW of it:
 * one RtlInstallFunctionTableCallback over [base, end). */
struct wu_region {
    uintptr_t base, end;
    _Atomic(struct wu_index *) index;
    size_t count;               /* live functions */
    bool installed;
};

struct wu_ctx {
    const struct jh__chan_env *env;
    struct wu_fn *live;
};

/* Memory for UNWIND_INFO: one WU_CHUNK allocation, its bytes interned (functions with the
 * same prologue share them). Freed when no function refers to it any more. */
struct wu_chunk {
    uint8_t *base;
    uint32_t used;
    size_t refs;
    uint32_t *hash;             /* offset + 1 of each distinct UNWIND_INFO, 0: empty */
    uint32_t hcap, hn;
};

struct jh__wu_state {
    struct wu_region **region;  /* sorted by base */
    size_t nregion, regioncap;
    struct wu_chunk **chunk;    /* sorted by base */
    size_t nchunk, chunkcap;
    size_t live;
    uintptr_t max_addr;         /* highest user-mode address */
    uint64_t grace_ns;
};
extern struct jh__wu_state jh__wu;
extern struct jh__lock jh__wu_lock;    /* guards jh__wu and every region's writers */

/* unwind_index_win.c */
int jh__wu_index_insert(struct wu_region *r, struct wu_fn *fn);
int jh__wu_index_remove(struct wu_region *r, struct wu_fn *fn);     /* 0, -ENOMEM: fn stays */
RUNTIME_FUNCTION *jh__wu_index_lookup(struct wu_region *r, uintptr_t pc);   /* lock-free */
void jh__wu_index_free(struct wu_region *r);  /* no reader can reach r any more */
/* Things an unwinder may still be reading: freed WU_GRACE_NS after retirement (fn,
 * regions), or as soon as no callback is running (index snapshots). */
void jh__wu_retire_fn(struct wu_fn *fn);
void jh__wu_retire_region(struct wu_region *r);
void jh__wu_sweep(void);
/* unwind_near_win.c */
/* The UNWIND_INFO bytes placed within reach of base: *rva and *chunk (a reference taken),
 * or -ENOSPC when no address space is free there, -ENOMEM. */
int jh__wu_place(uintptr_t base, uintptr_t end, const uint8_t *info, size_t len,
                 uint32_t *rva, struct wu_chunk **chunk);
void jh__wu_chunk_put(struct wu_chunk *c);

#endif
