/*
 * perfmap_pick.h — which name perf shows for an address its perf map names more than
 * once. perf reads /tmp/perf-PID.map line by line into a red-black tree keyed by start
 * (an equal start goes right), with no duplicate or overlap fix-up, and finds a sample's
 * symbol by walking down from the root to the first symbol whose [start, end] holds it
 * (perf 6.1: util/symbol.c, dso__load_perf_map, __symbols__insert, symbols__find). When
 * a JIT reused an address range, the name shown so depends on the tree's shape: this
 * builds the same tree from the same lines, in the same order, to say which one it is.
 *
 *     struct jhr_pmpick pk = { 0 };
 *     jhr_pmpick_add(&pk, start, size, name);          // each line, in file order
 *     const char *shown = jhr_pmpick_find(&pk, ip);    // NULL: perf shows a raw address
 *     jhr_pmpick_free(&pk);
 *
 * Names are not copied: they must outlive pk.
 */
#ifndef JHR_PERFMAP_PICK_H
#define JHR_PERFMAP_PICK_H

#include <stddef.h>
#include <stdint.h>

struct jhr_pmpick_node;

struct jhr_pmpick {
    struct jhr_pmpick_node *nodes;
    size_t n, cap;
    size_t root;                /* valid when n > 0 */
};

/* 0, or -ENOMEM. */
int jhr_pmpick_add(struct jhr_pmpick *pk, uint64_t start, uint64_t size, const char *name);
const char *jhr_pmpick_find(const struct jhr_pmpick *pk, uint64_t ip);
void jhr_pmpick_free(struct jhr_pmpick *pk);

#endif
