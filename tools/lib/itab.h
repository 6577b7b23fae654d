/*
 * itab.h — an open-addressing hash index over an array the caller owns: a slot holds a
 * position in that array (+1; 0 is empty), so the table never copies entries and the
 * caller says what "equal" means. Linear probing, at most half full, a power of two in
 * size. The reader library's interned strings, callgrind's name tables, the audit log's
 * ids and the jitdump checker's code indexes all use it.
 *
 *     static bool same_id(const void *ctx, size_t i, const void *key) { ... }
 *     if (jhr_itab_grow(&t, hash_of, arr)) return -ENOMEM;   // before each insertion
 *     if (!jhr_itab_find(&t, h, same_id, arr, &key))
 *         jhr_itab_put(&t, h, n++);
 */
#ifndef JHR_ITAB_H
#define JHR_ITAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jhr_itab {
    size_t *slot;
    size_t cap, n;
};

/* The hash of the entry at index i of the caller's array. */
typedef uint64_t jhr_itab_hash(const void *ctx, size_t i);
/* Is the entry at index i the one key names? */
typedef bool jhr_itab_eq(const void *ctx, size_t i, const void *key);

/* Make room for one more entry, rehashing the stored ones. 0 or -ENOMEM. */
int jhr_itab_grow(struct jhr_itab *t, jhr_itab_hash *hash, const void *ctx);
/* Store index i under hash h (room made by jhr_itab_grow). */
void jhr_itab_put(struct jhr_itab *t, uint64_t h, size_t i);
/* The index of the entry with hash h that eq accepts, + 1; 0 when there is none. */
size_t jhr_itab_find(const struct jhr_itab *t, uint64_t h, jhr_itab_eq *eq, const void *ctx,
                     const void *key);
void jhr_itab_free(struct jhr_itab *t);

#endif
