/*
 * elfmap_file.c — the elfmap channel's image files and page runs (elfmap.h): naming and
 * creating files, writing code bytes and images into them, the older generations kept for
 * perf, mapping runs of pages from a file over the JIT's and giving them back to anonymous
 * memory, valgrind's R+W pages. It knows nothing of windows and their policy: it is told
 * which file, which pages and which offsets by elfmap_region.c, and never calls it.
 *
 * A generation keeps the window's address-to-offset rule, so a function that lives on has
 * the same symbol offset in the new file; the new file has the same name in a directory of
 * its own (jit-<pid>-g<k>/), since perf merges samples into one row by file *base* name,
 * symbol offset and size (elfmap_region.c, publish).
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
#include "fmt/arch.h"
#include "channels/elfmap_tune.h"
#include "fmt/func.h"

/* ---- what the tests tune (elfmap_tune.h), and file numbers ---------------------------- */

/* File numbers are unique per process across contexts and generations. */
static _Atomic uint64_t file_counter;
static jh__elfmap_swap_hook_fn *_Atomic swap_hook;
static void *_Atomic swap_hook_arg;
static _Atomic unsigned keep_files = EM_KEEP_FILES;
static _Atomic uint64_t keep_bytes = EM_KEEP_BYTES;
static _Atomic bool build_ids = true;

uint64_t jh__em_new_id(void)
{
    return atomic_fetch_add(&file_counter, 1) + 1;
}

void jh__elfmap_swap_hook(jh__elfmap_swap_hook_fn *fn, void *arg)
{
    atomic_store(&swap_hook_arg, arg);
    atomic_store(&swap_hook, fn);
}

void jh__elfmap_keep(unsigned files, uint64_t bytes)
{
    atomic_store(&keep_files, files ? files : EM_KEEP_FILES);
    atomic_store(&keep_bytes, bytes ? bytes : EM_KEEP_BYTES);
}

void jh__elfmap_build_ids(bool on)
{
    atomic_store(&build_ids, on);
}

bool jh__em_build_ids(void)
{
    return atomic_load(&build_ids);
}

/* JITHERALD_ELFMAP_NO_EH_FRAME=1: images without .eh_frame/.eh_frame_hdr, only .debug_frame
 * (what they held before): the control of tests/integration/elfmap_unwind.sh, which shows
 * that perf's DWARF unwinder gets through JIT frames because of the .eh_frame. Not for users. */
bool jh__em_eh_frames(void)
{
    const char *v = getenv("JITHERALD_ELFMAP_NO_EH_FRAME");
    return !v || !*v || !strcmp(v, "0");
}

/* ---- the channel's own facts ------------------------------------------------------------ */

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

/* Proven once per hook: a hook looks at the mappings up to five times. */
int jh__em_maps(struct elfmap *m)
{
    if (m->maps_checked && m->maps.fd >= 0)
        return m->maps.fd;
    m->files_lo = m->files_hi = 0;      /* (a new hook: what was found may have changed) */
    int fd = jh__kfd_get(&m->maps, NULL, 0);
    if (fd < 0)     /* not opened yet, or closed by the program: this process's, anew */
        fd = jh__kfd_keep(&m->maps, open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
    m->maps_checked = fd >= 0;
    return fd;
}

int jh__em_fd(struct elfmap *m, struct region *r, int fd)
{
    if (fd != EM_FD_LATER)
        return fd;
    if (r->fd.fd >= 0 && m->hook && r->fd_hook == m->hook)
        return r->fd.fd;
    fd = jh__kfd_get(&r->fd, r->path, O_RDWR);
    r->fd_hook = fd >= 0 ? m->hook : 0;
    return fd;
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

int jh__em_path(struct elfmap *m, pid_t pid, unsigned gen, uint64_t id, char *path, size_t len)
{
    const char *dir;
    int err = jh__chan_dir(m->env, &dir);
    if (err)
        return err;
    int n;
    if (gen > 1) {
        n = snprintf(path, len, "%s/jit-%d-g%u", dir, (int)pid, gen);
        if (n < 0 || (size_t)n >= len)
            return -ENAMETOOLONG;
        if ((err = jh__ensure_dir(path)))       /* a new generation: the slow path */
            return err;
        n = snprintf(path + n, len - (size_t)n, "/jit-%d-%llu.elf", (int)pid,
                     (unsigned long long)id);
    } else {
        n = snprintf(path, len, "%s/jit-%d-%llu.elf", dir, (int)pid, (unsigned long long)id);
    }
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int jh__em_create(struct elfmap *m, const char *path, struct jh__kfd *k)
{
    int fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL, 0);
    /* Left by a dead process that had our pid: ours to replace, but only if it is ours. */
    if (fd == -EEXIST && jh__unlink_private(path) == 0)
        fd = jh__open_private(path, O_RDWR | O_CREAT | O_EXCL, 0);
    fd = jh__kfd_keep(k, fd);
    if (fd >= 0 && JH__VEC_RESERVE(m->own, m->capown, m->nown + 1)) {
        jh__kfd_close(k);
        jh__unlink_private(path);
        fd = -ENOMEM;
    }
    if (fd < 0) {
        jh__em_report_once(m, R_FILE, "cannot create %s: %s: code left anonymous, so perf and "
                           "valgrind show it as ???%s", path, jh__file_error(fd),
                           jh__diag_file_fix(fd, 1));
        return fd;
    }
    m->own[m->nown++] = (struct own_file){ k->dev, k->ino };
    return fd;
}

/* Older generations stay for perf report, within EM_KEEP_FILES and EM_KEEP_BYTES: past
 * that the oldest go. (A fork child forgets the list: those files are its parent's.) */
void jh__em_keep(struct elfmap *m, char *path, uint64_t bytes)
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

/* Functions enter an image with their code bytes as they are now (live code: the caller
 * holds the JIT's code lock), which the build-id covers (fmt/build_id.h). */
int jh__em_image_add(struct jh__elfg *img, const struct jh__func *f)
{
    int err = jh__elfg_add(img, f);
    if (!err)
        jh__elfg_code(img, f->start, (const void *)(uintptr_t)f->start, f->size);
    return err;
}

/* ---- pages ------------------------------------------------------------------------------ */

int jh__em_snapshot(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    m->snap.len = 0;
    m->snap.err = 0;
    jh__buf_put(&m->snap, (const void *)lo, hi - lo);
    return m->snap.err;
}

/* (Through a copy: the source may be a page of that very file.) */
int jh__em_write_text(struct elfmap *m, int fd, uintptr_t lo, uintptr_t hi, uint64_t off)
{
    int err = jh__em_snapshot(m, lo, hi);
    return err ? err : jh__pwrite_all(fd, m->snap.p, hi - lo, off);
}

static bool rwx_ok(const struct elfmap *m);

enum jh__vma_verdict jh__em_eligible(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    enum jh__vma_verdict v = jh__em_check(m, lo, hi);
    const struct jh__elfmap_opts *o = m->env->opts;
    if (v == JH__VMA_WRITABLE && m->unlocked && o && o->code_rwx)
        jh__em_report_once(m, R_RWX_UNLOCKED, "RWX code at %#lx-%#lx left as it is (perf "
                           "map/jitdump still name it): elfmap was switched on by "
                           "jh_channels_set (jitherald attach), which does not hold the "
                           "JIT's code lock, and RWX pages are mapped over only inside "
                           "jh_code_add/_patched/_move; the next of those on these pages maps "
                           "them", (unsigned long)lo, (unsigned long)hi);
    else if (v != JH__VMA_OK)
        jh__em_report_once(m, R_VERDICT + (int)v, "code at %#lx-%#lx left anonymous, so "
                           "valgrind (and perf, without perfmap or jitdump) shows it as ???: %s",
                           (unsigned long)lo, (unsigned long)hi, jh__vma_verdict_str(v));
    return v;
}

/* RWX pages may be mapped over or given back: the JIT said it writes them only under its
 * code lock (JH_OPT_CODE_RWX), and this hook is one it calls under that lock. */
static bool rwx_ok(const struct elfmap *m)
{
    const struct jh__elfmap_opts *o = m->env->opts;
    return o && o->code_rwx && !m->unlocked;
}

/*
 * A look at the mappings is an ioctl (PROCMAP_QUERY) or a read of /proc/self/maps. A hook
 * looks at a new function's pages to see whether they may be mapped over (image), then
 * whether those mapped from the file still are (jh__em_region_add): for LuaJIT, two looks at
 * the same page per trace. The first answers the second, as long as elfmap has mapped
 * nothing over code in between (jh__em_map_run, jh__em_unswap forget it) and within one
 * hook (jh__em_maps forgets it at the next): the JIT changes its code's mappings only
 * between hooks (the contract: under its code lock).
 */
enum jh__vma_verdict jh__em_check(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    bool files;
    int fd = jh__em_maps(m);
    enum jh__vma_verdict v = jh__vma_check_files(fd, lo, hi, jh__em_own_file, m, rwx_ok(m),
                                                 &files);
    if (files) {
        m->files_lo = lo;
        m->files_hi = hi;
    }
    return v;
}

bool jh__em_ours(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    int fd = jh__em_maps(m);
    if (lo >= m->files_lo && hi <= m->files_hi)
        return true;
    return jh__vma_own(fd, lo, hi, jh__em_own_file, m, rwx_ok(m));
}

/* What the code's pages have beyond r-x that an image mapped over them must keep: arm64's
 * PROT_BTI, where the CPU enforces landing pads and the JIT's pages are guarded (the JIT
 * said so, else smaps says). Never added to code that had none: its indirect branch
 * targets may lack landing pads. -1: the range mixes guarded and unguarded pages. */
static int bti_prot(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    const struct jh__arch *a = JH__ARCH_HOST;
    if (!a->prot_bti || !m->bti)
        return 0;
    const struct jh__elfmap_opts *o = m->env->opts;
    if (o && o->code_bti)
        return (int)a->prot_bti;
    int g = jh__vma_guarded(lo, hi);
    return g < 0 ? -1 : g ? (int)a->prot_bti : 0;
}

/* bti_prot, and PROT_WRITE where the JIT keeps its code RWX (JH_OPT_CODE_RWX): the image
 * keeps the pages writable, as private file pages (copy-on-write). -2: the range mixes
 * writable and read-only pages. */
static int code_prot(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    int prot = bti_prot(m, lo, hi);
    if (prot < 0 || !rwx_ok(m))
        return prot;
    int w = jh__vma_writable(jh__em_maps(m), lo, hi, jh__em_own_file, m);
    return w < 0 ? -2 : w ? prot | PROT_WRITE : prot;
}

int jh__em_map_run(struct elfmap *m, int fd, const char *path, uintptr_t lo, uintptr_t hi,
                   uint64_t off)
{
    int prot = code_prot(m, lo, hi);
    if (prot < 0) {
        jh__em_report_once(m, prot == -2 ? R_RWX_MIX : R_BTI, "code at %#lx-%#lx left "
                           "anonymous (perf map/jitdump still name it): its pages mix %s "
                           "memory, and an image keeps one protection for all",
                           (unsigned long)lo, (unsigned long)hi, prot == -2 ?
                           "writable and read-only" : "BTI-guarded and unguarded");
        m->fallbacks++;
        return 1;
    }
    jh__elfmap_swap_hook_fn *hook = atomic_load(&swap_hook);
    if (hook)
        hook(atomic_load(&swap_hook_arg), lo, hi);
    m->files_lo = m->files_hi = 0;
    int err = jh__swap_pages(lo, hi - lo, fd, (off_t)off, m->snap.p, prot);
    if (err == -EBUSY) {
        /* mseal(2)ed code: those pages stay as they are, the rest of the code is named */
        jh__em_report_once(m, R_SEALED, "code at %#lx-%#lx left as it is (perf map/jitdump "
                           "still name it): its pages are sealed (mseal)", (unsigned long)lo,
                           (unsigned long)hi);
        m->fallbacks++;
        return 1;
    }
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

void jh__em_unswap(struct elfmap *m, uintptr_t lo, uintptr_t hi)
{
    if (!jh__em_ours(m, lo, hi))
        return;
    m->files_lo = m->files_hi = 0;
    /* One mapping at a time where pages may differ in PROT_BTI (swapped at two times). */
    for (uintptr_t a = lo, s, e; a < hi; a = e) {
        e = hi;
        if (m->bti && jh__vma_bounds(jh__em_maps(m), a, &s, &e) == 0 && e > hi)
            e = hi;
        int prot = code_prot(m, a, e);
        if (e <= a || prot < 0 || jh__unswap_pages(a, e - a, prot) != 0)
            return;
    }
    m->unswaps++;
}

/* Valgrind 3.19 reads an image's symbols once it has seen an r-x and an r-w mapping of it:
 * the image's one-page R+W segment, mapped at the address reserved for it. */
int jh__em_map_rw(struct elfmap *m, void *rw, int fd, const char *path, uint64_t off)
{
    if (!rw)
        return 0;
    if (mmap(rw, m->page, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE, fd, (off_t)off) ==
        MAP_FAILED) {
        jh__em_report_once(m, R_MAP, "cannot map %s: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

/*
 * The tables' arena. perf --call-graph dwarf (libunwind in perf 6.1) reads a mapping's
 * .eh_frame_hdr and .eh_frame through the process's memory as perf recorded it (its mmap
 * events, then the file at the mapping's offset), at the addresses the image gives them,
 * not from the file alone: with nothing mapped there, "unwind: no map for ADDR" and the
 * chain stops in the first JIT frame. So they must be mapped somewhere, and the only
 * address space elfmap may map into is its own: each window reserves an arena (PROT_NONE,
 * anonymous, like the R+W pages below), its image gives the tables and its first page
 * addresses in it (fmt/elf_grow.h, spec.eh_addr), and they are mapped read-only there,
 * MAP_FIXED only ever over the arena. The pages read the file's page cache: the tables'
 * growth shows without a new mapping until a chunk moves. The file's first page is mapped
 * at the arena's start for perf 6.1, which takes the lowest mapping of the file for its
 * first PT_LOAD: an arena below the code then starts the image at a mapping that never
 * moves (docs/elfmap.md, "Unwinding without frame pointers", has what each tool needs).
 */
#define EM_ARENA ((size_t)16 << 20)
#define EM_ARENA_TRIES 4

/*
 * Where an arena is of use: below every page of the window's span, so that its first page
 * is the file's lowest mapping, and near enough that .eh_frame_hdr's table (4-byte
 * offsets from its own address: the only form perf's libunwind and libdw search) reaches
 * all the code.
 */
static bool arena_fits(const struct region *r, uintptr_t p, size_t len)
{
    uintptr_t top = span_lo(r) + EM_SPAN;
    return p + len <= span_lo(r) && top - p < ((uintptr_t)1 << 31);
}

int jh__em_arena_new(struct elfmap *m, struct region *r, uint64_t need)
{
    size_t len = EM_ARENA;
    while (len < need && len < ((size_t)1 << 30))
        len *= 2;
    /* Address space the kernel gives anywhere (mmap(NULL)), never a place chosen for it:
     * one that does not fit is held while the next is asked for, then given back. */
    uintptr_t got[EM_ARENA_TRIES], pick = 0;
    int n = 0;
    while (len >= need && !pick && n < EM_ARENA_TRIES) {
        void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            break;
        if (arena_fits(r, (uintptr_t)p, len))
            pick = (uintptr_t)p;
        else
            got[n++] = (uintptr_t)p;
    }
    while (n > 0)
        munmap((void *)got[--n], len);
    if (!pick) {
        jh__em_report_once(m, R_EH, "no address space below the JIT code at %#lx and within "
                           "2 GiB of it for its unwind tables: perf --call-graph dwarf stops "
                           "at that code (eu-stack, and profilers that read .eh_frame from "
                           "the image file, still unwind it)", (unsigned long)r->lo);
        return 1;
    }
    jh__em_arena_free(r);
    r->arena = pick;
    r->arena_len = len;
    return 0;
}

/* A lost arena: all of it but the pieces it lost, which may hold another's mapping now. */
static void unmap_kept(struct region *r)
{
    uintptr_t at = r->arena, end = r->arena + r->arena_len;
    while (at < end) {
        uintptr_t hs = end, he = end;       /* the lowest hole not below at */
        for (int k = 0; k < 3; k++) {
            uintptr_t s = r->lost_at[k], e = s + r->lost_len[k];
            if (r->lost_len[k] && e > at && s < hs) {
                hs = s > at ? s : at;
                he = e;
            }
        }
        if (hs > at)
            munmap((void *)at, hs - at);
        at = he;
    }
}

void jh__em_arena_free(struct region *r)
{
    if (r->wabove)
        jh__em_wmap_drop(r);        /* (not in the arena) */
    if (r->arena && !r->arena_lost)
        munmap((void *)r->arena, r->arena_len);
    else if (r->arena)
        unmap_kept(r);
    r->arena_lost = false;
    memset(r->lost_at, 0, sizeof r->lost_at);
    memset(r->lost_len, 0, sizeof r->lost_len);
    r->arena = 0;
    r->arena_len = 0;
    memset(r->eh_at, 0, sizeof r->eh_at);
    r->wmap = false;
    r->wmap_end = 0;
    r->w0 = r->wm = NULL;
}

/* Piece k of the arena back to the reservation (never munmap: the hole could be taken). */
void jh__em_eh_unmap(struct region *r, int k)
{
    if (r->eh_at[k] && mmap((void *)r->eh_at[k], r->eh_len[k], PROT_NONE, MAP_FIXED |
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
        r->arena_lost = true;
        r->lost_at[k] = r->eh_at[k];
        r->lost_len[k] = r->eh_len[k];
    }
    r->eh_at[k] = 0;
}

int jh__em_map_eh(struct elfmap *m, struct region *r, int fd, const char *path, bool fresh)
{
    struct jh__elfg *img = &r->img;
    if (m->valgrind)
        return 0;
    /* The text PT_LOAD starts at the lowest page ever mapped from this file: libdw takes
     * the lowest of the file's lines for it, perf 6.1 the lowest mapping it recorded (it
     * sees no munmap). */
    uintptr_t low;
    if (lowest_mapped(m, r, &low) && (!img->load_lo || low < img->load_lo))
        jh__elfg_set_load(img, low);
    /* the whole metadata when it is written through the arena (elfmap_write.c) */
    uint64_t reach = jh__elfg_eh_reach(img), all = 2 * m->page + (img->end - img->s.meta_off);
    if (reach && !r->wmap_off && all > reach)
        reach = all;
    if (r->arena && !r->arena_lost && reach > r->arena_len &&
        jh__em_arena_new(m, r, reach) == 0) {
        jh__elfg_set_eh_addr(img, r->arena);
        fresh = true;
    }
    if (fresh)
        jh__em_wmap_drop(r);        /* another file's (the parent's in a fork child) */
    int err = jh__em_wmap(m, r, fd, path);
    if (err < 0)
        return err;
    if ((err = jh__em_sync(m, r, img, fd)))
        return err;
    if (r->wmap)
        return 0;                   /* the tables lie in the shared mapping */
    /* The pieces that moved go back to the reservation first, all of them: a table may
     * move into a spare chunk another piece was mapped over (fmt/elf_grow.c) */
    uint64_t addr[3], off[3], len[3];
    bool ok[3];
    for (int k = 0; k < 3; k++) {
        ok[k] = r->arena && !r->arena_lost &&
                jh__elfg_eh_chunk(img, k, &addr[k], &off[k], &len[k]) &&
                addr[k] >= r->arena && addr[k] - r->arena <= r->arena_len &&
                len[k] <= r->arena_len - (addr[k] - r->arena);  /* (never outside) */
        if (ok[k] && (r->eh_at[k] != addr[k] || r->eh_len[k] != len[k]))
            jh__em_eh_unmap(r, k);
        else if (ok[k] && !fresh)
            ok[k] = false;              /* (mapped there already) */
    }
    for (int k = 0; k < 3 && r->arena && !r->arena_lost; k++) {
        if (!ok[k])
            continue;
        if ((fd = jh__em_fd(m, r, fd)) < 0)
            return fd;
        if (mmap((void *)(uintptr_t)addr[k], len[k], PROT_READ, MAP_PRIVATE | MAP_FIXED, fd,
                 (off_t)off[k]) == MAP_FAILED) {
            /* a failed MAP_FIXED may have unmapped the range: reserve it again, or leave
             * the whole arena alone from now on */
            r->eh_at[k] = (uintptr_t)addr[k];
            r->eh_len[k] = len[k];
            jh__em_report_once(m, R_EH, "cannot map the unwind tables of %s: %s (perf "
                               "--call-graph dwarf stops at its code)", path, strerror(errno));
            jh__em_eh_unmap(r, k);
            continue;
        }
        r->eh_at[k] = (uintptr_t)addr[k];
        r->eh_len[k] = len[k];
    }
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

void jh__em_rw_free(struct elfmap *m, bool keep_pages)
{
    for (size_t i = 0; i < m->narenas; i++) {
        if (!keep_pages)
            munmap(m->arenas[i].base, m->arenas[i].npages * m->page);
        free(m->arenas[i].used);
    }
    free(m->arenas);
    m->arenas = NULL;
    m->narenas = m->caparenas = 0;
}
