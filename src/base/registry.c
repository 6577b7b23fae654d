/*
 * registry.c — the live-code registry: address → node for overlap checks, lookups and
 * in-order walks (GDB batches, unwind groups, elfmap pages), and id → node for
 * remove/move. Generic: a node is a range and an id; what it describes is the user's.
 *
 * Sized for a million entries: an intrusive AVL tree (no allocation per insert, depth ≤ 1.44
 * log2 n ≈ 29 at 1M) and an id table in 4096-slot chunks indexed directly by id (ids are
 * issued in order and never reused; a chunk is freed when its last entry goes, so a JIT
 * that churns through ids keeps memory proportional to what is live plus one pointer per
 * 4096 ids ever issued).
 */
#include <stdlib.h>

#include "base/registry.h"

#include <errno.h>

#include "jitherald.h"

static int height(const struct jh__node *e) { return e ? e->height : 0; }

static void fix_height(struct jh__node *e)
{
    int l = height(e->left), r = height(e->right);
    e->height = 1 + (l > r ? l : r);
}

static struct jh__node *rotate_right(struct jh__node *e)
{
    struct jh__node *l = e->left;
    e->left = l->right;
    l->right = e;
    fix_height(e);
    fix_height(l);
    return l;
}

static struct jh__node *rotate_left(struct jh__node *e)
{
    struct jh__node *r = e->right;
    e->right = r->left;
    r->left = e;
    fix_height(e);
    fix_height(r);
    return r;
}

static struct jh__node *balance(struct jh__node *e)
{
    fix_height(e);
    int bf = height(e->left) - height(e->right);
    if (bf > 1) {
        if (height(e->left->left) < height(e->left->right))
            e->left = rotate_left(e->left);
        return rotate_right(e);
    }
    if (bf < -1) {
        if (height(e->right->right) < height(e->right->left))
            e->right = rotate_right(e->right);
        return rotate_left(e);
    }
    return e;
}

static struct jh__node *remove_min(struct jh__node *t, struct jh__node **min)
{
    if (!t->left) {
        *min = t;
        return t->right;
    }
    t->left = remove_min(t->left, min);
    return balance(t);
}

static struct jh__node *erase(struct jh__node *t, const struct jh__node *e)
{
    if (!t)
        return NULL;
    if (t == e) {
        if (!t->right)
            return t->left;
        struct jh__node *m;
        struct jh__node *r = remove_min(t->right, &m);
        m->left = t->left;
        m->right = r;
        return balance(m);
    }
    if (e->start < t->start)
        t->left = erase(t->left, e);
    else
        t->right = erase(t->right, e);
    return balance(t);
}

/* Greatest start <= addr. */
struct jh__node *jh__reg_floor(const struct jh__registry *r, uintptr_t addr)
{
    struct jh__node *t = r->root, *best = NULL;
    while (t) {
        if (t->start <= addr) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best;
}

struct jh__node *jh__reg_ceil(const struct jh__registry *r, uintptr_t addr)
{
    struct jh__node *t = r->root, *best = NULL;
    while (t) {
        if (t->start >= addr) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

struct jh__node *jh__reg_find(const struct jh__registry *r, uintptr_t addr)
{
    struct jh__node *e = jh__reg_floor(r, addr);
    return e && addr - e->start < e->size ? e : NULL;
}

struct jh__node *jh__reg_reaching(const struct jh__registry *r, uintptr_t addr)
{
    /* floor and ceil in one descent: the last start <= addr and the first above it */
    struct jh__node *t = r->root, *le = NULL, *gt = NULL;
    while (t) {
        if (t->start <= addr) {
            le = t;
            t = t->right;
        } else {
            gt = t;
            t = t->left;
        }
    }
    return le && addr - le->start < le->size ? le : gt;
}

bool jh__reg_overlaps(const struct jh__registry *r, uintptr_t start, size_t size,
                      const struct jh__node *except)
{
    /* Live ranges never overlap each other, so only the last node starting at or before
     * our last byte can reach into us — and the one before it, when that one is `except`.
     * Compared by last bytes: a range ending at the top of the address space has an end
     * of 0 in uintptr_t. */
    uintptr_t last = start + size - 1;
    struct jh__node *e = jh__reg_floor(r, last);
    if (e == except && e)
        e = e->start ? jh__reg_floor(r, e->start - 1) : NULL;
    return e && e->start + (e->size - 1) >= start;
}

static struct jh__node **id_slot(const struct jh__registry *r, uint64_t id)
{
    uint64_t chunk = id / JH__ID_CHUNK;
    if (chunk >= r->idtab_chunks || !r->idtab[chunk])
        return NULL;
    return &r->idtab[chunk][id % JH__ID_CHUNK];
}

struct jh__node *jh__reg_by_id(const struct jh__registry *r, uint64_t id)
{
    struct jh__node **s = id_slot(r, id);
    return s ? *s : NULL;
}

/* AVL height <= 1.44 log2(n + 2): 64 levels is more nodes than memory holds. */
#define MAX_DEPTH 64

/* e into the tree and the thread (its id aside). */
static int tree_insert(struct jh__registry *r, struct jh__node *e)
{
    /* One descent, not two (jh__reg_overlaps, then the insert): e's neighbours, the last
     * node starting at or below it and the first above, are on the path to its place, and
     * live ranges never overlap each other, so only they can reach into it. Heights are
     * fixed on the way back up only while they change: above that the tree is as it was
     * (node's 2,182 builtins, twice: 565 instructions an insert before). */
    struct jh__node **path[MAX_DEPTH], **link = &r->root, *below = NULL, *above = NULL;
    size_t d = 0;
    if (r->root && r->root->height >= MAX_DEPTH)
        return -ENOMEM;         /* (the path is at most the root's height: checked once) */
    if (r->last && e->start > r->last->start) {
        below = r->last;        /* past every node: its place is below the right spine's end */
        while (*link) {
            path[d++] = link;
            link = &(*link)->right;
        }
    } else {
        while (*link) {
            struct jh__node *t = *link;
            path[d++] = link;
            if (e->start < t->start)
                above = t, link = &t->left;
            else
                below = t, link = &t->right;
        }
    }
    if ((below && below->start + (below->size - 1) >= e->start) ||
        (above && above->start <= e->start + (e->size - 1)))
        return JH_EOVERLAP;
    e->left = e->right = NULL;
    e->height = 1;
    *link = e;
    e->prev = below;
    e->next = above;
    if (below)
        below->next = e;
    if (above)
        above->prev = e;
    else
        r->last = e;
    /* Back up: a height that does not change ends the walk; a node out of balance is
     * rotated back to the height it had before the insert, which ends it too. Only the
     * heights on the way are computed (balance() per level was a third of an insert). */
    while (d--) {
        struct jh__node **l = path[d], *t = *l;
        int hl = height(t->left), hr = height(t->right);
        if (hl - hr > 1 || hr - hl > 1) {
            *l = balance(t);
            break;
        }
        int h = 1 + (hl > hr ? hl : hr);
        if (h == t->height)
            break;
        t->height = h;
    }
    return 0;
}

static void unthread(struct jh__registry *r, struct jh__node *e)
{
    if (r->last == e)
        r->last = e->prev;
    if (e->prev)
        e->prev->next = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

/* Its id's slot, allocated if need be: NULL when there is no memory for it. */
static struct jh__node **id_slot_new(struct jh__registry *r, uint64_t id)
{
    uint64_t chunk = id / JH__ID_CHUNK;
    if (chunk >= r->idtab_chunks) {
        size_t n = r->idtab_chunks ? r->idtab_chunks : 16;
        while (n <= chunk)
            n *= 2;
        struct jh__node ***t = realloc(r->idtab, n * sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = r->idtab_chunks; i < n; i++)
            t[i] = NULL;
        r->idtab = t;
        r->idtab_chunks = n;
    }
    if (!r->idtab[chunk]) {
        r->idtab[chunk] = calloc(JH__ID_CHUNK + 1, sizeof(struct jh__node *));
        if (!r->idtab[chunk])
            return NULL;
    }
    return &r->idtab[chunk][id % JH__ID_CHUNK];
}

int jh__reg_insert(struct jh__registry *r, struct jh__node *e)
{
    int err = tree_insert(r, e);
    if (err)
        return err;
    struct jh__node **slot = id_slot_new(r, e->id);
    if (!slot) {
        r->root = erase(r->root, e);
        unthread(r, e);
        return -ENOMEM;
    }
    /* The extra slot at the end of each chunk counts its live entries. */
    struct jh__node **c = r->idtab[e->id / JH__ID_CHUNK];
    *slot = e;
    c[JH__ID_CHUNK] = (struct jh__node *)((uintptr_t)c[JH__ID_CHUNK] + 1);
    r->count++;
    return 0;
}

void jh__reg_erase(struct jh__registry *r, struct jh__node *e)
{
    r->root = erase(r->root, e);
    unthread(r, e);
    r->count--;
    uint64_t chunk = e->id / JH__ID_CHUNK;
    struct jh__node **c = r->idtab[chunk];
    c[e->id % JH__ID_CHUNK] = NULL;
    uintptr_t live = (uintptr_t)c[JH__ID_CHUNK] - 1;
    c[JH__ID_CHUNK] = (struct jh__node *)live;
    if (live == 0) {
        free(c);
        r->idtab[chunk] = NULL;
    }
}

/* Re-key e after its start changed (jh_code_move): the caller checked overlaps. */
void jh__reg_rekey(struct jh__registry *r, struct jh__node *e, uintptr_t new_start)
{
    r->root = erase(r->root, e);
    unthread(r, e);
    e->start = new_start;
    tree_insert(r, e);          /* (no overlap: checked; nor too deep: it was in the tree) */
}

void jh__reg_fini(struct jh__registry *r)
{
    for (size_t i = 0; i < r->idtab_chunks; i++)
        free(r->idtab[i]);
    free(r->idtab);
    r->idtab = NULL;
    r->idtab_chunks = 0;
    r->root = NULL;
    r->last = NULL;
    r->count = 0;
}
