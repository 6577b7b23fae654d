/*
 * lookup.c — jh_lookup: which live function holds an address (the registry, under the
 * context lock). Beside context.c, whose calls change what is live.
 */
#include <stdio.h>

#include "core/core.h"

int jh_lookup(jh_ctx *ctx, const void *addr, uint64_t *id, const void **start, size_t *size,
              char *name, size_t name_len)
{
    if (!ctx || (name && !name_len))
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->stored, memory_order_acquire))
        return -ENOENT;
    jh__ctx_lock(ctx);
    struct jh__entry *e = jh__entry_of(jh__reg_find(&ctx->reg, (uintptr_t)addr));
    if (e) {
        if (id)
            *id = e->node.id;
        if (start)
            *start = (const void *)e->node.start;
        if (size)
            *size = e->node.size;
        if (name)
            snprintf(name, name_len, "%s", e->fn.name);
    }
    jh__ctx_unlock(ctx);
    return e ? 0 : -ENOENT;
}
