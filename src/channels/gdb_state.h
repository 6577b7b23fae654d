/*
 * gdb_state.h — what the gdb channel's files share: gdb.c (which image holds what, the
 * size classes and merges) and gdb_grow.c (the growing image while no debugger listens).
 * Only those two include it.
 */
#ifndef JH__CHANNELS_GDB_STATE_H
#define JH__CHANNELS_GDB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channels/channel.h"
#include "channels/gdb_jit.h"
#include "fmt/elf_grow_mem.h"

#define NCLASS 4                /* < 16, < 256, < 4096, more: functions per image */
#define BIG 5                   /* the class of merged full images */

struct img {
    struct jh__gdb_image *pub;            /* NULL only transiently */
    struct jh__entry **fns;      /* sorted by start */
    size_t n;
    int cls;                    /* size class; NCLASS: full (n >= cap); BIG: merged full */
    bool dirty;                 /* fns changed since pub was built (see img_changed) */
    size_t ndead;               /* functions removed since then */
    uintptr_t dead_lo, dead_hi; /* covers them: what pub still claims that is gone */
    uintptr_t apart_lo, apart_hi;   /* no section of pub spans this gap (img_rebuild) */
    struct img *prev, *next;    /* in its class list */
};

struct jh__gdb_grow;

struct gdb_state {
    const struct jh__chan_env *env;
    size_t cap;                 /* functions per full image */
    size_t big_cap;             /* per merged full image (0: cap is too big to merge) */
    size_t single_fanout;       /* SINGLE_FANOUT, or less with a small cap (at most cap/16) */
    bool defer;
    bool batch;                 /* inside a jh_code_remove_range or _add_many: gdb_batch */
    struct jh__entry **pending;  /* deferred mode, or in a batch: added, not yet in any image */
    size_t npending, pending_cap;
    struct img *cls[BIG + 1];
    size_t cls_n[BIG + 1], cls_fns[BIG + 1];
    size_t ndirty;
    uintptr_t dead_lo, dead_hi; /* covers code removed from dirty images, not yet rebuilt */
    uintptr_t apart_lo, apart_hi;   /* build() joins no gap that meets this range */
    struct img *newest;         /* the image of the newest code: kept out of merges */
    /* The growing image (gdb_grow.c): while no debugger listens, immediate adds append to
     * it; in no class list, its fns in the order they came. NULL: none now. */
    struct img *grow;
    struct jh__gdb_grow *gm;    /* its builder */
    const struct jh__func **funcs;  /* scratch for build() */
    size_t funcs_cap;
    struct jh__elf_scratch scratch; /* the image builder's, reused by every build() */
    /* Each function's share of the build-id (fmt/build_id.h), hashed once per description
     * (jh__entry_bid, shared with elfmap): a function goes into its own image, then merged
     * ones (SINGLE_FANOUT, cap); hashing it again was a tenth of an image (issue 30). */
    uint64_t *bids;             /* scratch for build(), with funcs */
    size_t bids_cap;
};

#define SLOT(st, e) ((e)->slot[(st)->env->slot])


/* gdb.c */
void jh__gdb_class_link(struct gdb_state *st, struct img *im);
int jh__gdb_maybe_merge(struct gdb_state *st, int c);
int jh__gdb_unjoin(struct gdb_state *st, const struct jh__entry *e);
void jh__gdb_sort(struct jh__entry **fns, size_t n);

/* gdb_grow.c. Add e to the growing image (started if none): 0, 1 when it cannot take e
 * (the caller gives e an image of its own), or a negative errno. Only immediate, outside a
 * batch, while no debugger listens: if one listens once e is in, the image is frozen and
 * the debugger told to read it again (jh__gdb_grow_freeze). */
int jh__gdb_grow_add(struct gdb_state *st, struct jh__entry *e);
/* Stop growing the image: from now on an ordinary one, in its class. copy: register a
 * compact copy of it first and drop the growing one (a debugger reads the copy), else it
 * stays registered as it is. 0 or -ENOMEM (then it stays as it was, growing). */
int jh__gdb_grow_freeze(struct gdb_state *st, bool copy);
/* e (in the growing image) goes: undone if it was the last added (true), else false (the
 * caller freezes the image and removes it as from any image). */
bool jh__gdb_grow_pop(struct gdb_state *st, struct jh__entry *e);
/* gdb_close: the growing image unregistered and freed. */
void jh__gdb_grow_close(struct gdb_state *st);

#endif
