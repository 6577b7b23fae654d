/* itab.c — see itab.h. */
#include "lib/itab.h"

#include <errno.h>
#include <stdlib.h>

static void store(size_t *slot, size_t cap, uint64_t h, size_t v)
{
    size_t k = (size_t)h & (cap - 1);
    while (slot[k])
        k = (k + 1) & (cap - 1);
    slot[k] = v;
}

int jhr_itab_grow(struct jhr_itab *t, jhr_itab_hash *hash, const void *ctx)
{
    if ((t->n + 1) * 2 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap * 2 : 256;
    size_t *slot = cap <= SIZE_MAX / sizeof *slot ? calloc(cap, sizeof *slot) : NULL;
    if (!slot)
        return -ENOMEM;
    for (size_t k = 0; k < t->cap; k++)
        if (t->slot[k])
            store(slot, cap, hash(ctx, t->slot[k] - 1), t->slot[k]);
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return 0;
}

void jhr_itab_put(struct jhr_itab *t, uint64_t h, size_t i)
{
    store(t->slot, t->cap, h, i + 1);
    t->n++;
}

size_t jhr_itab_find(const struct jhr_itab *t, uint64_t h, jhr_itab_eq *eq, const void *ctx,
                     const void *key)
{
    if (!t->cap)
        return 0;
    for (size_t k = (size_t)h & (t->cap - 1); t->slot[k]; k = (k + 1) & (t->cap - 1))
        if (eq(ctx, t->slot[k] - 1, key))
            return t->slot[k];
    return 0;
}

void jhr_itab_free(struct jhr_itab *t)
{
    free(t->slot);
    t->slot = NULL;
    t->cap = t->n = 0;
}
