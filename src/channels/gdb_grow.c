/*
 * gdb_grow.c — the gdb channel's growing image (gdb_state.h): while no debugger listens,
 * each function added in immediate mode is appended to one image, registered once, that a
 * debugger attaching later finds whole at any instant (fmt/elf_grow_mem.h) — instead of a
 * one-function image per add, merged 64 to one and again 16 to one on their way to a full
 * image: ~8,100 + ~2,500 instructions a LuaJIT trace, a fifth of the library's cost (issue
 * 30), for images nothing read unless a debugger came.
 *
 * Its life:
 *   - started by the first add with no debugger;
 *   - each add: appended to the view not listed, which is then listed before the other is
 *     unlisted (fmt/elf_grow_mem.h): a debugger listening, one jitherald sees or not
 *     (qemu-user's gdb stub keeps its breakpoint out of our memory), reads it then;
 *   - full (cap functions, JH__ELFM_RUNS .text sections, or its reserve): frozen, i.e. a
 *     compact copy registered in its place, an ordinary full image from then on;
 *   - a debugger seen listening after an add (its breakpoint on the hook): frozen the same
 *     way, then the channel's ordinary policy while it listens (gdb.c): it would read the
 *     whole image again at every add;
 *   - its last function removed (the adapter replacing a perf-map line's function by the
 *     jitdump's description of it): undone, the other view listed; any other removal or
 *     move: frozen as it stands (no copy) and handled as in any image (gdb.c: lazily
 *     rebuilt).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/vec.h"
#include "channels/gdb_state.h"
#include "fmt/arch.h"

/* Address space reserved per growing image (MAP_NORESERVE: pages cost only once written).
 * A full image of 1,024 LuaJIT traces with their per-guard lines takes ~1 MiB, twice that
 * with the chunks its sections outgrew; one that fills this is frozen as it is. */
#define RESERVE ((size_t)16 << 20)

struct jh__gdb_grow {
    struct jh__elfm m;
    void *map;                  /* its reserve */
    struct jh__gdb_image *ent[2];   /* the list entries of the image's two views */
    int listed;                 /* the view listed (-1: none yet) */
    size_t fns_cap;
};

#define SLOT(st, e) ((e)->slot[(st)->env->slot])

static int grow_start(struct gdb_state *st)
{
    void *base = mmap(NULL, RESERVE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return -ENOMEM;
    struct jh__gdb_grow *gm = calloc(1, sizeof *gm);
    struct img *im = calloc(1, sizeof *im);
    if (gm) {
        gm->ent[0] = calloc(1, sizeof *gm->ent[0]);
        gm->ent[1] = calloc(1, sizeof *gm->ent[1]);
    }
    if (!gm || !im || !gm->ent[0] || !gm->ent[1] ||
        jh__elfm_init(&gm->m, base, RESERVE, JH__ARCH_HOST, true)) {
        if (gm)
            free(gm->ent[0]), free(gm->ent[1]);
        free(gm);
        free(im);
        munmap(base, RESERVE);
        return -ENOMEM;
    }
    gm->map = base;
    gm->listed = -1;
    for (int v = 0; v < 2; v++)
        gm->ent[v]->ce.symfile_addr = (const char *)jh__elfm_view(&gm->m, v);
    im->cls = -1;
    st->grow = im, st->gm = gm;
    return 0;
}

/* The builder gone; with drop the image too (unregistered, unmapped). Else the listed
 * view's entry stays, the image's pub, owning the mapping (a copy replaced it, or it is
 * frozen as it stands). */
static void grow_end(struct gdb_state *st, bool drop)
{
    struct jh__gdb_grow *gm = st->gm;
    int v = gm->listed;
    if (drop) {
        if (v >= 0) {
            jh__gdb_publish(NULL, &gm->ent[v], 1);
            free(gm->ent[1 - v]);
        } else {
            free(gm->ent[0]);
            free(gm->ent[1]);
        }
        munmap(gm->map, RESERVE);
        free(st->grow->fns);
        free(st->grow);
    } else {
        gm->ent[v]->map = gm->map, gm->ent[v]->map_len = RESERVE;
        free(gm->ent[1 - v]);
    }
    free(gm);
    st->grow = NULL, st->gm = NULL;
}

/* The view jh__elfm_add or _pop just wrote becomes the listed one: listed first, then the
 * other unlisted (a debugger that listens reads it at that stop). */
static void grow_publish(struct gdb_state *st)
{
    struct jh__gdb_grow *gm = st->gm;
    int v = jh__elfm_next(&gm->m);
    gm->ent[v]->ce.symfile_size = jh__elfm_size(&gm->m, v);
    jh__elfm_flip(&gm->m);
    if (gm->listed < 0)
        jh__gdb_publish(gm->ent[v], NULL, 0);
    else
        jh__gdb_republish(&gm->ent[v]->ce, &gm->ent[gm->listed]->ce);
    gm->listed = v;
    st->grow->pub = gm->ent[v];
}

int jh__gdb_grow_freeze(struct gdb_state *st, bool copy)
{
    struct img *im = st->grow;
    if (!im)
        return 0;
    if (!im->n) {               /* (started, its first function refused) */
        grow_end(st, true);
        return 0;
    }
    if (copy) {
        struct jh__gdb_grow *gm = st->gm;
        struct jh__buf b = { .len = JH__GDB_HEAD };
        int err = jh__elfm_copy(&gm->m, &b);
        if (err) {
            free(b.p);
            return err;
        }
        im->pub = jh__gdb_image_of(&b);
        struct jh__gdb_image *old = gm->ent[gm->listed];
        gm->ent[gm->listed] = NULL;
        jh__gdb_publish(im->pub, &old, 1);     /* the copy first: never in no image */
        free(gm->ent[1 - gm->listed]);
        munmap(gm->map, RESERVE);
        free(gm);
        st->grow = NULL, st->gm = NULL;
    } else {
        grow_end(st, false);
    }
    jh__gdb_sort(im->fns, im->n);
    jh__gdb_class_link(st, im);
    return copy ? jh__gdb_maybe_merge(st, im->cls) : 0;
}

/* e's neighbours in the growing image, when e may share a .text section with them: the
 * next code below (above) e is theirs, and the gap no more than elf_image's join gap (as
 * gdb.c's gap_empty: nothing else is in it, e being next to them). */
static void joins(const struct gdb_state *st, const struct jh__entry *e, bool *jp, bool *jn)
{
    const struct jh__entry *p = jh__entry_of(jh__reg_prev(st->env->reg, &e->node));
    const struct jh__entry *n = jh__view_next(st->env, e);
    *jp = p && SLOT(st, p) == st->grow &&
          e->node.start - (p->node.start + p->node.size) <= JH__GDB_JOIN_GAP;
    *jn = n && SLOT(st, n) == st->grow &&
          n->node.start - (e->node.start + e->node.size) <= JH__GDB_JOIN_GAP;
}

int jh__gdb_grow_add(struct gdb_state *st, struct jh__entry *e)
{
    int err;
    bool full = false;
    for (int tries = 0;; tries++) {
        if (st->grow && (full || st->grow->n >= st->cap)) {
            if ((err = jh__gdb_grow_freeze(st, true)))
                return err;
            SLOT(st, e) = NULL;     /* the frozen image is another: may it span e? */
            if ((err = jh__gdb_unjoin(st, e)))
                return err;
        }
        if (!st->grow && grow_start(st))
            return 1;
        struct img *im = st->grow;
        if (JH__VEC_RESERVE(im->fns, st->gm->fns_cap, im->n + 1))
            return -ENOMEM;
        bool jp, jn;
        joins(st, e, &jp, &jn);
        jh__entry_insns(e);     /* encoded once for every channel (gdb.c's build) */
        err = jh__elfm_add(&st->gm->m, &e->fn, jh__entry_bid(e), jp, jn);
        if (!err)
            break;
        if ((err != -ENOSPC && err != -E2BIG) || !im->n || tries)
            return 1;           /* an image of its own says what is wrong, if anything */
        full = true;            /* frozen above, e into a new image */
    }
    struct img *im = st->grow;
    im->fns[im->n++] = e;
    SLOT(st, e) = im;
    grow_publish(st);
    /* A debugger seen listening read e's view at its registration; it would read the whole
     * image again at every add: an ordinary image from now on (the copy, read once more). */
    return jh__gdb_listening() ? jh__gdb_grow_freeze(st, true) : 0;
}

bool jh__gdb_grow_pop(struct gdb_state *st, struct jh__entry *e)
{
    struct img *im = st->grow;
    if (!im || !im->n || im->fns[im->n - 1] != e)
        return false;
    if (im->n == 1) {
        SLOT(st, e) = NULL;
        grow_end(st, true);
        return true;
    }
    if (jh__elfm_pop(&st->gm->m))
        return false;
    im->n--;
    SLOT(st, e) = NULL;
    grow_publish(st);
    if (jh__gdb_listening())
        (void)jh__gdb_grow_freeze(st, true);    /* (no memory: the next add tries again) */
    return true;
}

void jh__gdb_grow_close(struct gdb_state *st)
{
    if (!st->grow)
        return;
    for (size_t i = 0; i < st->grow->n; i++)
        SLOT(st, st->grow->fns[i]) = NULL;
    grow_end(st, true);
}
