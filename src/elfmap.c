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
 * How (the recipe measured in FACTS.md, Valgrind section): for a run of pages holding
 * announced code, build an image whose R+X PT_LOAD holds exactly those pages at a file
 * offset congruent to their address (src/elf_image.c, COPY mode), write it as
 * <dir>/jit-<pid>-<gen>.elf, and mmap it over the pages with MAP_FIXED|MAP_PRIVATE,
 * PROT_READ|PROT_EXEC (src/pageswap.c). Valgrind 3.19 also wants a read-write mapping of
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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <valgrind/valgrind.h>

#include "internal.h"
#include "elf_image.h"
#include "pageswap.h"

#define ELFMAP_BURST 32
#define ELFMAP_REFILL_NS 10000000ull
#define ELFMAP_MAX_PENDING 4096
#define ELFMAP_SETTLED_GAP 16   /* less room than this after the last function: padding */

/* One image file, while some of its pages are still mapped where we put them. */
struct gen {
    uint64_t n;
    uintptr_t lo, hi;
    size_t live;                /* bytes of [lo, hi) still mapped from this file */
    void *rw;                   /* the R+W mapping valgrind wants, rw_len bytes */
    size_t rw_len;
    dev_t dev;
    ino_t ino;
};

/* Which of our files backs which pages: sorted, not overlapping. */
struct seg {
    uintptr_t lo, hi;
    struct gen *g;
};

/* One-time reports. */
enum { R_VERDICT = 0, R_CHANGED = 16, R_BUILD, R_FILE, R_MAP, R_RANGE };

struct elfmap {
    jh_ctx *ctx;
    size_t page;
    int maps_fd;
    struct jh__entry **pend;     /* announced, not yet in an image; e->chan[] = index + 1 */
    size_t npend, cappend;
    struct seg *seg;
    size_t nseg, capseg;
    struct gen **gens;
    size_t ngens, capgens;
    uintptr_t *freed;           /* pages code was removed from (freed_add) */
    size_t nfreed, capfreed;
    const struct jh__entry **fns;    /* scratch: the functions of one image */
    size_t capfns;
    struct jh__buf img;
    uint64_t tokens, refill_at;
    uint32_t reported;
    unsigned pid_gen;           /* jh__fork_gen when pid was read */
    pid_t pid;
    uint64_t swaps, fallbacks;
};

/* File names must be unique per process across contexts and generations. */
static _Atomic uint64_t gen_counter;

#define SLOT(e) ((e)->chan[JH__CH_ELFMAP])

static uintptr_t pg_down(const struct elfmap *m, uintptr_t a) { return a & ~(uintptr_t)(m->page - 1); }
static uintptr_t pg_up(const struct elfmap *m, uintptr_t a) { return pg_down(m, a + m->page - 1); }

static void report_once(struct elfmap *m, int bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report_once(struct elfmap *m, int bit, const char *fmt, ...)
{
    if (m->reported & (1u << bit))
        return;
    m->reported |= 1u << bit;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jh__log(m->ctx, JH_LOG_WARN, "elfmap: %s", msg);
}

/* ---- pending entries ------------------------------------------------------------------ */
static int pend(struct elfmap *m, struct jh__entry *e)
{
    if (SLOT(e))
        return 0;
    if (m->npend == m->cappend) {
        size_t cap = m->cappend ? m->cappend * 2 : 64;
        struct jh__entry **p = realloc(m->pend, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        m->pend = p;
        m->cappend = cap;
    }
    m->pend[m->npend++] = e;
    SLOT(e) = (void *)(uintptr_t)m->npend;
    return 0;
}

static void unpend(struct elfmap *m, struct jh__entry *e)
{
    uintptr_t i = (uintptr_t)SLOT(e);
    if (!i || i > m->npend || m->pend[i - 1] != e)
        return;
    struct jh__entry *last = m->pend[--m->npend];
    m->pend[i - 1] = last;
    SLOT(last) = (void *)i;
    SLOT(e) = NULL;
}

/* ---- generations and the page map ------------------------------------------------------ */
static bool own_file(void *arg, dev_t dev, ino_t ino)
{
    struct elfmap *m = arg;
    for (size_t i = m->ngens; i-- > 0;)
        if (m->gens[i]->ino == ino && m->gens[i]->dev == dev)
            return true;
    return false;
}

static void gen_drop(struct elfmap *m, struct gen *g)
{
    if (g->rw)
        munmap(g->rw, g->rw_len);
    for (size_t i = 0; i < m->ngens; i++) {
        if (m->gens[i] == g) {
            m->gens[i] = m->gens[--m->ngens];
            break;
        }
    }
    free(g);
}

/* [lo, hi) is now backed by g: older files lose those pages; one whose pages are all gone
 * loses its rw mapping too (valgrind then forgets its symbols, which is what we want). */
static int seg_set(struct elfmap *m, uintptr_t lo, uintptr_t hi, struct gen *g)
{
    if (m->nseg + 2 > m->capseg) {
        size_t cap = m->capseg ? m->capseg * 2 : 64;
        struct seg *p = realloc(m->seg, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        m->seg = p;
        m->capseg = cap;
    }
    size_t a = 0, b = m->nseg;           /* first seg with hi > lo */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (m->seg[mid].hi <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    size_t end = a;                      /* one past the last seg with lo < hi */
    while (end < m->nseg && m->seg[end].lo < hi)
        end++;
    struct seg keep[2];
    int nkeep = 0;
    for (size_t i = a; i < end; i++) {
        struct seg s = m->seg[i];
        uintptr_t olo = s.lo > lo ? s.lo : lo, ohi = s.hi < hi ? s.hi : hi;
        s.g->live -= ohi - olo;
        if (s.lo < lo)
            keep[nkeep++] = (struct seg){ s.lo, lo, s.g };
        if (s.hi > hi)
            keep[nkeep++] = (struct seg){ hi, s.hi, s.g };
    }
    /* Replace seg[a, end) by: keep-before, new, keep-after. */
    struct seg repl[3];
    int n = 0;
    if (nkeep && keep[0].lo < lo)
        repl[n++] = keep[0];
    repl[n++] = (struct seg){ lo, hi, g };
    for (int k = 0; k < nkeep; k++)
        if (keep[k].lo >= hi)
            repl[n++] = keep[k];
    size_t old = end - a;
    memmove(&m->seg[a + n], &m->seg[end], (m->nseg - end) * sizeof *m->seg);
    memcpy(&m->seg[a], repl, n * sizeof *repl);
    m->nseg = m->nseg - old + n;
    for (size_t i = m->ngens; i-- > 0;)
        if (!m->gens[i]->live)
            gen_drop(m, m->gens[i]);
    return 0;
}

/* ---- one swap --------------------------------------------------------------------------- */
static pid_t current_pid(struct elfmap *m)
{
    unsigned fg = atomic_load_explicit(&jh__fork_gen, memory_order_relaxed);
    if (!m->pid || m->pid_gen != fg) {
        m->pid = getpid();
        m->pid_gen = fg;
    }
    return m->pid;
}

/* Grow [lo, hi) until no announced function straddles its ends; functions below `from`
 * (>= lo) were looked at already, so growing a run costs only what it adds. */
static void extend(struct elfmap *m, uintptr_t *lo, uintptr_t *hi, uintptr_t from)
{
    const struct jh__registry *r = &m->ctx->reg;
    const struct jh__entry *e;
    while ((e = jh__reg_find(r, *lo)) && pg_down(m, e->start) < *lo)
        *lo = pg_down(m, e->start);
    if ((e = jh__reg_find(r, from)) && pg_up(m, e->start + e->size) > *hi)
        *hi = pg_up(m, e->start + e->size);
    for (e = jh__reg_ceil(r, from); e && e->start < *hi; e = jh__reg_next(r, e))
        if (pg_up(m, e->start + e->size) > *hi)
            *hi = pg_up(m, e->start + e->size);
}

static int collect(struct elfmap *m, uintptr_t lo, uintptr_t hi, size_t *nfns, size_t *eh_est)
{
    const struct jh__registry *r = &m->ctx->reg;
    size_t n = 0, est = 64;
    for (const struct jh__entry *e = jh__reg_ceil(r, lo); e && e->start < hi; e = jh__reg_next(r, e)) {
        if (n == m->capfns) {
            size_t cap = m->capfns ? m->capfns * 2 : 256;
            const struct jh__entry **p = realloc(m->fns, cap * sizeof *p);
            if (!p)
                return -ENOMEM;
            m->fns = p;
            m->capfns = cap;
        }
        m->fns[n++] = e;
        est += 48 + e->cfi_len;
    }
    *nfns = n;
    *eh_est = est;
    return 0;
}

static void *reserve(size_t len, uintptr_t hint)
{
    void *p = mmap((void *)hint, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Address space for the rw segment: above the code (valgrind 3.19 rejects an image whose
 * PT_LOADs are not in ascending address order, and the code's comes first) and within
 * 2 GiB of it (.eh_frame points at the code with 32-bit pc-relative offsets). */
static void *reserve_rw(struct elfmap *m, size_t len, uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t k = 1; k <= 16; k++) {
        void *p = reserve(len, pg_up(m, hi + (k << 24)));
        if (!p)
            return NULL;
        if ((uintptr_t)p >= hi && (uintptr_t)p + len - lo < (1ul << 31))
            return p;
        munmap(p, len);
    }
    return reserve(len, 0);
}

/*
 * Swap the pages [lo, hi). 0: swapped; 1: left as they are (reported once); negative
 * errno: something is wrong with the channel itself (the core switches it off).
 */
static int swap_range(struct elfmap *m, uintptr_t lo, uintptr_t hi, enum jh__vma_verdict *verdict)
{
    size_t len = hi - lo, nfns, est, rw_len;
    enum jh__vma_verdict v = jh__vma_check(m->maps_fd, lo, hi, own_file, m);
    *verdict = v;
    if (v != JH__VMA_OK) {
        report_once(m, R_VERDICT + (int)v, "code at %#lx-%#lx left as it is (perf map/jitdump "
                    "still name it): %s", (unsigned long)lo, (unsigned long)hi,
                    jh__vma_verdict_str(v));
        m->fallbacks++;
        return 1;
    }
    int err = collect(m, lo, hi, &nfns, &est);
    if (err)
        return err;

    const char *dir;
    if ((err = jh__ctx_dir(m->ctx, &dir)))
        return err;

    struct jh__elf_layout lay;
    struct jh__elf_spec spec = { .fns = m->fns, .nfns = nfns, .text = JH__ELF_TEXT_COPY,
        .text_addr = lo, .text_size = len, .text_bytes = (const void *)lo, .page_size = m->page,
        .producer = "jitherald elfmap" };
    void *rw = NULL;
    for (int attempt = 0;; attempt++) {
        rw_len = pg_up(m, est);
        rw = reserve_rw(m, rw_len, lo, hi);
        if (!rw) {
            report_once(m, R_MAP, "cannot reserve address space: %s", strerror(errno));
            m->fallbacks++;
            return 1;
        }
        spec.rw_addr = (uintptr_t)rw;
        if (attempt > 0)
            spec.flags |= JH__ELF_NO_EH_FRAME;   /* no unwind info rather than no image */
        m->img.len = 0;
        err = jh__elf_image(&m->img, &spec, &lay);
        if (err == 0 && lay.rw_size > rw_len) {
            munmap(rw, rw_len);
            est = lay.rw_size;
            attempt--;
            continue;
        }
        if (err == -ERANGE && attempt == 0) {
            munmap(rw, rw_len);
            continue;
        }
        break;
    }
    if (err) {
        munmap(rw, rw_len);
        report_once(m, R_BUILD, "cannot build the image for %#lx-%#lx: %s", (unsigned long)lo,
                    (unsigned long)hi, jh_strerror(err));
        m->fallbacks++;
        return err == -ENOMEM ? err : 1;
    }
    const uint8_t *image = m->img.p + (m->img.len - lay.size);
    const uint8_t *text = image + lay.text_off;

    char path[4096];
    uint64_t n = atomic_fetch_add(&gen_counter, 1) + 1;
    if (snprintf(path, sizeof path, "%s/jit-%d-%llu.elf", dir, (int)current_pid(m),
                 (unsigned long long)n) >= (int)sizeof path) {
        munmap(rw, rw_len);
        return -ENAMETOOLONG;
    }
    int fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL);
    if (fd == -EEXIST && unlink(path) == 0)     /* left by a dead process with our pid */
        fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL);
    struct stat st;
    if (fd < 0 || (err = jh__write_all(fd, image, lay.size)) || fstat(fd, &st) != 0) {
        err = fd < 0 ? fd : err ? err : -errno;
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        munmap(rw, rw_len);
        report_once(m, R_FILE, "cannot write %s: %s", path, jh_strerror(err));
        m->fallbacks++;
        return 1;
    }

    /* Last look before the swap: still eligible, and still the bytes in the image? */
    v = jh__vma_check(m->maps_fd, lo, hi, own_file, m);
    if (v != JH__VMA_OK || memcmp((const void *)lo, text, len) != 0) {
        report_once(m, R_CHANGED, "code at %#lx-%#lx changed while its image was written "
                    "(a thread wrote those pages without the JIT lock?); left as it is",
                    (unsigned long)lo, (unsigned long)hi);
        goto fallback;
    }
    if (lay.rw_size) {
        size_t map_len = pg_up(m, lay.rw_size);
        if (mmap(rw, map_len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE, fd,
                 (off_t)lay.rw_off) == MAP_FAILED) {
            report_once(m, R_MAP, "cannot map %s: %s", path, strerror(errno));
            goto fallback;
        }
        if (map_len < rw_len)
            munmap((uint8_t *)rw + map_len, rw_len - map_len);
        rw_len = map_len;
    }
    err = jh__swap_pages(lo, len, fd, (off_t)lay.text_off, text);
    if (err) {
        close(fd);
        unlink(path);
        munmap(rw, rw_len);
        if (err == -EPERM || err == -EACCES) {
            jh__log(m->ctx, JH_LOG_ERROR, "elfmap: cannot map code from %s (%s): is %s on a "
                    "noexec file system? set JITHERALD_DIR", path, jh_strerror(err), dir);
            return err;
        }
        if (err == -EIO) {
            jh__log(m->ctx, JH_LOG_ERROR, "elfmap: the pages mapped from %s differ from the "
                    "code; the code was put back, elfmap stops", path);
            return err;
        }
        report_once(m, R_MAP, "cannot map %s over the code: %s (vm.max_map_count?)", path,
                    jh_strerror(err));
        m->fallbacks++;
        return 1;
    }
    close(fd);
    VALGRIND_DISCARD_TRANSLATIONS(lo, len);

    struct gen *g = calloc(1, sizeof *g);
    if (g && m->ngens == m->capgens) {
        size_t cap = m->capgens ? m->capgens * 2 : 64;
        struct gen **p = realloc(m->gens, cap * sizeof *p);
        if (p) {
            m->gens = p;
            m->capgens = cap;
        }
    }
    if (!g || m->ngens == m->capgens) {
        free(g);
        return -ENOMEM;         /* the swap itself is done and correct */
    }
    *g = (struct gen){ .n = n, .lo = lo, .hi = hi, .live = len, .rw = lay.rw_size ? rw : NULL,
                       .rw_len = rw_len, .dev = st.st_dev, .ino = st.st_ino };
    if (!g->rw)
        munmap(rw, rw_len);
    m->gens[m->ngens++] = g;
    m->swaps++;
    return seg_set(m, lo, hi, g);

fallback:
    close(fd);
    unlink(path);
    munmap(rw, rw_len);
    m->fallbacks++;
    return 1;
}

static int cmp_start(const void *a, const void *b)
{
    uintptr_t x = (*(struct jh__entry *const *)a)->start, y = (*(struct jh__entry *const *)b)->start;
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
    const struct jh__registry *r = &m->ctx->reg;
    const struct jh__entry *last = jh__reg_find(r, hi - 1);
    if (!last) {
        const struct jh__entry *e = jh__reg_ceil(r, hi - m->page);
        for (; e && e->start < hi; e = jh__reg_next(r, e))
            last = e;
    }
    return !last || last->start + last->size >= hi ||
           hi - (last->start + last->size) < ELFMAP_SETTLED_GAP;
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
        uintptr_t lo = pg_down(m, m->pend[i]->start);
        uintptr_t hi = pg_up(m, m->pend[i]->start + m->pend[i]->size);
        size_t j = i + 1;
        extend(m, &lo, &hi, lo);
        bool ok = !settled_only || flush_safe(m, lo, hi);
        while (ok && j < m->npend && pg_down(m, m->pend[j]->start) <= hi) {
            uintptr_t l = lo, h = pg_up(m, m->pend[j]->start + m->pend[j]->size);
            if (h <= hi) {
                j++;            /* inside the run already */
                continue;
            }
            extend(m, &l, &h, hi);
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
                SLOT(m->pend[keep]) = (void *)(uintptr_t)(keep + 1);
                keep++;
            }
            i = j;
            continue;
        }
        enum jh__vma_verdict v;
        int r = swap_range(m, lo, hi, &v);
        if (r == 1 && v != JH__VMA_OK && j - i > 1) {
            /* One bad page (e.g. still being written) need not hold back the others. */
            uintptr_t done = lo;
            for (size_t k = i; k < j && r >= 0; k++) {
                uintptr_t l = pg_down(m, m->pend[k]->start);
                uintptr_t h = pg_up(m, m->pend[k]->start + m->pend[k]->size);
                extend(m, &l, &h, l);
                if (l < done)
                    continue;
                r = swap_range(m, l, h, &v);
                done = h;
            }
        }
        if (r < 0)
            err = r;
        for (size_t k = i; k < j; k++)
            SLOT(m->pend[k]) = NULL;
        i = j;
    }
    m->npend = keep;
    return err;
}

static uint64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Swap now if the budget allows, else leave it for a later call or jh_flush. */
static int maybe_swap(struct elfmap *m)
{
    uint64_t now = coarse_ns();
    if (m->tokens >= ELFMAP_BURST) {
        m->refill_at = now;
    } else if (now >= m->refill_at + ELFMAP_REFILL_NS) {
        uint64_t add = (now - m->refill_at) / ELFMAP_REFILL_NS;
        m->tokens = m->tokens + add >= ELFMAP_BURST ? ELFMAP_BURST : m->tokens + add;
        m->refill_at += add * ELFMAP_REFILL_NS;
    }
    if (m->tokens) {
        m->tokens--;
        return swap_pending(m, false);
    }
    return m->npend >= ELFMAP_MAX_PENDING ? swap_pending(m, false) : 0;
}

/* ---- hooks ------------------------------------------------------------------------------ */
static int elfmap_open(jh_ctx *ctx, void **state)
{
    const char *dir;
    int err = jh__ctx_dir(ctx, &dir);
    if (err)
        return err;
    struct elfmap *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->ctx = ctx;
    m->page = (size_t)sysconf(_SC_PAGESIZE);
    m->maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    m->tokens = ELFMAP_BURST;
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
    VALGRIND_DISCARD_TRANSLATIONS(e->start, e->size);
    int err = pend(m, e);
    return err ? err : maybe_swap(m);
}

static int elfmap_remove(void *state, struct jh__entry *e)
{
    struct elfmap *m = state;
    unpend(m, e);
    /* The pages stay mapped from our file (same bytes); what valgrind translated there
     * must go, since new code written over a file-backed page is not noticed. */
    VALGRIND_DISCARD_TRANSLATIONS(e->start, e->size);
    return freed_add(m, e->start, e->start + e->size);
}

static int elfmap_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct elfmap *m = state;
    VALGRIND_DISCARD_TRANSLATIONS(old_start, e->size);
    VALGRIND_DISCARD_TRANSLATIONS(e->start, e->size);
    int err = freed_add(m, old_start, old_start + e->size);
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
    if (m->ctx->debug)
        jh__log(m->ctx, JH_LOG_INFO, "elfmap: %llu swaps, %llu left anonymous",
                (unsigned long long)m->swaps, (unsigned long long)m->fallbacks);
    for (size_t i = 0; i < m->npend; i++)
        SLOT(m->pend[i]) = NULL;
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
