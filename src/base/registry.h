/*
 * registry.h — an address-ordered set of non-overlapping ranges with ids: the live-code
 * registry. Intrusive (a node lives inside whatever it describes: no allocation per
 * insert), an AVL tree for address lookups (depth <= 1.44 log2 n, 29 at a million) and an
 * id table in 4096-slot chunks indexed directly by id. Not locked: its owner's lock guards
 * it. Ranges are compared by their last byte, so one may end at the top of the address
 * space. The nodes are threaded in address order too (prev, next).
 */
#ifndef JH__BASE_REGISTRY_H
#define JH__BASE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jh__node {
    uintptr_t start;
    size_t size;                /* > 0 */
    uint64_t id;                /* > 0, unique in the registry */
    struct jh__node *left, *right;
    struct jh__node *prev, *next;   /* in address order: jh__reg_prev, jh__reg_next */
    int height;
};

struct jh__registry {
    struct jh__node *root;
    struct jh__node *last;      /* the node that starts highest (an insert past it walks the
                                   right spine without a compare: code comes in address
                                   order, node's 2,182 builtins at start) */
    size_t count;
    struct jh__node ***idtab;   /* id -> node, in chunks of JH__ID_CHUNK (+1 live count) */
    size_t idtab_chunks;
};
#define JH__ID_CHUNK 4096

/* 0, JH_EOVERLAP (the range overlaps a node), -ENOMEM. */
int jh__reg_insert(struct jh__registry *r, struct jh__node *n);
void jh__reg_erase(struct jh__registry *r, struct jh__node *n);
struct jh__node *jh__reg_by_id(const struct jh__registry *r, uint64_t id);
struct jh__node *jh__reg_find(const struct jh__registry *r, uintptr_t addr);  /* containing */
struct jh__node *jh__reg_ceil(const struct jh__registry *r, uintptr_t addr);  /* first start >= addr */
struct jh__node *jh__reg_floor(const struct jh__registry *r, uintptr_t addr); /* last start <= addr */
/* The node holding addr, else the first starting above it (find, else ceil: one descent). */
struct jh__node *jh__reg_reaching(const struct jh__registry *r, uintptr_t addr);
/* In address order: for (n = jh__reg_ceil(r, 0); n; n = jh__reg_next(r, n)). n is in r; O(1):
 * the gdb channel asks for each function's neighbours (node's builtins: a descent each
 * was ~100 instructions, twice a builtin). */
static inline struct jh__node *jh__reg_next(const struct jh__registry *r, const struct jh__node *n)
{
    (void)r;
    return n->next;
}
static inline struct jh__node *jh__reg_prev(const struct jh__registry *r, const struct jh__node *n)
{
    (void)r;
    return n->prev;
}
bool jh__reg_overlaps(const struct jh__registry *r, uintptr_t start, size_t size,
                      const struct jh__node *except);
/* n moved to new_start (the caller checked overlaps). */
void jh__reg_rekey(struct jh__registry *r, struct jh__node *n, uintptr_t new_start);
void jh__reg_fini(struct jh__registry *r);      /* frees the tables, not the nodes */

#endif
