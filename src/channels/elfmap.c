/*
 * elfmap.c — the elfmap channel: the pages holding announced code are re-mapped, in place,
 * from ELF files holding the same bytes plus symbols, DWARF lines and .eh_frame. Tools that
 * name code by the file behind a mapping then name JIT code like any shared library, with
 * no perf map, no jitdump and no post-processing:
 *
 *     $ JITHERALD=elfmap valgrind --tool=callgrind ./minijit fib.mini
 *     $ callgrind_annotate callgrind.out.4242
 *        2,103,544  fib.mini:fib [/tmp/jitherald-1000/jit-4242-2.elf]
 *     $ JITHERALD=elfmap perf record -g ./minijit fib.mini      # no -k 1, no perf inject
 *     $ perf report --sort sym,srcline;  perf annotate fib
 *
 * How (docs/elfmap.md: valgrind 3.19 reads symbols only from a regular ELF file it sees
 * mapped r-x, with an rw mapping of it too): for a run of pages holding announced code,
 * build an image whose R+X PT_LOAD holds exactly those pages at a file offset congruent
 * to their address (fmt/elf_image.c, COPY mode), write it as
 * <dir>/jit-<pid>-<gen>.elf, and mmap it over the pages with MAP_FIXED|MAP_PRIVATE,
 * PROT_READ|PROT_EXEC (pageswap.c). Valgrind 3.19 also wants a read-write mapping of
 * the same file before it reads the symbols: a small R+W PT_LOAD (holding .eh_frame) is
 * mapped elsewhere and kept while any page of that file is still mapped.
 *
 * Safety, the rule that matters most: never lose or change a byte of the JIT's code.
 *   - Only pages that are private, r-x and anonymous (or already one of our files) are
 *     swapped; a writable page (RWX JIT, or a W^X JIT in the middle of writing) never is.
 *   - The bytes are snapshot into the image, compared with the live pages right before
 *     the swap and compared again through the new mapping right after it; on a mismatch
 *     the snapshot is put back in anonymous memory and the channel stops.
 *   - A page can hold several functions and the JIT may later write the next function
 *     into its free tail: it makes the page writable (copy-on-write of our private file
 *     mapping, the file never changes), writes, makes it r-x again and announces; the
 *     page is then swapped again from a new generation file, which also covers the
 *     functions already there. A new file name each time: valgrind reads a path once.
 *   - The contract for JIT authors (docs/elfmap.md): announce, patch-notify and flush
 *     while no other thread can make those pages writable — in practice, under the lock
 *     that serialises your mprotect calls on code pages.
 * Valgrind does not check file-backed code for self-modification (--smc-check default
 * all-non-file): every swap, patch, move and removal discards its translations.
 *
 * Cost: an image, a file and two mmaps per swap. Swaps are immediate (code is named
 * before it first runs) up to a burst of ELFMAP_BURST, then at most one per
 * ELFMAP_REFILL_NS, batching whatever was announced meanwhile into one image per run of
 * pages (and at least every ELFMAP_MAX_PENDING functions). This keeps a 100k-function
 * compile burst to a few hundred files and mappings (vm.max_map_count is 65530) instead
 * of one per function. jh_flush, which JITs call after a batch and often outside their
 * code lock (minijit does), swaps only runs of pages with no free room left, where no
 * thread can be writing a new function; the others wait for the next jh_code_add.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <valgrind/valgrind.h>

#include "base/vec.h"
#include "channels/elfmap.h"
#include "channels/elfmap_tune.h"

/* ---- pending entries ------------------------------------------------------------------ */
static int pend(struct elfmap *m, struct jh__entry *e)
{
    if (SLOT(m, e))
        return 0;
    if (JH__VEC_RESERVE(m->pend, m->cappend, m->npend + 1))
        return -ENOMEM;
    m->pend[m->npend++] = e;
    SLOT(m, e) = (void *)(uintptr_t)m->npend;
    return 0;
}

static void unpend(struct elfmap *m, struct jh__entry *e)
{
    uintptr_t i = (uintptr_t)SLOT(m, e);
    if (!i || i > m->npend || m->pend[i - 1] != e)
        return;
    struct jh__entry *last = m->pend[--m->npend];
    m->pend[i - 1] = last;
    SLOT(m, last) = (void *)i;
    SLOT(m, e) = NULL;
}

void jh__em_extend(struct elfmap *m, uintptr_t *lo, uintptr_t *hi, uintptr_t from)
{
        const struct jh__entry *e;
    while ((e = jh__view_find(m->env, *lo)) && pg_down(m, e->node.start) < *lo)
        *lo = pg_down(m, e->node.start);
    if ((e = jh__view_find(m->env, from)) && pg_up(m, e->node.start + e->node.size) > *hi)
        *hi = pg_up(m, e->node.start + e->node.size);
    for (e = jh__view_ceil(m->env, from); e && e->node.start < *hi; e = jh__view_next(m->env, e))
        if (pg_up(m, e->node.start + e->node.size) > *hi)
            *hi = pg_up(m, e->node.start + e->node.size);
}

static int cmp_start(const void *a, const void *b)
{
    uintptr_t x = (*(struct jh__entry *const *)a)->node.start,
              y = (*(struct jh__entry *const *)b)->node.start;
    return (x > y) - (x < y);
}

/* Swap every pending entry's pages: one image per run of adjacent pages. */
/* Pages that held code that was removed or moved away: a JIT may re-use that room at any
 * time, so jh_flush leaves them to jh_code_add. A hash set of page numbers; never shrinks. */
static int freed_add(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t pg = pg_down(m, lo); pg < hi; pg += m->page) {
        if ((m->nfreed + 1) * 2 > m->capfreed) {
            size_t cap = m->capfreed ? m->capfreed * 2 : 256;
            uintptr_t *t = calloc(cap, sizeof *t);
            if (!t)
                return -ENOMEM;
            for (size_t i = 0; i < m->capfreed; i++) {
                if (!m->freed[i])
                    continue;
                size_t k = (m->freed[i] / m->page * 0x9e3779b97f4a7c15ull) & (cap - 1);
                while (t[k])
                    k = (k + 1) & (cap - 1);
                t[k] = m->freed[i];
            }
            free(m->freed);
            m->freed = t;
            m->capfreed = cap;
        }
        size_t k = (pg / m->page * 0x9e3779b97f4a7c15ull) & (m->capfreed - 1);
        while (m->freed[k] && m->freed[k] != pg)
            k = (k + 1) & (m->capfreed - 1);
        if (!m->freed[k]) {
            m->freed[k] = pg;
            m->nfreed++;
        }
    }
    return 0;
}

static bool freed_any(const struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    if (!m->nfreed)
        return false;
    for (uintptr_t pg = lo; pg < hi; pg += m->page) {
        size_t k = (pg / m->page * 0x9e3779b97f4a7c15ull) & (m->capfreed - 1);
        for (; m->freed[k]; k = (k + 1) & (m->capfreed - 1))
            if (m->freed[k] == pg)
                return true;
    }
    return false;
}

/* May jh_flush, outside the JIT's lock, swap [lo, hi)? Not if the JIT may be writing new
 * code there right now: in room freed by a removal, or in the free tail of the last page
 * after the last function (where a bump allocator puts the next one). */
static bool flush_safe(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    if (freed_any(m, lo, hi))
        return false;
    const struct jh__entry *last = jh__view_find(m->env, hi - 1);
    if (!last) {
    const struct jh__entry *e = jh__view_ceil(m->env, hi - m->page);
        for (; e && e->node.start < hi; e = jh__view_next(m->env, e))
            last = e;
    }
    return !last || last->node.start + last->node.size >= hi ||
           hi - (last->node.start + last->node.size) < ELFMAP_SETTLED_GAP;
}

/*
 * Swap the pages of pending entries: one image per run of adjacent pages. settled_only
 * (jh_flush, which a JIT may call without holding its code lock): only runs where no other
 * thread can be writing new code (flush_safe); the rest stays pending for the next
 * jh_code_add, which the contract says runs under that lock.
 */
static int swap_pending(struct elfmap *m, bool settled_only)
{
    if (!m->npend)
        return 0;
    qsort(m->pend, m->npend, sizeof *m->pend, cmp_start);
    int err = 0;
    size_t keep = 0, i = 0;
    while (i < m->npend) {
        uintptr_t lo = pg_down(m, m->pend[i]->node.start);
        uintptr_t hi = pg_up(m, m->pend[i]->node.start + m->pend[i]->node.size);
        size_t j = i + 1;
        jh__em_extend(m, &lo, &hi, lo);
        bool ok = !settled_only || flush_safe(m, lo, hi);
        while (ok && j < m->npend && pg_down(m, m->pend[j]->node.start) <= hi) {
            uintptr_t l = lo, h = pg_up(m, m->pend[j]->node.start + m->pend[j]->node.size);
            if (h <= hi) {
                j++;            /* inside the run already */
                continue;
            }
            jh__em_extend(m, &l, &h, hi);
            /* Growing a run checked already: only the new part needs checking. */
            if (settled_only && h > hi && !flush_safe(m, hi, h))
                break;
            lo = l;
            hi = h;
            j++;
        }
        if (err || !ok) {
            for (size_t k = i; k < j; k++) {
                m->pend[keep] = m->pend[k];
                SLOT(m, m->pend[keep]) = (void *)(uintptr_t)(keep + 1);
                keep++;
            }
            i = j;
            continue;
        }
        enum jh__vma_verdict v;
        int r = jh__em_swap_range(m, lo, hi, &v);
        if (r == 1 && v != JH__VMA_OK && j - i > 1) {
            /* One bad page (e.g. still being written) need not hold back the others. */
            uintptr_t done = lo;
            for (size_t k = i; k < j && r >= 0; k++) {
                uintptr_t l = pg_down(m, m->pend[k]->node.start);
                uintptr_t h = pg_up(m, m->pend[k]->node.start + m->pend[k]->node.size);
                jh__em_extend(m, &l, &h, l);
                if (l < done)
                    continue;
                r = jh__em_swap_range(m, l, h, &v);
                done = h;
            }
        }
        if (r < 0)
            err = r;
        for (size_t k = i; k < j; k++)
            SLOT(m, m->pend[k]) = NULL;
        i = j;
    }
    m->npend = keep;
    return err;
}

/* The budget's pace: the defaults, or what a test set (elfmap_tune.h). */
static _Atomic uint32_t burst_max = ELFMAP_BURST;
static _Atomic uint64_t refill_ns = ELFMAP_REFILL_NS, clock_skew;

void jh__elfmap_tune(uint32_t burst, uint64_t refill)
{
    atomic_store_explicit(&burst_max, burst ? burst : ELFMAP_BURST, memory_order_relaxed);
    atomic_store_explicit(&refill_ns, refill ? refill : ELFMAP_REFILL_NS, memory_order_relaxed);
}

void jh__elfmap_clock_skip(uint64_t ns)
{
    atomic_fetch_add_explicit(&clock_skew, ns, memory_order_relaxed);
}

static uint64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
           atomic_load_explicit(&clock_skew, memory_order_relaxed);
}

/* Swap now if the budget allows, else leave it for a later call or jh_flush. */
static int maybe_swap(struct elfmap *m)
{
    uint64_t now = coarse_ns();
    uint64_t burst = atomic_load_explicit(&burst_max, memory_order_relaxed);
    uint64_t refill = atomic_load_explicit(&refill_ns, memory_order_relaxed);
    if (m->tokens >= burst) {
        m->tokens = burst;
        m->refill_at = now;
    } else if (now >= m->refill_at + refill) {
        uint64_t add = (now - m->refill_at) / refill;
        m->tokens = m->tokens + add >= burst ? burst : m->tokens + add;
        m->refill_at += add * refill;
    }
    if (m->tokens) {
        m->tokens--;
        return swap_pending(m, false);
    }
    return m->npend >= ELFMAP_MAX_PENDING ? swap_pending(m, false) : 0;
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
    m->maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    m->tokens = atomic_load_explicit(&burst_max, memory_order_relaxed);
    m->refill_at = coarse_ns();
    *state = m;
    return 0;
}

static int elfmap_add(void *state, struct jh__entry *e)
{
    struct elfmap *m = state;
    /* Nothing ran there yet by the API's contract, but a JIT reusing addresses without
     * jh_code_remove would leave valgrind running stale translations. Cheap when not
     * under valgrind (a few instructions). */
    VALGRIND_DISCARD_TRANSLATIONS(e->node.start, e->node.size);
    int err = pend(m, e);
    return err ? err : maybe_swap(m);
}

static int elfmap_remove(void *state, struct jh__entry *e)
{
    struct elfmap *m = state;
    unpend(m, e);
    /* The pages stay mapped from our file (same bytes); what valgrind translated there
     * must go, since new code written over a file-backed page is not noticed. */
    VALGRIND_DISCARD_TRANSLATIONS(e->node.start, e->node.size);
    return freed_add(m, e->node.start, e->node.start + e->node.size);
}

static int elfmap_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct elfmap *m = state;
    VALGRIND_DISCARD_TRANSLATIONS(old_start, e->node.size);
    VALGRIND_DISCARD_TRANSLATIONS(e->node.start, e->node.size);
    int err = freed_add(m, old_start, old_start + e->node.size);
    if (!err)
        err = pend(m, e);
    return err ? err : maybe_swap(m);
}

static int elfmap_patched(void *state, struct jh__entry *e, uintptr_t addr, size_t len)
{
    struct elfmap *m = state;
    /* The JIT wrote through a copy-on-write page of our file mapping: valgrind must drop
     * what it translated (it does not watch file-backed code), and the image is redone
     * so that perf annotate shows the new bytes. */
    VALGRIND_DISCARD_TRANSLATIONS(addr, len);
    int err = pend(m, e);
    return err ? err : maybe_swap(m);
}

static int elfmap_flush(void *state)
{
    return swap_pending(state, true);
}

/* In a fork child: the /proc/self/maps we hold is the parent's (/proc/self was resolved
 * when it was opened); querying it would judge the child's pages by the parent's. */
static int elfmap_forked(void *state)
{
    struct elfmap *m = state;
    if (m->maps_fd >= 0)
        close(m->maps_fd);
    m->maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    return 0;
}

static void elfmap_close(void *state)
{
    struct elfmap *m = state;
    if (!m)
        return;
    jh__diag(m->env->diag, JH_LOG_INFO, "elfmap: %llu swaps, %llu left anonymous",
                (unsigned long long)m->swaps, (unsigned long long)m->fallbacks);
    for (size_t i = 0; i < m->npend; i++)
        SLOT(m, m->pend[i]) = NULL;
    /* The code pages stay mapped from the files (same bytes, still running fine); the rw
     * mappings go, and with them valgrind's symbols for them. The files stay for the
     * profilers: `jitherald clean` removes them once the process is gone. */
    for (size_t i = 0; i < m->ngens; i++) {
        if (m->gens[i]->rw)
            munmap(m->gens[i]->rw, m->gens[i]->rw_len);
        free(m->gens[i]);
    }
    if (m->maps_fd >= 0)
        close(m->maps_fd);
    free(m->gens);
    free(m->seg);
    free(m->pend);
    free(m->fns);
    free(m->freed);
    jh__buf_free(&m->img);
    free(m);
}

const struct jh__channel_ops jh__elfmap_ops = {
    .name = "elfmap", .bit = JH_ELFMAP, .open = elfmap_open, .add = elfmap_add,
    .remove = elfmap_remove, .move = elfmap_move, .patched = elfmap_patched,
    .flush = elfmap_flush, .forked = elfmap_forked, .close = elfmap_close,
};

