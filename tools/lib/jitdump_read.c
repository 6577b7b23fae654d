/*
 * jitdump_read.c — see jitdump_read.h. Every length in the file is checked before use;
 * offsets are compared as "wanted <= what is left", never as "p + n <= end", so no sum
 * can wrap. perf's own reader (tools/perf/util/jitdump.c in 6.1) trusts total_size, the
 * debug entry count and unwinding_size; jitdump_check.c reports exactly those cases.
 */
#include "lib/jitdump_read.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static uint32_t rd32(const struct jhr_jd *r, const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return r->swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct jhr_jd *r, const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return r->swap ? __builtin_bswap64(v) : v;
}

int jhr_jd_fail(struct jhr_jd *r, size_t off, const char *fmt, ...)
{
    int n = snprintf(r->err, sizeof r->err, "offset 0x%zx: ", off);
    if (n < 0 || (size_t)n >= sizeof r->err)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
    return JH_EFORMAT;
}

bool jhr_jd_is_jitdump(const uint8_t *data, size_t len)
{
    uint32_t m;
    if (len < 4)
        return false;
    memcpy(&m, data, 4);
    return m == JH__JD_MAGIC || m == JH__JD_MAGIC_SWAPPED;
}

int jhr_jd_open(struct jhr_jd *r, const uint8_t *data, size_t len)
{
    memset(r, 0, sizeof *r);
    r->data = data;
    r->len = len;
    if (!data || len < JH__JD_HEADER_SIZE)
        return jhr_jd_fail(r, 0, "file is %zu bytes, shorter than the %u-byte jitdump header",
                           len, JH__JD_HEADER_SIZE);
    uint32_t magic;
    memcpy(&magic, data, 4);
    if (magic == JH__JD_MAGIC_SWAPPED)
        r->swap = true;
    else if (magic != JH__JD_MAGIC)
        return jhr_jd_fail(r, 0, "bad magic 0x%08" PRIx32 " (a jitdump file starts with 'JiTD' "
                           "or 'DTiJ')", magic);
    r->hdr.magic = JH__JD_MAGIC;
    r->hdr.version = rd32(r, data + 4);
    r->hdr.total_size = rd32(r, data + 8);
    r->hdr.elf_mach = rd32(r, data + 12);
    r->hdr.pad1 = rd32(r, data + 16);
    r->hdr.pid = rd32(r, data + 20);
    r->hdr.timestamp = rd64(r, data + 24);
    r->hdr.flags = rd64(r, data + 32);
    if (r->hdr.total_size < JH__JD_HEADER_SIZE)
        return jhr_jd_fail(r, 8, "header total_size %" PRIu32 " is smaller than the %u-byte "
                           "header", r->hdr.total_size, JH__JD_HEADER_SIZE);
    if (r->hdr.total_size > len)
        return jhr_jd_fail(r, 8, "header total_size %" PRIu32 " runs past the end of the file "
                           "(%zu bytes)", r->hdr.total_size, len);
    r->off = r->hdr.total_size;
    return 0;
}

/* The bytes each known record has at least: its fixed part ("bytes" for MOVE, which has
 * nothing else). */
static const struct { const char *name; uint32_t min; const char *what; } fixed[] = {
    [JH__JD_CODE_LOAD] = { "LOAD", JH__JD_LOAD_FIXED, "fixed bytes" },
    [JH__JD_CODE_MOVE] = { "MOVE", JH__JD_MOVE_SIZE, "bytes" },
    [JH__JD_CODE_DEBUG_INFO] = { "DEBUG_INFO", JH__JD_DEBUG_FIXED, "fixed bytes" },
    [JH__JD_CODE_UNWINDING_INFO] = { "UNWINDING_INFO", JH__JD_UNWIND_FIXED, "fixed bytes" },
};

static int rd_load(struct jhr_jd *r, struct jhr_jd_rec *rec, const uint8_t *b, size_t bl)
{
    __typeof__(rec->u.load) *l = &rec->u.load;
    l->pid = rd32(r, b);
    l->tid = rd32(r, b + 4);
    l->vma = rd64(r, b + 8);
    l->code_addr = rd64(r, b + 16);
    l->code_size = rd64(r, b + 24);
    l->code_index = rd64(r, b + 32);
    const uint8_t *name = b + 40;
    size_t room = bl - 40;
    const uint8_t *nul = memchr(name, 0, room);
    if (!nul)
        return jhr_jd_fail(r, r->off, "LOAD name is not NUL-terminated inside the record");
    l->name = (const char *)name;
    l->name_len = (size_t)(nul - name);
    room -= l->name_len + 1;
    if (l->code_size > room)
        return jhr_jd_fail(r, r->off, "LOAD code_size %" PRIu64 " is larger than the %zu bytes "
                           "left in the record after the name", l->code_size, room);
    l->code = b + bl - l->code_size;        /* where perf takes it */
    return 0;
}

static int rd_move(struct jhr_jd *r, struct jhr_jd_rec *rec, const uint8_t *b, size_t bl)
{
    __typeof__(rec->u.move) *m = &rec->u.move;
    m->pid = rd32(r, b);
    m->tid = rd32(r, b + 4);
    m->vma = rd64(r, b + 8);
    m->old_code_addr = rd64(r, b + 16);
    m->new_code_addr = rd64(r, b + 24);
    m->code_size = rd64(r, b + 32);
    m->code_index = rd64(r, b + 40);
    return 0;
}

static int rd_debug(struct jhr_jd *r, struct jhr_jd_rec *rec, const uint8_t *b, size_t bl)
{
    __typeof__(rec->u.debug) *d = &rec->u.debug;
    d->code_addr = rd64(r, b);
    d->nr_entry = rd64(r, b + 8);
    d->entries = b + 16;
    d->entries_len = bl - 16;
    /* each entry is at least 17 bytes: refuse counts the record cannot hold before anyone
     * loops over them */
    size_t most = d->entries_len / (JH__JD_DEBUG_ENTRY_FIXED + 1);
    if (d->nr_entry > most)
        return jhr_jd_fail(r, r->off, "DEBUG_INFO claims %" PRIu64 " entries but has room for "
                           "at most %zu", d->nr_entry, most);
    return 0;
}

static int rd_unwind(struct jhr_jd *r, struct jhr_jd_rec *rec, const uint8_t *b, size_t bl)
{
    __typeof__(rec->u.unwind) *u = &rec->u.unwind;
    u->unwinding_size = rd64(r, b);
    u->eh_frame_hdr_size = rd64(r, b + 8);
    u->mapped_size = rd64(r, b + 16);
    u->data = b + 24;
    u->data_len = bl - 24;
    if (u->unwinding_size > u->data_len)
        return jhr_jd_fail(r, r->off, "UNWINDING_INFO unwinding_size %" PRIu64 " is larger than "
                           "the %zu data bytes in the record", u->unwinding_size, u->data_len);
    if (u->eh_frame_hdr_size > u->unwinding_size)
        return jhr_jd_fail(r, r->off, "UNWINDING_INFO eh_frame_hdr_size %" PRIu64 " is larger "
                           "than unwinding_size %" PRIu64, u->eh_frame_hdr_size,
                           u->unwinding_size);
    return 0;
}

int jhr_jd_next(struct jhr_jd *r, struct jhr_jd_rec *rec)
{
    memset(rec, 0, sizeof *rec);
    if (r->off >= r->len)
        return 0;
    size_t left = r->len - r->off;
    const uint8_t *p = r->data + r->off;
    if (left < JH__JD_PREFIX_SIZE)
        return jhr_jd_fail(r, r->off, "truncated record: %zu bytes left, a record prefix is %u",
                           left, JH__JD_PREFIX_SIZE);
    rec->off = r->off;
    rec->id = rd32(r, p);
    rec->total_size = rd32(r, p + 4);
    rec->timestamp = rd64(r, p + 8);
    /* total_size 0: not written yet. jitherald stores a unit's first total_size last, into
     * zeros written ahead (src/channels/jitdump.c): the writer is still running, or died
     * there. perf's reader stops at it too. */
    if (rec->total_size == 0) {
        r->unwritten = left;
        return 0;
    }
    if (rec->total_size < JH__JD_PREFIX_SIZE)
        return jhr_jd_fail(r, r->off, "record id %" PRIu32 " has total_size %" PRIu32
                           ", smaller than its 16-byte prefix", rec->id, rec->total_size);
    if (rec->total_size > left)
        return jhr_jd_fail(r, r->off, "record id %" PRIu32 " of %" PRIu32 " bytes runs past the "
                           "end of the file (%zu bytes left): truncated", rec->id,
                           rec->total_size, left);
    const uint8_t *b = p + JH__JD_PREFIX_SIZE;
    size_t bl = rec->total_size - JH__JD_PREFIX_SIZE;
    rec->body = b;
    rec->body_len = bl;
    if (rec->id < JH__JD_CODE_MAX && fixed[rec->id].name && rec->total_size < fixed[rec->id].min)
        return jhr_jd_fail(r, r->off, "%s of %" PRIu32 " bytes, shorter than its %u %s",
                           fixed[rec->id].name, rec->total_size, fixed[rec->id].min,
                           fixed[rec->id].what);
    int err = 0;
    switch (rec->id) {
    case JH__JD_CODE_LOAD: err = rd_load(r, rec, b, bl); break;
    case JH__JD_CODE_MOVE: err = rd_move(r, rec, b, bl); break;
    case JH__JD_CODE_DEBUG_INFO: err = rd_debug(r, rec, b, bl); break;
    case JH__JD_CODE_UNWINDING_INFO: err = rd_unwind(r, rec, b, bl); break;
    default: break;             /* CLOSE has no body; unknown ids are skipped, as perf does */
    }
    if (err)
        return err;
    r->off += rec->total_size;
    return 1;
}

void jhr_jd_debug_fixed(const struct jhr_jd *r, const uint8_t *p, struct jhr_jd_line *out)
{
    out->addr = rd64(r, p);
    out->lineno = (int32_t)rd32(r, p + 8);
    out->discrim = (int32_t)rd32(r, p + 12);
}

int jhr_jd_debug_entry(const struct jhr_jd *r, const struct jhr_jd_rec *rec, size_t *pos,
                       struct jhr_jd_line *out)
{
    const uint8_t *e = rec->u.debug.entries;
    size_t len = rec->u.debug.entries_len;
    if (*pos > len || len - *pos < JH__JD_DEBUG_ENTRY_FIXED + 1)
        return JH_EFORMAT;
    const uint8_t *p = e + *pos;
    jhr_jd_debug_fixed(r, p, out);
    const uint8_t *name = p + 16;
    size_t room = len - *pos - 16;
    const uint8_t *nul = memchr(name, 0, room);
    if (!nul)
        return JH_EFORMAT;
    out->name = (const char *)name;
    out->name_len = (size_t)(nul - name);
    *pos += 16 + out->name_len + 1;
    return 0;
}

bool jhr_jd_line_skew(uint64_t lo, uint64_t hi, uint64_t a, uint64_t s)
{
    return lo >= a && lo - a >= 0x40 && hi - a - 0x40 <= s && (hi - a > s || lo - a == 0x40);
}
