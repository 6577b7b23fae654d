/*
 * perfmap_pick.c — perf's symbol tree, rebuilt (perfmap_pick.h). The insertion is the
 * textbook red-black one, which is what the kernel's lib/rbtree.c (__rb_insert) does, so
 * the same lines in the same order give perf's shape; the lookup is symbols__find's walk,
 * with perf's exclusive end (symbol__new: end = start + size; a size 0 symbol holds only
 * its start).
 */
#include "lib/perfmap_pick.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#define NIL SIZE_MAX

struct jhr_pmpick_node {
    uint64_t start, end;
    const char *name;
    size_t left, right, parent;
    bool red;
};

static struct jhr_pmpick_node *N(const struct jhr_pmpick *pk, size_t i) { return &pk->nodes[i]; }

static void rotate(struct jhr_pmpick *pk, size_t x, bool left)
{
    struct jhr_pmpick_node *nx = N(pk, x);
    size_t y = left ? nx->right : nx->left;
    struct jhr_pmpick_node *ny = N(pk, y);
    size_t inner = left ? ny->left : ny->right;
    if (left)
        nx->right = inner;
    else
        nx->left = inner;
    if (inner != NIL)
        N(pk, inner)->parent = x;
    ny->parent = nx->parent;
    if (nx->parent == NIL)
        pk->root = y;
    else if (N(pk, nx->parent)->left == x)
        N(pk, nx->parent)->left = y;
    else
        N(pk, nx->parent)->right = y;
    if (left)
        ny->left = x;
    else
        ny->right = x;
    nx->parent = y;
}

static bool is_red(const struct jhr_pmpick *pk, size_t i) { return i != NIL && N(pk, i)->red; }

int jhr_pmpick_add(struct jhr_pmpick *pk, uint64_t start, uint64_t size, const char *name)
{
    if (pk->n == pk->cap) {
        size_t cap = pk->cap ? pk->cap * 2 : 64;
        struct jhr_pmpick_node *nn = realloc(pk->nodes, cap * sizeof *nn);
        if (!nn)
            return -ENOMEM;
        pk->nodes = nn;
        pk->cap = cap;
    }
    size_t z = pk->n++, parent = NIL;
    bool left = false;
    for (size_t p = pk->n > 1 ? pk->root : NIL; p != NIL; p = left ? N(pk, p)->left : N(pk, p)->right) {
        parent = p;
        left = start < N(pk, p)->start;
    }
    *N(pk, z) = (struct jhr_pmpick_node){ start, start + size, name, NIL, NIL, parent, true };
    if (parent == NIL)
        pk->root = z;
    else if (left)
        N(pk, parent)->left = z;
    else
        N(pk, parent)->right = z;
    while (is_red(pk, N(pk, z)->parent)) {
        size_t p = N(pk, z)->parent, g = N(pk, p)->parent;
        bool pleft = N(pk, g)->left == p;
        size_t u = pleft ? N(pk, g)->right : N(pk, g)->left;
        if (is_red(pk, u)) {
            N(pk, p)->red = N(pk, u)->red = false;
            N(pk, g)->red = true;
            z = g;
            continue;
        }
        if (z == (pleft ? N(pk, p)->right : N(pk, p)->left)) {
            z = p;
            rotate(pk, z, pleft);
            p = N(pk, z)->parent;
        }
        N(pk, p)->red = false;
        N(pk, g)->red = true;
        rotate(pk, g, !pleft);
    }
    N(pk, pk->root)->red = false;
    return 0;
}

const char *jhr_pmpick_find(const struct jhr_pmpick *pk, uint64_t ip)
{
    for (size_t i = pk->n ? pk->root : NIL; i != NIL;) {
        const struct jhr_pmpick_node *s = N(pk, i);
        if (ip < s->start)
            i = s->left;
        else if (ip > s->end || (ip == s->end && ip != s->start))
            i = s->right;
        else
            return s->name;
    }
    return NULL;
}

void jhr_pmpick_free(struct jhr_pmpick *pk)
{
    free(pk->nodes);
    *pk = (struct jhr_pmpick){ 0 };
}
