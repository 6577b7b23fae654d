/*
 * elfmap_write.c — how an elfmap image's metadata reaches its file (elfmap.h): the spans
 * fmt/elf_grow.c says changed (each grown section, the section table, .shstrtab and
 * .debug_abbrev, the R+W page, the headers, the build-id note) are stored through shared,
 * writable mappings of the file instead of a pwrite each: a function's add cost ~14
 * pwrites for them and a patch 2 (docs/cost.md), now none. What is left to pwrite is code.
 *
 * Where the mappings lie: in the window's arena (elfmap_file.c, jh__em_arena_new), which
 * gives the image's metadata its addresses (file offset meta_off on at one page past the
 * arena's start): the shared mapping takes the place of the read-only ones of .eh_frame and
 * .eh_frame_hdr there. The first page stays mapped private and read-only at the arena's
 * start, the file's lowest mapping (perf and libdw take it for the image's load address)
 * and the one a core dump holds (the kernel dumps the first page of a private file
 * mapping, never a shared one: eu-stack --core and tools/lib/core_read.c read the program
 * headers and the build-id there); the headers and the note are written through a second,
 * shared mapping of that page at the arena's top. Tools that group a file's lines of
 * /proc/PID/maps (libdw: consecutive lines of one inode make one module, its lowest line
 * the load address) then see the same module as before: a writable mapping of the file
 * anywhere else could have been taken for the image's start. Without an arena (under
 * valgrind, an image with no .eh_frame yet, no address space below the code) the spans
 * are written with pwrite, as before.
 *
 * A full disk stays an error: a store into a page of a shared file mapping that the file
 * system cannot back raises SIGBUS, so the pages are allocated before the mapping reaches
 * them (written with zeros where no write reached them: fill_holes), and the allocation's
 * ENOSPC or EFBIG is the write error the caller reports (tests/integration/
 * elfmap_disk_full.sh); and only on file systems that rewrite an allocated page in place
 * (in_place). Others, and one that cannot allocate ahead (the first page's fallocate:
 * EOPNOTSUPP), keep pwrite.
 *
 * Fork: the child inherits the mapping (its code's tables stay readable there) but never
 * writes through it (its windows are foreign: elfmap.c, elfmap_forked; the parent's are
 * frozen), and a window's next change in either is a new file, mapped there anew.
 *
 * Order (docs/fleet.md, "Identity"): the note is made void before the first byte of a
 * change and written last, after all of it, each store fenced (a reader of the page cache
 * sees them in that order).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/vec.h"
#include "channels/elfmap.h"

/* Where file range [off, off+len) lies in r's shared mappings; NULL: outside them. */
static uint8_t *wmap_at(const struct elfmap *m, const struct region *r, uint64_t off,
                        size_t len)
{
    uint64_t meta = r->img.s.meta_off;
    if (!r->wmap || r->frozen || r->foreign)
        return NULL;                /* (a file a fork child maps: never written, belt) */
    if (off + len <= m->page)
        return r->w0 + off;
    if (off >= meta && off + len <= r->wmap_end)
        return r->wm + (off - meta);
    return NULL;
}

void jh__em_wmap_drop(struct region *r)
{
    if (r->wabove) {
        if (r->w0)
            munmap(r->w0, r->wm_cap + (size_t)(r->wm - r->w0));
    } else if (r->wmap) {
        for (int k = 0; k < 3; k++)
            jh__em_eh_unmap(r, k);
    }
    r->wmap = r->wabove = r->wcode = false;
    r->wmap_end = 0;
    r->w0 = r->wm = NULL;
    r->wm_cap = 0;
}

/*
 * A file system where a page, once allocated, is rewritten in place: a store through the
 * mapping then never needs new space. On a copy-on-write one (btrfs, f2fs, bcachefs...)
 * every rewrite of a page that was written back needs new blocks, and a full disk would
 * be a SIGBUS at that store whatever was allocated before: those keep pwrite, as do
 * network and FUSE file systems.
 */
static bool in_place(int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0)
        return false;
    switch ((unsigned long)sf.f_type) {
    case TMPFS_MAGIC: case RAMFS_MAGIC: case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC:
        return true;
    default:
        return false;
    }
}

/* Allocate [from, to) of fd (growing the file): 0, 1 (the file system cannot: EOPNOTSUPP),
 * or the negative errno of a full disk, a quota or a file-size limit. */
static int allocate(int fd, uint64_t from, uint64_t to)
{
    if (to <= from)
        return 0;
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);      /* a file-size limit: EFBIG, not SIGXFSZ */
    int err = fallocate(fd, 0, (off_t)from, (off_t)(to - from)) ? -errno : 0;
    jh__fsize_guard_end(&g, err);
    return err == -EOPNOTSUPP || err == -ENOSYS ? 1 : err;
}

/*
 * [from, to) of fd allocated by writing zeros into its holes (lseek's SEEK_HOLE: what no
 * write has reached; past the file's end, all of it), never over a byte written: the
 * write is the allocation (ext4 and xfs reserve a delayed allocation's blocks at the
 * write, which fails with ENOSPC, EDQUOT or EFBIG then; tmpfs allocates the pages), and a
 * first store into a page so written is a fault of ~0.15 us, where one into a page of a
 * fallocated, unwritten extent is ~3.3 us (ext4 converts it under a journal handle). So
 * no fallocate (~25 us of ext4 journal each, five a LuaJIT window: the metadata's chunks
 * at its first mapping, whose synced sections' tails are holes, and each growth); only
 * the first page's, which also tells a file system that cannot allocate ahead (ramfs,
 * whose SEEK_HOLE sees no holes), once per device (jh__em_wmap). 0 or a negative errno.
 */
static int fill_holes(int fd, uint64_t from, uint64_t to)
{
    int err = 0;
    while (from < to && !err) {
        off_t h = lseek(fd, (off_t)from, SEEK_HOLE), d;
        if (h < 0 && errno != ENXIO)
            return -errno;
        h = h < 0 ? (off_t)from : h;            /* (ENXIO: from lies past the file's end) */
        if ((uint64_t)h >= to)
            break;
        d = lseek(fd, h, SEEK_DATA);
        if (d < 0 && errno != ENXIO)
            return -errno;
        uint64_t e = d < 0 || (uint64_t)d > to ? to : (uint64_t)d;
        err = jh__pwrite_zeros(fd, (uint64_t)h, e, NULL);
        from = e;
    }
    return err;
}

/*
 * Without an arena (the JIT's code lies where no address space below it is free: LuaJIT's
 * near its binary), the first page and the metadata are mapped just above the window's
 * span, where they are the file's highest lines, never its lowest: libdw's module then
 * starts at the code as before (its end reaches the mapping, as its start reaches an
 * arena below the code). Only where that address space is free (MAP_FIXED_NOREPLACE: a
 * place asked for, nothing of the program's ever replaced); else pwrite.
 */
static int map_above(struct elfmap *m, struct region *r, int fd, uint64_t end)
{
    uint64_t meta = r->img.s.meta_off;
    /* exactly the file's metadata: a page past the file's end faults for whoever reads it
     * (a debugger through /proc/PID/mem, gcore), so a growth maps the new bytes past it */
    size_t cap = (size_t)(end - meta);
    jh__em_wmap_drop(r);
    uint8_t *at = (uint8_t *)(span_lo(r) + EM_SPAN);
    /* The whole file where the address space allows, the code's span included: the code's
     * bytes are then stored there too (jh__em_put_code), not written with a pwrite per
     * function and per patch. Else the first page and the metadata alone. */
    void *all = mmap(at, (size_t)end, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
                     fd, 0);
    if (all == at) {
        r->w0 = at;
        r->wm = at + meta;
        r->wm_cap = cap;
        r->wabove = r->wcode = true;
        return 0;
    }
    if (all != MAP_FAILED)
        munmap(all, (size_t)end);   /* (an older kernel's hint taken elsewhere) */
    void *p0 = mmap(at, m->page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    void *pm = p0 == at ? mmap(at + m->page, cap, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_FIXED_NOREPLACE, fd, (off_t)meta) : MAP_FAILED;
    if (pm != at + m->page) {
        /* (an older kernel takes MAP_FIXED_NOREPLACE for a hint: never keep another place) */
        if (p0 != MAP_FAILED)
            munmap(p0, m->page);
        if (pm != MAP_FAILED)
            munmap(pm, cap);
        return 1;
    }
    r->w0 = at;
    r->wm = at + m->page;
    r->wm_cap = cap;
    r->wabove = true;
    return 0;
}

/*
 * A growth of an image mapped above its span (see map_above): only the new bytes are mapped,
 * right after the old ones (the kernel merges the two into one mapping), so that the pages
 * written so far keep their page tables: mapping it all again made every page's next store
 * a fault (a LuaJIT trace's stores went through ~0.75 faults, 4 us, docs/cost.md). 1: the
 * address space past it is not free (nothing of the program's is ever replaced): all of it
 * is mapped again elsewhere than above, by map_above's caller falling back.
 */
static int grow_above(struct elfmap *m, struct region *r, int fd, uint64_t end)
{
    uint64_t meta = r->img.s.meta_off;
    size_t cap = (size_t)(end - meta), add = cap - r->wm_cap;
    if (cap <= r->wm_cap || r->wm_cap % m->page)
        return 1;
    uint8_t *at = r->wm + r->wm_cap;
    void *p = mmap(at, add, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
                   (off_t)(meta + r->wm_cap));
    if (p != at) {
        if (p != MAP_FAILED)
            munmap(p, add);         /* (an older kernel's hint taken elsewhere) */
        return 1;
    }
    r->wm_cap = cap;
    return 0;
}

/* In the arena (see the top of this file): 0, or 2 (a mapping failed). Growing (!whole),
 * only the bytes past the old end are mapped (as grow_above, for the same reason). */
static int map_arena(struct elfmap *m, struct region *r, int fd, uint64_t end, bool whole)
{
    uint64_t meta = r->img.s.meta_off;
    /* The first page twice: private and read-only at the arena's start (the file's lowest
     * mapping, and the one a core dump holds), shared and writable at its top (where the
     * headers and the note are written); the metadata shared and writable in between. */
    uintptr_t at = r->arena + m->page, top = r->arena + r->arena_len - m->page;
    uint64_t from = whole ? 0 : r->wmap_end - meta;
    bool failed = (whole && (mmap((void *)r->arena, m->page, PROT_READ, MAP_PRIVATE | MAP_FIXED,
                                  fd, 0) == MAP_FAILED ||
                             mmap((void *)top, m->page, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)) ||
                  mmap((void *)(at + from), end - meta - from, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_FIXED, fd, (off_t)(meta + from)) == MAP_FAILED;
    r->eh_at[2] = r->arena;
    r->eh_len[2] = m->page;
    r->eh_at[1] = top;
    r->eh_len[1] = m->page;
    r->eh_at[0] = at;
    r->eh_len[0] = end - meta;
    r->w0 = (uint8_t *)top;
    r->wm = (uint8_t *)at;
    r->wmap = true;                 /* (so that a failure is dropped whole) */
    return failed ? 2 : 0;
}

int jh__em_wmap(struct elfmap *m, struct region *r, int fd, const char *path)
{
    uint64_t meta = r->img.s.meta_off, end = r->img.end;
    if (r->wmap && end <= r->wmap_end)
        return 0;
    /* an arena whose image has no tables yet has no first page mapped there: pwrite */
    bool arena = r->arena && !r->arena_lost;
    if (r->wmap_off || (arena && (!jh__elfg_eh_reach(&r->img) ||
                                  2 * m->page + (end - meta) > r->arena_len))) {
        /* (one that cannot grow goes: the tables are then mapped as before, jh__em_map_eh,
         * until a bigger arena takes them all) */
        jh__em_wmap_drop(r);
        return 1;
    }
    if ((fd = jh__em_fd(m, r, fd)) < 0)
        return fd;
    bool whole = !r->wmap;          /* (else only the new chunks: the rest is allocated) */
    int err = 0;
    /* What the file system can do is asked once per device: whether it rewrites a page in
     * place and allocates ahead is the file system's, the same for every file elfmap
     * creates there (ext4 gives each new file extents, or none of them). A window's file
     * after the first skips the fstatfs and the fallocate (~20 us of ext4 journal, once a
     * LuaJIT window: docs/cost.md, "a ninth round"); its first page needs no allocation
     * of its own (the headers were written there with pwrite before it was ever mapped:
     * publish's sync), and a full disk is then the zeros' write error below, as it is at
     * any growth. Only a success is kept: a file system that cannot is asked again (ramfs
     * says EOPNOTSUPP each time, and pwrite stays). */
    if (whole && !(m->wdev_ok && m->wdev == r->fd.dev)) {
        if (!in_place(fd)) {
            r->wmap_off = true;
            return 1;
        }
        err = allocate(fd, 0, m->page);
        if (!err && r->fd.fd >= 0) {
            m->wdev = r->fd.dev;
            m->wdev_ok = true;
        }
    }
    /* Growing, the file is allocated and mapped ahead: as much again as its metadata has,
     * up to EM_AHEAD (a section outgrowing its chunk grows in place or moves, to a chunk
     * twice its size), so that a LuaJIT image's dozen growths, an mmap and a write of
     * zeros each, are a handful; a big image's allocated and unused tail
     * stays under EM_AHEAD (sections moving into spare chunks, its end may never reach
     * where it doubled to). Exactly what is needed when a full disk or a file-size limit
     * refuses that. The file may then end past the image's last chunk: zeros. */
    uint64_t want = end;
    if (!whole) {
        uint64_t ahead = r->wmap_end - meta < EM_AHEAD ? r->wmap_end - meta : EM_AHEAD;
        uint64_t twice = r->wmap_end + ahead;
        twice = (twice + m->page - 1) & ~(uint64_t)(m->page - 1);
        if (twice > end && (!arena || 2 * m->page + (twice - meta) <= r->arena_len))
            want = twice;
    }
    uint64_t afrom = whole ? meta : r->wmap_end;
    if (!err && (err = fill_holes(fd, afrom, want)) < 0 && want > end)
        err = fill_holes(fd, afrom, want = end);
    end = want;
    /* the offset from which the file is newly mapped (growing: its new bytes only) */
    uint64_t from = whole ? meta : r->wmap_end;
    if (!err && !arena) {
        if (whole || !r->wabove || grow_above(m, r, fd, end) != 0) {
            from = meta;
            err = map_above(m, r, fd, end);
        }
    } else if (!err) {
        err = map_arena(m, r, fd, end, whole);
    }
    if (err) {
        if (err == 2)
            jh__em_report_once(m, R_EH, "cannot map %s to write it: %s (written with pwrite)",
                               path, strerror(errno));
        /* (a failed MAP_FIXED may have unmapped the range: reserved again by the drop) */
        jh__em_wmap_drop(r);
        r->wmap_off |= err > 0;
        return err > 0 ? 1 : err;
    }
    /* A store into a page the cache does not hold yet is a read fault first, and the
     * kernel would read ahead around it (up to 128 KiB of zeros from unwritten extents on
     * ext4: measured, page faults took 11% of a LuaJIT run's CPU) */
    madvise(r->wm + (from - meta), (size_t)(end - from), MADV_RANDOM);
    r->wmap = true;
    r->wmap_end = end;
    return 0;
}

/*
 * Chunks sections moved out of stay in the file, allocated and mapped, as spare room that
 * the next section to outgrow its chunk moves into (fmt/elf_grow.c: best fit, else the
 * file's end): its first stores then find the pages present, and no allocation or mapping
 * is needed. They are punched out (FALLOC_FL_PUNCH_HOLE: an extent-tree change in ext4's
 * journal, and with the online discard of this machine's file system a discard of each
 * extent, ~2.6 ms of wall time) only when EM_HOLES_BATCH bytes are spare: a LuaJIT image
 * never gets there, so the punches at each retire (22 a run of stress.lua, 10% of elfmap's
 * CPU) are gone; what a file keeps is less than its sections' chunks (each spare chunk is
 * smaller than the one its section moved to), counted on disk with the file when it is kept
 * for perf (jh__em_keep), and freed whole when it is deleted.
 */
static void punch(int fd, uint64_t off, uint64_t len)
{
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
}

/* Is [off, off+len) of r's file code stored through the shared mapping? Only the code's
 * pages mapped from the file: those were written whole once (their blocks allocated: a
 * store there never needs new space, so a full disk is never a SIGBUS), and the window's
 * span lies below the metadata (off < meta). */
static bool code_mapped(const struct elfmap *m, const struct region *r, uint64_t off,
                        size_t len)
{
    bool mapped = r->wcode && r->wmap && !r->frozen && !r->foreign && len &&
                  off >= m->page && off + len <= m->page + EM_SPAN;
    uintptr_t a = span_lo(r) + (uintptr_t)(off - m->page);     /* (off_of, inverted) */
    for (uintptr_t pa = a - a % m->page; mapped && pa < a + len; pa += m->page)
        mapped = is_mapped(m, r, pa);
    return mapped;
}

int jh__em_put_code(struct elfmap *m, struct region *r, int fd, const void *p, size_t len,
                    uint64_t off)
{
    if (!code_mapped(m, r, off, len))
        return (fd = jh__em_fd(m, r, fd)) < 0 ? fd : jh__pwrite_all(fd, p, len, off);
    memcpy(r->w0 + off, p, len);
    return 0;
}

int jh__em_put_live(struct elfmap *m, struct region *r, int fd, uintptr_t lo, uintptr_t hi)
{
    uint64_t off = off_of(m, r, lo);
    if (!code_mapped(m, r, off, hi - lo)) {
        int err = jh__em_snapshot(m, lo, hi);
        return err ? err : jh__em_put_code(m, r, fd, m->snap.p, hi - lo, off);
    }
    /* (a page of the code not written since it was mapped reads this very page of the
     * file: the copy then stores its own bytes) */
    memcpy(r->w0 + off, (const void *)lo, hi - lo);
    return 0;
}

/* One span into the file: through the mapping, else pwrite. */
static int put(struct elfmap *m, struct region *r, int fd, const struct jh__elfg_span *v)
{
    uint8_t *p = r ? wmap_at(m, r, v->off, v->len) : NULL;
    if (!p)
        return (fd = jh__em_fd(m, r, fd)) < 0 ? fd : jh__pwrite_all(fd, v->p, v->len, v->off);
    memcpy(p, v->p, v->len);
    return 0;
}

int jh__em_sync(struct elfmap *m, struct region *r, struct jh__elfg *img, int fd)
{
    /* chunks that moved to the end of the file: allocated and mapped first */
    if (r && r->wmap && img->end > r->wmap_end) {
        int err = jh__em_wmap(m, r, fd, r->path ? r->path : "an image");
        if (err < 0)
            return err;
    }
    struct jh__elfg_span v[JH__ELFG_MAXSPANS];
    int n = jh__elfg_spans(img, v);
    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        if (i == n - 1)
            atomic_thread_fence(memory_order_release);  /* the note last (see above) */
        int err = put(m, r, fd, &v[i]);
        if (err)
            return err;
    }
    jh__elfg_synced(img);
    if (img->spare.bytes >= EM_HOLES_BATCH)
        jh__em_punch(m, r, img, fd);
    return 0;
}

void jh__em_punch(struct elfmap *m, struct region *r, struct jh__elfg *img, int fd)
{
    struct jh__elfg_span v[JH__ELFG_MAXSPANS];
    if (!img->spare.bytes || (fd = jh__em_fd(m, r, fd)) < 0)
        return;
    for (int n; (n = jh__elfg_take_spare(img, v, JH__ELFG_MAXSPANS)) > 0;)
        for (int i = 0; i < n; i++)
            punch(fd, v[i].off, v[i].len);
}

int jh__em_unsay(struct elfmap *m, struct region *r, int fd)
{
    struct jh__elfg_span v = jh__elfg_note_void(&r->img);
    int err = put(m, r, fd, &v);
    atomic_thread_fence(memory_order_seq_cst);      /* before any byte of the change */
    return err;
}
