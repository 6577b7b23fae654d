/* idset.c — see idset.h. */
#include "core/idset.h"

#include <errno.h>
#include <stdlib.h>

#define FAN 4096                /* pointers per table */
#define LEAF_WORDS 1024         /* 65,536 bits */

typedef _Atomic(void *) slot_t;

/* The table in *p, allocated and installed (once, whoever wins) if create. */
static void *table(slot_t *p, bool create, size_t n, size_t elem)
{
    void *t = atomic_load_explicit(p, memory_order_acquire);
    if (t || !create)
        return t;
    void *fresh = calloc(n, elem);
    if (!fresh)
        return NULL;
    if (atomic_compare_exchange_strong_explicit(p, &t, fresh, memory_order_acq_rel,
                                                memory_order_acquire))
        return fresh;
    free(fresh);
    return t;
}

static _Atomic uint64_t *word(struct jh__idset *s, uint64_t id, bool create)
{
    if (id >> 40)
        return NULL;
    slot_t *top = table(&s->top, create, FAN, sizeof(slot_t));
    slot_t *mid = top ? table(&top[id >> 28], create, FAN, sizeof(slot_t)) : NULL;
    _Atomic uint64_t *leaf = mid ? table(&mid[(id >> 16) & (FAN - 1)], create, LEAF_WORDS,
                                         sizeof(uint64_t)) : NULL;
    return leaf ? &leaf[(id >> 6) & (LEAF_WORDS - 1)] : NULL;
}

int jh__idset_mark(struct jh__idset *s, uint64_t id)
{
    _Atomic uint64_t *w = word(s, id, true);
    if (!w)
        return id >> 40 ? -ERANGE : -ENOMEM;
    uint64_t bit = (uint64_t)1 << (id & 63);
    return !(atomic_fetch_or_explicit(w, bit, memory_order_relaxed) & bit);
}

bool jh__idset_has(struct jh__idset *s, uint64_t id)
{
    _Atomic uint64_t *w = word(s, id, false);
    return w && (atomic_load_explicit(w, memory_order_relaxed) >> (id & 63) & 1);
}

void jh__idset_free(struct jh__idset *s)
{
    slot_t *top = atomic_load(&s->top);
    if (!top)
        return;
    for (size_t i = 0; i < FAN; i++) {
        slot_t *mid = atomic_load(&top[i]);
        if (!mid)
            continue;
        for (size_t j = 0; j < FAN; j++)
            free(atomic_load(&mid[j]));
        free(mid);
    }
    free(top);
    atomic_store(&s->top, NULL);
}
