/*
 * idset.h — the ids that are no longer live. With no channel live, jh_code_add keeps no
 * copy of the description (a few nanoseconds per call: it only takes the next id), but
 * jh_code_remove must still tell a live id from one already removed (-ENOENT). So the
 * removed ones are marked: an id below the next one to hand out is live unless marked.
 * A three-level bit set, lock-free: tables are installed with a compare-and-swap, bits set
 * with an atomic OR. Covers 2^40 ids; memory: 8 KiB per 65,536 ids once one of them is
 * removed.
 */
#ifndef JH__CORE_IDSET_H
#define JH__CORE_IDSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct jh__idset {
    _Atomic(void *) top;
};

/* Mark id: 1 if it was not marked yet, 0 if it was, -ENOMEM, -ERANGE (id >= 2^40). */
int jh__idset_mark(struct jh__idset *s, uint64_t id);
bool jh__idset_has(struct jh__idset *s, uint64_t id);
void jh__idset_free(struct jh__idset *s);

#endif
