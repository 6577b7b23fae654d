/*
 * elfmap.c — the elfmap channel: the pages holding announced code are re-mapped, in place,
 * from ELF files holding the same bytes plus symbols, DWARF lines and unwind tables. Tools
 * that name code by the file behind a mapping then name JIT code like any shared library,
 * with no perf map, no jitdump and no post-processing:
 *
 *     $ JITHERALD=elfmap valgrind --tool=callgrind ./minijit fib.mini
 *     $ callgrind_annotate callgrind.out.4242
 *        2,103,544  fib.mini:fib [/tmp/jitherald-1000/jit-4242-2.elf]
 *     $ JITHERALD=elfmap perf record -g ./minijit fib.mini      # no -k 1, no perf inject
 *     $ perf report --sort sym,srcline;  perf annotate fib
 *     $ JITHERALD=elfmap perf record --call-graph dwarf ./minijit --no-frame-pointer fib.mini
 *     $ perf script      # fib <- fib <- main <- mj_call, through the images' .eh_frame
 *                        # (elfmap_file.c, jh__em_map_eh: what perf and libdw need mapped)
 *
 * How (docs/elfmap.md): code lives in image windows (elfmap.h), each described by one file
 * at a time. jh_code_add copies the code's pages into the window's file at fixed offsets,
 * appends its symbol and DWARF to the file's image (fmt/elf_grow.c), and maps the pages
 * that are not mapped from the file yet over the JIT's with MAP_FIXED|MAP_PRIVATE, r-x
 * (pageswap.c); elfmap_region.c says when that is done in place and when a window needs a
 * new file (a generation).
 *
 * Safety, the rule that matters most: never lose or change a byte of the JIT's code.
 *   - Pages are replaced only inside jh_code_add, _patched and _move, which the JIT calls
 *     while no other thread can write its code (its code lock: docs/elfmap.md,
 *     "contract"). jh_flush, which JITs call without that lock, replaces nothing: a
 *     mapping cannot be swapped atomically with a write another thread may be making.
 *   - Only pages that are private, r-x and anonymous (or already one of our files) are
 *     replaced; the bytes are compared before and after, and put back on a mismatch.
 *   - A file's code bytes are rewritten only where they are the page's own bytes or where
 *     the page is the JIT's private copy (elfmap_region.c); after fork() they are not
 *     rewritten at all (the child may be running from them): the next change makes a new
 *     file.
 *   - Removal reads nothing: the JIT may have freed the code already.
 * Valgrind does not check file-backed code for self-modification (--smc-check default
 * all-non-file): every add, patch, move and removal discards its translations.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <valgrind/valgrind.h>

#include "base/vec.h"
#include "channels/elfmap.h"
#include "fmt/arch.h"

/* ---- windows ---------------------------------------------------------------------------- */

/* The first window whose end is above a. */
static size_t reg_index(const struct elfmap *m, uintptr_t a)
{
    size_t lo = 0, hi = m->nreg;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->reg[mid]->hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void reg_remove(struct elfmap *m, const struct region *r)
{
    size_t i = reg_index(m, r->lo);
    if (i < m->nreg && m->reg[i] == r) {
        memmove(m->reg + i, m->reg + i + 1, (m->nreg - i - 1) * sizeof *m->reg);
        m->nreg--;
    }
}

/* A window holding [lo, hi): one that holds it or can grow to, else a new one; NULL when
 * the range crosses into a window it cannot join (*err 0) or on error (*err < 0). */
static struct region *fit(struct elfmap *m, uintptr_t lo, uintptr_t hi, int *err)
{
    size_t i = reg_index(m, lo);
    struct region *prev = i ? m->reg[i - 1] : NULL;
    struct region *r = i < m->nreg ? m->reg[i] : NULL;
    *err = 0;
    if (r && r->lo < hi) {
        struct region *next = i + 1 < m->nreg ? m->reg[i + 1] : NULL;
        uintptr_t l = r->lo < lo ? r->lo : lo, h = r->hi > hi ? r->hi : hi;
        if (l < r->anchor - EM_LEAD || h - (r->anchor - EM_LEAD) > EM_SPAN ||
            (prev && prev->hi > l) || (next && h > next->lo))
            return NULL;
        *err = jh__em_region_grow(m, r, l, h);
        return *err ? NULL : r;
    }
    /* Under valgrind every new symbol means reading the window's image again
     * (elfmap_region.c): windows of a page keep that from costing a MiB's functions. */
    uintptr_t win = m->valgrind ? m->page : EM_WINDOW;
    uintptr_t anchor = lo & ~(win - 1);
    uintptr_t l = prev && prev->hi > anchor ? prev->hi : anchor, h = anchor + win;
    if (r && r->lo < h)
        h = r->lo;
    if (h < hi && hi - (anchor - EM_LEAD) <= EM_SPAN && (!r || hi <= r->lo))
        h = hi;
    if (h < hi || anchor < EM_LEAD)
        return NULL;
    if (JH__VEC_RESERVE(m->reg, m->capreg, m->nreg + 1)) {
        *err = -ENOMEM;
        return NULL;
    }
    struct region *n = jh__em_region_new(m, anchor, l, h, err);
    if (!n)
        return NULL;
    memmove(m->reg + i + 1, m->reg + i, (m->nreg - i) * sizeof *m->reg);
    m->reg[i] = n;
    m->nreg++;
    return n;
}

/*
 * The window for e. When its pages are new to the windows, and the JIT's mapping holding
 * them is small (EM_WHOLE), a window that holds all that mapping: elfmap_region.c then maps
 * it from the file whole, and it stays one mapping (the kernel moves and grows one mapping
 * at a time: mremap). NULL (reported) when e's code crosses into a window it cannot join.
 */
static struct region *window_for(struct elfmap *m, const struct jh__entry *e, int *err)
{
    uintptr_t pl = pg_down(m, e->node.start), ph = pg_up(m, e->node.start + e->node.size);
    *err = 0;
    if (ph <= pl) {
        jh__em_report_once(m, R_RANGE, "code at %#lx ends at the top of the address space: "
                           "left as it is", (unsigned long)e->node.start);
        return NULL;
    }
    size_t i = reg_index(m, pl);
    struct region *r = i < m->nreg ? m->reg[i] : NULL;
    bool known = r && r->lo <= pl && ph <= r->hi;
    for (uintptr_t a = pl; a < ph && known; a += m->page)
        known = jh__em_region_maps(m, r, a);
    if (known)
        return r;
    uintptr_t vs, ve;
    if (!m->valgrind && jh__vma_bounds(jh__em_maps(m), pl, &vs, &ve) == 0 && vs <= pl &&
        ph <= ve && ve - vs <= EM_WHOLE) {
        if ((r = fit(m, vs, ve, err)) || *err)
            return r;
    }
    if ((r = fit(m, pl, ph, err)) || *err)
        return r;
    jh__em_report_once(m, R_STRADDLE, "code at %#lx-%#lx crosses into another image window: "
                       "left as it is", (unsigned long)e->node.start,
                       (unsigned long)(e->node.start + e->node.size));
    m->fallbacks++;
    return NULL;
}

/* e into a window's image; and when some of e's pages are new to the image, the live code
 * on them that no image names yet (announced while its page could not be mapped). */
static int image(struct elfmap *m, struct jh__entry *e)
{
    int err;
    uintptr_t pl = pg_down(m, e->node.start), ph = pg_up(m, e->node.start + e->node.size);
    /* Pages that cannot be swapped (writable, shared, someone else's file) are said once
     * and left at the cost of one look at the mappings: a VM whose code stays RWX
     * announces all of it there (Erlang: 16,575 functions, each a whole attempt at a new
     * file before). */
    if (ph > pl && jh__em_eligible(m, pl, ph) != JH__VMA_OK) {
        m->fallbacks++;
        return 0;
    }
    struct region *r = window_for(m, e, &err);
    if (!r)
        return err;
    struct jh__entry *one[1] = { e }, **es = one;
    size_t n = 1;
    bool fresh = false;
    for (uintptr_t a = pl; a < ph && !fresh; a += m->page)
        fresh = !jh__em_region_maps(m, r, a);
    struct jh__entry *o = fresh ? jh__view_floor(m->env, pl) : NULL;
    if (o && o->node.start + o->node.size <= pl)
        o = jh__view_ceil(m->env, pl);
    for (; o && o->node.start < ph; o = jh__view_next(m->env, o)) {
        if (o == e || SLOT(m, o) || o->node.start < r->lo ||
            o->node.start + o->node.size > r->hi)
            continue;
        if (JH__VEC_RESERVE(m->ents, m->capents, n + 1))
            return -ENOMEM;
        es = m->ents;
        es[0] = e;
        es[n++] = o;
    }
    int res = jh__em_region_add(m, r, es, n);
    if (res && !r->nlive && r->fd.fd < 0) {        /* a window that never got a file */
        reg_remove(m, r);
        jh__em_region_retire(m, r);
    }
    return res < 0 ? res : 0;
}

/* e's image no longer has its code at [start, start+size). */
static void forget(struct elfmap *m, struct jh__entry *e, uintptr_t start)
{
    struct region *r = SLOT(m, e);
    if (!r)
        return;
    SLOT(m, e) = NULL;
    jh__em_region_forget(m, r, start, e->node.size, e->fn.name);
    if (!r->nlive) {
        reg_remove(m, r);
        jh__em_region_retire(m, r);
    }
}

/* ---- hooks ------------------------------------------------------------------------------ */
static int elfmap_open(const struct jh__chan_env *env, void **state)
{
    const char *dir;
    int err = jh__chan_dir(env, &dir);
    if (err)
        return err;
    struct elfmap *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->env = env;
    m->page = (size_t)sysconf(_SC_PAGESIZE);
    m->maps = JH__KFD_NONE;
    m->valgrind = RUNNING_ON_VALGRIND;
    m->bti = jh__arch_host_bti();
    const struct jh__elfmap_opts *o = env->opts;
    m->freeze = o && o->freeze && !m->valgrind;
    *state = m;
    return 0;
}

/* A hook begins: what was proven in the last one (the maps' and the images' descriptors
 * ours, pages found mapped from our files) may have changed since. */
static void enter(struct elfmap *m)
{
    m->maps_checked = false;
    m->hook++;
}

static int elfmap_add(void *state, struct jh__entry *e)
{
    enter(state);
    /* Nothing ran there yet by the API's contract, but a JIT reusing addresses without
     * jh_code_remove would leave valgrind running stale translations. Cheap when not
     * under valgrind (a few instructions). */
    VALGRIND_DISCARD_TRANSLATIONS(e->node.start, e->node.size);
    if (jh__em_build_ids())
        jh__entry_bid(e);           /* (hashed once with gdb's: channel.h) */
    return image(state, e);
}

static int elfmap_remove(void *state, struct jh__entry *e)
{
    enter(state);
    /* What valgrind translated there must go: new code written over a file-backed page is
     * not noticed. The code itself is not read: it may be unmapped already. */
    VALGRIND_DISCARD_TRANSLATIONS(e->node.start, e->node.size);
    forget(state, e, e->node.start);
    return 0;
}

static int elfmap_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    enter(state);
    VALGRIND_DISCARD_TRANSLATIONS(old_start, e->node.size);
    VALGRIND_DISCARD_TRANSLATIONS(e->node.start, e->node.size);
    forget(state, e, old_start);
    if (jh__em_build_ids())
        jh__entry_bid(e);
    return image(state, e);
}

static int elfmap_patched(void *state, struct jh__entry *e, uintptr_t addr, size_t len)
{
    struct elfmap *m = state;
    enter(m);
    /* The JIT wrote through a copy-on-write page of our file mapping: valgrind must drop
     * what it translated (it does not watch file-backed code), and the file follows, so
     * that perf annotate shows the new bytes. */
    VALGRIND_DISCARD_TRANSLATIONS(addr, len);
    struct region *r = SLOT(m, e);
    if (!r)
        return 0;
    int res = jh__em_region_patched(m, r, addr, len);
    return res < 0 ? res : 0;
}

/* Before fork(), with the context locked: from now on the child may run code from our
 * files, so their code bytes must stay as they are (elfmap_region.c makes a new file). */
static void elfmap_fork_prepare(void *state)
{
    struct elfmap *m = state;
    for (size_t i = 0; i < m->nreg; i++)
        m->reg[i]->frozen = true;
}

/* In a fork child, at its first call: the files are the parent's (never written to from
 * here; new code goes to files named with the child's pid), the older generations too (not
 * ours to delete), and the /proc/self/maps we hold is the parent's. */
static int elfmap_forked(void *state)
{
    struct elfmap *m = state;
    enter(m);
    jh__kfd_close(&m->maps);        /* opened again for this process when needed */
    for (size_t i = 0; i < m->nreg; i++) {
        struct region *r = m->reg[i];
        r->foreign = true;
        jh__kfd_close(&r->fd);
    }
    for (size_t i = 0; i < m->nkept; i++)
        free(m->kept[i].path);
    m->nkept = 0;
    m->kept_bytes = 0;
    return 0;
}

/* Switched off while the program runs: the JIT's code is anonymous memory again, as if
 * elfmap had never been on (the files stay for the profilers' samples so far). */
static void elfmap_off(void *state)
{
    struct elfmap *m = state;
    /* Not under the JIT's code lock: RWX pages stay mapped from the files (private,
     * copy-on-write: every write kept, never shared with a fork child), as at jh_close. */
    m->unlocked = true;
    enter(m);                       /* (a hook of its own: nothing found before holds) */
    for (size_t i = 0; i < m->nreg; i++)
        jh__em_region_unswap_all(m, m->reg[i]);
}

/* jh_channels_set's rundown: its adds run without the JIT's code lock. */
static void elfmap_rundown(void *state, bool running)
{
    ((struct elfmap *)state)->unlocked = running;
}

static void elfmap_close(void *state)
{
    struct elfmap *m = state;
    if (!m)
        return;
    enter(m);
    jh__diag(m->env->diag, JH_LOG_INFO, "elfmap: %llu swaps, %llu left anonymous",
             (unsigned long long)m->swaps, (unsigned long long)m->fallbacks);
    /* The code pages stay mapped from the files (same bytes, still running fine), and the
     * files stay for the profilers: `jitherald clean` removes them once the process is
     * gone. Under valgrind the R+W pages stay too (with them valgrind's symbols, which
     * callgrind reads again at exit), and each image is mapped back at exit where the JIT
     * has unmapped its code by then (elfmap_valgrind.c). */
    for (size_t i = 0; i < m->nreg; i++) {
        jh__em_vg_remember(m, m->reg[i]);
        jh__em_region_close(m, m->reg[i]);
    }
    for (size_t i = 0; i < m->nkept; i++)
        free(m->kept[i].path);
    jh__em_rw_free(m, m->valgrind);
    jh__kfd_close(&m->maps);
    free(m->reg);
    free(m->own);
    free(m->kept);
    free(m->fns);
    free(m->ents);
    jh__buf_free(&m->snap);
    free(m);
}

const struct jh__channel_ops jh__elfmap_ops = {
    .name = "elfmap", .bit = JH_ELFMAP, .open = elfmap_open, .add = elfmap_add,
    .remove = elfmap_remove, .move = elfmap_move, .patched = elfmap_patched,
    .forked = elfmap_forked, .fork_prepare = elfmap_fork_prepare, .off = elfmap_off,
    .rundown = elfmap_rundown, .close = elfmap_close,
};
