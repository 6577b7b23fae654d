/*
 * follow.c — see preload.h. The VM's two files, read as they grow:
 *
 *   /tmp/perf-<pid>.map   found by inotify on /tmp (IN_CREATE, IN_MOVED_TO), then read on
 *                         each IN_MODIFY of the file: complete lines only, a line without
 *                         its newline waits for the rest (tools/lib/perfmap_read.h parses);
 *   jit-<pid>.dump        found when the VM maps it executable (guard.c), then read on each
 *                         IN_MODIFY: complete records only; a DEBUG_INFO belongs to the
 *                         LOAD after it (tools/lib/jitdump_read.h parses).
 *
 * Files are opened read-only, by name, with descriptors of our own: the VM's files and
 * descriptors are never touched. A file that shrinks was rewritten (a VM restarting its
 * files, a child after fork): it is read again from the start, and what it says again
 * about code already announced changes nothing. Lines and records that cannot be read are
 * counted and skipped; nothing here can make the VM wait except the guard (guard.c) held
 * around one announcement.
 */
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/files.h"
#include "lib/eh_frame.h"
#include "lib/jitdump_read.h"
#include "lib/perfmap_read.h"

/* A line or record longer than this is not a VM's: it is skipped. */
#define MAX_PENDING (64u << 20)

struct file {
    char path[PATH_MAX];
    struct jhp_fd f;
    int wd;
    uint64_t pos;               /* bytes of the file read so far */
    uint8_t *buf;               /* bytes read and not yet used: a partial line or record */
    size_t len, cap;
    bool skip_line;             /* dropping an overlong line up to its newline */
    uint8_t head[64];           /* the file's first bytes, as read: a rewrite changes them */
    size_t head_len;
};

static struct jhp_fd ino = { -1, 0, 0 };
static int tmp_wd = -1;
static pid_t me;
static double started;
static struct file map = { .f.fd = -1, .wd = -1 }, dump = { .f.fd = -1, .wd = -1 };
static char map_name[64];
/* the jitdump's header, once read, and the DEBUG_INFO waiting for its LOAD */
static struct jhr_jd dump_hdr;
static bool have_hdr;
static uint8_t *dbg, *unw;      /* copies of the pending DEBUG_INFO, UNWINDING_INFO */
static size_t dbg_len, unw_len;

/* ---- announcing ------------------------------------------------------------------------ */

struct lines {
    struct jh_line *v;
    uint32_t n;
    const char *files[64];
    uint32_t nfiles;
};

/* Remove every function ctx has in [a, a+size): the VM reused the addresses. How many. */
static unsigned remove_overlaps(jh_ctx *ctx, uint64_t a, uint64_t size, unsigned step)
{
    unsigned n = 0;
    for (uint64_t p = a; p < a + size;) {
        uint64_t id;
        const void *s;
        size_t sz;
        if (jh_lookup(ctx, (const void *)(uintptr_t)p, &id, &s, &sz, NULL, 0) == 0) {
            jh_code_remove(ctx, id);
            n++;
            p = (uint64_t)(uintptr_t)s + sz;
        } else {
            p += step;
        }
    }
    return n;
}

bool jhp_guess_fp = true;

/* A VM's perf map and jitdump say nothing about frames, but most VMs keep frame pointers:
 * `push rbp; mov rbp, rsp` in the code's first bytes (V8 puts a 14-byte check before it)
 * is a frame gdb and the unwinders can walk through. Found only where the bytes are. */
static void guess_frame(struct jh_code *c)
{
#if defined(__x86_64__)
    static const uint8_t pro[] = { 0x55, 0x48, 0x89, 0xe5 };
    const uint8_t *p = c->start;
    size_t n = c->size < 48 ? c->size : 48;
    for (size_t i = 0; i + sizeof pro <= n; i++)
        if (!memcmp(p + i, pro, sizeof pro)) {
            c->unwind = JH_UNWIND_FRAME_POINTER;
            c->fp_push_end = (uint32_t)i + 1;
            c->fp_set_end = (uint32_t)i + 4;
            return;
        }
#else
    (void)c;
#endif
}

/* c into ctx: without its CFI if the library refuses that, over the code it replaces. */
static int add_to(jh_ctx *ctx, struct jh_code *c)
{
    int rc = jh_code_add(ctx, c, NULL);
    if (rc == -EINVAL && c->unwind == JH_UNWIND_CFI) {
        /* instructions the library does not take (it validates every one): the name
         * and the lines are worth more than the CFI */
        jhp_st.with_cfi--, jhp_st.cfi_refused++;
        c->unwind = JH_UNWIND_NONE, c->cfi = NULL, c->cfi_len = 0;
        if (jhp_guess_fp)
            guess_frame(c);
        rc = jh_code_add(ctx, c, NULL);
    }
    if (rc == JH_EOVERLAP) {
        /* new code where old code was: the old names go. Functions start at least 16
         * bytes apart in every VM seen; a smaller one is found byte by byte. */
        uint64_t a = (uint64_t)(uintptr_t)c->start;
        unsigned n = remove_overlaps(ctx, a, c->size, 16);
        rc = jh_code_add(ctx, c, NULL);
        if (rc == JH_EOVERLAP) {
            n += remove_overlaps(ctx, a, c->size, 1);
            rc = jh_code_add(ctx, c, NULL);
        }
        if (ctx == jhp_ctx)
            jhp_st.replaced += n;
    }
    return rc;
}

static void announce(const char *name, size_t name_len, uint64_t start, uint64_t size,
                     const struct lines *ln, const uint8_t *cfi, size_t cfi_len)
{
    char nm[1024];
    if (!name_len || !size || start + size < start) {
        jhp_st.malformed++;
        return;
    }
    if (!jhp_open())
        return;
    /* a name is any bytes but NUL; V8 and Erlang write some with control bytes */
    size_t n = name_len < sizeof nm - 1 ? name_len : sizeof nm - 1;
    memcpy(nm, name, n);
    nm[n] = 0;
    const void *at = (const void *)(uintptr_t)start;
    jhp_guard_lock();
    if (!jhp_readable(start, size)) {
        jhp_st.unreadable++;    /* freed before we got to it: nothing left to name */
        jhp_guard_unlock();
        return;
    }
    const void *s;
    size_t sz;
    uint64_t id;
    char old[sizeof nm];
    if (jh_lookup(jhp_ctx, at, &id, &s, &sz, old, sizeof old) == 0 && s == at && sz == size &&
        !strcmp(old, nm) && !(ln && ln->n)) {
        jhp_st.same++;          /* said again (both files, a file read again): nothing new */
        jhp_guard_unlock();
        return;
    }
    struct jh_code c = { .sz = sizeof c, .name = nm, .start = at, .size = size };
    if (ln && ln->n) {
        c.lines = ln->v, c.nlines = ln->n;
        c.files = ln->files, c.nfiles = ln->nfiles;
    }
    if (cfi_len) {
        c.unwind = JH_UNWIND_CFI, c.cfi = cfi, c.cfi_len = cfi_len;
        jhp_st.with_cfi++;
    } else if (jhp_guess_fp) {
        guess_frame(&c);
    }
    int rc = add_to(jhp_ctx, &c);
    if (rc >= 0 && jhp_rec)
        add_to(jhp_rec, &c);        /* the record follows what the tools were told */
    jhp_guard_unlock();
    if (rc < 0) {
        jhp_st.failed++;
        return;
    }
    jhp_st.announced++;
    if (ln && ln->n)
        jhp_st.with_lines++;
}

/* ---- reading a growing file -------------------------------------------------------------- */

static void file_close(struct file *f)
{
    if (f->wd >= 0 && jhp_fd_ours(&ino))
        inotify_rm_watch(ino.fd, f->wd);
    jhp_fd_close(&f->f);
    free(f->buf);
    f->wd = -1;
    f->buf = NULL;
    f->len = f->cap = 0;
    f->pos = 0;
    f->skip_line = false;
    f->head_len = 0;
}

/* from_end: a file left by a process of the same pid long ago, read from its end. */
static int file_open(struct file *f, const char *path, bool from_end)
{
    file_close(f);
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = jh__open_regular(path, JH__OPEN_NOFOLLOW);
    if (fd < 0)
        return fd;
    jhp_fd_take(&f->f, fd);
    fd = f->f.fd;
    if (fd < 0)
        return -EBADF;
    f->wd = ino.fd >= 0 ? inotify_add_watch(ino.fd, path, IN_MODIFY | IN_CLOSE_WRITE) : -1;
    struct stat st;
    if (from_end && fstat(fd, &st) == 0) {
        f->pos = (uint64_t)st.st_size;
        lseek(fd, st.st_size, SEEK_SET);
        ssize_t n = pread(fd, f->head, f->pos < sizeof f->head ? f->pos : sizeof f->head, 0);
        f->head_len = n > 0 ? (size_t)n : 0;
    }
    return 0;
}

/* Append what is new to f->buf. false when nothing is. */
static bool file_read(struct file *f)
{
    if (f->f.fd < 0)
        return false;
    if (!jhp_fd_ours(&f->f)) {      /* the process closed it: the number is not ours now */
        f->f.fd = -1;
        return false;
    }
    /* Rewritten (truncated and written again, maybe longer than before): shorter than
     * what we read, or its first bytes are not those we read. */
    struct stat st;
    uint8_t head[sizeof f->head];
    bool rewritten = fstat(f->f.fd, &st) == 0 && (uint64_t)st.st_size < f->pos;
    if (!rewritten && f->head_len)
        rewritten = pread(f->f.fd, head, f->head_len, 0) != (ssize_t)f->head_len ||
                    memcmp(head, f->head, f->head_len);
    if (rewritten) {
        jhp_st.truncations++;   /* from the start again */
        f->head_len = 0;
        lseek(f->f.fd, 0, SEEK_SET);
        f->pos = 0, f->len = 0, f->skip_line = false;
        if (f == &dump)
            have_hdr = false, free(dbg), free(unw), dbg = unw = NULL;
    }
    bool got = false;
    for (;;) {
        if (f->cap - f->len < 65536) {
            size_t cap = f->cap ? f->cap * 2 : 131072;
            uint8_t *b = realloc(f->buf, cap);
            if (!b)
                return got;
            f->buf = b, f->cap = cap;
        }
        ssize_t n = read(f->f.fd, f->buf + f->len, f->cap - f->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return got;
        if (f->pos < sizeof f->head) {
            size_t k = sizeof f->head - f->pos < (size_t)n ? sizeof f->head - f->pos : (size_t)n;
            memcpy(f->head + f->pos, f->buf + f->len, k);
            f->head_len = f->pos + k;
        }
        f->len += (size_t)n, f->pos += (uint64_t)n;
        got = true;
        if (f->len > MAX_PENDING)
            return got;         /* use what is there before reading more */
    }
}

static void consume(struct file *f, size_t used)
{
    memmove(f->buf, f->buf + used, f->len - used);
    f->len -= used;
}

/* ---- the perf map ------------------------------------------------------------------------ */

static void map_lines(void)
{
    struct file *f = &map;
    size_t end = f->len;
    while (end && f->buf[end - 1] != '\n')
        end--;
    size_t off = 0, lineno = 0;
    if (f->skip_line && end) {
        off = (size_t)((uint8_t *)memchr(f->buf, '\n', end) - f->buf) + 1;
        f->skip_line = false;
    }
    while (off < end && !jhp_stopping()) {
        struct jhr_pm_line l;
        int rc = jhr_pm_next(f->buf, end, &off, &lineno, &l, NULL, 0);
        if (rc < 0) {
            jhp_st.malformed++;
            continue;
        }
        jhp_st.map_lines++;
        if (l.size)
            announce(l.name, l.name_len, l.start, l.size, NULL, NULL, 0);
    }
    consume(f, off < end ? off : end);
    if (f->len > MAX_PENDING) {         /* no newline in 64 MiB: not a line */
        jhp_st.malformed++;
        f->len = 0, f->skip_line = true;
    } else if (f->len) {
        jhp_st.partial++;
    }
}

/* ---- the jitdump ------------------------------------------------------------------------- */

/* A file name V8 read from the wrong place: control bytes (what `jitherald check` calls
 * line-garbage), or bytes that are not UTF-8 ("\xd7X", for every function of the script
 * node was given, measured with node 20). The entries after it are misaligned. */
static bool garbage(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f)
            return true;
        if (p[i] < 0x80)
            continue;
        size_t k = p[i] >= 0xc2 && p[i] < 0xe0 ? 1 : p[i] >= 0xe0 && p[i] < 0xf0 ? 2 :
                   p[i] >= 0xf0 && p[i] < 0xf5 ? 3 : 0;
        if (!k || i + k >= n)
            return true;        /* not a lead byte, or cut short */
        for (size_t j = 1; j <= k; j++)
            if ((p[i + j] & 0xc0) != 0x80)
                return true;
        i += k;
    }
    return false;
}

/* The pending DEBUG_INFO as a line table of the LOAD's code, as perf would read it: V8's
 * and LLVM's +0x40 undone (jhr_jd_line_skew), a table with a garbage name dropped (V8),
 * empty names dropped (Erlang), rows outside the code dropped, sorted by offset. */
static void load_lines(const struct jhr_jd *r, uint64_t a, uint64_t s, struct lines *ln,
                       struct jh_line *rows, uint32_t maxrows)
{
    ln->v = rows, ln->n = 0, ln->nfiles = 0;
    if (!dbg)
        return;
    struct jhr_jd rr = *r;
    rr.data = dbg, rr.len = dbg_len, rr.off = 0;
    struct jhr_jd_rec rec;
    if (jhr_jd_next(&rr, &rec) != 1 || rec.id != JH__JD_CODE_DEBUG_INFO ||
        rec.u.debug.code_addr != a)
        return;
    /* first pass: the range of addresses, for the skew */
    size_t pos = 0;
    uint64_t lo = UINT64_MAX, hi = 0, n = 0;
    struct jhr_jd_line l;
    for (uint64_t i = 0; i < rec.u.debug.nr_entry; i++, n++) {
        if (jhr_jd_debug_entry(&rr, &rec, &pos, &l))
            break;
        if (garbage(l.name, l.name_len))
            return;             /* the table is noise: no lines rather than wrong ones */
        if (!l.name_len)
            continue;
        lo = l.addr < lo ? l.addr : lo;
        hi = l.addr > hi ? l.addr : hi;
    }
    uint64_t skew = lo <= hi && jhr_jd_line_skew(lo, hi, a, s) ? 0x40 : 0;
    pos = 0;
    for (uint64_t i = 0; i < n && ln->n < maxrows; i++) {
        jhr_jd_debug_entry(&rr, &rec, &pos, &l);
        if (!l.name_len || l.lineno <= 0 || l.addr < a + skew || l.addr - a - skew >= s)
            continue;
        uint32_t fi = 0;
        while (fi < ln->nfiles && strcmp(ln->files[fi], l.name))
            fi++;
        if (fi == ln->nfiles) {
            if (fi == sizeof ln->files / sizeof ln->files[0])
                continue;
            ln->files[ln->nfiles++] = l.name;   /* NUL-terminated inside dbg */
        }
        struct jh_line row = { (uint32_t)(l.addr - a - skew), (uint32_t)l.lineno, 0, fi };
        uint32_t k = ln->n++;
        while (k && rows[k - 1].offset > row.offset) {   /* V8's go backwards, sometimes */
            rows[k] = rows[k - 1];
            k--;
        }
        rows[k] = row;
    }
}

/* The pending UNWINDING_INFO as jh_code.cfi: the .eh_frame's FDE for the code (perf's
 * layout: code at JH__JD_PERF_TEXT_OFFSET, .eh_frame 8-aligned after it), with its CIE's
 * initial instructions in front, when the CIE has the factors jh_code.cfi assumes (code
 * alignment 1, data alignment -8, return address in 16: V8's and jitherald's). V8's
 * empty ones (a bare .eh_frame_hdr) give nothing. The CFI's length, or 0. */
static size_t load_cfi(const struct jhr_jd *r, uint64_t code_size, uint8_t *out, size_t cap)
{
    if (!unw)
        return 0;
    struct jhr_jd rr = *r;
    rr.data = unw, rr.len = unw_len, rr.off = 0;
    struct jhr_jd_rec rec;
    if (jhr_jd_next(&rr, &rec) != 1 || rec.id != JH__JD_CODE_UNWINDING_INFO)
        return 0;
    uint64_t us = rec.u.unwind.unwinding_size, hs = rec.u.unwind.eh_frame_hdr_size;
    if (us <= hs)
        return 0;
    uint64_t eh_addr = (JH__JD_PERF_TEXT_OFFSET + code_size + 7) & ~7ull;
    struct jhr_eh_fde f;
    char err[160];
    if (jhr_eh_frame_fde(rec.u.unwind.data, (size_t)(us - hs), rec.u.unwind.data + (us - hs),
                         (size_t)hs, eh_addr, JH__JD_PERF_TEXT_OFFSET, code_size, &f, err,
                         sizeof err) ||
        f.caf != 1 || f.daf != -8 || f.ra != 16 || f.cie_len + f.len > cap) {
        jhp_st.cfi_refused++;
        return 0;
    }
    memcpy(out, f.cie_insns, f.cie_len);
    memcpy(out + f.cie_len, f.insns, f.len);
    return f.cie_len + f.len;
}

/* The function ctx has at old, moved to new (over what was there); 0 or < 0. */
static int move_in(jh_ctx *ctx, const void *old, uint64_t new, uint64_t size)
{
    uint64_t id;
    const void *s;
    if (jh_lookup(ctx, old, &id, &s, NULL, NULL, 0) != 0 || s != old)
        return -ENOENT;
    int rc = jh_code_move(ctx, id, (const void *)(uintptr_t)new);
    if (rc == JH_EOVERLAP) {
        unsigned n = remove_overlaps(ctx, new, size, 16);
        if (ctx == jhp_ctx)
            jhp_st.replaced += n;
        rc = jh_code_move(ctx, id, (const void *)(uintptr_t)new);
    }
    return rc;
}

static void dump_record(const struct jhr_jd *r, const struct jhr_jd_rec *rec)
{
    switch (rec->id) {
    case JH__JD_CODE_DEBUG_INFO: {
        jhp_st.dump_debug++;
        uint8_t *c = realloc(dbg, rec->total_size);
        if (!c)
            break;
        memcpy(c, r->data + rec->off, rec->total_size);
        dbg = c, dbg_len = rec->total_size;
        break;
    }
    case JH__JD_CODE_UNWINDING_INFO: {
        uint8_t *c = realloc(unw, rec->total_size);
        if (!c)
            break;
        memcpy(c, r->data + rec->off, rec->total_size);
        unw = c, unw_len = rec->total_size;
        break;
    }
    case JH__JD_CODE_LOAD: {
        jhp_st.dump_loads++;
        static struct jh_line rows[4096];
        static uint8_t cfi[4096];
        struct lines ln;
        load_lines(r, rec->u.load.code_addr, rec->u.load.code_size, &ln, rows,
                   sizeof rows / sizeof rows[0]);
        size_t cfi_len = load_cfi(r, rec->u.load.code_size, cfi, sizeof cfi);
        announce(rec->u.load.name, rec->u.load.name_len, rec->u.load.code_addr,
                 rec->u.load.code_size, &ln, cfi, cfi_len);
        free(dbg), free(unw);
        dbg = unw = NULL;
        break;
    }
    case JH__JD_CODE_MOVE: {
        jhp_st.dump_moves++;
        if (!jhp_open())
            break;
        const void *old = (const void *)(uintptr_t)rec->u.move.old_code_addr;
        jhp_guard_lock();
        if (jhp_readable(rec->u.move.new_code_addr, rec->u.move.code_size) &&
            move_in(jhp_ctx, old, rec->u.move.new_code_addr, rec->u.move.code_size) == 0) {
            jhp_st.moved++;
            if (jhp_rec)
                move_in(jhp_rec, old, rec->u.move.new_code_addr, rec->u.move.code_size);
        }
        jhp_guard_unlock();
        break;
    }
    default:
        break;
    }
}

static void dump_records(void)
{
    struct file *f = &dump;
    size_t used = 0;
    if (!have_hdr) {
        if (f->len < JH__JD_HEADER_SIZE) {
            jhp_st.partial++;
            return;
        }
        if (jhr_jd_open(&dump_hdr, f->buf, f->len) < 0) {
            uint32_t hsz;
            memcpy(&hsz, f->buf + 8, 4);
            if (jhr_jd_is_jitdump(f->buf, f->len) && hsz > f->len && hsz < 4096) {
                jhp_st.partial++;       /* a longer header, not all there yet */
                return;
            }
            jhp_warn("%s: %s: not followed", f->path, dump_hdr.err);
            jhp_st.malformed++;
            file_close(f);
            return;
        }
        have_hdr = true;
        used = dump_hdr.off;
    }
    struct jhr_jd r = dump_hdr;
    r.data = f->buf, r.len = f->len, r.off = used;
    while (!jhp_stopping()) {
        size_t left = r.len - r.off;
        if (left < JH__JD_PREFIX_SIZE)
            break;
        uint32_t total;
        memcpy(&total, r.data + r.off + 4, 4);
        if (r.swap)
            total = __builtin_bswap32(total);
        if (total < JH__JD_PREFIX_SIZE || total > MAX_PENDING) {
            /* no way to find the next record: the rest of this file is lost */
            jhp_warn("%s: record at offset %" PRIu64 " has size %u: the rest of the file "
                     "is not read", f->path, f->pos - f->len + r.off, total);
            jhp_st.malformed++;
            file_close(f);
            return;
        }
        if (total > left)
            break;                      /* half-written: the rest comes later */
        struct jhr_jd_rec rec;
        if (jhr_jd_next(&r, &rec) == 1) {
            dump_record(&r, &rec);
        } else {
            jhp_st.malformed++;         /* its size is right: the next one can be read */
            r.off += total;
        }
    }
    consume(f, r.off);
    if (f->len)
        jhp_st.partial++;
}

/* ---- inotify -------------------------------------------------------------------------- */

void jhp_follow_init(pid_t pid, double start_time)
{
    me = pid;
    started = start_time;
    have_hdr = false;
    snprintf(map_name, sizeof map_name, "perf-%d.map", (int)pid);
    jhp_fd_take(&ino, inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (ino.fd < 0) {
        jhp_warn("inotify: %s: the perf map is not followed", strerror(errno));
        return;
    }
    tmp_wd = inotify_add_watch(ino.fd, "/tmp", IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "/tmp/%s", map_name);
    struct stat st;
    if (lstat(path, &st) == 0) {
        /* there already: written by this process (a wrapper that exec'd us wrote
         * nothing, so by us after an exec) or left by an old one with our pid */
        double mt = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
        file_open(&map, path, mt + 1.0 < started);
    }
}

int jhp_follow_inotify_fd(void) { return ino.fd; }

void jhp_follow_dump(const char *path)
{
    if (dump.f.fd >= 0 && !strcmp(dump.path, path))
        return;
    have_hdr = false;
    free(dbg), free(unw);
    dbg = unw = NULL;
    if (file_open(&dump, path, false) < 0)
        jhp_warn("%s: cannot open it: not followed", path);
}

void jhp_follow_all(void)
{
    while (!jhp_stopping() && file_read(&map))
        map_lines();
    while (!jhp_stopping() && file_read(&dump))
        dump_records();
}

void jhp_follow_events(void)
{
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    if (ino.fd >= 0 && !jhp_fd_ours(&ino))
        ino.fd = -1;            /* closed by the process: the files are still read below */
    while (ino.fd >= 0 && (n = read(ino.fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            if (e->wd == tmp_wd && e->len && !strcmp(e->name, map_name)) {
                char path[PATH_MAX];
                snprintf(path, sizeof path, "/tmp/%s", map_name);
                file_open(&map, path, false);      /* created (again) now: from the start */
            }
            p += sizeof *e + e->len;
        }
    }
    jhp_follow_all();
}

/* In a fork child: the descriptors are the parent's too (their offsets, its inotify
 * watches): closed, never used. */
void jhp_follow_forget(void)
{
    jhp_fd_close(&map.f);
    jhp_fd_close(&dump.f);
    jhp_fd_close(&ino);
    map.wd = dump.wd = tmp_wd = -1;
    jhp_follow_fini();
}

void jhp_follow_fini(void)
{
    file_close(&map);
    file_close(&dump);
    free(dbg), free(unw);
    dbg = unw = NULL;
    jhp_fd_close(&ino);
    tmp_wd = -1;
}
