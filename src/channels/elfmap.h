/*
 * elfmap.h — the elfmap channel's state, shared by its two parts:
 *   elfmap.c         the hooks: which image window a function goes to, what each hook does
 *   elfmap_region.c  one window's image file: creating it, keeping it up to date in place,
 *                    mapping its pages over the JIT's, replacing it by a new generation,
 *                    and the files of older generations kept for perf
 * pageswap.c holds the mechanics of replacing live pages and of reading /proc/self/maps;
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
 * a mapping the JIT grows with mremap reads zeros there, never past the end of the file.
 */
#define EM_WINDOW ((uintptr_t)1 << 20)
#define EM_LEAD ((uintptr_t)1 << 20)
#define EM_SPAN ((uintptr_t)3 << 20)
#define EM_GAP ((uint64_t)256 << 20)

/* Older generations' files kept for perf report (see docs/elfmap.md, "Files"). */
#define EM_KEEP_FILES 256
#define EM_KEEP_BYTES ((uint64_t)64 << 20)

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
    int fd;
    char *path;
    struct jh__elfg img;
    uint8_t *mapped;            /* a bit per page of the span: mapped from this file */
    size_t nlive;               /* live functions in the image */
    struct tomb *tombs;
    size_t ntombs, captombs;
    bool frozen;                /* a fork child maps this file: its code bytes stay as they are */
    bool foreign;               /* (in a fork child) the parent's file: never written to */
    void *rw;                   /* under valgrind: the R+W mapping, one page */
    dev_t dev;
    ino_t ino;
};

struct own_file {
    dev_t dev;
    ino_t ino;
};

struct kept_file {
    char *path;
    uint64_t bytes;
};

/* One-time reports. */
enum { R_VERDICT = 0, R_CHANGED = 16, R_BUILD, R_FILE, R_MAP, R_RANGE, R_STRADDLE };

struct elfmap {
    const struct jh__chan_env *env;
    size_t page;
    int maps_fd;
    bool valgrind;              /* running under valgrind: see elfmap_region.c, publish() */
    struct region **reg;        /* sorted by lo, windows disjoint */
    size_t nreg, capreg;
    struct own_file *own;       /* every file this context made (pages mapped from them are
                                   ours to replace) */
    size_t nown, capown;
    struct kept_file *kept;     /* older generations, oldest first */
    size_t nkept, capkept;
    uint64_t kept_bytes;
    const struct jh__func **fns;    /* scratch */
    size_t capfns;
    struct jh__buf snap;        /* scratch: page snapshots */
    uint32_t reported;
    unsigned pid_gen;           /* jh__fork_generation() when pid was read */
    pid_t pid;
    uint64_t swaps, fallbacks;
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

void jh__em_report_once(struct elfmap *m, int bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
pid_t jh__em_pid(struct elfmap *m);

/* ---- elfmap_region.c ---- */

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
/* A function of r's image is gone (its memory may be gone too: nothing here reads it). */
void jh__em_region_forget(struct elfmap *m, struct region *r, uintptr_t start, size_t size,
                          const char *name);
/* r has no live function left: close it, keep its file for perf (or delete it). */
void jh__em_region_retire(struct elfmap *m, struct region *r);
/* At close: leave the file where it is, for perf. */
void jh__em_region_close(struct elfmap *m, struct region *r);
/* Test hook (elfmap_tune.h). */
void jh__em_call_swap_hook(uintptr_t lo, uintptr_t hi);

#endif
