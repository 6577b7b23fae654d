/*
 * elfmap.h — the elfmap channel's state, shared by its parts, each calling only those below:
 *   elfmap.c         the hooks: which image window a function goes to, what each hook does
 *   elfmap_region.c  one image window: what a change to its code needs (in place, or a new
 *                    generation of its file: publish; valgrind's re-reading: bounce)
 *   elfmap_file.c    image files and page runs: naming, creating, writing, keeping older
 *                    generations for perf, mapping runs over the JIT's pages and giving them
 *                    back to anonymous memory, valgrind's R+W pages
 *   pageswap.c       the mechanics of replacing live pages and of reading /proc/self/maps
 * fmt/elf_grow.c builds the image.
 */
#ifndef JH__CHANNELS_ELFMAP_H
#define JH__CHANNELS_ELFMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "channels/channel.h"
#include "channels/pageswap.h"
#include "fmt/elf_grow.h"

/*
 * Image windows. A window's file holds the code at address a at file offset
 *     off(a) = page + EM_LEAD + (a - anchor)
 * for a in [anchor - EM_LEAD, anchor - EM_LEAD + EM_SPAN): a function keeps its file offset
 * in every generation of the window's image (perf merges samples by file name, offset and
 * size). A new window is the EM_WINDOW-aligned block holding the code that opened it; it
 * may grow down by EM_LEAD (JITs that allocate top-down) and up to EM_SPAN in all. After
 * the code area come EM_GAP bytes of hole (zeros, no disk) before the image's metadata:
 * a mapping of up to EM_WHOLE that the JIT grows with mremap reads zeros there (at least
 * EM_GAP of them past the span), never past the end of the file. The gap is what bounds
 * the file's apparent size: one page + EM_SPAN + EM_GAP + the metadata's chunks (tools that
 * ignore holes, perf buildid-cache, tar, debuginfod, copy that size: docs/fleet.md).
 */
#define EM_WINDOW ((uintptr_t)JH__ELFG_WINDOW)
#define EM_LEAD ((uintptr_t)JH__ELFG_LEAD)
#define EM_SPAN ((uintptr_t)JH__ELFG_SPAN)
#define EM_GAP JH__ELFG_GAP

/* A JIT mapping up to this size is mapped from the image file whole at its first code, so
 * that it stays one mapping (mremap). */
#define EM_WHOLE ((uintptr_t)1 << 20)

/* Older generations' files kept for perf report (see docs/elfmap.md, "Files"). */
#define EM_KEEP_FILES 256
#define EM_KEEP_BYTES ((uint64_t)64 << 20)

/* Spare chunks an image may keep in its file before they are punched out (elfmap_write.c,
 * jh__em_punch): also what a kept or closed file may hold of them. */
#define EM_HOLES_BATCH ((uint64_t)1 << 20)

/* At most this much of an image file allocated ahead of its metadata (elfmap_write.c). */
#define EM_AHEAD ((uint64_t)1 << 20)

/* A function that was in this generation's image and is gone: its symbol stays in the file
 * (perf may still have samples of it); new code over its bytes needs a new generation. */
struct tomb {
    uintptr_t start;
    size_t size;
    uint64_t name_hash;
};

/* One image window and the file of its current generation. */
struct region {
    uint64_t id;                /* file name number: jit-<pid>-<id>.elf */
    unsigned gen;               /* 1: <dir>/jit-<pid>-<id>.elf; k > 1: <dir>/jit-<pid>-g<k>/ */
    pid_t pid;                  /* in the file name */
    uintptr_t anchor, lo, hi;   /* see above; [lo, hi) the window */
    struct jh__kfd fd;          /* its file: jh__em_fd() before each use */
    unsigned long fd_hook;      /* m->hook when fd was last proven ours */
    char *path;
    struct jh__elfg img;
    uint8_t *mapped;            /* a bit per page of the span: mapped from this file */
    size_t low_byte;            /* no byte of mapped[] below this one has a bit set */
    size_t nlive;               /* live functions in the image */
    struct tomb *tombs;
    size_t ntombs, captombs;
    bool frozen;                /* a fork child maps this file: its code bytes stay as they are */
    bool foreign;               /* (in a fork child) the parent's file: never written to */
    void *rw;                   /* under valgrind: the R+W mapping, one page */
    uintptr_t arena;            /* the tables' address space, reserved (jh__em_arena_new) */
    size_t arena_len;
    bool arena_lost;            /* a piece of it could not be reserved again: left alone */
    uintptr_t lost_at[3];       /* those pieces (by eh_at's index): no longer ours, never */
    size_t lost_len[3];         /* unmapped; the rest of the arena is, when it is freed */
    uintptr_t eh_at[3];         /* .eh_frame_hdr's and .eh_frame's chunks and the file's
                                   first page, mapped read-only in the arena (0: not); with
                                   wmap, [0] is all the metadata, [1] unused */
    size_t eh_len[3];
    bool wmap;                  /* the arena maps the file's first page and its metadata
                                   ([meta_off, wmap_end)) shared and writable: the image is
                                   written there, not with a pwrite per span (jh__em_sync) */
    bool wmap_off;              /* the file system cannot allocate ahead: pwrite only */
    uint64_t wmap_end;
    uint8_t *w0, *wm;           /* with wmap: the first page's shared mapping, the metadata's */
    bool wabove;                /* those lie above the window's span (no arena), wm_cap bytes
                                   of metadata mapped */
    size_t wm_cap;
    bool wcode;                 /* with wabove: the whole file is mapped there, from offset
                                   0 (w0), the code's span included (jh__em_put_code) */
    dev_t dev;
    ino_t ino;
};

struct own_file {
    dev_t dev;
    ino_t ino;
};

/* Under valgrind: pages for the images' R+W segments, carved from reservations of their own
 * (elfmap_file.c, jh__em_rw_get). */
struct rw_arena {
    uint8_t *base;
    size_t npages;
    uint8_t *used;              /* a byte per page */
};

struct kept_file {
    char *path;
    uint64_t bytes;
};

/* One-time reports. */
enum { R_VERDICT = 0, R_CHANGED = 16, R_BUILD, R_FILE, R_MAP, R_RANGE, R_STRADDLE, R_SEALED,
       R_BTI, R_EH, R_RWX_MIX, R_RWX_UNLOCKED };

struct elfmap {
    const struct jh__chan_env *env;
    size_t page;
    struct jh__kfd maps;        /* /proc/self/maps: jh__em_maps() before each use */
    bool maps_checked;          /* proven ours in this hook already (reset by each hook) */
    unsigned long hook;         /* counts the hooks (jh__em_fd: a file proven once in each) */
    uintptr_t files_lo, files_hi;   /* found mapped from our files by a look at the mappings
                                   in this hook, since which elfmap mapped nothing over code
                                   (jh__em_ours need not look again) */
    bool valgrind;              /* running under valgrind: see elfmap_region.c, publish() */
    bool bti;                   /* the CPU enforces BTI: pages may be PROT_BTI (code_prot) */
    bool freeze;                /* no image file changes once written: a change to a window
                                   is its next generation (JITHERALD_ELFMAP_FREEZE: perf
                                   record --buildid-mmap keeps a path's first build-id;
                                   docs/fleet.md, "Identity") */
    bool unlocked;              /* in a hook the JIT does not call under its code lock
                                   (jh_channels_set's rundown and switch-off): RWX pages
                                   are neither mapped over nor given back (a copy would
                                   lose a write the JIT makes meanwhile) */
    struct region **reg;        /* sorted by lo, windows disjoint */
    size_t nreg, capreg;
    struct own_file *own;       /* every file this context made (pages mapped from them are
                                   ours to replace) */
    size_t nown, capown;
    struct kept_file *kept;     /* older generations, oldest first */
    size_t nkept, capkept;
    uint64_t kept_bytes;
    const struct jh__func **fns;    /* scratch (publish) */
    size_t capfns;
    struct jh__entry **ents;    /* scratch of elfmap.c's image(): the functions it hands to
                                   jh__em_region_add, which may use fns meanwhile */
    size_t capents;
    struct jh__buf snap;        /* scratch: page snapshots */
    uint32_t reported;
    unsigned pid_gen;           /* jh__fork_generation() when pid was read */
    pid_t pid;
    uint64_t swaps, fallbacks, unswaps;
    uint64_t room[JH__ELFG_NGROW];  /* how big the last window retired ended (jh__elfg_room):
                                   the room a window's first image starts with */
    bool wdev_ok;               /* the file system of device wdev rewrites a page in place
                                   and allocates ahead: a file of it passed elfmap_write.c's
                                   fstatfs and first-page fallocate (later windows' files
                                   there skip both) */
    dev_t wdev;
    struct rw_arena *arenas;
    size_t narenas, caparenas;
};

#define SLOT(m, e) ((e)->slot[(m)->env->slot])

static inline uintptr_t pg_down(const struct elfmap *m, uintptr_t a)
{
    return a & ~(uintptr_t)(m->page - 1);
}
static inline uintptr_t pg_up(const struct elfmap *m, uintptr_t a)
{
    return pg_down(m, a + m->page - 1);
}

/* Where an image's one-page R+W segment sits in its file (after the code span, the hole and
 * the metadata's first page: fmt/elf_grow.h). */
static inline uint64_t em_rw_off(const struct elfmap *m)
{
    return m->page + EM_SPAN + EM_GAP + m->page;
}

/* The window's pages: file offsets and the bitmap of pages mapped from its file. */
static inline uintptr_t span_lo(const struct region *r) { return r->anchor - EM_LEAD; }

static inline uint64_t off_of(const struct elfmap *m, const struct region *r, uintptr_t a)
{
    return m->page + EM_LEAD + (a - r->anchor);
}

static inline bool is_mapped(const struct elfmap *m, const struct region *r, uintptr_t a)
{
    size_t b = (a - span_lo(r)) / m->page;
    return r->mapped[b / 8] >> (b % 8) & 1;
}

static inline void set_mapped(const struct elfmap *m, struct region *r, uintptr_t lo,
                              uintptr_t hi, bool on)
{
    for (uintptr_t a = lo; a < hi; a += m->page) {
        size_t b = (a - span_lo(r)) / m->page;
        if (on) {
            r->mapped[b / 8] |= (uint8_t)(1u << (b % 8));
            if (b / 8 < r->low_byte)
                r->low_byte = b / 8;
        } else {
            r->mapped[b / 8] &= (uint8_t)~(1u << (b % 8));
        }
    }
}

/* The next run of pages r maps from its file, from *a on within its window: [*lo, *a)
 * (*a left past it); false when no page from *a on is mapped. */
static inline bool next_run(const struct elfmap *m, const struct region *r, uintptr_t *a,
                            uintptr_t *lo)
{
    uintptr_t end = span_lo(r) + EM_SPAN;
    while (*a < end && !is_mapped(m, r, *a)) {
        size_t b = (*a - span_lo(r)) / m->page;
        /* eight pages at a time where none is mapped (the span is a multiple of eight):
         * a window's 768 pages were looked at one by one at every add (jh__em_map_eh:
         * 6% of elfmap's time under LuaJIT) */
        *a += b % 8 == 0 && !r->mapped[b / 8] ? 8 * m->page : m->page;
    }
    *lo = *a;
    while (*a < end && is_mapped(m, r, *a))
        *a += m->page;
    return *lo < end;
}

/* The lowest page of the span mapped from r's file (false: none): a byte of the bitmap at
 * a time from low_byte on (jh__em_map_eh asks at every add; next_run also walked the run
 * above it page by page, and from the span's first byte each of a LuaJIT window's ~90
 * empty bytes below its code). */
static inline bool lowest_mapped(const struct elfmap *m, struct region *r, uintptr_t *lo)
{
    size_t nb = (EM_SPAN / m->page + 7) / 8;
    for (size_t i = r->low_byte; i < nb; i++) {
        if (r->mapped[i]) {
            r->low_byte = i;
            *lo = span_lo(r) + (8 * i + (size_t)__builtin_ctz(r->mapped[i])) * m->page;
            return true;
        }
    }
    r->low_byte = nb;
    return false;
}

/* Each page a of the functions es[0..n), in order (k: the function's index). */
#define EACH_PAGE_OF(m, es, n, k, a)                                                     \
    for (size_t k = 0; k < (n); k++)                                                     \
        for (uintptr_t a = pg_down(m, (es)[k]->node.start);                              \
             a < (es)[k]->node.start + (es)[k]->node.size; a += (m)->page)

/* ---- elfmap_region.c: one window ---- */

/* A new window [lo, hi) anchored at anchor, with its file; NULL (reported) on failure. */
struct region *jh__em_region_new(struct elfmap *m, uintptr_t anchor, uintptr_t lo, uintptr_t hi,
                                 int *err);
/* Is the page at a mapped from r's file? */
bool jh__em_region_maps(const struct elfmap *m, const struct region *r, uintptr_t a);
/* The window grows to [lo, hi) (within its span). */
int jh__em_region_grow(struct elfmap *m, struct region *r, uintptr_t lo, uintptr_t hi);
/*
 * Put es[0..n) (live, inside r's window, in no image) into r's image, their pages mapped
 * from r's file: in place when that is allowed, else through a new generation. Their slots
 * then point to r. 0: done; 1: left as they are (reported once); negative errno: the
 * channel is broken.
 */
int jh__em_region_add(struct elfmap *m, struct region *r, struct jh__entry *const *es, size_t n);
/* The JIT rewrote [addr, addr+len) inside r's image: the file follows. */
int jh__em_region_patched(struct elfmap *m, struct region *r, uintptr_t addr, size_t len);
/* A function of r's image is gone (its memory may be gone too: nothing here reads it but
 * through jh__em_unswap, which first checks the page is still ours). */
void jh__em_region_forget(struct elfmap *m, struct region *r, uintptr_t start, size_t size,
                          const char *name);
/* r has no live function left: close it, keep its file for perf (or delete it). */
/* Every page r maps back to anonymous memory, same bytes and protections (switched off
 * while the program runs: jh_channels_set). */
void jh__em_region_unswap_all(struct elfmap *m, struct region *r);
void jh__em_region_retire(struct elfmap *m, struct region *r);
/* At close: leave the file where it is, for perf. */
void jh__em_region_close(struct elfmap *m, struct region *r);

/* ---- elfmap_file.c: files and pages, told what to do by the window ---- */

/*
 * A window's descriptor is proven ours (base/files.h, jh__kfd) only when a system call is
 * about to use it: the functions below that take an fd also take EM_FD_LATER, "r's own,
 * proven when needed", and call jh__em_fd right before the call. A LuaJIT trace's add and
 * its parent's patch are stored through the file's shared mapping (elfmap_write.c), which
 * holds the file itself whatever the program does with descriptor numbers: most need no
 * system call on the descriptor, so no statx of it either (1.7 a trace, docs/cost.md).
 */
#define EM_FD_LATER (-2)
/* fd itself, or with EM_FD_LATER r's descriptor, proven ours at most once per hook
 * (opened again if the program closed it and the file is still the same); -EBADF when the
 * file is lost (the caller then makes a new generation). */
int jh__em_fd(struct elfmap *m, struct region *r, int fd);

void jh__em_report_once(struct elfmap *m, int bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
pid_t jh__em_pid(struct elfmap *m);
/* /proc/self/maps, checked to be still ours (base/files.h, jh__kfd), opened again if the
 * program closed it; -1 if it cannot be. */
int jh__em_maps(struct elfmap *m);
uint64_t jh__em_new_id(void);
/* Is (dev, ino) a file this context made? (jh__vma_check's own_file, arg: the elfmap) */
bool jh__em_own_file(void *arg, dev_t dev, ino_t ino);
uint64_t jh__em_name_hash(const char *s);
bool jh__em_build_ids(void);        /* jh__elfmap_build_ids (elfmap_tune.h) */
bool jh__em_eh_frames(void);        /* images carry .eh_frame (a test turns it off) */
/* <dir>/jit-<pid>-<id>.elf, or <dir>/jit-<pid>-g<gen>/jit-<pid>-<id>.elf (created). */
int jh__em_path(struct elfmap *m, pid_t pid, unsigned gen, uint64_t id, char *path, size_t len);
/* Create path as a new file of ours (replacing one a dead process with our pid left), kept
 * in k; its descriptor, or a negative errno (reported once). */
int jh__em_create(struct elfmap *m, const char *path, struct jh__kfd *k);
/* An older generation's file, kept for perf within the limits (path is taken over). */
void jh__em_keep(struct elfmap *m, char *path, uint64_t bytes);
/* jh__elfg_add, and the function's live code bytes into the image's build-id. */
int jh__em_image_add(struct jh__elfg *img, const struct jh__func *f);
/* Write what the image has and the file lacks (its build-id note last): img is r's image
 * (written through r's shared mapping when it has one: r->wmap), or with r NULL an image of
 * a file of its own (pwrite). */
int jh__em_sync(struct elfmap *m, struct region *r, struct jh__elfg *img, int fd);
/* Before the first byte of a change to r's synced image: the note says no build-id until
 * the next jh__em_sync (an id never stands for two contents: docs/fleet.md, "Identity"). */
int jh__em_unsay(struct elfmap *m, struct region *r, int fd);
/* Copy [lo, hi) of live code into m->snap. */
int jh__em_snapshot(struct elfmap *m, uintptr_t lo, uintptr_t hi);
/* The live bytes of [lo, hi) into fd at offset off. */
int jh__em_write_text(struct elfmap *m, int fd, uintptr_t lo, uintptr_t hi, uint64_t off);
/* May [lo, hi) be mapped over (reported once when not)? */
enum jh__vma_verdict jh__em_eligible(struct elfmap *m, uintptr_t lo, uintptr_t hi);
/* Is [lo, hi) still r-x and mapped from one of our files? */
/* jh__vma_check of [lo, hi) with this context's rules (writable pages with JH_OPT_CODE_RWX) */
enum jh__vma_verdict jh__em_check(struct elfmap *m, uintptr_t lo, uintptr_t hi);
bool jh__em_ours(struct elfmap *m, uintptr_t lo, uintptr_t hi);
/* Map [lo, hi) from fd at offset off over the live pages, whose bytes m->snap holds. 0:
 * done; 1: left as they were (reported: sealed, no mapping left...); negative: the channel
 * is broken. */
int jh__em_map_run(struct elfmap *m, int fd, const char *path, uintptr_t lo, uintptr_t hi,
                   uint64_t off);
/* [lo, hi), if still ours, back to anonymous memory with the same bytes. */
void jh__em_unswap(struct elfmap *m, uintptr_t lo, uintptr_t hi);
/* Under valgrind: the image's R+W page of fd (at off) at rw. 0, or 1 (reported). */
int jh__em_map_rw(struct elfmap *m, void *rw, int fd, const char *path, uint64_t off);
/* r's arena for its image's tables, at least need bytes (a new one replaces the old):
 * 0, or 1 (reported once). jh__em_arena_free gives it back. */
int jh__em_arena_new(struct elfmap *m, struct region *r, uint64_t need);
void jh__em_arena_free(struct region *r);
/* After r's image (of file fd) changed: its text PT_LOAD from the lowest page mapped, its
 * tables and first page mapped read-only in r's arena (a bigger arena if they outgrew it),
 * the file brought up to date. fresh: fd is another file than the one mapped there before.
 * 0, or a write error. A mapping that fails is reported once and costs only that. */
int jh__em_map_eh(struct elfmap *m, struct region *r, int fd, const char *path, bool fresh);
/* Piece k of r's arena (eh_at[k]) back to the reservation. */
void jh__em_eh_unmap(struct region *r, int k);
/* elfmap_write.c: r's file's first page and metadata (up to the image's end) mapped shared
 * and writable in r's arena, allocated first: 0; 1 where that cannot be (no arena, too
 * small, the file system cannot allocate ahead: pwrite then); a negative errno (full disk,
 * quota, file-size limit). */
int jh__em_wmap(struct elfmap *m, struct region *r, int fd, const char *path);
/* len code bytes at p into r's file at off (fd): stored through the shared mapping where
 * it covers them and their pages are mapped from the file, else pwrite. 0 or an error. */
int jh__em_put_code(struct elfmap *m, struct region *r, int fd, const void *p, size_t len,
                    uint64_t off);
/* The live code bytes of [lo, hi) (in r's window) into r's file (fd): jh__em_put_code, with
 * no copy of them first where the mapping takes them. 0 or an error. */
int jh__em_put_live(struct elfmap *m, struct region *r, int fd, uintptr_t lo, uintptr_t hi);
/* The mapping given back to the arena's reservation (the spans then go with pwrite). */
void jh__em_wmap_drop(struct region *r);
/* img's spare chunks (chunks its sections moved out of: r's image, or with r NULL an image
 * of file fd) punched out of its file, never used again: when EM_HOLES_BATCH bytes are
 * spare (jh__em_sync), and before a restarted image lays its chunks out anew. */
void jh__em_punch(struct elfmap *m, struct region *r, struct jh__elfg *img, int fd);
/* Under valgrind: a page for an image's R+W segment, reserved (NULL: none left, reported);
 * given back at retirement; all of them freed at close. */
void *jh__em_rw_get(struct elfmap *m);
void jh__em_rw_put(struct elfmap *m, void *p);
void jh__em_rw_free(struct elfmap *m, bool keep_pages);
/* elfmap_valgrind.c: under valgrind, r's image mapped back at exit where its code's
 * addresses are free again, for callgrind's final dump. */
void jh__em_vg_remember(struct elfmap *m, const struct region *r);

#endif
