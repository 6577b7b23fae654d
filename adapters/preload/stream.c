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
#include "preload.h"

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

/* A line or record longer than this is not a VM's: it is skipped. */
#define MAX_PENDING (64u << 20)
#define STREAMS 8

struct jhp_stream {
    enum jhp_kind kind;
    char path[PATH_MAX];
    _Atomic uint64_t pos;       /* bytes of the file heard (pwrite at the end: hear.c) */
    uint8_t *buf;               /* bytes heard and not used yet: a partial line or record */
    size_t len, cap;
    bool skip_line;             /* dropping an overlong line up to its newline */
    bool broken;                /* a record of impossible size: the rest is not read */
    /* the jitdump's header once read, and what waits for the next LOAD */
    bool have_hdr;
    struct jhr_jd hdr;
    uint8_t *dbg, *unw;
    size_t dbg_len, unw_len, dbg_cap, unw_cap;
};

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
    s->len = 0;
    s->skip_line = s->broken = s->have_hdr = false;
    s->dbg_len = s->unw_len = 0;
}

/* Keep n bytes at p after what is pending. */
static bool append(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (*cap - *len < n) {
        size_t c = *cap ? *cap : 4096;
        while (c - *len < n)
            c *= 2;
        uint8_t *b = realloc(*buf, c);
        if (!b)
            return false;
        *buf = b, *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return true;
}

static void consume(struct jhp_stream *s, size_t used)
{
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

/* The pending UNWINDING_INFO as jh_code.eh_frame: its .eh_frame (the .eh_frame_hdr after
 * it is perf's business), described at the address that makes its pc-relative pointers
 * land on the code where the VM put it rather than where perf's synthetic ELF puts it
 * (.text at JH__JD_PERF_TEXT_OFFSET, .eh_frame 8-aligned after the code). The library reads
 * and translates it (JH_UNWIND_EH_FRAME); V8's empty ones (a bare .eh_frame_hdr) give
 * nothing. false: none. */
static bool load_eh_frame(const struct jhp_stream *s, const struct jhr_jd_rec *load,
                          struct jhp_fn *f)
{
    if (!s->unw_len)
        return false;
    struct jhr_jd rr = s->hdr;
    rr.data = s->unw, rr.len = s->unw_len, rr.off = 0;
    struct jhr_jd_rec rec;
    if (jhr_jd_next(&rr, &rec) != 1 || rec.id != JH__JD_CODE_UNWINDING_INFO)
        return false;
    uint64_t us = rec.u.unwind.unwinding_size, hs = rec.u.unwind.eh_frame_hdr_size;
    if (us <= hs)
        return false;
    uint64_t code_size = load->u.load.code_size;
    uint64_t eh_addr = (JH__JD_PERF_TEXT_OFFSET + code_size + 7) & ~7ull;
    f->eh_frame = rec.u.unwind.data;
    f->eh_frame_len = (size_t)(us - hs);
    f->eh_frame_addr = load->u.load.code_addr + (eh_addr - JH__JD_PERF_TEXT_OFFSET);
    return true;
}

static void dump_load(struct jhp_stream *s, const struct jhr_jd *r, const struct jhr_jd_rec *rec)
{
    static struct jh_line rows[4096];
    struct jhr_lines ln = { .rows = rows, .cap = sizeof rows / sizeof rows[0] };
    if (s->dbg_len) {
        struct jhr_jd rr = *r;
        rr.data = s->dbg, rr.len = s->dbg_len, rr.off = 0;
        struct jhr_jd_rec dbg;
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
        s->unw_len = 0;
        if (!append(&s->unw, &s->unw_len, &s->unw_cap, r->data + rec->off, rec->total_size))
            s->unw_len = 0;
        break;
    case JH__JD_CODE_LOAD:
        jhp_st.dump_loads++;
        dump_load(s, r, rec);
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

static void dump_feed(struct jhp_stream *s, const uint8_t *p, size_t n)
{
    if (s->broken)
        return;
    if (!append(&s->buf, &s->len, &s->cap, p, n)) {
        jhp_st.malformed++;
        return;
    }
    size_t used = 0;
    if (!s->have_hdr) {
        if (s->len < JH__JD_HEADER_SIZE)
            return;
        if (jhr_jd_open(&s->hdr, s->buf, s->len) < 0) {
            uint32_t hsz;
            memcpy(&hsz, s->buf + 8, 4);
            if (jhr_jd_is_jitdump(s->buf, s->len) && hsz > s->len && hsz < 4096)
                return;             /* a longer header, not all here yet */
            jhp_warn("%s: %s: not heard", s->path, s->hdr.err);
            jhp_st.malformed++;
            s->broken = true;
            return;
        }
        s->have_hdr = true;
        used = s->hdr.off;
    }
    struct jhr_jd r = s->hdr;
    r.data = s->buf, r.len = s->len, r.off = used;
    for (;;) {
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
                     "is not read", s->path, atomic_load(&s->pos) - s->len + r.off, total);
            jhp_st.malformed++;
            s->broken = true;
            s->len = 0;
            return;
        }
        if (total > left)
            break;                      /* half-written: the rest comes later */
        struct jhr_jd_rec rec;
        if (jhr_jd_next(&r, &rec) == 1) {
            dump_record(s, &r, &rec);
        } else {
            jhp_st.malformed++;         /* its size is right: the next one can be read */
            r.off += total;
        }
    }
    consume(s, r.off);
}

void jhp_stream_feed(struct jhp_stream *s, const void *p, size_t n)
{
    atomic_fetch_add(&s->pos, n);
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
