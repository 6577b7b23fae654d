/*
 * gdb.c — the GDB/LLDB JIT interface, with in-memory ELF + DWARF images packed many
 * functions to an image, so debuggers stay fast with 100k functions.
 *
 *     $ JITHERALD=gdb gdb -q --args build/examples/minijit examples/minijit/calls.mini
 *     (gdb) break c                   # pending: c does not exist yet
 *     (gdb) run
 *     Breakpoint 1, c () at examples/minijit/calls.mini:6
 *     (gdb) bt
 *     #0  c () at examples/minijit/calls.mini:6
 *     #1  0x00007ffff78000a3 in b () at examples/minijit/calls.mini:12
 *     #2  0x00007ffff7800103 in a () at examples/minijit/calls.mini:17
 *     #3  0x00007ffff7800149 in main () at examples/minijit/calls.mini:22
 *     #4  0x000055555555c2e4 in mj_call (...) at examples/minijit/minijit.c:217
 *     ...
 *     (lldb) b c / run / bt / image lookup -a $pc          # the same through LLDB
 *
 * The protocol, its lock and debugger detection are in gdb_jit.c; this file decides what
 * goes into which image.
 *
 * Why images are packed (docs/gdb.md has the measurements): every objfile makes each
 * later registration slower in GDB (breakpoint re-set and section sorting walk all of
 * them), so one image per function is quadratic — LLVM ORC's listener: 5,000 functions,
 * 5 s alone, 40 s under gdb. And every call of the hook while a debugger listens is a
 * ptrace stop costing ~0.3 ms here, whatever the image holds. The policy:
 *   - images are merged like an LSM tree: FANOUT images of one size class (or enough of
 *     them to fill an image) become one image of the next class; an image of `cap`
 *     functions (gdb_batch, default 1024) is full and only changes when its code is
 *     removed or moved. Live images stay below FANOUT per class + n/cap (n/(4 cap) while
 *     a debugger listens, below); one-function images merge by SINGLE_FANOUT, so that
 *     each function is encoded fewer times and a debugger stops fewer times.
 *   - default, immediate: while a debugger listens, jh_code_add registers a one-function
 *     image before it returns, so the debugger sees the function before it can run
 *     (pending breakpoints hit). The merge registers the new image before unregistering
 *     the old ones: never a moment where a function is in no image. ~2 stops a function.
 *     While none listens, the function is appended to one growing image instead
 *     (gdb_grow.c), complete at every instant, so a debugger attaching later finds it
 *     in the list: it becomes an ordinary full image at cap functions, or when a
 *     debugger comes. A jh_code_add_many: one image.
 *   - deferred (gdb_batch | JH_GDB_DEFER, or JITHERALD_GDB_DEFER=1): new code is
 *     collected and registered as one image at jh_flush() or when `cap` functions are
 *     pending; the JIT calls jh_flush() before running new code. One stop per image: 100k
 *     functions under gdb in well under a second.
 *   - a removal rebuilds its image at once only when a debugger listens and the image is
 *     small; otherwise it waits (a GC sweep would rebuild a big image per removal) until a
 *     quarter of the image is dead, new code takes the addresses, or jh_flush().
 *   - while a debugger listens and FANOUT full images exist, BIG_FANOUT of them merge into
 *     one. Each registration costs gdb a little for every objfile it holds (more with a
 *     breakpoint set by name, which it re-sets against all of them), and full images grow
 *     with n: attached at 50,000 of 100,000 functions with `break f3` set, gdb spent 50-74
 *     s of CPU, 41-43 s with full images merged by four. Not further: re-setting a breakpoint
 *     costs gdb more the bigger the objfile it lies in (a one-function image registered
 *     next to a 16,384-function image holding the breakpoint: 1.0 ms of gdb CPU, next to
 *     1,024-function ones: 0.7 ms), and merging by sixteen was slower overall. Without a
 *     debugger images stay as they are: nothing pays for their number then.
 *
 * Attaching: gdb walks the list (LLDB 14 needs every image announced again: gdb_jit.c).
 */
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "channels/channel.h"
#include "channels/gdb_jit.h"
#include "channels/gdb_state.h"
#include "fmt/build_id.h"

/* ---- policy ---- */
#define FANOUT 16
/* One-function images merge by this many (at most cap/16, so that 16 of the merged images
 * still fill a full one): each function is encoded again twice on its way to a full image
 * (64, 1024) instead of three times (16, 256, 1024), which was a third of what an add
 * cost without a debugger (issue 30). While a debugger listens it saves stops: a function
 * costs two at least (its own image registered, later unregistered), and each merge one
 * more plus one per image merged later: 2.03 stops per function instead of 2.13, and gdb
 * ~10% less CPU per module with LLVM's one-function modules (pooled medians, within the
 * load's noise round by round; docs/cost.md, "LLVM under gdb"): up to 63 one-function
 * objfiles more in gdb cost it less than the merges did. */
#define SINGLE_FANOUT 64
#define LAZY_MIN 64             /* removals from images this big wait even under a debugger */
#define BIG_FANOUT 4            /* full images per merged image */
/* Functions in a merged image at most: each may have a .text section of its own, and an
 * ELF file has at most 65,280 (config.c caps gdb_batch at half this for the same reason). */
#define BIG_MAX 32768

/* ---- images and their size classes ---- */
static int class_of(const struct gdb_state *st, size_t n)
{
    if (n >= st->cap)
        return NCLASS;
    int c = 0;
    for (size_t lim = FANOUT; n >= lim && c < NCLASS - 1; lim *= FANOUT)
        c++;
    return c;
}

/* A full image stays full until half of it is gone: otherwise one removal would drop it
 * into a class where it merges again at once, and a GC sweep would rebuild big images
 * over and over. */
void jh__gdb_class_link(struct gdb_state *st, struct img *im)
{
    int c = im->cls == BIG && im->n >= st->big_cap / 2 ? BIG :
            im->cls >= NCLASS && im->n >= st->cap / 2 ? NCLASS : class_of(st, im->n);
    im->cls = c;
    im->prev = NULL;
    im->next = st->cls[c];
    if (im->next)
        im->next->prev = im;
    st->cls[c] = im;
    st->cls_n[c]++;
    st->cls_fns[c] += im->n;
}

static void class_unlink(struct gdb_state *st, struct img *im)
{
    int c = im->cls;
    if (im->prev)
        im->prev->next = im->next;
    else
        st->cls[c] = im->next;
    if (im->next)
        im->next->prev = im->prev;
    st->cls_n[c]--;
    st->cls_fns[c] -= im->n;
}

/* May an image's .text section cover the gap between its functions a and b (live entries,
 * so the first code at or above a's end is a's successor)? Only if no live code is there,
 * nor code just removed from the image being rebuilt (img_rebuild). */
static bool gap_empty(void *arg, const struct jh__func *a, const struct jh__func *b)
{
    const struct gdb_state *st = arg;
    uint64_t lo = a->start + a->size, hi = b->start;
    const struct jh__entry *e = jh__view_next(st->env, JH__CONTAINER_OF(a, struct jh__entry, fn));
    return !(lo < st->apart_hi && st->apart_lo < hi) && (!e || e->node.start >= hi);
}

/* The debugger's image of fns[0..n) (sorted by start). */
static int build(struct gdb_state *st, struct jh__gdb_image **out, struct jh__entry *const *fns,
                 size_t n)
{
    if (JH__VEC_RESERVE(st->funcs, st->funcs_cap, n) || JH__VEC_RESERVE(st->bids, st->bids_cap, n))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        st->funcs[i] = &fns[i]->fn, st->bids[i] = jh__entry_bid(fns[i]);
    if (n == 1)         /* (gdb_add's: encoded once for every channel, and for its merges) */
        jh__entry_insns(fns[0]);
    return jh__gdb_image_build(out, st->funcs, n, gap_empty, st, &st->scratch, st->bids);
}

/* The addresses im's sections may claim around its function i (just removed from it, was
 * at [lo, hi)): the gaps to its neighbours in im, when build() could have spanned them. */
static void claimed(const struct img *im, size_t i, uintptr_t *lo, uintptr_t *hi)
{
    if (i > 0) {
        uintptr_t end = im->fns[i - 1]->node.start + im->fns[i - 1]->node.size;
        if (*lo - end <= JH__GDB_JOIN_GAP)
            *lo = end;
    }
    if (i < im->n && im->fns[i]->node.start - *hi <= JH__GDB_JOIN_GAP)
        *hi = im->fns[i]->node.start;
}

static void img_free(struct gdb_state *st, struct img *im)
{
    if (st->newest == im)
        st->newest = NULL;
    if (im->dirty)
        st->ndirty--;
    free(im->fns);
    free(im);
}

static int cmp_start(const void *a, const void *b)
{
    const struct jh__entry *x = *(struct jh__entry *const *)a, *y = *(struct jh__entry *const *)b;
    return x->node.start < y->node.start ? -1 : x->node.start > y->node.start;
}

/* fns by start (a check first: most come sorted) */
void jh__gdb_sort(struct jh__entry **fns, size_t n)
{
    size_t up = 1;
    while (up < n && fns[up - 1]->node.start <= fns[up]->node.start)
        up++;
    if (up < n)
        jh__sort(fns, n, sizeof *fns, cmp_start);
}

/* A new image for fns[0..n) (taken over on success), registered before the images in
 * drop[] are unregistered, then classified. */
static int img_new(struct gdb_state *st, struct jh__entry **fns, size_t n,
                   struct jh__gdb_image *const *drop, size_t ndrop, struct img **out)
{
    struct img *im = calloc(1, sizeof *im);
    if (!im)
        return -ENOMEM;
    im->cls = -1;
    jh__gdb_sort(fns, n);
    int err = build(st, &im->pub, fns, n);
    if (err) {
        free(im);
        return err;
    }
    im->fns = fns, im->n = n;
    for (size_t i = 0; i < n; i++)
        SLOT(st, fns[i]) = im;
    jh__gdb_publish(im->pub, drop, ndrop);
    jh__gdb_class_link(st, im);
    if (out)
        *out = im;
    return 0;
}

/* Rebuild one image from its current functions and swap it in (or drop it when empty).
 * Rebuilt after losing a few functions, an image keeps their place out of its sections:
 * what comes back there next (under jitherald run, the same function with its lines from
 * the jitdump, replacing the perf map's) then needs no second rebuild to split a section
 * spanning it (unjoin). Erlang: 620 such replacements, each rebuilding a full image twice.
 * After more removals (a flush, a GC) the gaps join as usual: fewer sections. */
#define APART_MAX 1

static int img_rebuild(struct gdb_state *st, struct img *im)
{
    struct jh__gdb_image *old = im->pub, *p = NULL;
    bool apart = im->ndead && im->ndead <= APART_MAX && im->dead_hi > im->dead_lo;
    if (im->n) {
        st->apart_lo = apart ? im->dead_lo : 0;
        st->apart_hi = apart ? im->dead_hi : 0;
        int err = build(st, &p, im->fns, im->n);
        st->apart_lo = st->apart_hi = 0;
        if (err)
            return err;
    }
    im->apart_lo = apart ? im->dead_lo : 0;
    im->apart_hi = apart ? im->dead_hi : 0;
    im->pub = p;
    jh__gdb_publish(p, &old, 1);
    if (im->dirty) {
        im->dirty = false;
        st->ndirty--;
    }
    im->ndead = 0, im->dead_lo = im->dead_hi = 0;
    if (!im->n) {
        class_unlink(st, im);
        img_free(st, im);
    }
    return 0;
}

static int merge_full(struct gdb_state *st);

/*
 * Merge the images of class c into one when there are FANOUT of them or together they
 * fill an image; the result may complete the next class, so go on upwards. The image of
 * the newest code stays out: it is the likeliest to change next. A JIT describing code
 * twice (node and Erlang under jitherald run: a perf-map line, then the jitdump's LOAD
 * with lines and CFI) replaces it right away, and merged it would take a big image's
 * rebuild with it: Erlang's 16,575 functions cost 8.6 s of gdb images against 0.4 s.
 */
int jh__gdb_maybe_merge(struct gdb_state *st, int c)
{
    for (; c < NCLASS; c++) {
        struct img *keep = st->newest && st->newest->cls == c ? st->newest : NULL;
        size_t cn = st->cls_n[c] - !!keep, cf = st->cls_fns[c] - (keep ? keep->n : 0);
        size_t fanout = c == 0 && st->single_fanout > FANOUT && cn < st->single_fanout
                        ? st->single_fanout : FANOUT;
        if (cn < 2 || (cn < fanout && cf < st->cap))
            continue;
        size_t n = cf, k = 0, nd = 0;
        struct jh__entry **fns = malloc(n * sizeof *fns);
        struct jh__gdb_image **drop = malloc(cn * sizeof *drop);
        if (!fns || !drop) {
            free(fns);
            free(drop);
            return -ENOMEM;
        }
        if (keep)
            class_unlink(st, keep);
        for (struct img *im = st->cls[c]; im; im = im->next) {
            memcpy(fns + k, im->fns, im->n * sizeof *fns);
            k += im->n;
            drop[nd++] = im->pub;
        }
        /* On failure the old images simply stay as they are. */
        struct img *old = st->cls[c];
        st->cls[c] = NULL;
        st->cls_n[c] = st->cls_fns[c] = 0;
        int err = img_new(st, fns, n, drop, nd, NULL);
        free(drop);
        if (err)
            free(fns);
        for (struct img *im = old, *next; im; im = next) {
            next = im->next;
            if (err)
                jh__gdb_class_link(st, im);
            else
                img_free(st, im);
        }
        if (keep)
            jh__gdb_class_link(st, keep);
        if (err)
            return err;
    }
    return merge_full(st);
}

/* While a debugger listens and FANOUT full images exist: BIG_FANOUT of them (as many as
 * fit big_cap) become one merged image (BIG). */
static int merge_full(struct gdb_state *st)
{
    if (!st->big_cap || st->cls_n[NCLASS] < FANOUT || !jh__gdb_listening())
        return 0;
    struct img *take[BIG_FANOUT];
    size_t k = 0, n = 0;
    for (struct img *im = st->cls[NCLASS]; im && k < BIG_FANOUT; im = im->next) {
        if (n + im->n > st->big_cap)
            continue;
        take[k++] = im;
        n += im->n;
    }
    if (k < 2)
        return 0;
    struct jh__entry **fns = malloc(n * sizeof *fns);
    if (!fns)
        return -ENOMEM;
    struct jh__gdb_image *drop[BIG_FANOUT];
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
        memcpy(fns + at, take[i]->fns, take[i]->n * sizeof *fns);
        at += take[i]->n;
        drop[i] = take[i]->pub;
        class_unlink(st, take[i]);
    }
    struct img *im;
    int err = img_new(st, fns, n, drop, k, &im);
    if (err) {                  /* the old images stay as they are */
        free(fns);
        for (size_t i = 0; i < k; i++)
            jh__gdb_class_link(st, take[i]);
        return err;
    }
    class_unlink(st, im);       /* classified by size as full: it is the merged class */
    im->cls = BIG;
    jh__gdb_class_link(st, im);
    for (size_t i = 0; i < k; i++)
        img_free(st, take[i]);
    return 0;
}

/* The image's function set changed (n was old_n): reclassify, then rebuild it now, or
 * mark it dirty and rebuild it later. Rebuilding a big image per removal made a GC sweep
 * cost 0.1-0.9 ms per removal without a debugger, and ~5 ms with gdb attached (it reads
 * the whole image again). So a removal waits (may_wait) unless a debugger listens and the
 * image is small; a waiting image is rebuilt once a quarter of it is dead, when new code
 * lands on the removed addresses (gdb_add), at jh_flush, or in a merge. Until then a
 * debugger may still name freed code, which nothing runs. [lo, hi): the removed code. */
static int img_changed(struct gdb_state *st, struct img *im, size_t old_n, bool may_wait,
                       uintptr_t lo, uintptr_t hi)
{
    size_t n = im->n;
    im->n = old_n;
    class_unlink(st, im);
    im->n = n;
    jh__gdb_class_link(st, im);
    bool wait = st->defer || (may_wait && (st->batch || old_n >= LAZY_MIN ||
                                           !jh__gdb_listening()));
    if (n && wait) {
        if (!im->dirty)
            st->ndirty++;
        im->dirty = true;
        im->ndead += old_n - n;
        if (hi > lo) {
            if (st->dead_hi <= st->dead_lo || lo < st->dead_lo)
                st->dead_lo = lo;
            if (hi > st->dead_hi)
                st->dead_hi = hi;
            if (im->dead_hi <= im->dead_lo || lo < im->dead_lo)
                im->dead_lo = lo;
            if (hi > im->dead_hi)
                im->dead_hi = hi;
        }
        if (st->defer || st->batch || im->ndead * 4 < n + im->ndead)
            return 0;
    }
    int c = im->cls;
    int err = img_rebuild(st, im);
    return err ? err : jh__gdb_maybe_merge(st, c);
}

/* Rebuild every dirty image (and merge what became small). */
static int rebuild_dirty(struct gdb_state *st)
{
    int err;
    for (int c = 0; c <= BIG && st->ndirty; c++) {
        for (struct img *im = st->cls[c], *next; im && st->ndirty; im = next) {
            next = im->next;
            if (im->dirty && (err = img_rebuild(st, im)))
                return err;
        }
    }
    st->dead_lo = st->dead_hi = 0;
    for (int c = 0; c < NCLASS; c++)
        if ((err = jh__gdb_maybe_merge(st, c)))
            return err;
    return 0;
}

/* Images still naming removed code must go before new code takes the addresses: two
 * images claiming one address confuse both debuggers. Only those: the others wait, until a
 * quarter of them is gone (a JIT that frees code as it compiles, Erlang under jitherald run,
 * rebuilt every image that had lost a function at each new function). */
static int settle(struct gdb_state *st, uintptr_t lo, uintptr_t hi)
{
    if (!st->ndirty || st->defer || !(lo < st->dead_hi && st->dead_lo < hi))
        return 0;
    bool merged = false;
    for (int c = 0; c <= BIG && st->ndirty; c++) {
        for (struct img *im = st->cls[c], *next; im && st->ndirty; im = next) {
            next = im->next;
            if (!im->dirty || !(lo < im->dead_hi && im->dead_lo < hi))
                continue;
            int err = img_rebuild(st, im);
            if (err)
                return err;
            merged = true;
        }
    }
    for (int c = 0; c < NCLASS && merged; c++) {
        int err = jh__gdb_maybe_merge(st, c);
        if (err)
            return err;
    }
    return 0;
}

/* Index of e in im->fns (sorted by start; `start` is where e was when it was sorted). */
static size_t img_find(const struct img *im, const struct jh__entry *e, uintptr_t start)
{
    size_t lo = 0, hi = im->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (im->fns[mid]->node.start < start && im->fns[mid] != e)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo < im->n && im->fns[lo] != e)   /* a moved e may compare out of place */
        lo++;
    return lo;
}

/* The pending functions, registered as one image (which takes their array over). */
static int register_pending(struct gdb_state *st)
{
    struct img *im;
    int err = st->npending ? img_new(st, st->pending, st->npending, NULL, 0, &im) : 0;
    if (err || !st->npending)
        return err;
    st->newest = im;
    st->pending = NULL, st->npending = st->pending_cap = 0;
    return jh__gdb_maybe_merge(st, im->cls);
}

/* ---- channel hooks ---- */
static int gdb_flush(void *state)
{
    struct gdb_state *st = state;
    int err = 0;
    jh__gdb_check_debugger();
    if (st->grow && jh__gdb_listening() && (err = jh__gdb_grow_freeze(st, true)))
        return err;
    if (st->ndirty && (err = rebuild_dirty(st)))  /* stale images first: no overlaps */
        return err;
    if ((err = register_pending(st)))
        return err;
    jh__gdb_report_foreign(st->env->diag);
    return 0;
}

/* New code at e may lie in a gap one image's .text section spans (build() lets a section
 * cover a small gap between two of its functions while nothing is there). That image must
 * not go on claiming e's addresses: it is rebuilt first (deferred: at the flush, before e
 * is registered). p and n, e's neighbours, are consecutive in any image holding both. */
int jh__gdb_unjoin(struct gdb_state *st, const struct jh__entry *e)
{
    const struct jh__entry *p = jh__entry_of(jh__reg_prev(st->env->reg, &e->node));
    struct img *im = p ? SLOT(st, p) : NULL;
    if (!im)        /* (a batch's code: p is pending too, no need to look at n) */
        return 0;
    const struct jh__entry *n = jh__view_next(st->env, e);
    if (!n || SLOT(st, n) != im || im == SLOT(st, e) ||
        n->node.start - (p->node.start + p->node.size) > JH__GDB_JOIN_GAP ||
        (im->apart_lo <= e->node.start && e->node.start + e->node.size <= im->apart_hi))
        return 0;           /* (no section spans the gap: img_rebuild kept it apart) */
    if (st->defer) {
        if (!im->dirty)
            st->ndirty++;
        im->dirty = true;
        /* its section spans e: the flush rebuilds it before e goes in (settle_pending) */
        uintptr_t lo = e->node.start, hi = lo + e->node.size;
        if (im->dead_hi <= im->dead_lo || lo < im->dead_lo)
            im->dead_lo = lo;
        if (hi > im->dead_hi)
            im->dead_hi = hi;
        return 0;
    }
    if (im == st->grow)
        jh__gdb_grow_freeze(st, false);
    int c = im->cls;
    int err = img_rebuild(st, im);
    return err ? err : jh__gdb_maybe_merge(st, c);
}

static int gdb_add(void *state, struct jh__entry *e)
{
    struct gdb_state *st = state;
    /* (inside a batch nothing is appended: the growing image is whole for a debugger that
     * came meanwhile, and it is frozen at the next add outside one) */
    bool grow = !st->defer && !st->batch, listening = grow && jh__gdb_listening();
    int err = st->grow && listening ? jh__gdb_grow_freeze(st, true) : 0;
    grow = grow && !listening;
    SLOT(st, e) = grow ? st->grow : NULL;   /* (unjoin: e joins the growing image) */
    if (!err)
        err = jh__gdb_unjoin(st, e);
    if (!err)       /* (deferred: at the flush) */
        err = settle(st, e->node.start, e->node.start + e->node.size);
    if (err)
        return err;
    if (st->defer || st->batch) {
        if (JH__VEC_RESERVE(st->pending, st->pending_cap, st->npending + 1))
            return -ENOMEM;
        st->pending[st->npending++] = e;
        if (st->defer)      /* (a batch's end registers its image: that checks) */
            jh__gdb_check_debugger();
        return st->npending < st->cap ? 0 : st->defer ? gdb_flush(st) : register_pending(st);
    }
    if (grow) {
        err = jh__gdb_grow_add(st, e);
        jh__gdb_report_foreign(st->env->diag);
        if (err <= 0)
            return err;
        SLOT(st, e) = NULL;     /* an image of its own after all */
        if ((err = jh__gdb_unjoin(st, e)))
            return err;
    }
    struct jh__entry **fns = malloc(sizeof *fns);
    if (!fns)
        return -ENOMEM;
    fns[0] = e;
    err = img_new(st, fns, 1, NULL, 0, &st->newest);
    if (err) {
        free(fns);
        return err;
    }
    jh__gdb_report_foreign(st->env->diag);
    return jh__gdb_maybe_merge(st, 0);
}

static int gdb_remove(void *state, struct jh__entry *e)
{
    struct gdb_state *st = state;
    struct img *im = SLOT(st, e);
    if (im && im == st->grow && jh__gdb_grow_pop(st, e))
        return 0;
    if (im && im == st->grow)
        jh__gdb_grow_freeze(st, false);
    SLOT(st, e) = NULL;
    if (!im) {
        for (size_t i = st->npending; i-- > 0;) {
            if (st->pending[i] == e) {
                memmove(st->pending + i, st->pending + i + 1,
                        (st->npending - i - 1) * sizeof *st->pending);
                st->npending--;
                break;
            }
        }
        return 0;
    }
    size_t i = img_find(im, e, e->node.start);
    if (i == im->n)
        return -EFAULT;     /* bookkeeping lost: let the core switch the channel off */
    memmove(im->fns + i, im->fns + i + 1, (im->n - i - 1) * sizeof *im->fns);
    im->n--;
    uintptr_t lo = e->node.start, hi = lo + e->node.size;
    claimed(im, i, &lo, &hi);
    return img_changed(st, im, im->n + 1, true, lo, hi);
}

/* A range removal (a JIT flushing its code): each image is rebuilt once at the end, not
 * each time another quarter of it dies; images left empty are just dropped. A batch of
 * adds, immediate: one image at the end (each function built once, one debugger stop). */
static int gdb_batch(void *state, bool begin)
{
    struct gdb_state *st = state;
    st->batch = begin;
    if (begin || st->defer)
        return 0;
    int err = register_pending(st);
    return err || !st->ndirty ? err : rebuild_dirty(st);
}

static int gdb_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct gdb_state *st = state;
    struct img *im = SLOT(st, e);
    if (!im)
        return 0;           /* pending: its image is built from e->node.start at the flush */
    if (im == st->grow)
        jh__gdb_grow_freeze(st, false);
    size_t i = img_find(im, e, old_start);
    if (i == im->n)
        return -EFAULT;
    if (st->defer || im->n >= LAZY_MIN) {
        /* A compacting GC moves many functions: rebuilding a big image for each (and, with
         * a debugger, making it read the image again) costs milliseconds per move. Leave
         * the old address to the lazy removal path and announce the code anew: a
         * one-function image now (or pending, deferred), merged later as usual. */
        memmove(im->fns + i, im->fns + i + 1, (im->n - i - 1) * sizeof *im->fns);
        im->n--;
        uintptr_t lo = old_start, hi = old_start + e->node.size;
        claimed(im, i, &lo, &hi);
        int err = img_changed(st, im, im->n + 1, true, lo, hi);
        return err ? err : gdb_add(st, e);
    }
    /* Keep fns sorted first: settle() below may rebuild this very image (when e lands
     * where removed code still is), and an image is built from sorted functions. */
    while (i > 0 && im->fns[i - 1]->node.start > e->node.start) {
        im->fns[i] = im->fns[i - 1];
        im->fns[--i] = e;
    }
    while (i + 1 < im->n && im->fns[i + 1]->node.start < e->node.start) {
        im->fns[i] = im->fns[i + 1];
        im->fns[++i] = e;
    }
    int err = settle(st, e->node.start, e->node.start + e->node.size);
    if (!err)
        err = jh__gdb_unjoin(st, e);
    if (err)
        return err;
    /* Either may have merged im, freed now, into a new image: one built just now from the
     * functions' current addresses, e's new one included. */
    if (SLOT(st, e) != im)
        return 0;
    /* now, even without a debugger: the code at its new address must be findable */
    return img_changed(st, im, im->n, false, 0, 0);
}

static void gdb_close(void *state)
{
    struct gdb_state *st = state;
    if (!st)
        return;
    jh__gdb_grow_close(st);
    for (int c = 0; c <= BIG; c++) {
        for (struct img *im = st->cls[c], *next; im; im = next) {
            next = im->next;
            for (size_t i = 0; i < im->n; i++)
                SLOT(st, im->fns[i]) = NULL;
            jh__gdb_publish(NULL, &im->pub, 1);
            img_free(st, im);
        }
    }
    for (size_t i = 0; i < st->npending; i++)
        SLOT(st, st->pending[i]) = NULL;
    free(st->pending);
    free(st->funcs);
    free(st->bids);
    jh__elf_scratch_free(&st->scratch);
    free(st);
}

static int gdb_open(const struct jh__chan_env *env, void **state)
{
    const struct jh__gdb_opts *o = env->opts;
    struct gdb_state *st = calloc(1, sizeof *st);
    if (!st)
        return -ENOMEM;
    st->env = env, st->cap = o->batch;
    st->big_cap = st->cap * BIG_FANOUT < BIG_MAX ? st->cap * BIG_FANOUT : BIG_MAX;
    if (st->big_cap < 2 * st->cap)
        st->big_cap = 0;
    st->single_fanout = st->cap / FANOUT < SINGLE_FANOUT ? st->cap / FANOUT : SINGLE_FANOUT;
    st->defer = o->defer;
    jh__gdb_warn_shadowed(env->diag);
    jh__diag(env->diag, JH_LOG_DEBUG, "gdb: %zu functions per image, %s", st->cap,
             st->defer ? "deferred to jh_flush" : "immediate");
    *state = st;
    return 0;
}

const struct jh__channel_ops jh__gdb_ops = {
    .name = "gdb", .bit = JH_GDB, .open = gdb_open, .add = gdb_add, .remove = gdb_remove,
    .move = gdb_move, .flush = gdb_flush, .batch = gdb_batch, .close = gdb_close,
};
