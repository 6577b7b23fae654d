/*
 * unwind_runs.c — grouping functions into runs: sorted .eh_frame runs over disjoint
 * address ranges, registered with libgcc's list (GCC <= 12) and nongnu libunwind (see
 * unwind.c for why), rebuilt and merged as code comes and goes.
 */
#include <stdlib.h>

#include "channels/unwind.h"

struct uw_img *jh__uw_img_build(struct uw_fn **fn, size_t n, uintptr_t lo, uintptr_t hi)
{
    /* The CIEs this run's FDEs point to, copied in front of them: cie_at[k] is CIE k's
     * offset in the run plus one, 0 while unused. One CIE in the common case. */
    size_t one, *cie_at = jh__uw.ncies <= 1 ? &one : calloc(jh__uw.ncies, sizeof *cie_at);
    struct uw_img *im = cie_at ? calloc(1, sizeof *im) : NULL;
    if (!im) {
        if (cie_at != &one)
            free(cie_at);
        return NULL;
    }
    one = 0;
    size_t len = 4;
    for (size_t i = 0; i < n; i++) {
        if (!cie_at[fn[i]->cie]) {
            cie_at[fn[i]->cie] = 1;
            len += jh__uw.cies[fn[i]->cie].len;
        }
        len += fn[i]->fde_len;
    }
    bool near;
    im->buf = jh__uw_img_alloc(im, len, lo, hi, &near);
    if (!im->buf || (jh__uw.dyn && near && !(im->table = malloc(n * 2 * sizeof *im->table)))) {
        if (im->buf)
            jh__uw_img_free(im);
        else
            free(im);
        if (cie_at != &one)
            free(cie_at);
        return NULL;
    }
    im->len = len;
    uintptr_t base = (uintptr_t)im->buf;
    size_t at = 0;
    for (size_t k = 0; k < (jh__uw.ncies ? jh__uw.ncies : 1); k++) {
        if (!cie_at[k])
            continue;
        memcpy(im->buf + at, jh__uw.cies[k].b, jh__uw.cies[k].len);
        cie_at[k] = at + 1;
        at += jh__uw.cies[k].len;
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(im->buf + at, fn[i]->run + fn[i]->fde_off, fn[i]->fde_len);
        wr32(im->buf + at + 4, (uint32_t)(at + 4 - (cie_at[fn[i]->cie] - 1)));  /* to its CIE */
        if (fn[i]->filler) {    /* a template (unwind_host.c): its range, absolute */
            uint64_t begin = fn[i]->start, range = fn[i]->end - fn[i]->start;
            memcpy(im->buf + at + 8, &begin, 8);
            memcpy(im->buf + at + 16, &range, 8);
        }
        if (im->table) {
            im->table[2 * i] = (int32_t)(int64_t)(fn[i]->start - base);
            im->table[2 * i + 1] = (int32_t)at;
        }
        at += fn[i]->fde_len;
    }
    wr32(im->buf + at, 0);
    if (cie_at != &one)
        free(cie_at);
    if (im->table) {
        im->di.start_ip = lo;
        im->di.end_ip = hi;
        im->di.format = UW_INFO_FORMAT_REMOTE_TABLE;
        im->di.rti.name_ptr = (uintptr_t)"jitherald";
        im->di.rti.segbase = base;
        im->di.rti.table_len = n;       /* in words: one 8-byte entry each */
        im->di.rti.table_data = (uintptr_t)im->table;
    }
    jh__uw.copied += n;
    jh__uw.rebuilds++;
    return im;
}

void jh__uw_img_register(struct uw_img *im)
{
    if (jh__uw.mode == JH__UW_LIST) {
        jh__uw.reg_info(im->buf, im->ob);
        im->gcc = true;
    }
    if (im->table) {
        jh__uw.dyn_register(&im->di);
        im->dyn = true;
    }
}

/* ---- grouping ------------------------------------------------------------------------- */
size_t jh__uw_seg_upper(uintptr_t addr)         /* first run ending after addr */
{
    size_t lo = 0, hi = jh__uw.nseg;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (jh__uw.seg[m]->hi <= addr)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

static void seg_free(struct uw_seg *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->fn[i]->dead)
            jh__uw_fn_free(s->fn[i]);
    free(s->fn);
    free(s);
}

/* Is b the run of a's hosted region just above a? */
static bool hosted_next(const struct uw_seg *a, const struct uw_seg *b)
{
    return a->hosted && b->hosted && a->host.lo == b->host.lo && a->hi == b->lo;
}

/* The image of run s: its functions, and in a hosted run the fillers between them. */
static struct uw_img *seg_img(const struct uw_seg *s)
{
    if (!s->hosted)
        return jh__uw_img_build(s->fn, s->n, s->lo, s->hi);
    struct uw_fn **all;
    size_t n;
    if (jh__uw_host_fill(s, &all, &n))
        return NULL;
    return jh__uw_img_build(all, n, s->lo, s->hi);
}

static int rebuild_with(size_t i0, size_t i1, struct uw_fn **add, size_t nadd,
                        const struct uw_host *h);

/*
 * Replace runs [i0, i1) by one run holding their live functions plus add (if not NULL),
 * registered before the old ones go. i0 == i1 inserts a new run at i0. The run is hosted
 * (unwind_host.c) when h is given or one of the old runs was.
 */
int jh__uw_seg_rebuild(size_t i0, size_t i1, struct uw_fn *add, const struct uw_host *h)
{
    return rebuild_with(i0, i1, add ? &add : NULL, add ? 1 : 0, h);
}

/* jh__uw_seg_rebuild with the nadd functions add[] (sorted by start, apart from each other
 * and from the live functions of runs [i0, i1)). */
static int rebuild_with(size_t i0, size_t i1, struct uw_fn **add, size_t nadd,
                        const struct uw_host *h)
{
    for (size_t i = i0; !h && i < i1; i++)
        if (jh__uw.seg[i]->hosted)
            h = &jh__uw.seg[i]->host;
    size_t n = nadd;
    for (size_t i = i0; i < i1; i++)
        n += jh__uw.seg[i]->n - jh__uw.seg[i]->ndead;
    /* The hosted runs of a region tile it from the lowest one up (see unwind_host.c): one
     * left empty hands its range to the run below it, rebuilt with it. */
    if (h && !n && i1 > i0 && i0 > 0 && hosted_next(jh__uw.seg[i0 - 1], jh__uw.seg[i0])) {
        i0--;
        n = jh__uw.seg[i0]->n - jh__uw.seg[i0]->ndead;
    }
    struct uw_seg *s = NULL;
    if (n) {
        if (i0 == i1 && jh__uw.nseg == jh__uw.segcap) {
            size_t cap = jh__uw.segcap ? 2 * jh__uw.segcap : 16;
            struct uw_seg **a = realloc(jh__uw.seg, cap * sizeof *a);
            if (!a)
                return -ENOMEM;
            jh__uw.seg = a;
            jh__uw.segcap = cap;
        }
        if (!(s = calloc(1, sizeof *s)) || !(s->fn = malloc(n * sizeof *s->fn))) {
            free(s);
            return -ENOMEM;
        }
        size_t k = 0;
        for (size_t i = i0; i < i1; i++) {
            struct uw_seg *o = jh__uw.seg[i];
            for (size_t j = 0; j < o->n; j++) {
                struct uw_fn *f = o->fn[j];
                if (f->dead)
                    continue;
                for (; nadd && (*add)->start < f->start; nadd--)
                    s->fn[k++] = *add++;
                s->fn[k++] = f;
            }
        }
        for (; nadd; nadd--)
            s->fn[k++] = *add++;
        s->n = n;
        s->lo = s->fn[0]->start;
        for (size_t i = 0; i < n; i++)
            if (s->fn[i]->end > s->hi)
                s->hi = s->fn[i]->end;
        if (h) {
            /* Its range never shrinks while it lives (a removed function's bytes get a
             * filler) and reaches up to the region's next run, or the region's end. */
            s->hosted = true;
            s->host = *h;
            uintptr_t hi = h->hi;
            if (i1 > i0) {
                hi = jh__uw.seg[i1 - 1]->hi;
                if (jh__uw.seg[i0]->lo < s->lo)
                    s->lo = jh__uw.seg[i0]->lo;
            } else if (i0 < jh__uw.nseg && jh__uw.seg[i0]->lo < hi) {
                hi = jh__uw.seg[i0]->lo;
            }
            if (hi > s->hi)
                s->hi = hi;
        }
        if (!(s->img = seg_img(s))) {
            free(s->fn);
            free(s);
            return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
            s->fn[i]->seg = s;
        jh__uw_img_register(s->img);
    }
    for (size_t i = i0; i < i1; i++) {
        jh__uw_img_release(jh__uw.seg[i]->img);
        jh__uw.dead -= jh__uw.seg[i]->ndead;
        seg_free(jh__uw.seg[i]);
    }
    size_t keep = s ? 1 : 0;
    memmove(jh__uw.seg + i0 + keep, jh__uw.seg + i1, (jh__uw.nseg - i1) * sizeof *jh__uw.seg);
    jh__uw.nseg = jh__uw.nseg - (i1 - i0) + keep;
    if (s)
        jh__uw.seg[i0] = s;
    return 0;
}

/*
 * Merging a and b (a below b) makes one run cover the gap between them, and code added in
 * that gap later rebuilds the whole run. Merges therefore prefer runs that are densely
 * adjacent (a gap of at most a few functions), which is where a bump allocator puts the
 * next function anyway.
 */
static bool dense(const struct uw_seg *a, const struct uw_seg *b)
{
    uintptr_t gap = b->lo > a->hi ? b->lo - a->hi : 0;
    uintptr_t mean = ((a->hi - a->lo) + (b->hi - b->lo)) / (a->n + b->n);
    return gap <= 256 || gap <= 4 * mean;
}

/* May a and b (a just below b) become one run? Hosted runs only with the next run of their
 * own region, which starts where a ends. */
static bool joinable(const struct uw_seg *a, const struct uw_seg *b)
{
    if (a->hosted || b->hosted)
        return a->hosted && hosted_next(a, b);
    return b->hi - a->lo <= SPAN_MAX;
}

static bool can_merge(const struct uw_seg *a, const struct uw_seg *b)
{
    if (!joinable(a, b) || !dense(a, b))
        return false;
    /* The binary counter leaves fewer than 2n/cap full runs: with the cap at least
     * 4n/max_runs they stay under half the budget, and merges by count stay rare. */
    size_t cap = (jh__uw.live + jh__uw.dead) / jh__uw.max_runs * 4;
    if (cap < jh__uw.max_fdes)
        cap = jh__uw.max_fdes;
    return a->n + b->n <= cap;
}

/* Run i is new or grew: merge it with neighbours no bigger than it (a binary counter).
 * Past max_runs runs (what every libgcc lookup walks), merge the smallest neighbours,
 * densely adjacent ones first, down to half the budget so that this stays rare. */
static int seg_settle(size_t i)
{
    int err = 0;
    while (!err && i < jh__uw.nseg) {
        struct uw_seg *x = jh__uw.seg[i];
        struct uw_seg *l = i ? jh__uw.seg[i - 1] : NULL, *r = i + 1 < jh__uw.nseg ? jh__uw.seg[i + 1] : NULL;
        bool ml = l && l->n <= x->n && can_merge(l, x);
        bool mr = r && r->n <= x->n && can_merge(x, r);
        if (ml && mr)
            ml = l->n <= r->n, mr = !ml;
        if (ml)
            err = jh__uw_seg_rebuild(i - 1, i + 1, NULL, NULL), i--;
        else if (mr)
            err = jh__uw_seg_rebuild(i, i + 2, NULL, NULL);
        else
            break;
    }
    if (jh__uw.nseg <= jh__uw.max_runs)
        return err;
    while (!err && jh__uw.nseg > jh__uw.max_runs / 2 + 1) {
        size_t best = jh__uw.nseg, bestn = SIZE_MAX;
        for (int pass = 0; pass < 2 && best == jh__uw.nseg; pass++)
            for (size_t j = 0; j + 1 < jh__uw.nseg; j++) {
                struct uw_seg *a = jh__uw.seg[j], *b = jh__uw.seg[j + 1];
                size_t m = a->n + b->n;
                if (m < bestn && joinable(a, b) && (pass || dense(a, b)))
                    best = j, bestn = m;
            }
        if (best == jh__uw.nseg)
            break;
        err = jh__uw_seg_rebuild(best, best + 2, NULL, NULL);
    }
    return err;
}

/*
 * Widen [*i0, *i1), the runs a rebuild with u replaces, by the runs seg_settle's binary
 * counter would merge the result with right after: one image built per add instead of one
 * per step of the cascade (a run of one, then of two, of four...), half the copies.
 */
static void widen(size_t *i0, size_t *i1, const struct uw_fn *u, const struct uw_host *h)
{
    struct uw_seg x = { .lo = u->start, .hi = u->end, .n = 1 };
    for (size_t i = *i0; i < *i1; i++) {
        const struct uw_seg *o = jh__uw.seg[i];
        x.n += o->n - o->ndead;
        x.lo = o->lo < x.lo ? o->lo : x.lo;
        x.hi = o->hi > x.hi ? o->hi : x.hi;
        h = h ? h : o->hosted ? &o->host : NULL;
    }
    if (h) {                    /* the range jh__uw_seg_rebuild gives it */
        x.hosted = true;
        x.host = *h;
        if (*i1 == *i0) {
            const struct uw_seg *next = *i0 < jh__uw.nseg ? jh__uw.seg[*i0] : NULL;
            x.hi = next && next->lo < h->hi ? next->lo : h->hi;
        }
    }
    for (;;) {
        const struct uw_seg *l = *i0 ? jh__uw.seg[*i0 - 1] : NULL;
        const struct uw_seg *r = *i1 < jh__uw.nseg ? jh__uw.seg[*i1] : NULL;
        bool ml = l && l->n <= x.n && can_merge(l, &x);
        bool mr = r && r->n <= x.n && can_merge(&x, r);
        if (ml && mr)
            ml = l->n <= r->n, mr = !ml;
        if (ml) {
            --*i0;
            x.lo = l->lo;
            x.n += l->n - l->ndead;
        } else if (mr) {
            ++*i1;
            x.hi = r->hi > x.hi ? r->hi : x.hi;
            x.n += r->n - r->ndead;
        } else {
            break;
        }
    }
}

/* Index of the first function of s starting at or after addr. */
static size_t fn_lower(const struct uw_seg *s, uintptr_t addr)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (s->fn[m]->start < addr)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Functions of runs [i0, i1) overlapping [start, end): bit 0 a dead one, bit 1 a live one.
 * Functions in a run never overlap each other, so this looks at a handful. */
static int overlapping(size_t i0, size_t i1, uintptr_t start, uintptr_t end)
{
    int found = 0;
    for (size_t i = i0; i < i1; i++) {
        const struct uw_seg *s = jh__uw.seg[i];
        for (size_t j = fn_lower(s, end); j-- > 0 && s->fn[j]->end > start;)
            found |= s->fn[j]->dead ? 1 : 2;
    }
    return found;
}

int jh__uw_group_add(struct uw_fn *u, const struct uw_host *h)
{
    /* Hosted: into the run of the region whose range holds u, or a new run from u up to
     * the region's next run (see unwind_host.c). */
    size_t i0 = jh__uw_seg_upper(u->start), i1 = i0;
    while (i1 < jh__uw.nseg && jh__uw.seg[i1]->lo < u->end)
        i1++;
    /* Live code of another context there: one context's registry cannot refuse it, and
     * overlapping FDEs would break libgcc's binary search for both. */
    if (i1 > i0 && overlapping(i0, i1, u->start, u->end) & 2)
        return JH_EOVERLAP;
    /* The same function again where it was removed (a recompile landing on the same
     * addresses, a code cache reloaded): the run still holds its FDE, byte for byte, and
     * the same CIE (the same personality). */
    if (i1 == i0 + 1) {
        struct uw_seg *s = jh__uw.seg[i0];
        size_t j = fn_lower(s, u->start);
        struct uw_fn *d = j < s->n ? s->fn[j] : NULL;
        if (d && d->dead && d->run && d->start == u->start && d->end == u->end &&
            d->cie == u->cie && d->fde_len == u->fde_len &&
            !memcmp(d->run + d->fde_off, u->run + u->fde_off, u->fde_len)) {
            s->fn[j] = u;
            u->seg = s;
            s->ndead--;
            jh__uw.dead--;
            jh__uw_fn_free(d);
            return 0;
        }
    }
    /* Anywhere else inside a run's range, even in a gap between its functions, the run is
     * rebuilt: a run of one there would hide the functions above it from libgcc. */
    widen(&i0, &i1, u, h);
    int err = jh__uw_seg_rebuild(i0, i1, u, h);
    if (!err)
        seg_settle(i0);         /* u is registered either way: merging is only thrift */
    return err;
}

int jh__uw_group_add_many(struct uw_fn **fn, size_t n)
{
    if (!n)
        return 0;
    uintptr_t lo = fn[0]->start, hi = fn[0]->end;
    for (size_t i = 1; i < n; i++) {
        if (fn[i]->start < fn[i - 1]->end)
            return 1;           /* not sorted, or overlapping: one at a time */
        hi = fn[i]->end > hi ? fn[i]->end : hi;
    }
    size_t i0 = jh__uw_seg_upper(lo);
    if (i0 < jh__uw.nseg && jh__uw.seg[i0]->lo < hi)
        return 1;               /* a run's range meets theirs */
    size_t cap = jh__uw.max_fdes ? jh__uw.max_fdes : n;
    for (size_t done = 0; done < n; done += cap, i0++) {
        size_t k = n - done < cap ? n - done : cap;
        int err = rebuild_with(i0, i0, fn + done, k, NULL);
        if (err)
            return err;
    }
    return seg_settle(i0 - 1);  /* the last: the first ones are max_fdes already */
}

/* Code without unwind info replaces whatever dead FDEs described its range. */
int jh__uw_group_clear(uintptr_t start, uintptr_t end)
{
    size_t i0 = jh__uw_seg_upper(start), i1 = i0;
    while (i1 < jh__uw.nseg && jh__uw.seg[i1]->lo < end)
        i1++;
    int err = 0;
    for (size_t i = i1; !err && i-- > i0;)
        if (overlapping(i, i + 1, start, end) & 1)
            err = jh__uw_seg_rebuild(i, i + 1, NULL, NULL);
    return err;
}

int jh__uw_group_remove(struct uw_fn *u)
{
    struct uw_seg *s = u->seg;
    size_t i = jh__uw_seg_upper(u->start);
    if (i >= jh__uw.nseg || jh__uw.seg[i] != s)
        return -EPROTO;         /* our own bookkeeping is broken: stop the channel */
    u->dead = true;
    s->ndead++;
    jh__uw.dead++;
    if (2 * s->ndead > s->n)
        return jh__uw_seg_rebuild(i, i + 1, NULL, NULL);
    return 0;
}


/* Is p inside the registered run whose range holds pc? */
bool jh__uw_run_holds(uintptr_t pc, const void *p)
{
    size_t i = jh__uw_seg_upper(pc);
    if (i >= jh__uw.nseg || jh__uw.seg[i]->lo > pc || !jh__uw.seg[i]->img)
        return false;
    const struct uw_img *im = jh__uw.seg[i]->img;
    return (const uint8_t *)p >= im->buf && (const uint8_t *)p < im->buf + im->len;
}
