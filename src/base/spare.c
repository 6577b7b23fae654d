/* spare.c — see spare.h. */
#include "base/spare.h"

#include <stdlib.h>
#include <string.h>

#include "base/vec.h"

bool jh__spare_put(struct jh__spare *s, uint64_t off, uint64_t len)
{
    size_t i = 0, n = s->n;
    struct jh__spare_run *v = s->v;
    if (!len)
        return true;
    while (i < n && v[i].off < off)
        i++;
    bool prev = i > 0 && v[i - 1].off + v[i - 1].len == off,
         next = i < n && off + len == v[i].off;
    if (prev && next) {
        v[i - 1].len += len + v[i].len;
        memmove(&v[i], &v[i + 1], (n - i - 1) * sizeof *v);
        s->n--;
    } else if (prev) {
        v[i - 1].len += len;
    } else if (next) {
        v[i].off = off;
        v[i].len += len;
    } else if (JH__VEC_RESERVE(s->v, s->cap, n + 1) == 0) {
        v = s->v;
        memmove(&v[i + 1], &v[i], (n - i) * sizeof *v);
        v[i] = (struct jh__spare_run){ off, len };
        s->n++;
    } else {
        return false;
    }
    s->bytes += len;
    return true;
}

uint64_t jh__spare_take(struct jh__spare *s, uint64_t len)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].len >= len && (best == SIZE_MAX || s->v[i].len < s->v[best].len))
            best = i;
    if (best == SIZE_MAX || !len)
        return UINT64_MAX;
    struct jh__spare_run *r = &s->v[best];
    uint64_t off = r->off;
    r->off += len;
    r->len -= len;
    s->bytes -= len;
    if (!r->len) {
        memmove(r, r + 1, (s->n - best - 1) * sizeof *r);
        s->n--;
    }
    return off;
}

bool jh__spare_take_at(struct jh__spare *s, uint64_t off, uint64_t len)
{
    size_t i = 0;
    while (i < s->n && s->v[i].off < off)
        i++;
    if (i == s->n || s->v[i].off != off || s->v[i].len < len)
        return false;
    s->v[i].off += len;
    s->v[i].len -= len;
    s->bytes -= len;
    if (!s->v[i].len) {
        memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
        s->n--;
    }
    return true;
}

bool jh__spare_pop(struct jh__spare *s, struct jh__spare_run *out)
{
    if (!s->n)
        return false;
    *out = s->v[--s->n];
    s->bytes -= out->len;
    return true;
}

void jh__spare_free(struct jh__spare *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}
