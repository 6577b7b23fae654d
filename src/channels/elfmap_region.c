/*
 * elfmap_region.c — one image window of the elfmap channel (elfmap.h): what a change to its
 * code needs. Two ways to get new code into the window's image, both only from
 * jh_code_add/_patched/_move, which the JIT calls under its code lock (docs/elfmap.md,
 * "contract"), never from jh_flush:
 *
 *   in place   the normal case. The code's pages are copied into the window's file at their
 *              offsets, the image (fmt/elf_grow.c) appends the new symbols and DWARF, and
 *              pages not yet mapped from the file are mapped over the JIT's (after
 *              checking they are private, r-x and anonymous or ours, and that the bytes are
 *              the same before and after). Pages already mapped from the file are not
 *              touched: writing the file cannot change them. A page the JIT wrote since it
 *              was mapped is a private copy (copy-on-write) and no longer reads the file; a
 *              page it did not write reads the file, whose bytes there are the page's own.
 *   publish    a new generation: a new file with every live function of the window, all
 *              the window's mapped pages mapped anew from it. Needed when new code covers
 *              the bytes of a removed function that the current file still names (perf
 *              reads the files at report time: samples taken before must keep that name),
 *              when a fork child may be mapping the file (writing its code bytes would
 *              change the child's code: fork freezes them).
 * Under valgrind, which reads an image's symbols once per path, new symbols also make it
 * read the file again (bounce), and there is no history to keep: a window's image starts
 * again in the same file rather than in a new generation.
 *
 * Below this file is elfmap_file.c (files, page runs), which it tells what to write and map
 * where; above it elfmap.c, which chooses the window. Nothing here calls upwards.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/vec.h"
#include "channels/elfmap.h"
#include "fmt/arch.h"
#include "fmt/func.h"

/*
 * The first code in one of the JIT's mappings: map all of it from the file, not just the
 * code's pages, when it is small (LuaJIT's 64 KiB areas) and inside the window. It then
 * stays one mapping, which the JIT can still move or grow with mremap: the kernel moves or
 * grows one mapping at a time (before Linux 6.17 it refuses, EFAULT, a range of several).
 */
static void whole_mapping(struct elfmap *m, const struct region *r, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t vs, ve;
    if (jh__vma_bounds(jh__em_maps(m), *lo, &vs, &ve) != 0)
        return;
    /* (the kernel may have merged the JIT's mapping with neighbours of the same kind) */
    vs = vs < r->lo ? r->lo : vs;
    ve = ve > r->hi ? r->hi : ve;
    if (ve - vs > EM_WHOLE || (vs == *lo && ve == *hi))
        return;
    if (jh__em_check(m, vs, ve) != JH__VMA_OK)
        return;
    *lo = vs;
    *hi = ve;
}

/* r's file, if the program left us its descriptor or the file can be opened again (the
 * same file); else negative (the next change makes a new generation). */
static int region_fd(struct elfmap *m, struct region *r)
{
    return jh__em_fd(m, r, EM_FD_LATER);
}

/* The current bytes of the pages r maps from its file, written to fd at their offsets. */
static int write_runs(struct elfmap *m, const struct region *r, int fd)
{
    int err = 0;
    for (uintptr_t a = span_lo(r), lo; !err && next_run(m, r, &a, &lo);)
        err = jh__em_write_text(m, fd, lo, a, off_of(m, r, lo));
    return err;
}

/* The pages r maps, mapped from fd (path), then its R+W page (valgrind reads the image at
 * that moment). A run the swap leaves as it was is marked unmapped. 0, or < 0: channel off. */
static int map_runs(struct elfmap *m, struct region *r, int fd, const char *path)
{
    int res = 0;
    for (uintptr_t a = span_lo(r), lo; res >= 0 && next_run(m, r, &a, &lo);) {
        res = jh__em_snapshot(m, lo, a);
        if (!res && (res = jh__em_map_run(m, fd, path, lo, a, off_of(m, r, lo))) == 1) {
            set_mapped(m, r, lo, a, false);     /* left as they were (restored if need be) */
            res = 0;
        }
    }
    if (res >= 0)
        jh__em_map_rw(m, r->rw, fd, path, em_rw_off(m));
    return res;
}

/* The current file is done with: kept for perf (valgrind has read it at its mapping, and
 * its output names it). */
static void drop_file(struct elfmap *m, struct region *r)
{
    struct stat st;
    int fd = r->fd.fd >= 0 ? region_fd(m, r) : -1;
    uint64_t bytes = fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
    jh__kfd_close(&r->fd);
    jh__elfg_free(&r->img);
    if (!r->path)
        return;
    if (r->foreign)
        free(r->path);              /* the parent's: not ours to keep or delete */
    else
        jh__em_keep(m, r->path, bytes);
    r->path = NULL;
}


static bool in_set(struct jh__entry *const *es, size_t n, const struct jh__entry *e)
{
    for (size_t i = 0; i < n; i++)
        if (es[i] == e)
            return true;
    return false;
}

/* ---- a new generation ------------------------------------------------------------------- */

static int cmp_fn(const void *a, const void *b)
{
    uint64_t x = (*(const struct jh__func *const *)a)->start,
             y = (*(const struct jh__func *const *)b)->start;
    return (x > y) - (x < y);
}

/* Does new code take exactly the place of a removed function of another name? */
static bool same_place(const struct region *r, struct jh__entry *const *es, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < r->ntombs; k++)
            if (r->tombs[k].start == es[i]->node.start && r->tombs[k].size == es[i]->node.size &&
                r->tombs[k].name_hash != jh__em_name_hash(es[i]->fn.name))
                return true;
    return false;
}

static int publish(struct elfmap *m, struct region *r, struct jh__entry *const *es, size_t n)
{
    size_t span_pages = EM_SPAN / m->page, nbytes = (span_pages + 7) / 8;
    uint8_t *want = malloc(nbytes);
    if (!want)
        return -ENOMEM;
    memcpy(want, r->mapped, nbytes);
    struct region nr = *r;          /* what r becomes */
    nr.mapped = want;
    EACH_PAGE_OF(m, es, n, k, a) {
        uintptr_t lo = a, hi = a + m->page;
        if (!is_mapped(m, &nr, a))
            whole_mapping(m, r, &lo, &hi);
        set_mapped(m, &nr, lo, hi, true);
    }

    /* Every run to map: eligible? A run that is not, and holds none of the new code, is
     * code the JIT freed before telling us (docs: remove after free): left out. */
    int res = 0;
    for (uintptr_t a = span_lo(r), lo; !res && next_run(m, &nr, &a, &lo);) {
        if (jh__em_check(m, lo, a) == JH__VMA_OK)
            continue;
        bool ours = false;
        EACH_PAGE_OF(m, es, n, k, p)
            ours |= p >= lo && p < a;
        if (ours)
            res = jh__em_eligible(m, lo, a) == JH__VMA_OK ? 0 : 1;   /* reports the verdict */
        else
            set_mapped(m, &nr, lo, a, false);
    }
    if (res) {
        m->fallbacks++;
        free(want);
        return res;
    }

    /* The new file: its name, its image with every live function. */
    if (r->foreign || (r->fd.fd >= 0 && (m->valgrind || same_place(r, es, n)))) {
        nr.id = jh__em_new_id();
        nr.gen = 1;
        nr.pid = jh__em_pid(m);
    } else if (r->fd.fd >= 0) {
        nr.gen = r->gen + 1;        /* same name, its own directory */
    }                               /* else the window's first file */
    size_t nf = 0;
    for (struct jh__entry *e = jh__view_ceil(m->env, r->lo); e && e->node.start < r->hi;
         e = jh__view_next(m->env, e)) {
        if (SLOT(m, e) != r && !in_set(es, n, e))
            continue;
        if (JH__VEC_RESERVE(m->fns, m->capfns, nf + 1)) {
            free(want);
            return -ENOMEM;
        }
        m->fns[nf++] = &e->fn;
    }
    qsort(m->fns, nf, sizeof *m->fns, cmp_fn);

    char path[4096];
    struct jh__kfd kfd;
    path[0] = '\0';                     /* stays empty when the directory failed */
    int err = jh__em_path(m, nr.pid, nr.gen, nr.id, path, sizeof path);
    if (err)
        jh__em_report_once(m, R_FILE, "cannot create %s: %s: code left anonymous, so perf and "
                           "valgrind show it as ???%s", *path ? path : "an image file",
                           jh__file_error(err), jh__diag_file_fix(err, 1));
    int fd = err ? err : jh__em_create(m, path, &kfd);
    if (fd < 0) {
        free(want);
        m->fallbacks++;
        return 1;
    }
    struct jh__elfg_spec spec = { .arch = JH__ARCH_HOST, .anchor_addr = r->anchor,
        .anchor_off = m->page + EM_LEAD,
        .lo = r->lo, .hi = r->hi, .meta_off = m->page + EM_SPAN + EM_GAP,
        .rw_addr = (uintptr_t)r->rw, .page_size = m->page, .producer = "jitherald elfmap",
        .no_build_id = !jh__em_build_ids(), .eh_addr = r->arena,
        /* valgrind 3.19 takes an .eh_frame only inside a mapped segment and may refuse the
         * whole image otherwise (not measured: left out to be safe); it reads .debug_frame */
        .no_eh_frame = m->valgrind || !jh__em_eh_frames() };
    /* An image starts as big as the window's last one ended, or a new window's as the last
     * window retired (LuaJIT fills a new window after every flush as much as the one it
     * flushed): its sections then do not move on the way there (each move a copy into new
     * pages, zeros written ahead, the headers built again, the mapping grown, a spare
     * chunk left behind: docs/cost.md). */
    if (r->img.end)
        jh__elfg_room(&r->img, spec.room);
    else
        memcpy(spec.room, m->room, sizeof spec.room);
    struct jh__elfg img;
    err = jh__elfg_init(&img, &spec);
    for (size_t i = 0; i < nf && !err; i++)
        err = jh__em_image_add(&img, m->fns[i]);
    if (!err)
        err = write_runs(m, &nr, fd);
    if (!err)
        err = jh__em_sync(m, NULL, &img, fd);
    if (err) {
        jh__elfg_free(&img);
        jh__kfd_close(&kfd);
        jh__unlink_private(path);
        free(want);
        if (err != -EINVAL && err != -E2BIG)
            return err;             /* no memory, or the disk refuses: channel off */
        jh__em_report_once(m, R_BUILD, "cannot build the image for %#lx-%#lx: %s",
                           (unsigned long)r->lo, (unsigned long)r->hi, jh_strerror(err));
        m->fallbacks++;
        return 1;
    }

    res = map_runs(m, &nr, fd, path);

    drop_file(m, r);                    /* the previous generation, if any */
    free(r->mapped);
    nr.fd = kfd;
    nr.path = strdup(path);
    nr.img = img;
    nr.ntombs = 0;
    nr.frozen = nr.foreign = false;
    *r = nr;
    if (res >= 0 && (err = jh__em_map_eh(m, r, fd, path, true)))
        res = err;
    if (!r->path) {
        res = res < 0 ? res : -ENOMEM;
    }
    for (size_t i = 0; i < n && res >= 0; i++) {
        SLOT(m, es[i]) = r;
        r->nlive++;
    }
    return res < 0 ? res : 0;
}

/* r's image anew, with its live functions only (the file keeps its name and text). */
static int restart(struct elfmap *m, struct region *r)
{
    struct jh__elfg img;
    struct jh__elfg_spec spec = r->img.s;
    int err = jh__elfg_init(&img, &spec);
    for (struct jh__entry *e = jh__view_ceil(m->env, r->lo); e && e->node.start < r->hi && !err;
         e = jh__view_next(m->env, e))
        if (SLOT(m, e) == r)
            err = jh__em_image_add(&img, &e->fn);
    if (err) {
        jh__elfg_free(&img);
        return err == -ENOMEM ? err : 1;
    }
    /* the new image lays its chunks out from the start again: the old one's spare chunks
     * may be its live ones, punched now or never */
    jh__em_punch(m, r, &r->img, EM_FD_LATER);
    jh__elfg_free(&r->img);
    r->img = img;
    r->ntombs = 0;
    return 0;
}

/*
 * Valgrind reads an image's symbols once per path, and forgets them only when the code is
 * unmapped or another image is read over the same pages. So after new symbols: map a copy
 * of the file over the window's pages (valgrind reads the copy and drops the file), then
 * the file itself again (valgrind reads it afresh and drops the copy), and delete the copy.
 * A function's object in valgrind's output then stays the window's file (callgrind keys
 * its objects by path) for as long as the window lives.
 */
static int bounce(struct elfmap *m, struct region *r)
{
    char path[4096];
    int rfd = region_fd(m, r);
    if (rfd < 0 || (size_t)snprintf(path, sizeof path, "%s.valgrind", r->path) >= sizeof path)
        return 1;
    struct jh__kfd copy;
    int fd = jh__em_create(m, path, &copy), res = 0;
    if (fd < 0)
        return 1;
    int err = write_runs(m, r, fd);
    jh__elfg_all_dirty(&r->img);
    if (!err)
        err = jh__em_sync(m, NULL, &r->img, fd);
    for (int pass = 0; pass < 2 && !err && res >= 0; pass++) {
        int from = pass ? rfd : fd;
        const char *name = pass ? r->path : path;
        /* The file is mapped nowhere now: every byte of its pages made current (in place,
         * only code bytes were written: the rest of a page may have changed since). */
        if (pass && (err = write_runs(m, r, rfd)))
            break;
        res = map_runs(m, r, from, name);
    }
    jh__kfd_close(&copy);
    jh__unlink_private(path);
    return res < 0 ? res : err;     /* a write error: channel off */
}

/* ---- the region's operations ------------------------------------------------------------ */

bool jh__em_region_maps(const struct elfmap *m, const struct region *r, uintptr_t a)
{
    return a >= span_lo(r) && a - span_lo(r) < EM_SPAN && is_mapped(m, r, a);
}

struct region *jh__em_region_new(struct elfmap *m, uintptr_t anchor, uintptr_t lo, uintptr_t hi,
                                 int *err)
{
    struct region *r = calloc(1, sizeof *r);
    size_t nbytes = (EM_SPAN / m->page + 7) / 8;
    if (!r || !(r->mapped = calloc(1, nbytes))) {
        free(r);
        *err = -ENOMEM;
        return NULL;
    }
    r->id = jh__em_new_id();
    r->gen = 1;
    r->pid = jh__em_pid(m);
    r->anchor = anchor;
    r->lo = lo;
    r->hi = hi;
    r->fd = JH__KFD_NONE;
    if (m->valgrind)
        r->rw = jh__em_rw_get(m);
    else if (jh__em_eh_frames())
        jh__em_arena_new(m, r, 0);      /* (none: the tables by the window's rule, unmapped) */
    *err = 0;
    return r;
}

int jh__em_region_grow(struct elfmap *m, struct region *r, uintptr_t lo, uintptr_t hi)
{
    if (lo < span_lo(r) || hi > span_lo(r) + EM_SPAN || lo > r->lo || hi < r->hi)
        return -EINVAL;
    r->lo = lo;
    r->hi = hi;
    return r->fd.fd >= 0 ? jh__elfg_set_text(&r->img, lo, hi) : 0;
}

static int add_in_place(struct elfmap *m, struct region *r, struct jh__entry *const *es,
                        size_t n, int fd);

int jh__em_region_add(struct elfmap *m, struct region *r, struct jh__entry *const *es, size_t n)
{
    /* the file, proven ours only if a system call needs it (jh__em_fd) */
    int fd = r->foreign || r->fd.fd < 0 ? -1 : EM_FD_LATER;
    bool fresh = fd == -1 || m->freeze, over = false;
    for (size_t i = 0; i < n && !over; i++) {
        const struct jh__entry *e = es[i];
        for (size_t k = 0; k < r->ntombs && !over; k++)
            over = r->tombs[k].start < e->node.start + e->node.size &&
                   e->node.start < r->tombs[k].start + r->tombs[k].size;
    }
    /* After fork the child may read any page it got mapped from this file, including
     * pages the parent has since given back to anonymous memory (code removed): none of
     * the file's code bytes may change, new code in the parent goes to a new file. */
    fresh |= r->frozen;
    if (fresh || (over && !m->valgrind))
        return publish(m, r, es, n);
    if (over) {
        /* Under valgrind no sample needs the old names: the file's image starts again
         * with the live functions only, in place (valgrind reads it again: bounce). */
        int err = restart(m, r);
        if (err)
            return err;
    }
    int res = add_in_place(m, r, es, n, fd);
    /* a file the program closed and that cannot be opened again: a new one (what the
     * file got meanwhile is left with it, its build-id void) */
    return res == -EBADF ? publish(m, r, es, n) : res;
}

/* es into r's current file and image (fd: EM_FD_LATER). -EBADF: the file is lost. */
static int add_in_place(struct elfmap *m, struct region *r, struct jh__entry *const *es,
                        size_t n, int fd)
{
    /* A page mapped from the file once may not be any more: the JIT unmapped its area and
     * mapped a fresh one there (without removing the functions it held), or made it
     * writable. Such a page is new to the window again (issue 22, defect 7). */
    EACH_PAGE_OF(m, es, n, k, a) {
        if (is_mapped(m, r, a) && !jh__em_ours(m, a, a + m->page))
            set_mapped(m, r, a, a + m->page, false);
    }

    /* In place. First the pages not mapped from the file yet: all must be eligible. */
    int err = 0;
    EACH_PAGE_OF(m, es, n, k, a) {
        if (!is_mapped(m, r, a) && jh__em_eligible(m, a, a + m->page) != JH__VMA_OK) {
            m->fallbacks++;
            return 1;
        }
    }
    int res = jh__em_unsay(m, r, fd);
    EACH_PAGE_OF(m, es, n, k, a) {
        if (res)
            break;
        if (is_mapped(m, r, a)) {
            /* only the new code: the rest of the file's page was right when it was mapped,
             * and announced code changed since has been written (jh_code_patched) */
            uintptr_t s0 = es[k]->node.start, e0 = s0 + es[k]->node.size;
            uintptr_t from = a > s0 ? a : s0, to = a + m->page < e0 ? a + m->page : e0;
            res = jh__em_put_live(m, r, fd, from, to);
            continue;
        }
        uintptr_t lo = a, hi = a + m->page;
        if ((fd = jh__em_fd(m, r, fd)) < 0) {
            res = fd;
            break;
        }
        whole_mapping(m, r, &lo, &hi);
        res = jh__em_write_text(m, fd, lo, hi, off_of(m, r, lo));
        if (!res && (res = jh__em_map_run(m, fd, r->path, lo, hi, off_of(m, r, lo))) == 0)
            set_mapped(m, r, lo, hi, true);
    }
    if (res < 0)
        return res;                 /* a write error (or no memory): channel off */
    for (size_t i = 0; i < n && !res && !err; i++)
        err = jh__em_image_add(&r->img, &es[i]->fn);
    if (err == -EINVAL || err == -E2BIG) {
        jh__em_report_once(m, R_BUILD, "cannot describe code at %#lx: %s",
                           (unsigned long)es[0]->node.start, jh_strerror(err));
        res = 1;
    } else if (err) {
        return err;
    }
    /* The image into the file: jh__em_map_eh syncs it after the headers it changes (one
     * sync an add, not a second one for them and the note again); without it, a sync
     * (also when the code stays anonymous: the note, made void above, comes back) */
    err = res || m->valgrind ? jh__em_sync(m, r, &r->img, fd)
                             : jh__em_map_eh(m, r, fd, r->path, false);
    if (err)
        return err;
    if (res) {
        m->fallbacks += res > 0;
        return res;
    }
    for (size_t i = 0; i < n; i++) {
        SLOT(m, es[i]) = r;
        r->nlive++;
    }
    return m->valgrind ? bounce(m, r) : 0;
}

int jh__em_region_patched(struct elfmap *m, struct region *r, uintptr_t addr, size_t len)
{
    bool any = false;
    for (uintptr_t a = pg_down(m, addr); a < addr + len; a += m->page)
        any |= is_mapped(m, r, a);
    if (!any)
        return 0;
    /* (proven ours only if a system call needs it: jh__em_fd) */
    int fd = r->frozen || r->foreign || m->freeze || r->fd.fd < 0 ? -1 : EM_FD_LATER;
    if (fd == -1)
        return publish(m, r, NULL, 0);
    int err = jh__em_snapshot(m, addr, addr + len);
    if (!err)
        err = jh__em_unsay(m, r, fd);
    if (!err)
        err = jh__em_put_code(m, r, fd, m->snap.p, len, off_of(m, r, addr));
    if (!err) {
        /* the new bytes change the image's build-id (written with its headers) */
        jh__elfg_code(&r->img, addr, m->snap.p, len);
        err = jh__em_sync(m, r, &r->img, fd);
    }
    /* the file is lost (closed by the program, not the same file at its path): a new one */
    return err == -EBADF ? publish(m, r, NULL, 0) : err;
}

void jh__em_region_forget(struct elfmap *m, struct region *r, uintptr_t start, size_t size,
                          const char *name)
{
    /* (under valgrind no history is needed: it reads the symbols while the code runs) */
    if (m->valgrind)
        ;
    else if (JH__VEC_RESERVE(r->tombs, r->captombs, r->ntombs + 1) == 0)
        r->tombs[r->ntombs++] = (struct tomb){ start, size, jh__em_name_hash(name) };
    else
        r->frozen = true;           /* cannot remember it: the next change makes a new file */
    if (r->nlive)
        r->nlive--;
    /* A page with no live code of ours left may be freed and mapped anew by the JIT at any
     * time: whoever adds code there next checks it again. */
    for (uintptr_t a = pg_down(m, start); a < start + size; a += m->page) {
        bool used = false;
        const struct jh__entry *e = jh__view_floor(m->env, a);
        if (!e)
            e = jh__view_ceil(m->env, a);
        for (; e && e->node.start < a + m->page && !used; e = jh__view_next(m->env, e))
            used = SLOT(m, e) == r && e->node.start + e->node.size > a;
        if (!used && jh__em_region_maps(m, r, a)) {
            set_mapped(m, r, a, a + m->page, false);
            /* Anonymous memory again, same bytes: the JIT may free it with
             * madvise(MADV_DONTNEED) and must then read zeros, as from the memory it
             * allocated, not the file's old code (issue 22, defect 8). Only while the page
             * is still ours: the JIT may have unmapped it already (remove after free). */
            jh__em_unswap(m, a, a + m->page);
        }
    }
}

void jh__em_region_unswap_all(struct elfmap *m, struct region *r)
{
    uintptr_t lo = span_lo(r), end = lo + EM_SPAN, run = 0;
    for (uintptr_t a = lo; a <= end; a += m->page) {
        bool ours = a < end && jh__em_region_maps(m, r, a);
        if (ours && !run)
            run = a;
        if (!ours && run) {
            set_mapped(m, r, run, a, false);
            jh__em_unswap(m, run, a);
            run = 0;
        }
    }
}

void jh__em_region_retire(struct elfmap *m, struct region *r)
{
    if (r->img.end && r->img.nsyms)
        jh__elfg_room(&r->img, m->room);
    jh__em_arena_free(r);
    jh__em_rw_put(m, r->rw);
    drop_file(m, r);
    free(r->mapped);
    free(r->tombs);
    free(r);
}

void jh__em_region_close(struct elfmap *m, struct region *r)
{
    (void)m;                        /* (its R+W page goes with the arenas) */
    jh__em_arena_free(r);
    jh__kfd_close(&r->fd);
    jh__elfg_free(&r->img);
    free(r->path);
    free(r->mapped);
    free(r->tombs);
    free(r);
}
