/*
 * stream.c — see preload.h. The bytes the VM writes to a heard file, as they come (hear.c
 * calls jhp_stream_feed under the announcement lock):
 *
 *   perf-<pid>.map   complete lines (tools/lib/perfmap_read.h parses); a line without its
 *                    newline waits for the rest; a "line" of 64 MiB with no newline is
 *                    dropped up to its newline;
 *   jit-<pid>.dump   the header, then complete records (tools/lib/jitdump_read.h); a
 *                    DEBUG_INFO and an UNWINDING_INFO belong to the LOAD after them; a
 *                    record whose size is impossible ends the file for us (said once).
 *
 * A file opened again with truncation starts again (jhp_stream_reset): what it says again
 * about code already announced changes nothing (announce.c sees it is the same). Each
 * complete line or LOAD becomes one jhp_announce, each MOVE one jhp_announce_move.
 */
#include "stream.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/eh_frame.h"
#include "lib/jitdump_lines.h"
#include "lib/jitdump_read.h"
#include "lib/perfmap_read.h"

#define STREAMS 8

static struct jhp_stream streams[STREAMS];
static bool full_said;

struct jhp_stream *jhp_stream_get(enum jhp_kind kind, const char *path)
{
    struct jhp_stream *free_one = NULL;
    for (int i = 0; i < STREAMS; i++) {
        struct jhp_stream *s = &streams[i];
        if (s->kind == kind && !strcmp(s->path, path))
            return s;
        if (!s->kind && !free_one)
            free_one = s;
    }
    if (!free_one || strlen(path) >= sizeof free_one->path) {
        if (!full_said)
            jhp_warn("%s: more than %d heard files, or a path too long: not heard", path,
                     STREAMS);
        full_said = true;
        return NULL;
    }
    free_one->kind = kind;
    snprintf(free_one->path, sizeof free_one->path, "%s", path);
    jhp_stream_reset(free_one);
    return free_one;
}

const char *jhp_stream_path(const struct jhp_stream *s) { return s->path; }


bool jhp_stream_at(const struct jhp_stream *s, uint64_t off)
{
    return atomic_load_explicit(&s->pos, memory_order_relaxed) == off;
}

void jhp_stream_reset(struct jhp_stream *s)
{
    atomic_store(&s->pos, 0);
    s->len = s->want = 0;
    s->at_prefix = false;
    s->skip_line = s->broken = s->have_hdr = false;
    s->dbg_len = s->unw_len = 0;
}

/* Room for n bytes after what is pending. */
static bool reserve(uint8_t **buf, size_t len, size_t *cap, size_t n)
{
    if (*cap - len < n) {
        size_t c = *cap ? *cap : 4096;
        while (c - len < n)
            c *= 2;
        uint8_t *b = realloc(*buf, c);
        if (!b)
            return false;
        *buf = b, *cap = c;
    }
    return true;
}

/* Keep n bytes at p after what is pending. */
static bool append(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (!reserve(buf, *len, cap, n))
        return false;
    memcpy(*buf + *len, p, n);
    *len += n;
    return true;
}

static void consume(struct jhp_stream *s, size_t used)
{
    if (used < s->len)          /* (usually all of it: a record ends the VM's write) */
        memmove(s->buf, s->buf + used, s->len - used);
    s->len -= used;
}

/* ---- the perf map ------------------------------------------------------------------------ */

/* Complete lines of data[0..end). */
static size_t map_lines(const uint8_t *data, size_t end)
{
    size_t off = 0, lineno = 0;
    while (off < end) {
        struct jhr_pm_line l;
        if (jhr_pm_next(data, end, &off, &lineno, &l, NULL, 0) < 0) {
            jhp_st.malformed++;
            continue;
        }
        jhp_st.map_lines++;
        if (!l.size)
            continue;           /* perf ignores them too */
        struct jhp_fn f = { .name = l.name, .name_len = l.name_len, .start = l.start,
                            .size = l.size, .from = JHP_MAP };
        jhp_announce(&f);
    }
    return off;
}

/* node prints its 2,462 map lines at start through vfprintf: the preload prints each
 * itself (writes.c), and parsing the text back for the numbers it was printed from cost
 * ~450 instructions a line (issue 30). What the reader refuses (tools/lib/perfmap_read.c:
 * an empty name, a CR or NUL in it, a range that wraps; size 0 skipped) is refused the
 * same (a NUL cannot be there: the name ends at its first, as glibc prints it); a name with
 * a newline (two lines of text) goes to the reader. test_run_stream compares the two ways. */
bool jhp_stream_map_line(struct jhp_stream *s, const struct jhp_map_line *l)
{
    if (s->kind != JHP_MAP || s->len || s->skip_line || memchr(l->name, '\n', l->name_len))
        return false;
    JHP_KEEP_ERRNO;                     /* the announcement */
    if (!jhp_stream_heard(s, l->n))
        jhp_heard_something();
    /* (no NUL in the name: jhp_format_map_line measured it with strnlen, as glibc prints) */
    if (!l->name_len || memchr(l->name, '\r', l->name_len) || l->start + l->size < l->start) {
        jhp_st.malformed++;
        return true;
    }
    jhp_st.map_lines++;
    if (l->size) {                      /* (size 0: perf ignores such lines too) */
        struct jhp_fn f = { .name = l->name, .name_len = l->name_len, .start = l->start,
                            .size = l->size, .from = JHP_MAP };
        jhp_announce(&f);
    }
    return true;
}

static void map_feed(struct jhp_stream *s, const uint8_t *p, size_t n)
{
    /* The usual case, a whole line or several in one call and nothing pending: parsed where
     * it is, no copy. */
    if (!s->len && !s->skip_line && n && p[n - 1] == '\n') {
        map_lines(p, n);
        return;
    }
    if (!append(&s->buf, &s->len, &s->cap, p, n)) {
        jhp_st.malformed++;
        return;
    }
    size_t end = s->len;
    while (end && s->buf[end - 1] != '\n')
        end--;
    size_t off = 0;
    if (s->skip_line && end) {
        off = (size_t)((uint8_t *)memchr(s->buf, '\n', end) - s->buf) + 1;
        s->skip_line = false;
    }
    if (off < end)
        off += map_lines(s->buf + off, end - off);
    consume(s, off < end ? off : end);
    if (s->len > MAX_PENDING) {         /* no newline in 64 MiB: not a line */
        jhp_st.malformed++;
        s->len = 0;
        s->skip_line = true;
    }
}

/* ---- the jitdump ------------------------------------------------------------------------- */

/* A reader of data[0..len) in the file's byte order: the fields jhr_jd_next reads, not the
 * header's 256-byte message (copied for every write, that was 5% of hearing node). */
static void reader(const struct jhp_stream *s, struct jhr_jd *r, const uint8_t *data, size_t len)
{
    r->data = data, r->len = len, r->off = 0, r->unwritten = 0;
    r->swap = s->hdr.swap;
    r->hdr = s->hdr.hdr;
    r->err[0] = 0;
}

/* The UNWINDING_INFO rec as what the next LOAD's jh_code.eh_frame will be: its .eh_frame
 * (the .eh_frame_hdr after it is perf's business). V8's empty ones (a bare .eh_frame_hdr)
 * give nothing. */
static void keep_eh_frame(struct jhp_stream *s, const struct jhr_jd_rec *rec)
{
    uint64_t us = rec->u.unwind.unwinding_size, hs = rec->u.unwind.eh_frame_hdr_size;
    s->unw_len = 0;
    if (us > hs && !append(&s->unw, &s->unw_len, &s->unw_cap, rec->u.unwind.data, us - hs))
        s->unw_len = 0;
}

/* The pending .eh_frame as jh_code.eh_frame, described at the address that makes its
 * pc-relative pointers land on the code where the VM put it rather than where perf's
 * synthetic ELF puts it (.text at JH__JD_PERF_TEXT_OFFSET, .eh_frame 8-aligned after the
 * code). The library reads and translates it (JH_UNWIND_EH_FRAME). */
static void load_eh_frame(const struct jhp_stream *s, const struct jhr_jd_rec *load,
                          struct jhp_fn *f)
{
    if (!s->unw_len)
        return;
    uint64_t code_size = load->u.load.code_size;
    uint64_t eh_addr = (JH__JD_PERF_TEXT_OFFSET + code_size + 7) & ~7ull;
    f->eh_frame = s->unw;
    f->eh_frame_len = s->unw_len;
    f->eh_frame_addr = load->u.load.code_addr + (eh_addr - JH__JD_PERF_TEXT_OFFSET);
}

static void dump_load(struct jhp_stream *s, const struct jhr_jd_rec *rec)
{
    static struct jh_line rows[4096];   /* under the lock, as the rest */
    static struct jhr_lines ln;
    ln.n = ln.nfiles = 0;
    ln.realigned = false;
    if (s->dbg_len) {
        struct jhr_jd rr;
        reader(s, &rr, s->dbg, s->dbg_len);
        struct jhr_jd_rec dbg;
        ln.rows = rows, ln.cap = sizeof rows / sizeof rows[0];
        if (jhr_jd_next(&rr, &dbg) == 1)
            jhr_jd_load_lines(&rr, &dbg, rec, &ln);
    }
    jhp_st.realigned += ln.realigned && ln.n;
    struct jhp_fn f = { .name = rec->u.load.name, .name_len = rec->u.load.name_len,
        .start = rec->u.load.code_addr, .size = rec->u.load.code_size,
        .lines = ln.n ? rows : NULL, .nlines = ln.n, .files = ln.files, .nfiles = ln.nfiles,
        .from = JHP_DUMP };
    load_eh_frame(s, rec, &f);
    jhp_announce(&f);
    s->dbg_len = s->unw_len = 0;
}

static void dump_record(struct jhp_stream *s, const struct jhr_jd *r, const struct jhr_jd_rec *rec)
{
    switch (rec->id) {
    case JH__JD_CODE_DEBUG_INFO:
        jhp_st.dump_debug++;
        s->dbg_len = 0;
        if (!append(&s->dbg, &s->dbg_len, &s->dbg_cap, r->data + rec->off, rec->total_size))
            s->dbg_len = 0;
        break;
    case JH__JD_CODE_UNWINDING_INFO:
        keep_eh_frame(s, rec);
        break;
    case JH__JD_CODE_LOAD:
        jhp_st.dump_loads++;
        dump_load(s, rec);
        break;
    case JH__JD_CODE_MOVE:
        jhp_st.dump_moves++;
        jhp_announce_move(rec->u.move.old_code_addr, rec->u.move.new_code_addr,
                          rec->u.move.code_size);
        break;
    default:
        break;
    }
}

/* What s->buf must hold before the header or the next record can be read: need bytes
 * (room made for them), or 0 when there is no room (every write then tries). */
static void wait_for(struct jhp_stream *s, size_t need)
{
    s->want = need > s->len && reserve(&s->buf, 0, &s->cap, need) ? need : 0;
    s->at_prefix = false;
}

/* The rest of the file is not read. */
static void broke(struct jhp_stream *s)
{
    jhp_st.malformed++;
    s->broken = true;
    s->len = s->want = 0;
    s->at_prefix = false;
}

/* The header, once buf holds it: false while it does not (or never will: broken). */
static bool dump_header(struct jhp_stream *s)
{
    if (s->len < JH__JD_HEADER_SIZE) {
        wait_for(s, JH__JD_HEADER_SIZE);
        return false;
    }
    if (jhr_jd_open(&s->hdr, s->buf, s->len) < 0) {
        uint32_t magic, hsz;
        memcpy(&magic, s->buf, 4);
        memcpy(&hsz, s->buf + 8, 4);
        if (magic == JH__JD_MAGIC_SWAPPED)
            hsz = __builtin_bswap32(hsz);       /* (in the file's byte order) */
        if (jhr_jd_is_jitdump(s->buf, s->len) && hsz > s->len && hsz < 4096) {
            wait_for(s, hsz);           /* a longer header, not all here yet */
            return false;
        }
        jhp_warn("%s: %s: not heard", s->path, s->hdr.err);
        broke(s);
        return false;
    }
    s->have_hdr = true;
    consume(s, s->hdr.off);
    return true;
}

/* buf has grown to what it waited for, or past it: every complete record in it. */
static void dump_records(struct jhp_stream *s)
{
    if (!s->have_hdr && !dump_header(s))
        return;
    struct jhr_jd r;
    reader(s, &r, s->buf, s->len);
    size_t need = 0;
    for (;;) {
        size_t left = r.len - r.off;
        if (left < JH__JD_PREFIX_SIZE) {
            need = JH__JD_PREFIX_SIZE;
            break;
        }
        uint32_t total;
        memcpy(&total, r.data + r.off + 4, 4);
        if (r.swap)
            total = __builtin_bswap32(total);
        if (total < JH__JD_PREFIX_SIZE || total > MAX_PENDING) {
            /* no way to find the next record: the rest of this file is lost */
            jhp_warn("%s: record at offset %" PRIu64 " has size %u: the rest of the file "
                     "is not read", s->path, atomic_load(&s->pos) - s->len + r.off, total);
            broke(s);
            return;
        }
        if (total > left) {
            need = total;               /* half-written: the rest comes later */
            break;
        }
        struct jhr_jd_rec rec;
        if (jhr_jd_next(&r, &rec) == 1) {
            dump_record(s, &r, &rec);
        } else {
            jhp_st.malformed++;         /* its size is right: the next one can be read */
            r.off += total;
        }
    }
    if (r.off)
        consume(s, r.off);
    wait_for(s, need);
    s->at_prefix = need == JH__JD_PREFIX_SIZE && s->want;
}

/* Do the n bytes the VM just wrote end the LOAD that buf begins with, and lie inside its
 * code, with its name and the name's NUL in buf already? Then they are not copied: nothing
 * here reads a LOAD's code (announce.c reads the code where the VM put it), and a record
 * with the name's NUL present reads the same, whatever its last code_size bytes are (the
 * reader finds the name by that NUL, the code by counting back from the record's end).
 * V8 writes each LOAD's code in one fwrite that ends the record: node's 1.26 MB of
 * builtins at its start, copied for nothing. */
static bool code_only(const struct jhp_stream *s, size_t n, const uint8_t **nul)
{
    const size_t name = JH__JD_LOAD_FIXED;
    if (!s->have_hdr || !s->want || s->len + n != s->want || s->len <= name)
        return false;
    uint32_t id;
    uint64_t code_size;
    memcpy(&id, s->buf, 4);
    memcpy(&code_size, s->buf + 40, 8);
    if (s->hdr.swap)
        id = __builtin_bswap32(id), code_size = __builtin_bswap64(code_size);
    return id == JH__JD_CODE_LOAD && n <= code_size &&
           (*nul = memchr(s->buf + name, 0, s->len - name));
}

/* The LOAD code_only found complete (nul: its name's NUL), with no DEBUG_INFO nor .eh_frame
 * waiting for it (V8's builtins: node's 2,204 LOADs at its start): announced from its
 * fields as the reader reads them, without the reader's pass over the buffer (~200
 * instructions a record, issue 30); true. false, and nothing done, for a code_size the
 * reader refuses (more than the record holds after the name): read the usual way. */
static bool load_alone(struct jhp_stream *s, const uint8_t *nul)
{
    const uint8_t *name = s->buf + JH__JD_LOAD_FIXED;
    size_t name_len = (size_t)(nul - name);
    uint64_t addr, size;
    memcpy(&addr, s->buf + 32, 8);
    memcpy(&size, s->buf + 40, 8);
    if (s->hdr.swap)
        addr = __builtin_bswap64(addr), size = __builtin_bswap64(size);
    if (size > s->want - JH__JD_LOAD_FIXED - name_len - 1)
        return false;
    jhp_st.dump_loads++;
    struct jhp_fn f = { .name = (const char *)name, .name_len = name_len, .start = addr,
                        .size = size, .from = JHP_DUMP };
    jhp_announce(&f);
    s->dbg_len = s->unw_len = 0;        /* (as dump_load leaves them) */
    s->len = 0;
    wait_for(s, JH__JD_PREFIX_SIZE);
    s->at_prefix = s->want != 0;
    return true;
}

/* Do the n bytes the VM just wrote end an UNWINDING_INFO that buf begins with, one with no
 * .eh_frame in it (V8's before each LOAD without unwinding info: a bare .eh_frame_hdr,
 * node's 2,194 at its start), its fixed part in buf already? Then what reading it would do
 * is done: the next LOAD gets no .eh_frame (keep_eh_frame), buf waits for the next prefix;
 * the record is neither copied nor read (~350 instructions a record, issue 30). Anything
 * else in it (an .eh_frame, sizes the reader refuses) goes the usual way. */
static bool empty_unwind(struct jhp_stream *s, size_t n)
{
    const size_t fixed = JH__JD_UNWIND_FIXED;
    if (!s->have_hdr || !s->want || s->len + n != s->want || s->len < fixed)
        return false;
    uint32_t id;
    uint64_t us, hs;
    memcpy(&id, s->buf, 4);
    memcpy(&us, s->buf + JH__JD_PREFIX_SIZE, 8);
    memcpy(&hs, s->buf + JH__JD_PREFIX_SIZE + 8, 8);
    if (s->hdr.swap)
        id = __builtin_bswap32(id), us = __builtin_bswap64(us), hs = __builtin_bswap64(hs);
    /* (the reader: unwinding_size within the data, eh_frame_hdr_size within that) */
    if (id != JH__JD_CODE_UNWINDING_INFO || us != hs || us > s->want - fixed)
        return false;
    s->unw_len = 0;
    s->len = 0;
    wait_for(s, JH__JD_PREFIX_SIZE);
    s->at_prefix = s->want != 0;
    return true;
}

static void dump_feed(struct jhp_stream *s, const uint8_t *p, size_t n)
{
    if (s->broken)
        return;
    if (empty_unwind(s, n))
        return;
    const uint8_t *nul;
    if (code_only(s, n, &nul)) {
        s->len += n;                    /* (room: cap >= want, wait_for and prefix_read) */
        if (!s->dbg_len && !s->unw_len && load_alone(s, nul))
            return;
        dump_records(s);
        return;
    }
    if (!append(&s->buf, &s->len, &s->cap, p, n)) {
        jhp_st.malformed++;
        return;
    }
    dump_records(s);
}

/* Everything else: lines and records to read. */
void jhp_stream_take(struct jhp_stream *s, const void *p, size_t n)
{
    JHP_KEEP_ERRNO;                     /* realloc, the announcements */
    if (!jhp_stream_heard(s, n))
        jhp_heard_something();
    if (s->kind == JHP_MAP)
        map_feed(s, p, n);
    else
        dump_feed(s, p, n);
}

void jhp_stream_catch_up(struct jhp_stream *s, int fd)
{
    static uint8_t chunk[65536];        /* under the lock: not on the VM thread's stack */
    uint64_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, chunk, sizeof chunk, (off_t)off);
        if (n <= 0)
            break;
        jhp_stream_feed(s, chunk, (size_t)n);
        off += (uint64_t)n;
    }
}
