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
 * again in the same file rather than in a new generation. The files: elfmap_file.c.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/vec.h"
#include "channels/elfmap.h"
#include "fmt/func.h"

/*
 * The first code in one of the JIT's mappings: map all of it from the file, not just the
 * code's pages, when it is small (LuaJIT's 64 KiB areas) and inside the window. It then
 * stays one mapping, which the JIT can still move or grow with mremap: the kernel moves or
 * grows one mapping at a time (before Linux 6.17 it refuses, EFAULT, a range of several).
 */
void jh__em_whole_mapping(struct elfmap *m, const struct region *r, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t vs, ve;
    if (jh__vma_bounds(jh__em_maps(m), *lo, &vs, &ve) != 0)
        return;
    /* (the kernel may have merged the JIT's mapping with neighbours of the same kind) */
    vs = vs < r->lo ? r->lo : vs;
    ve = ve > r->hi ? r->hi : ve;
    if (ve - vs > EM_WHOLE || (vs == *lo && ve == *hi))
        return;
    if (jh__vma_check(jh__em_maps(m), vs, ve, jh__em_own_file, m) != JH__VMA_OK)
        return;
    *lo = vs;
    *hi = ve;
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

int jh__em_region_add(struct elfmap *m, struct region *r, struct jh__entry *const *es, size_t n)
{
    /* a file the program closed and that cannot be opened again: a new one */
    int fd = r->foreign || r->fd.fd < 0 ? -1 : jh__em_fd(r);
    bool fresh = fd < 0, over = false;
    for (size_t i = 0; i < n && !over; i++) {
        const struct jh__entry *e = es[i];
        for (size_t k = 0; k < r->ntombs && !over; k++)
            over = r->tombs[k].start < e->node.start + e->node.size &&
                   e->node.start < r->tombs[k].start + r->tombs[k].size;
    }
    if (r->frozen) {
        EACH_PAGE_OF(m, es, n, k, a)
            fresh |= is_mapped(m, r, a);
    }
    if (fresh || (over && !m->valgrind))
        return jh__em_publish(m, r, es, n);
    if (over) {
        /* Under valgrind no sample needs the old names: the file's image starts again
         * with the live functions only, in place (valgrind reads it again: bounce). */
        int err = jh__em_restart(m, r);
        if (err)
            return err;
    }

    /* In place. First the pages not mapped from the file yet: all must be eligible. */
    int err = 0;
    EACH_PAGE_OF(m, es, n, k, a) {
        if (!is_mapped(m, r, a) && jh__em_eligible(m, a, a + m->page) != JH__VMA_OK) {
            m->fallbacks++;
            return 1;
        }
    }
    int res = 0;
    EACH_PAGE_OF(m, es, n, k, a) {
        if (res)
            break;
        if (is_mapped(m, r, a)) {
            /* only the new code: the rest of the file's page was right when it was mapped,
             * and announced code changed since has been written (jh_code_patched) */
            uintptr_t s0 = es[k]->node.start, e0 = s0 + es[k]->node.size;
            res = jh__em_write_text(m, r, fd, a > s0 ? a : s0,
                                    a + m->page < e0 ? a + m->page : e0);
            continue;
        }
        uintptr_t lo = a, hi = a + m->page;
        jh__em_whole_mapping(m, r, &lo, &hi);
        res = jh__em_write_text(m, r, fd, lo, hi);
        if (!res && (res = jh__em_map_run(m, r, fd, r->path, lo, hi)) == 0)
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
    } else if (!res && (err = jh__em_sync(&r->img, fd))) {
        return err;
    }
    if (res) {
        m->fallbacks += res > 0;
        return res;
    }
    for (size_t i = 0; i < n; i++) {
        SLOT(m, es[i]) = r;
        r->nlive++;
    }
    return m->valgrind ? jh__em_bounce(m, r) : 0;
}

int jh__em_region_patched(struct elfmap *m, struct region *r, uintptr_t addr, size_t len)
{
    bool any = false;
    for (uintptr_t a = pg_down(m, addr); a < addr + len; a += m->page)
        any |= is_mapped(m, r, a);
    if (!any)
        return 0;
    int fd = r->frozen || r->foreign ? -1 : jh__em_fd(r);
    if (fd < 0)
        return jh__em_publish(m, r, NULL, 0);
    int err = jh__em_snapshot(m, addr, addr + len);
    if (!err)
        err = jh__pwrite_all(fd, m->snap.p, len, off_of(m, r, addr));
    if (err)
        return err;
    /* the new bytes change the image's build-id (written with its headers) */
    jh__elfg_code(&r->img, addr, m->snap.p, len);
    return jh__em_sync(&r->img, fd);
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
        if (!used)
            set_mapped(m, r, a, a + m->page, false);
    }
}

void jh__em_region_retire(struct elfmap *m, struct region *r)
{
    jh__em_rw_put(m, r->rw);
    jh__em_drop_file(m, r);
    free(r->mapped);
    free(r->tombs);
    free(r);
}

void jh__em_region_close(struct elfmap *m, struct region *r)
{
    (void)m;                        /* (its R+W page goes with the arenas) */
    jh__kfd_close(&r->fd);
    jh__elfg_free(&r->img);
    free(r->path);
    free(r->mapped);
    free(r->tombs);
    free(r);
}
