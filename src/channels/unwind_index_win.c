/*
 * unwind_index_win.c — a region's functions, sorted, for the system unwinder's callback.
 *
 * The callback runs on any thread, in the middle of an exception dispatch, possibly while
 * another thread is adding code — or is suspended by a profiler in the middle of adding
 * code: it must take no lock (Wine even calls it with its own unwind lock held, and the
 * add path takes that lock to install a region). So readers see snapshots:
 *   - leaves of up to WU_LEAF entries sorted by begin; an entry is appended to a leaf in
 *     place (written past the leaf's count, then the count published), any other change
 *     makes a copy of the leaf that replaces it in the index;
 *   - an index of the first offset each leaf covers, copied when a leaf splits or goes;
 * so an add costs O(WU_LEAF) plus, at a split, O(leaves), and a lookup two binary searches
 * (measured flat from 1 to 100,000 functions: bench/win64/unwind.c).
 * Replaced snapshots are freed once no callback is running (one counter of callbacks under
 * way; a writer that sees it at zero after unpublishing frees what it retired). What the
 * callback returns, a function's RUNTIME_FUNCTION, is read by the unwinder after the
 * callback returned: removed functions are freed WU_GRACE_NS later, as on Linux.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/vec.h"
#include "channels/unwind_win.h"

static _Alignas(64) _Atomic long readers;      /* callbacks under way */

struct retired {
    void *p;
    uint64_t when;
    enum { SNAPSHOT, LEAF_SNAPSHOT, FN, REGION } kind;
};
static struct { struct retired *a; size_t head, n, cap; } quiet, timed;   /* timed: a FIFO
                                                                            from head */

/* ---- reading ------------------------------------------------------------------------ */

/* The last leaf whose first offset is <= rva (leaf 0 covers everything below leaf 1). */
static uint32_t leaf_of(const struct wu_index *ix, uint32_t rva)
{
    uint32_t lo = 0, hi = ix->nleaf;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->l[mid].first <= rva)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The number of entries with begin <= rva. */
static uint32_t upper(const struct wu_leaf *lf, uint32_t n, uint32_t rva)
{
    uint32_t a = 0, b = n;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (lf->e[m].begin <= rva)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

RUNTIME_FUNCTION *jh__wu_index_lookup(struct wu_region *r, uintptr_t pc)
{
    RUNTIME_FUNCTION *rf = NULL;
    atomic_fetch_add(&readers, 1);
    struct wu_index *ix = atomic_load(&r->index);
    if (ix && pc >= r->base && pc < r->end) {
        uint32_t rva = (uint32_t)(pc - r->base);
        struct wu_leaf *lf = atomic_load(&ix->l[leaf_of(ix, rva)].leaf);
        uint32_t n = atomic_load_explicit(&lf->n, memory_order_acquire);
        uint32_t i = upper(lf, n, rva);
        if (i > 0 && rva < lf->e[i - 1].end)
            rf = &lf->e[i - 1].fn->rf;
    }
    atomic_fetch_sub(&readers, 1);
    return rf;
}

/* ---- reclaiming ------------------------------------------------------------------------ */

static void release(struct retired *t)
{
    switch (t->kind) {
    case SNAPSHOT: case LEAF_SNAPSHOT:
        free(t->p);
        break;
    case FN: {
        struct wu_fn *fn = t->p;
        jh__wu_chunk_put(fn->chunk);
        free(fn);
        break;
    }
    case REGION:
        jh__wu_index_free(t->p);
        free(t->p);
        break;
    }
}

static void retire(void *p, int kind)
{
    bool q = kind == SNAPSHOT || kind == LEAF_SNAPSHOT;
    struct retired t = { .p = p, .kind = kind, .when = q ? 0 : jh__now_ns() };
    if (q ? JH__VEC_RESERVE(quiet.a, quiet.cap, quiet.n + 1) :
            JH__VEC_RESERVE(timed.a, timed.cap, timed.n + 1)) {
        /* no memory to remember it: keep it forever rather than free it under a reader */
        return;
    }
    if (q)
        quiet.a[quiet.n++] = t;
    else
        timed.a[timed.n++] = t;
}

void jh__wu_retire_fn(struct wu_fn *fn) { retire(fn, FN); }
void jh__wu_retire_region(struct wu_region *r) { retire(r, REGION); }

/* After unpublishing: with no callback running now, none can reach what was retired (a
 * callback that starts later loads the new snapshot: the counter and the pointers are
 * sequentially consistent, so the writer sees the callback or the callback sees the
 * write). */
static void reclaim_quiet(void)
{
    if (!quiet.n || atomic_load(&readers) != 0)
        return;
    for (size_t i = 0; i < quiet.n; i++)
        release(&quiet.a[i]);
    quiet.n = 0;
}

void jh__wu_sweep(void)
{
    reclaim_quiet();
    if (timed.head == timed.n)
        return;
    uint64_t now = jh__now_ns();
    while (timed.head < timed.n && now - timed.a[timed.head].when >= jh__wu.grace_ns)
        release(&timed.a[timed.head++]);
    if (timed.head == timed.n) {
        timed.head = timed.n = 0;
    } else if (timed.head > timed.n / 2) {     /* amortised: each entry moves at most once */
        memmove(timed.a, timed.a + timed.head, (timed.n - timed.head) * sizeof *timed.a);
        timed.n -= timed.head;
        timed.head = 0;
    }
}

/* ---- writing (jh__wu_lock held) ---------------------------------------------------------- */

static struct wu_index *index_new(uint32_t nleaf)
{
    struct wu_index *ix = malloc(sizeof *ix + nleaf * sizeof ix->l[0]);
    if (ix)
        ix->nleaf = nleaf;
    return ix;
}

static struct wu_leaf *leaf_new(const struct wu_ent *e, uint32_t n)
{
    struct wu_leaf *lf = malloc(sizeof *lf);
    if (!lf)
        return NULL;
    memcpy(lf->e, e, n * sizeof *e);
    atomic_init(&lf->n, n);
    return lf;
}

static struct wu_leaf *leaf_at(const struct wu_index *ix, uint32_t k)
{
    return atomic_load_explicit(&ix->l[k].leaf, memory_order_relaxed);
}

static void publish_index(struct wu_region *r, struct wu_index *ix)
{
    struct wu_index *old = atomic_load_explicit(&r->index, memory_order_relaxed);
    atomic_store(&r->index, ix);
    if (old)
        retire(old, SNAPSHOT);
}

/* The entries of every leaf, packed again at half a leaf each: after many removals, so
 * that the index stays proportional to what is live. */
static int compact(struct wu_region *r)
{
    struct wu_index *ix = atomic_load_explicit(&r->index, memory_order_relaxed);
    size_t total = 0;
    for (uint32_t k = 0; k < ix->nleaf; k++)
        total += atomic_load_explicit(&leaf_at(ix, k)->n, memory_order_relaxed);
    uint32_t per = WU_LEAF / 2, nleaf = total ? (uint32_t)((total + per - 1) / per) : 1;
    struct wu_index *nx = index_new(nleaf);
    struct wu_ent *all = malloc((total ? total : 1) * sizeof *all);
    if (!nx || !all) {
        free(nx);
        free(all);
        return -ENOMEM;
    }
    size_t m = 0;
    for (uint32_t k = 0; k < ix->nleaf; k++) {
        struct wu_leaf *lf = leaf_at(ix, k);
        uint32_t n = atomic_load_explicit(&lf->n, memory_order_relaxed);
        memcpy(all + m, lf->e, n * sizeof *all);
        m += n;
    }
    for (uint32_t k = 0; k < nleaf; k++) {
        size_t from = (size_t)k * per, n = total - from < per ? total - from : per;
        struct wu_leaf *lf = leaf_new(all + from, (uint32_t)n);
        if (!lf) {
            while (k-- > 0)
                free(leaf_at(nx, k));
            free(nx);
            free(all);
            return -ENOMEM;
        }
        nx->l[k].first = k ? all[from].begin : 0;
        atomic_init(&nx->l[k].leaf, lf);
    }
    free(all);
    for (uint32_t k = 0; k < ix->nleaf; k++)
        retire(leaf_at(ix, k), LEAF_SNAPSHOT);
    publish_index(r, nx);
    return 0;
}

int jh__wu_index_insert(struct wu_region *r, struct wu_fn *fn)
{
    struct wu_ent ent = { fn->rf.BeginAddress, fn->rf.EndAddress, fn };
    struct wu_index *ix = atomic_load_explicit(&r->index, memory_order_relaxed);
    if (!ix) {
        struct wu_leaf *lf = leaf_new(&ent, 1);
        if (!lf || !(ix = index_new(1))) {
            free(lf);
            return -ENOMEM;
        }
        ix->l[0].first = 0;
        atomic_init(&ix->l[0].leaf, lf);
        atomic_store(&r->index, ix);
        return 0;
    }
    uint32_t k = leaf_of(ix, ent.begin);
    struct wu_leaf *lf = leaf_at(ix, k);
    uint32_t n = atomic_load_explicit(&lf->n, memory_order_relaxed);
    uint32_t pos = upper(lf, n, ent.begin);
    if (pos == n && n < WU_LEAF) {      /* code growing upwards: no copy */
        lf->e[n] = ent;
        atomic_store_explicit(&lf->n, n + 1, memory_order_release);
        return 0;
    }
    struct wu_ent tmp[WU_LEAF + 1];
    memcpy(tmp, lf->e, pos * sizeof *tmp);
    tmp[pos] = ent;
    memcpy(tmp + pos + 1, lf->e + pos, (n - pos) * sizeof *tmp);
    if (n < WU_LEAF) {
        struct wu_leaf *nl = leaf_new(tmp, n + 1);
        if (!nl)
            return -ENOMEM;
        atomic_store(&ix->l[k].leaf, nl);
        retire(lf, LEAF_SNAPSHOT);
        reclaim_quiet();
        return 0;
    }
    /* full: split in two, and a new index with one more leaf */
    uint32_t half = (WU_LEAF + 1) / 2;
    struct wu_leaf *left = leaf_new(tmp, half), *right = leaf_new(tmp + half, WU_LEAF + 1 - half);
    struct wu_index *nx = index_new(ix->nleaf + 1);
    if (!left || !right || !nx) {
        free(left);
        free(right);
        free(nx);
        return -ENOMEM;
    }
    for (uint32_t i = 0, j = 0; i < ix->nleaf; i++, j++) {
        if (i == k) {
            nx->l[j].first = ix->l[i].first;
            atomic_init(&nx->l[j].leaf, left);
            j++;
            nx->l[j].first = tmp[half].begin;
            atomic_init(&nx->l[j].leaf, right);
        } else {
            nx->l[j].first = ix->l[i].first;
            atomic_init(&nx->l[j].leaf, leaf_at(ix, i));
        }
    }
    publish_index(r, nx);
    retire(lf, LEAF_SNAPSHOT);
    reclaim_quiet();
    return 0;
}

int jh__wu_index_remove(struct wu_region *r, struct wu_fn *fn)
{
    struct wu_index *ix = atomic_load_explicit(&r->index, memory_order_relaxed);
    if (!ix)
        return 0;
    uint32_t k = leaf_of(ix, fn->rf.BeginAddress);
    struct wu_leaf *lf = leaf_at(ix, k);
    uint32_t n = atomic_load_explicit(&lf->n, memory_order_relaxed);
    uint32_t pos = upper(lf, n, fn->rf.BeginAddress);
    while (pos > 0 && lf->e[pos - 1].fn != fn && lf->e[pos - 1].begin == fn->rf.BeginAddress)
        pos--;                          /* a twin left behind by a failed removal */
    if (pos == 0 || lf->e[pos - 1].fn != fn)
        return 0;
    pos--;
    if (n == 1 && ix->nleaf > 1) {     /* the leaf goes: its range joins the one before */
        struct wu_index *nx = index_new(ix->nleaf - 1);
        if (!nx)
            goto copy;                  /* an empty leaf is harmless */
        for (uint32_t i = 0, j = 0; i < ix->nleaf; i++) {
            if (i == k)
                continue;
            nx->l[j].first = j ? ix->l[i].first : 0;
            atomic_init(&nx->l[j].leaf, leaf_at(ix, i));
            j++;
        }
        publish_index(r, nx);
        retire(lf, LEAF_SNAPSHOT);
    } else {
copy:;
        struct wu_leaf *nl = malloc(sizeof *nl);
        if (!nl)
            return -ENOMEM;             /* the caller keeps fn: readers may still find it */
        memcpy(nl->e, lf->e, pos * sizeof *nl->e);
        memcpy(nl->e + pos, lf->e + pos + 1, (n - pos - 1) * sizeof *nl->e);
        atomic_init(&nl->n, n - 1);
        atomic_store(&ix->l[k].leaf, nl);
        retire(lf, LEAF_SNAPSHOT);
    }
    ix = atomic_load_explicit(&r->index, memory_order_relaxed);
    if (ix->nleaf > 8 && r->count * 4 < (size_t)ix->nleaf * WU_LEAF)
        compact(r);
    reclaim_quiet();
    return 0;
}

void jh__wu_index_free(struct wu_region *r)
{
    struct wu_index *ix = atomic_load_explicit(&r->index, memory_order_relaxed);
    if (!ix)
        return;
    for (uint32_t k = 0; k < ix->nleaf; k++)
        free(leaf_at(ix, k));
    free(ix);
    atomic_store(&r->index, NULL);
}
