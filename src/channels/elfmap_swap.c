/*
 * elfmap_swap.c — one swap of the elfmap channel (see elfmap.c for the recipe and the
 * safety rules): build the image of a run of pages, write it as a new file, map its rw
 * segment and then its code over the live pages, and keep track of which file backs which
 * pages, so a file whose pages are all gone loses its rw mapping too.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <valgrind/valgrind.h>

#include "base/lock.h"
#include "base/vec.h"
#include "channels/elfmap.h"
#include "fmt/elf_image.h"

/* File names must be unique per process across contexts and generations. */
static _Atomic uint64_t gen_counter;

void jh__em_report_once(struct elfmap *m, int bit, const char *fmt, ...)
{
    if (m->reported & (1u << bit))
        return;
    m->reported |= 1u << bit;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jh__diag(m->env->diag, JH_LOG_WARN, "elfmap: %s", msg);
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
    unsigned fg = jh__fork_generation();
    if (!m->pid || m->pid_gen != fg) {
        m->pid = getpid();
        m->pid_gen = fg;
    }
    return m->pid;
}

/* Grow [lo, hi) until no announced function straddles its ends; functions below `from`
 * (>= lo) were looked at already, so growing a run costs only what it adds. */
static int collect(struct elfmap *m, uintptr_t lo, uintptr_t hi, size_t *nfns, size_t *eh_est)
{
    size_t n = 0, est = 64;
    for (const struct jh__entry *e = jh__view_ceil(m->env, lo); e && e->node.start < hi;
         e = jh__view_next(m->env, e)) {
        if (JH__VEC_RESERVE(m->fns, m->capfns, n + 1))
            return -ENOMEM;
        m->fns[n++] = &e->fn;
        est += 48 + e->fn.cfi_len;
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
int jh__em_swap_range(struct elfmap *m, uintptr_t lo, uintptr_t hi, enum jh__vma_verdict *verdict)
{
    size_t len = hi - lo, nfns, est, rw_len;
    enum jh__vma_verdict v = jh__vma_check(m->maps_fd, lo, hi, own_file, m);
    *verdict = v;
    if (v != JH__VMA_OK) {
        jh__em_report_once(m, R_VERDICT + (int)v, "code at %#lx-%#lx left as it is (perf map/jitdump "
                    "still name it): %s", (unsigned long)lo, (unsigned long)hi,
                    jh__vma_verdict_str(v));
        m->fallbacks++;
        return 1;
    }
    int err = collect(m, lo, hi, &nfns, &est);
    if (err)
        return err;

    const char *dir;
    if ((err = jh__chan_dir(m->env, &dir)))
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
            jh__em_report_once(m, R_MAP, "cannot reserve address space: %s", strerror(errno));
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
        jh__em_report_once(m, R_BUILD, "cannot build the image for %#lx-%#lx: %s", (unsigned long)lo,
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
    int fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL, 0);
    /* Left by a dead process that had our pid: ours to replace, but only if it is ours. */
    if (fd == -EEXIST && jh__unlink_private(path) == 0)
        fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL, 0);
    struct stat st;
    if (fd < 0 || (err = jh__write_all(fd, image, lay.size)) || fstat(fd, &st) != 0) {
        err = fd < 0 ? fd : err ? err : -errno;
        if (fd >= 0) {
            close(fd);
            jh__unlink_private(path);
        }
        munmap(rw, rw_len);
        jh__em_report_once(m, R_FILE, "cannot write %s: %s", path, jh_strerror(err));
        m->fallbacks++;
        return 1;
    }

    /* Last look before the swap: still eligible, and still the bytes in the image? */
    v = jh__vma_check(m->maps_fd, lo, hi, own_file, m);
    if (v != JH__VMA_OK || memcmp((const void *)lo, text, len) != 0) {
        jh__em_report_once(m, R_CHANGED, "code at %#lx-%#lx changed while its image was written "
                    "(a thread wrote those pages without the JIT lock?); left as it is",
                    (unsigned long)lo, (unsigned long)hi);
        goto fallback;
    }
    if (lay.rw_size) {
        size_t map_len = pg_up(m, lay.rw_size);
        if (mmap(rw, map_len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE, fd,
                 (off_t)lay.rw_off) == MAP_FAILED) {
            jh__em_report_once(m, R_MAP, "cannot map %s: %s", path, strerror(errno));
            goto fallback;
        }
        if (map_len < rw_len)
            munmap((uint8_t *)rw + map_len, rw_len - map_len);
        rw_len = map_len;
    }
    err = jh__swap_pages(lo, len, fd, (off_t)lay.text_off, text);
    if (err) {
        close(fd);
        jh__unlink_private(path);
        munmap(rw, rw_len);
        if (err == -EPERM || err == -EACCES) {
            jh__diag(m->env->diag, JH_LOG_ERROR, "elfmap: cannot map code from %s (%s): is %s on a "
                    "noexec file system? set JITHERALD_DIR", path, jh_strerror(err), dir);
            return err;
        }
        if (err == -EIO) {
            jh__diag(m->env->diag, JH_LOG_ERROR, "elfmap: the pages mapped from %s differ from the "
                    "code; the code was put back, elfmap stops", path);
            return err;
        }
        jh__em_report_once(m, R_MAP, "cannot map %s over the code: %s (vm.max_map_count?)", path,
                    jh_strerror(err));
        m->fallbacks++;
        return 1;
    }
    close(fd);
    VALGRIND_DISCARD_TRANSLATIONS(lo, len);

    struct gen *g = calloc(1, sizeof *g);
    if (!g || JH__VEC_RESERVE(m->gens, m->capgens, m->ngens + 1)) {
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
    jh__unlink_private(path);
    munmap(rw, rw_len);
    m->fallbacks++;
    return 1;
}

