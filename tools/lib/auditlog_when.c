/*
 * auditlog_when.c — residencies of code in time (auditlog_when.h). Built in one pass over
 * the records: a code_add opens a residency, a code_move closes it and opens the next at
 * the new start, a code_remove closes it. Lookups are a binary search on the start and a
 * walk back bounded by the largest size, as in auditlog_query.c.
 */
#include "lib/auditlog_when.h"

#include <errno.h>
#include <stdlib.h>

static int cmp_stay(const void *a, const void *b)
{
    const struct jhr_al_stay *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->from < y->from ? -1 : x->from > y->from;
}

int jhr_al_when_build(struct jhr_al_when *w, const struct jhr_al *lf)
{
    *w = (struct jhr_al_when){ .lf = lf };
    size_t n = lf->nfns;
    for (size_t i = 0; i < lf->nrecs; i++)
        n += lf->recs[i].kind == JHR_AL_CODE_MOVE;
    w->tmax = malloc((lf->nrecs ? lf->nrecs : 1) * sizeof *w->tmax);
    w->stays = malloc((n ? n : 1) * sizeof *w->stays);
    size_t *open = malloc((lf->nfns ? lf->nfns : 1) * sizeof *open);   /* fn -> its stay */
    if (!w->tmax || !w->stays || !open) {
        free(open);
        jhr_al_when_free(w);
        return -ENOMEM;
    }
    uint64_t t = 0;
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        t = r->time > t ? r->time : t;
        w->tmax[i] = t;
        if (r->ref < 0 || (r->kind != JHR_AL_CODE_ADD && r->kind != JHR_AL_CODE_MOVE &&
                           r->kind != JHR_AL_CODE_REMOVE))
            continue;
        size_t f = (size_t)r->ref;
        const struct jhr_al_fn *fn = &lf->fns[f];
        uint64_t start = fn->start;
        if (r->kind == JHR_AL_CODE_ADD) {
            if (fn->rec != i)
                continue;
        } else if (fn->rec > i || fn->rm_rec < i || open[f] == SIZE_MAX) {
            continue;                   /* before its add, or after its removal */
        } else {
            w->stays[open[f]].to = i;   /* a move or the removal ends the stay */
            open[f] = SIZE_MAX;
            if (r->kind == JHR_AL_CODE_REMOVE || !jhr_mp_get_u64(&r->map, JH__AL_K_START, &start))
                continue;
        }
        if (w->nstays == n)
            continue;                   /* cannot happen: counted above */
        open[f] = w->nstays;
        w->stays[w->nstays++] = (struct jhr_al_stay){ start, fn->size, i, SIZE_MAX, f };
        if (fn->size > w->maxsize)
            w->maxsize = fn->size;
    }
    free(open);
    qsort(w->stays, w->nstays, sizeof *w->stays, cmp_stay);
    return 0;
}

void jhr_al_when_free(struct jhr_al_when *w)
{
    free(w->tmax);
    free(w->stays);
    w->tmax = NULL;
    w->stays = NULL;
    w->nstays = 0;
}

size_t jhr_al_when_rec(const struct jhr_al_when *w, uint64_t t)
{
    size_t lo = 0, hi = w->lf->nrecs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->tmax[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : SIZE_MAX;
}

/* Records between `at` and the stay s: 0 when s is alive at `at`. */
static size_t distance(const struct jhr_al_stay *s, size_t at)
{
    if (at == SIZE_MAX)                 /* before every record */
        return s->from + 1;
    if (at < s->from)
        return s->from - at;
    return at < s->to ? 0 : at - s->to + 1;
}

const struct jhr_al_fn *jhr_al_when_fn(const struct jhr_al_when *w, uint64_t addr, uint64_t t,
                                       bool *live)
{
    size_t at = jhr_al_when_rec(w, t);
    size_t lo = 0, hi = w->nstays;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->stays[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct jhr_al_stay *best = NULL;
    size_t bestd = SIZE_MAX;
    for (size_t i = lo; i-- > 0;) {
        const struct jhr_al_stay *s = &w->stays[i];
        if (addr - s->start >= w->maxsize)
            break;
        if (addr - s->start >= s->size)
            continue;
        size_t d = distance(s, at);
        if (d < bestd) {
            best = s;
            bestd = d;
            if (!d)
                break;
        }
    }
    *live = best && !bestd;
    return best ? &w->lf->fns[best->fn] : NULL;
}

size_t jhr_al_when_all(const struct jhr_al_when *w, uint64_t addr, const struct jhr_al_fn **out,
                       size_t max)
{
    size_t lo = 0, hi = w->nstays, n = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->stays[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        const struct jhr_al_stay *s = &w->stays[i];
        if (addr - s->start >= w->maxsize)
            break;
        if (addr - s->start >= s->size)
            continue;
        const struct jhr_al_fn *fn = &w->lf->fns[s->fn];
        bool seen = false;                  /* a function that moved back holds it twice */
        for (size_t k = 0; k < n && k < max; k++)
            seen |= out[k] == fn;
        if (seen)
            continue;
        if (n < max)
            out[n] = fn;
        n++;
    }
    /* found newest start first: oldest add first reads better */
    for (size_t a = 0; a + 1 < (n < max ? n : max); a++)
        for (size_t b = a + 1; b < (n < max ? n : max); b++)
            if (out[b]->rec < out[a]->rec) {
                const struct jhr_al_fn *t = out[a];
                out[a] = out[b];
                out[b] = t;
            }
    return n;
}
