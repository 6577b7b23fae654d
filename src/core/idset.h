/*
 * idset.h — which ids are live, for code the core does not store. With no channel live,
 * jh_code_add keeps no copy of the description (a few nanoseconds per call), but
 * jh_code_remove must still tell a live id from an unknown or already-removed one (-ENOENT).
 * A three-level bit set, lock-free: tables are installed with a compare-and-swap, bits set
 * and cleared with atomic OR/AND. Covers 2^40 ids; memory: 8 KiB per 65,536 ids issued
 * while no channel was live.
 */
#ifndef JH__CORE_IDSET_H
#define JH__CORE_IDSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct jh__idset {
    _Atomic(void *) top;
};

/* 0, -ENOMEM, -ERANGE (id >= 2^40). */
int jh__idset_add(struct jh__idset *s, uint64_t id);
/* true if id was in the set (and is no longer). */
bool jh__idset_take(struct jh__idset *s, uint64_t id);
bool jh__idset_has(struct jh__idset *s, uint64_t id);
void jh__idset_free(struct jh__idset *s);

#endif
