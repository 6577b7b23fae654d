/* test_registry.c — the registry against a brute-force model, at scale. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/registry.h"
#include "jitherald.h"

#define SLOTS 4096
static struct jh__node *model[SLOTS];   /* slot i covers [i*64, i*64+64) when present */

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static int depth(const struct jh__node *e)
{
    if (!e) return 0;
    int l = depth(e->left), r = depth(e->right);
    CHECK(abs(l - r) <= 1);
    CHECK(e->height == 1 + (l > r ? l : r));
    return 1 + (l > r ? l : r);
}

int main(void)
{
    struct jh__registry r;
    memset(&r, 0, sizeof r);
    uint64_t next_id = 1;
    size_t live = 0;
    for (int step = 0; step < 200000; step++) {
        size_t i = rnd() % SLOTS;
        uintptr_t base = 0x100000 + i * 64;
        if (!model[i]) {
            struct jh__node *e = calloc(1, sizeof *e);
            e->id = next_id++;
            e->start = base + rnd() % 8;
            e->size = 64 - (e->start - base) - rnd() % 8;
            CHECK_EQ(jh__reg_insert(&r, e), 0);
            model[i] = e;
            live++;
        } else if (rnd() % 3 == 0) {
            /* An overlapping insert is refused: one starting inside a node, and one starting
             * below it that reaches its first byte (the node above its start). */
            struct jh__node x = { .id = next_id++, .start = model[i]->start + 1, .size = 200 };
            CHECK_EQ(jh__reg_insert(&r, &x), JH_EOVERLAP);
            uintptr_t below = model[i]->start - 1 - rnd() % 8;
            struct jh__node y = { .id = next_id++, .start = below,
                                  .size = model[i]->start - below + 1 };
            CHECK_EQ(jh__reg_insert(&r, &y), JH_EOVERLAP);
        } else {
            CHECK(jh__reg_by_id(&r, model[i]->id) == model[i]);
            jh__reg_erase(&r, model[i]);
            CHECK(jh__reg_by_id(&r, model[i]->id) == NULL);
            free(model[i]);
            model[i] = NULL;
            live--;
        }
        if (step % 20000 == 0) {
            CHECK_EQ(r.count, live);
            depth(r.root);
            /* find / ceil / next / prev agree with the model everywhere (next and prev are
             * the thread, ceil a descent). */
            size_t n = 0;
            for (struct jh__node *e = jh__reg_ceil(&r, 0), *prev = NULL; e; prev = e, e = jh__reg_next(&r, e)) {
                CHECK(!prev || prev->start < e->start);
                CHECK(jh__reg_prev(&r, e) == prev);
                CHECK(jh__reg_next(&r, e) == jh__reg_ceil(&r, e->start + 1));
                n++;
            }
            CHECK_EQ(n, live);
            /* the last node, which inserts past it start from, is the walk's last */
            struct jh__node *hi = r.root;
            while (hi && hi->right)
                hi = hi->right;
            CHECK(r.last == hi);
            for (size_t k = 0; k < SLOTS; k += 7) {
                uintptr_t a = 0x100000 + k * 64 + rnd() % 64;
                struct jh__node *f = jh__reg_find(&r, a);
                struct jh__node *m = model[k];
                bool in = m && a >= m->start && a < m->start + m->size;
                CHECK(f == (in ? m : NULL));
                CHECK(jh__reg_reaching(&r, a) == (f ? f : jh__reg_ceil(&r, a)));
            }
        }
    }
    /* Move (rekey) keeps the tree ordered. */
    for (size_t i = 0; i < SLOTS; i++)
        if (model[i] && !jh__reg_overlaps(&r, model[i]->start + 1, model[i]->size, model[i])
            && model[i]->start + model[i]->size < 0x100000 + i * 64 + 64)
            jh__reg_rekey(&r, model[i], model[i]->start + 1);
    depth(r.root);
    for (struct jh__node *e = jh__reg_ceil(&r, 0), *prev = NULL; e; prev = e, e = jh__reg_next(&r, e)) {
        CHECK(!prev || prev->start + prev->size <= e->start);
        CHECK(jh__reg_prev(&r, e) == prev);
        CHECK(jh__reg_next(&r, e) == jh__reg_ceil(&r, e->start + 1));
    }
    for (size_t i = 0; i < SLOTS; i++)
        if (model[i]) { jh__reg_erase(&r, model[i]); free(model[i]); }
    CHECK_EQ(r.count, 0);
    CHECK(r.root == NULL);

    /* Ascending inserts, each just above the last (node's builtins, in a batch), and one
     * ending at the top of the address space: balanced, every height right, the one
     * touching its neighbour accepted and the one reaching into it refused. */
    enum { UP = 5000 };
    struct jh__node *up = calloc(UP + 3, sizeof *up);
    for (size_t i = 0; i < UP; i++) {
        up[i] = (struct jh__node){ .id = next_id++, .start = 0x200000 + i * 48, .size = 48 };
        CHECK_EQ(jh__reg_insert(&r, &up[i]), 0);
    }
    depth(r.root);
    CHECK(r.last == &up[UP - 1]);
    /* past the last node's start but inside it: refused on the spine's walk too */
    struct jh__node in_last = { .id = next_id++, .start = up[UP - 1].start + 1, .size = 8 };
    CHECK_EQ(jh__reg_insert(&r, &in_last), JH_EOVERLAP);
    CHECK(r.last == &up[UP - 1] && jh__reg_next(&r, &up[UP - 1]) == NULL);
    up[UP] = (struct jh__node){ .id = next_id++, .start = UINTPTR_MAX - 63, .size = 64 };
    CHECK_EQ(jh__reg_insert(&r, &up[UP]), 0);
    up[UP + 1] = (struct jh__node){ .id = next_id++, .start = UINTPTR_MAX - 127, .size = 65 };
    CHECK_EQ(jh__reg_insert(&r, &up[UP + 1]), JH_EOVERLAP);
    up[UP + 2] = (struct jh__node){ .id = next_id++, .start = UINTPTR_MAX - 127, .size = 64 };
    CHECK_EQ(jh__reg_insert(&r, &up[UP + 2]), 0);
    CHECK_EQ(r.count, UP + 2);
    depth(r.root);
    for (size_t i = 0; i < UP + 3; i++)
        if (i != UP + 1)
            jh__reg_erase(&r, &up[i]);
    CHECK_EQ(r.count, 0);
    CHECK(r.last == NULL);
    free(up);

    /* One million entries: depth stays logarithmic. */
    enum { N = 1000000 };
    struct jh__node *all = calloc(N, sizeof *all);
    for (size_t i = 0; i < N; i++) {
        all[i].id = next_id++;
        all[i].start = 0x10000000 + (i * 2654435761u % N) * 32;   /* scrambled order */
        all[i].size = 32;
        CHECK(jh__reg_insert(&r, &all[i]) == 0);
    }
    CHECK_EQ(r.count, N);
    CHECK(r.root->height <= 29);
    CHECK(jh__reg_find(&r, 0x10000000 + 12345 * 32 + 5) != NULL);
    for (size_t i = 0; i < N; i += 2)
        jh__reg_erase(&r, &all[i]);
    CHECK_EQ(r.count, N / 2);
    depth(r.root);
    jh__reg_fini(&r);
    free(all);
    return check_done();
}
