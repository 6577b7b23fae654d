/*
 * elfmap_file.c — the elfmap channel's image files (elfmap.h): their names, writing them,
 * mapping their pages over the JIT's, new generations (publish), valgrind's re-reading
 * (bounce), and the files of older generations kept for perf. elfmap_region.c says which of
 * these a change needs.
 *
 * A generation keeps the window's address-to-offset rule, so a function that lives on has
 * the same symbol offset in the new file; the new file has the same name in a directory of
 * its own (jit-<pid>-g<k>/), since perf merges samples into one row by file *base* name,
 * symbol offset and size. Only when new code has exactly the range of a removed function
 * of another name does the window take a new name: perf would otherwise show both under one.
 */
#include <fcntl.h>
#include <linux/falloc.h>
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
#include "channels/elfmap_tune.h"
#include "fmt/func.h"

/* File numbers are unique per process across contexts and generations. */
static _Atomic uint64_t file_counter;

uint64_t jh__em_new_id(void)
{
    return atomic_fetch_add(&file_counter, 1) + 1;
}

static jh__elfmap_swap_hook_fn *_Atomic swap_hook;
static void *_Atomic swap_hook_arg;

void jh__elfmap_swap_hook(jh__elfmap_swap_hook_fn *fn, void *arg)
{
    atomic_store(&swap_hook_arg, arg);
    atomic_store(&swap_hook, fn);
}

void jh__em_call_swap_hook(uintptr_t lo, uintptr_t hi)
{
    jh__elfmap_swap_hook_fn *hook = atomic_load(&swap_hook);
    if (hook)
        hook(atomic_load(&swap_hook_arg), lo, hi);
}

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

pid_t jh__em_pid(struct elfmap *m)
{
    unsigned fg = jh__fork_generation();
    if (!m->pid || m->pid_gen != fg) {
        m->pid = getpid();
        m->pid_gen = fg;
    }
    return m->pid;
}

bool jh__em_own_file(void *arg, dev_t dev, ino_t ino)
{
    struct elfmap *m = arg;
    for (size_t i = m->nown; i-- > 0;)
        if (m->own[i].ino == ino && m->own[i].dev == dev)
            return true;
    return false;
}

uint64_t jh__em_name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* ---- files ---------------------------------------------------------------------------- */

/* <dir>/jit-<pid>-<id>.elf, or <dir>/jit-<pid>-g<gen>/jit-<pid>-<id>.elf. */
static int make_path(struct elfmap *m, const struct region *r, char *path, size_t len)
{
    const char *dir;
    int err = jh__chan_dir(m->env, &dir);
    if (err)
        return err;
    int n;
    if (r->gen > 1) {
        n = snprintf(path, len, "%s/jit-%d-g%u", dir, (int)r->pid, r->gen);
        if (n < 0 || (size_t)n >= len)
            return -ENAMETOOLONG;
        if ((err = jh__ensure_dir(path)))       /* a new generation: the slow path */
            return err;
        n = snprintf(path + n, len - (size_t)n, "/jit-%d-%llu.elf", (int)r->pid,
                     (unsigned long long)r->id);
    } else {
        n = snprintf(path, len, "%s/jit-%d-%llu.elf", dir, (int)r->pid,
                     (unsigned long long)r->id);
    }
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static _Atomic unsigned keep_files = EM_KEEP_FILES;
static _Atomic uint64_t keep_bytes = EM_KEEP_BYTES;

void jh__elfmap_keep(unsigned files, uint64_t bytes)
{
    atomic_store(&keep_files, files ? files : EM_KEEP_FILES);
    atomic_store(&keep_bytes, bytes ? bytes : EM_KEEP_BYTES);
}

/* Older generations stay for perf report, within EM_KEEP_FILES and EM_KEEP_BYTES: past
 * that the oldest go. (A fork child forgets the list: those files are its parent's.) */
static void keep(struct elfmap *m, char *path, uint64_t bytes)
{
    unsigned max_files = atomic_load(&keep_files);
    uint64_t max_bytes = atomic_load(&keep_bytes);
    if (JH__VEC_RESERVE(m->kept, m->capkept, m->nkept + 1)) {
        jh__unlink_private(path);
        free(path);
        return;
    }
    m->kept[m->nkept++] = (struct kept_file){ path, bytes };
    m->kept_bytes += bytes;
    size_t drop = 0;
    while (drop < m->nkept && (m->nkept - drop > max_files || m->kept_bytes > max_bytes)) {
        struct kept_file *k = &m->kept[drop++];
        jh__unlink_private(k->path);
        char *slash = strrchr(k->path, '/');
        if (slash && strstr(k->path, "-g") && strstr(k->path, "-g") < slash) {
            *slash = 0;
            rmdir(k->path);         /* a generation directory, once empty */
        }
        m->kept_bytes -= k->bytes;
        free(k->path);
    }
    memmove(m->kept, m->kept + drop, (m->nkept - drop) * sizeof *m->kept);
    m->nkept -= drop;
}

/* The current file is done with: kept for perf (valgrind has read it at its mapping, and
 * its output names it). */
void jh__em_drop_file(struct elfmap *m, struct region *r)
{
    struct stat st;
    uint64_t bytes = r->fd >= 0 && fstat(r->fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    jh__elfg_free(&r->img);
    if (!r->path)
        return;
    if (r->foreign)
        free(r->path);              /* the parent's: not ours to keep or delete */
    else
        keep(m, r->path, bytes);
    r->path = NULL;
}

static _Atomic bool build_ids = true;

void jh__elfmap_build_ids(bool on)
{
    atomic_store(&build_ids, on);
}

/* Functions enter an image with their code bytes as they are now (live code: the caller
 * holds the JIT's code lock), which the build-id covers (fmt/build_id.h). */
int jh__em_image_add(struct jh__elfg *img, const struct jh__func *f)
{
    int err = jh__elfg_add(img, f);
    if (!err)
        jh__elfg_code(img, f->start, (const void *)(uintptr_t)f->start, f->size);
    return err;
}

int jh__em_sync(struct jh__elfg *img, int fd)
{
    struct jh__elfg_span v[JH__ELFG_MAXSPANS];
    int n = jh__elfg_spans(img, v);
    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        int err = jh__pwrite_all(fd, v[i].p, v[i].len, v[i].off);
        if (err)
            return err;
    }
    /* Chunks sections moved out of: give their blocks back (the file keeps its size; a file
     * system that cannot punch holes keeps the bytes, which nothing reads). */
    n = jh__elfg_freed(img, v);
    for (int i = 0; i < n; i++)
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)v[i].off,
                  (off_t)v[i].len);
    jh__elfg_synced(img);
    return 0;
}

/* ---- pages ------------------------------------------------------------------------------ */

/* Copy [lo, hi) of live code into m->snap. */
int jh__em_snapshot(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    m->snap.len = 0;
    m->snap.err = 0;
    jh__buf_put(&m->snap, (const void *)lo, hi - lo);
    return m->snap.err;
}

/* The bytes of [lo, hi) into fd at the window's offsets (through a copy: the source may
 * be a page of that very file). */
int jh__em_write_text(struct elfmap *m, struct region *r, int fd, uintptr_t lo, uintptr_t hi)
{
    int err = jh__em_snapshot(m, lo, hi);
    return err ? err : jh__pwrite_all(fd, m->snap.p, hi - lo, off_of(m, r, lo));
}

enum jh__vma_verdict jh__em_eligible(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    enum jh__vma_verdict v = jh__vma_check(m->maps_fd, lo, hi, jh__em_own_file, m);
    if (v != JH__VMA_OK)
        jh__em_report_once(m, R_VERDICT + (int)v, "code at %#lx-%#lx left anonymous, so "
                           "valgrind (and perf, without perfmap or jitdump) shows it as ???: %s",
                           (unsigned long)lo, (unsigned long)hi, jh__vma_verdict_str(v));
    return v;
}

/*
 * Map [lo, hi) from fd over the live pages, whose bytes m->snap holds (and fd holds at
 * their offsets). 0: done; 1: left as they were (reported); negative: the channel is broken.
 */
int jh__em_map_run(struct elfmap *m, struct region *r, int fd, const char *path, uintptr_t lo,
                   uintptr_t hi)
{
    jh__em_call_swap_hook(lo, hi);
    int err = jh__swap_pages(lo, hi - lo, fd, (off_t)off_of(m, r, lo), m->snap.p);
    if (err == -EPERM || err == -EACCES) {
        const char *dir = "";
        jh__chan_dir(m->env, &dir);
        jh__diag(m->env->diag, JH_LOG_ERROR, "elfmap: cannot map code from %s (%s): is %s on "
                 "a noexec file system? set JITHERALD_DIR", path, strerror(-err), dir);
        return err;
    }
    if (err == -EIO) {
        jh__diag(m->env->diag, JH_LOG_ERROR, "elfmap: the pages mapped from %s differ from the "
                 "code; the code was put back, elfmap stops", path);
        return err;
    }
    if (err) {
        jh__em_report_once(m, R_MAP, "cannot map %s over the code: %s (vm.max_map_count?)",
                           path, jh_strerror(err));
        m->fallbacks++;
        return 1;
    }
    VALGRIND_DISCARD_TRANSLATIONS(lo, hi - lo);
    m->swaps++;
    return 0;
}

/*
 * The R+W pages come from reservations of 1024 pages, kept until close. Valgrind remembers
 * every mapping it saw of an object, also after it is gone, and drops the symbols of any
 * object one of whose remembered mappings overlaps an image it reads (debuginfo.c,
 * discard_DebugInfos_which_overlap_with; its own comments tell of libc's symbols lost that
 * way). A page reserved on its own may land in any gap, such as one the dynamic loader
 * trimmed off a library's mapping; a big reservation fits no small gap, and its pages only
 * ever hold our images' mappings. It also puts the R+W segment anywhere, below the code or
 * above: elf_grow orders the program headers by address, as valgrind requires.
 */
#define RW_ARENA_PAGES 1024

void *jh__em_rw_get(struct elfmap *m)
{
    for (size_t i = 0; i < m->narenas; i++) {
        struct rw_arena *a = &m->arenas[i];
        for (size_t k = 0; k < a->npages; k++) {
            if (!a->used[k]) {
                a->used[k] = 1;
                return a->base + k * m->page;
            }
        }
    }
    struct rw_arena a = { .npages = RW_ARENA_PAGES };
    void *p = mmap(NULL, RW_ARENA_PAGES * m->page, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    a.used = calloc(RW_ARENA_PAGES, 1);
    if (p == MAP_FAILED || !a.used || JH__VEC_RESERVE(m->arenas, m->caparenas, m->narenas + 1)) {
        if (p != MAP_FAILED)
            munmap(p, RW_ARENA_PAGES * m->page);
        free(a.used);
        jh__em_report_once(m, R_MAP, "cannot reserve pages for valgrind's R+W mappings: "
                           "valgrind will not name new code");
        return NULL;
    }
    a.base = p;
    a.used[0] = 1;
    m->arenas[m->narenas++] = a;
    return a.base;
}

void jh__em_rw_put(struct elfmap *m, void *p)
{
    for (size_t i = 0; p && i < m->narenas; i++) {
        struct rw_arena *a = &m->arenas[i];
        if ((uint8_t *)p >= a->base && (uint8_t *)p < a->base + a->npages * m->page) {
            mmap(p, m->page, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
            a->used[((uint8_t *)p - a->base) / m->page] = 0;
        }
    }
}

void jh__em_rw_free(struct elfmap *m)
{
    for (size_t i = 0; i < m->narenas; i++) {
        munmap(m->arenas[i].base, m->arenas[i].npages * m->page);
        free(m->arenas[i].used);
    }
    free(m->arenas);
    m->arenas = NULL;
    m->narenas = m->caparenas = 0;
}

/* Valgrind 3.19 reads an image's symbols once it has seen an r-x and an r-w mapping of it:
 * the image's one-page R+W segment, mapped at the address reserved for it. */
static int map_rw(struct elfmap *m, struct region *r, int fd, const char *path)
{
    if (!r->rw)
        return 0;
    if (mmap(r->rw, m->page, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE, fd,
             (off_t)(m->page + EM_SPAN + EM_GAP + m->page)) == MAP_FAILED) {
        jh__em_report_once(m, R_MAP, "cannot map %s: %s", path, strerror(errno));
        return 1;
    }
    return 0;
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

int jh__em_publish(struct elfmap *m, struct region *r, struct jh__entry *const *es, size_t n)
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
            jh__em_whole_mapping(m, r, &lo, &hi);
        set_mapped(m, &nr, lo, hi, true);
    }

    /* Every run to map: eligible? A run that is not, and holds none of the new code, is
     * code the JIT freed before telling us (docs: remove after free): left out. */
    int res = 0;
    for (uintptr_t a = span_lo(r); a < span_lo(r) + EM_SPAN && !res;) {
        if (!is_mapped(m, &nr, a)) {
            a += m->page;
            continue;
        }
        uintptr_t lo = a;
        while (a < span_lo(r) + EM_SPAN && is_mapped(m, &nr, a))
            a += m->page;
        if (jh__vma_check(m->maps_fd, lo, a, jh__em_own_file, m) == JH__VMA_OK)
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
    if (r->foreign || (r->fd >= 0 && (m->valgrind || same_place(r, es, n)))) {
        nr.id = jh__em_new_id();
        nr.gen = 1;
        nr.pid = jh__em_pid(m);
    } else if (r->fd >= 0) {
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
    path[0] = '\0';                     /* stays empty when the directory failed */
    int err = make_path(m, &nr, path, sizeof path);
    int fd = err ? err : jh__open_private(path, O_RDWR | O_CREAT | O_EXCL, 0);
    /* Left by a dead process that had our pid: ours to replace, but only if it is ours. */
    if (fd == -EEXIST && jh__unlink_private(path) == 0)
        fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 ||
        JH__VEC_RESERVE(m->own, m->capown, m->nown + 1)) {
        err = fd < 0 ? fd : -errno;
        if (fd >= 0) {
            close(fd);
            jh__unlink_private(path);
        }
        free(want);
        jh__em_report_once(m, R_FILE, "cannot create %s: %s: code left anonymous, so perf and "
                           "valgrind show it as ???%s", *path ? path : "an image file",
                           jh__file_error(err), jh__diag_file_fix(err, 1));
        m->fallbacks++;
        return 1;
    }
    m->own[m->nown++] = (struct own_file){ st.st_dev, st.st_ino };
    struct jh__elfg_spec spec = { .anchor_addr = r->anchor, .anchor_off = m->page + EM_LEAD,
        .lo = r->lo, .hi = r->hi, .meta_off = m->page + EM_SPAN + EM_GAP,
        .rw_addr = (uintptr_t)r->rw, .page_size = m->page, .producer = "jitherald elfmap",
        .no_build_id = !atomic_load(&build_ids) };
    struct jh__elfg img;
    err = jh__elfg_init(&img, &spec);
    for (size_t i = 0; i < nf && !err; i++)
        err = jh__em_image_add(&img, m->fns[i]);
    for (uintptr_t a = span_lo(r); a < span_lo(r) + EM_SPAN && !err; a += m->page)
        if (is_mapped(m, &nr, a))
            err = jh__em_write_text(m, &nr, fd, a, a + m->page);
    if (!err)
        err = jh__em_sync(&img, fd);
    if (err) {
        jh__elfg_free(&img);
        close(fd);
        jh__unlink_private(path);
        free(want);
        if (err != -EINVAL && err != -E2BIG)
            return err;             /* no memory, or the disk refuses: channel off */
        jh__em_report_once(m, R_BUILD, "cannot build the image for %#lx-%#lx: %s",
                           (unsigned long)r->lo, (unsigned long)r->hi, jh_strerror(err));
        m->fallbacks++;
        return 1;
    }

    /* Map: the code runs, then the R+W page (valgrind reads the image at that moment). */
    for (uintptr_t a = span_lo(r); a < span_lo(r) + EM_SPAN && res >= 0;) {
        if (!is_mapped(m, &nr, a)) {
            a += m->page;
            continue;
        }
        uintptr_t lo = a;
        while (a < span_lo(r) + EM_SPAN && is_mapped(m, &nr, a))
            a += m->page;
        res = jh__em_snapshot(m, lo, a);
        if (!res)
            res = jh__em_map_run(m, &nr, fd, path, lo, a);
        if (res == 1) {
            set_mapped(m, &nr, lo, a, false);   /* left as they were (restored if need be) */
            res = 0;
        }
    }
    if (res >= 0)
        map_rw(m, &nr, fd, path);

    jh__em_drop_file(m, r);                /* the previous generation, if any */
    free(r->mapped);
    nr.fd = fd;
    nr.path = strdup(path);
    nr.img = img;
    nr.dev = st.st_dev;
    nr.ino = st.st_ino;
    nr.ntombs = 0;
    nr.frozen = nr.foreign = false;
    *r = nr;
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
int jh__em_restart(struct elfmap *m, struct region *r)
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
int jh__em_bounce(struct elfmap *m, struct region *r)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s.valgrind", r->path) >= sizeof path)
        return 1;
    jh__unlink_private(path);
    int fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL, 0), res = 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || JH__VEC_RESERVE(m->own, m->capown, m->nown + 1)) {
        if (fd >= 0)
            close(fd);
        int err = fd < 0 ? fd : -errno;
        jh__em_report_once(m, R_FILE, "cannot create %s: %s: valgrind will not name new "
                           "code%s", path, jh__file_error(err), jh__diag_file_fix(err, 1));
        return 1;
    }
    m->own[m->nown++] = (struct own_file){ st.st_dev, st.st_ino };
    int err = 0;
    for (uintptr_t a = span_lo(r); a < span_lo(r) + EM_SPAN && !err; a += m->page)
        if (is_mapped(m, r, a))
            err = jh__em_write_text(m, r, fd, a, a + m->page);
    jh__elfg_all_dirty(&r->img);
    if (!err)
        err = jh__em_sync(&r->img, fd);
    for (int pass = 0; pass < 2 && !err && res >= 0; pass++) {
        int from = pass ? r->fd : fd;
        const char *name = pass ? r->path : path;
        /* The file is mapped nowhere now: every byte of its pages made current (in place,
         * only code bytes were written: the rest of a page may have changed since). */
        for (uintptr_t a = span_lo(r); pass && a < span_lo(r) + EM_SPAN && !err; a += m->page)
            if (is_mapped(m, r, a))
                err = jh__em_write_text(m, r, r->fd, a, a + m->page);
        if (err)
            break;
        for (uintptr_t a = span_lo(r); a < span_lo(r) + EM_SPAN && res >= 0;) {
            if (!is_mapped(m, r, a)) {
                a += m->page;
                continue;
            }
            uintptr_t lo = a;
            while (a < span_lo(r) + EM_SPAN && is_mapped(m, r, a))
                a += m->page;
            res = jh__em_snapshot(m, lo, a);
            if (!res && (res = jh__em_map_run(m, r, from, name, lo, a)) == 1) {
                set_mapped(m, r, lo, a, false);
                res = 0;
            }
        }
        if (res >= 0)
            map_rw(m, r, from, name);
    }
    close(fd);
    jh__unlink_private(path);
    return res < 0 ? res : err;     /* a write error: channel off */
}
