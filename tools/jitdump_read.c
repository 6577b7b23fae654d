/*
 * jitdump_read.c — see jitdump_read.h. Every length in the file is checked before use;
 * offsets are compared as "wanted <= what is left", never as "p + n <= end", so no sum
 * can wrap. perf's own reader (tools/perf/util/jitdump.c in 6.1) trusts total_size, the
 * debug entry count and unwinding_size; the checker below reports exactly those cases.
 */
#include "jitdump_read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t bswap32(uint32_t v) { return __builtin_bswap32(v); }
static uint64_t bswap64(uint64_t v) { return __builtin_bswap64(v); }

static uint32_t rd32(const struct jh_jdr *r, const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return r->swap ? bswap32(v) : v;
}

static uint64_t rd64(const struct jh_jdr *r, const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return r->swap ? bswap64(v) : v;
}

__attribute__((format(printf, 3, 4)))
static int fail(struct jh_jdr *r, size_t off, const char *fmt, ...)
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

int jh_jdr_open(struct jh_jdr *r, const uint8_t *data, size_t len)
{
    memset(r, 0, sizeof *r);
    r->data = data;
    r->len = len;
    if (!data || len < JH__JD_HEADER_SIZE)
        return fail(r, 0, "file is %zu bytes, shorter than the %u-byte jitdump header", len,
                    JH__JD_HEADER_SIZE);
    uint32_t magic;
    memcpy(&magic, data, 4);
    if (magic == JH__JD_MAGIC_SWAPPED)
        r->swap = true;
    else if (magic != JH__JD_MAGIC)
        return fail(r, 0, "bad magic 0x%08" PRIx32 " (a jitdump file starts with 'JiTD' or 'DTiJ')",
                    magic);
    r->hdr.magic = JH__JD_MAGIC;
    r->hdr.version = rd32(r, data + 4);
    r->hdr.total_size = rd32(r, data + 8);
    r->hdr.elf_mach = rd32(r, data + 12);
    r->hdr.pad1 = rd32(r, data + 16);
    r->hdr.pid = rd32(r, data + 20);
    r->hdr.timestamp = rd64(r, data + 24);
    r->hdr.flags = rd64(r, data + 32);
    if (r->hdr.total_size < JH__JD_HEADER_SIZE)
        return fail(r, 8, "header total_size %" PRIu32 " is smaller than the %u-byte header",
                    r->hdr.total_size, JH__JD_HEADER_SIZE);
    if (r->hdr.total_size > len)
        return fail(r, 8, "header total_size %" PRIu32 " runs past the end of the file (%zu bytes)",
                    r->hdr.total_size, len);
    r->off = r->hdr.total_size;
    return 0;
}

int jh_jdr_next(struct jh_jdr *r, struct jh_jdr_rec *rec)
{
    memset(rec, 0, sizeof *rec);
    if (r->off >= r->len)
        return 0;
    size_t left = r->len - r->off;
    const uint8_t *p = r->data + r->off;
    if (left < JH__JD_PREFIX_SIZE)
        return fail(r, r->off, "truncated record: %zu bytes left, a record prefix is %u", left,
                    JH__JD_PREFIX_SIZE);
    rec->off = r->off;
    rec->id = rd32(r, p);
    rec->total_size = rd32(r, p + 4);
    rec->timestamp = rd64(r, p + 8);
    if (rec->total_size < JH__JD_PREFIX_SIZE)
        return fail(r, r->off, "record id %" PRIu32 " has total_size %" PRIu32
                    ", smaller than its 16-byte prefix", rec->id, rec->total_size);
    if (rec->total_size > left)
        return fail(r, r->off, "record id %" PRIu32 " of %" PRIu32 " bytes runs past the end of "
                    "the file (%zu bytes left): truncated", rec->id, rec->total_size, left);
    const uint8_t *b = p + JH__JD_PREFIX_SIZE;
    size_t bl = rec->total_size - JH__JD_PREFIX_SIZE;
    rec->body = b;
    rec->body_len = bl;
    switch (rec->id) {
    case JH__JD_CODE_LOAD: {
        if (bl < JH__JD_LOAD_FIXED - JH__JD_PREFIX_SIZE)
            return fail(r, r->off, "LOAD of %" PRIu32 " bytes, shorter than its %u fixed bytes",
                        rec->total_size, JH__JD_LOAD_FIXED);
        rec->u.load.pid = rd32(r, b);
        rec->u.load.tid = rd32(r, b + 4);
        rec->u.load.vma = rd64(r, b + 8);
        rec->u.load.code_addr = rd64(r, b + 16);
        rec->u.load.code_size = rd64(r, b + 24);
        rec->u.load.code_index = rd64(r, b + 32);
        const uint8_t *name = b + 40;
        size_t room = bl - 40;
        const uint8_t *nul = memchr(name, 0, room);
        if (!nul)
            return fail(r, r->off, "LOAD name is not NUL-terminated inside the record");
        rec->u.load.name = (const char *)name;
        rec->u.load.name_len = (size_t)(nul - name);
        room -= rec->u.load.name_len + 1;
        if (rec->u.load.code_size > room)
            return fail(r, r->off, "LOAD code_size %" PRIu64 " is larger than the %zu bytes left "
                        "in the record after the name", rec->u.load.code_size, room);
        rec->u.load.code = b + bl - rec->u.load.code_size;     /* where perf takes it */
        break;
    }
    case JH__JD_CODE_MOVE:
        if (bl < JH__JD_MOVE_SIZE - JH__JD_PREFIX_SIZE)
            return fail(r, r->off, "MOVE of %" PRIu32 " bytes, shorter than its %u bytes",
                        rec->total_size, JH__JD_MOVE_SIZE);
        rec->u.move.pid = rd32(r, b);
        rec->u.move.tid = rd32(r, b + 4);
        rec->u.move.vma = rd64(r, b + 8);
        rec->u.move.old_code_addr = rd64(r, b + 16);
        rec->u.move.new_code_addr = rd64(r, b + 24);
        rec->u.move.code_size = rd64(r, b + 32);
        rec->u.move.code_index = rd64(r, b + 40);
        break;
    case JH__JD_CODE_DEBUG_INFO:
        if (bl < JH__JD_DEBUG_FIXED - JH__JD_PREFIX_SIZE)
            return fail(r, r->off, "DEBUG_INFO of %" PRIu32 " bytes, shorter than its %u fixed "
                        "bytes", rec->total_size, JH__JD_DEBUG_FIXED);
        rec->u.debug.code_addr = rd64(r, b);
        rec->u.debug.nr_entry = rd64(r, b + 8);
        rec->u.debug.entries = b + 16;
        rec->u.debug.entries_len = bl - 16;
        /* each entry is at least 17 bytes: refuse counts the record cannot hold before
         * anyone loops over them */
        if (rec->u.debug.nr_entry > rec->u.debug.entries_len / (JH__JD_DEBUG_ENTRY_FIXED + 1))
            return fail(r, r->off, "DEBUG_INFO claims %" PRIu64 " entries but has room for at "
                        "most %zu", rec->u.debug.nr_entry,
                        rec->u.debug.entries_len / (JH__JD_DEBUG_ENTRY_FIXED + 1));
        break;
    case JH__JD_CODE_UNWINDING_INFO:
        if (bl < JH__JD_UNWIND_FIXED - JH__JD_PREFIX_SIZE)
            return fail(r, r->off, "UNWINDING_INFO of %" PRIu32 " bytes, shorter than its %u "
                        "fixed bytes", rec->total_size, JH__JD_UNWIND_FIXED);
        rec->u.unwind.unwinding_size = rd64(r, b);
        rec->u.unwind.eh_frame_hdr_size = rd64(r, b + 8);
        rec->u.unwind.mapped_size = rd64(r, b + 16);
        rec->u.unwind.data = b + 24;
        rec->u.unwind.data_len = bl - 24;
        if (rec->u.unwind.unwinding_size > rec->u.unwind.data_len)
            return fail(r, r->off, "UNWINDING_INFO unwinding_size %" PRIu64 " is larger than "
                        "the %zu data bytes in the record", rec->u.unwind.unwinding_size,
                        rec->u.unwind.data_len);
        if (rec->u.unwind.eh_frame_hdr_size > rec->u.unwind.unwinding_size)
            return fail(r, r->off, "UNWINDING_INFO eh_frame_hdr_size %" PRIu64 " is larger "
                        "than unwinding_size %" PRIu64, rec->u.unwind.eh_frame_hdr_size,
                        rec->u.unwind.unwinding_size);
        break;
    default:
        break;                  /* CLOSE has no body; unknown ids are skipped, as perf does */
    }
    r->off += rec->total_size;
    return 1;
}

int jh_jdr_debug_entry(const struct jh_jdr *r, const struct jh_jdr_rec *rec, size_t *pos,
                       struct jh_jdr_line *out)
{
    const uint8_t *e = rec->u.debug.entries;
    size_t len = rec->u.debug.entries_len;
    if (*pos > len || len - *pos < JH__JD_DEBUG_ENTRY_FIXED + 1)
        return JH_EFORMAT;
    const uint8_t *p = e + *pos;
    out->addr = rd64(r, p);
    out->lineno = (int32_t)rd32(r, p + 8);
    out->discrim = (int32_t)rd32(r, p + 12);
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

/* ---- .eh_frame / .eh_frame_hdr ------------------------------------------------------- */

struct cur { const uint8_t *p, *end; };

static int c_u8(struct cur *c, uint8_t *v)
{
    if (c->p >= c->end) return -1;
    *v = *c->p++;
    return 0;
}

static int c_bytes(struct cur *c, void *v, size_t n)
{
    if ((size_t)(c->end - c->p) < n) return -1;
    memcpy(v, c->p, n);
    c->p += n;
    return 0;
}

static int c_uleb(struct cur *c, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; c->p < c->end; shift += 7) {
        uint8_t b = *c->p++;
        if (shift < 64)
            r |= (uint64_t)(b & 0x7f) << shift;
        else if (b & 0x7f)
            return -1;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
        if (shift > 70)
            return -1;
    }
    return -1;
}

static int c_sleb(struct cur *c, int64_t *v)
{
    uint64_t r = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (c->p >= c->end || shift > 70)
            return -1;
        b = *c->p++;
        if (shift < 64)
            r |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        r |= ~(uint64_t)0 << shift;
    *v = (int64_t)r;
    return 0;
}

/* A DW_EH_PE_* pointer at address `at` (for pcrel) or data base `data` (datarel). */
static int c_ptr(struct cur *c, uint8_t enc, uint64_t at, uint64_t data, uint64_t *v,
                 bool apply)
{
    uint64_t x = 0;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: { uint64_t u; if (c_bytes(c, &u, 8)) return -1; x = u; break; }
    case 0x0c: { int64_t s; if (c_bytes(c, &s, 8)) return -1; x = (uint64_t)s; break; }
    case 0x03: { uint32_t u; if (c_bytes(c, &u, 4)) return -1; x = u; break; }
    case 0x0b: { int32_t s; if (c_bytes(c, &s, 4)) return -1; x = (uint64_t)(int64_t)s; break; }
    case 0x02: { uint16_t u; if (c_bytes(c, &u, 2)) return -1; x = u; break; }
    case 0x0a: { int16_t s; if (c_bytes(c, &s, 2)) return -1; x = (uint64_t)(int64_t)s; break; }
    default: return -2;
    }
    if (apply) {
        switch (enc & 0x70) {
        case 0x00: break;
        case 0x10: x += at; break;
        case 0x30: x += data; break;
        default: return -2;
        }
    }
    *v = x;
    return 0;
}

__attribute__((format(printf, 3, 4)))
static int ufail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return JH_EFORMAT;
}

static const char *x86_reg(uint64_t r)
{
    static const char *const n[] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
    return r < sizeof n / sizeof n[0] ? n[r] : "r?";
}

/* Walk (and print) CFA instructions; advances must stay within [0, range]. */
static int cfa_insns(struct cur c, int64_t daf, uint64_t pc0, uint64_t range, FILE *out,
                     char *err, size_t errlen)
{
    uint64_t loc = 0, a, b;
    int64_t s;
    while (c.p < c.end) {
        uint8_t op = *c.p++;
        uint64_t adv = 0;
        int bad = 0;
        switch (op & 0xc0) {
        case 0x40: adv = op & 0x3f; break;
        case 0x80:
            bad = c_uleb(&c, &a);
            if (!bad && out)
                fprintf(out, " %s@cfa%+" PRId64 ";", x86_reg(op & 0x3f), (int64_t)a * daf);
            break;
        case 0xc0:
            if (out) fprintf(out, " restore %s;", x86_reg(op & 0x3f));
            break;
        default:
            switch (op) {
            case 0x00: break;
            case 0x02: { uint8_t d = 0; bad = c_u8(&c, &d); adv = d; break; }
            case 0x03: { uint16_t d = 0; bad = c_bytes(&c, &d, 2); adv = d; break; }
            case 0x04: { uint32_t d = 0; bad = c_bytes(&c, &d, 4); adv = d; break; }
            case 0x0a: if (out) fprintf(out, " remember;"); break;
            case 0x0b: if (out) fprintf(out, " restore_state;"); break;
            case 0x2d: break;
            case 0x0c:
                bad = c_uleb(&c, &a) || c_uleb(&c, &b);
                if (!bad && out) fprintf(out, " cfa=%s%+" PRId64 ";", x86_reg(a), (int64_t)b);
                break;
            case 0x0d:
                bad = c_uleb(&c, &a);
                if (!bad && out) fprintf(out, " cfa=%s;", x86_reg(a));
                break;
            case 0x0e:
                bad = c_uleb(&c, &a);
                if (!bad && out) fprintf(out, " cfa_off=%" PRIu64 ";", a);
                break;
            case 0x13:
                bad = c_sleb(&c, &s);
                if (!bad && out) fprintf(out, " cfa_off=%" PRId64 ";", s * daf);
                break;
            case 0x05: case 0x09: case 0x14: case 0x2f:
                bad = c_uleb(&c, &a) || c_uleb(&c, &b);
                if (!bad && out) fprintf(out, " op%#x(%s,%" PRIu64 ");", op, x86_reg(a), b);
                break;
            case 0x11: case 0x12: case 0x15:
                bad = c_uleb(&c, &a) || c_sleb(&c, &s);
                if (!bad && out) fprintf(out, " op%#x(%s,%" PRId64 ");", op, x86_reg(a), s);
                break;
            case 0x06: case 0x07: case 0x08: case 0x2e:
                bad = c_uleb(&c, &a);
                if (!bad && out) fprintf(out, " op%#x(%s);", op, x86_reg(a));
                break;
            case 0x0f: case 0x10: case 0x16:
                if (op != 0x0f)
                    bad = c_uleb(&c, &a);
                if (!bad) {
                    bad = c_uleb(&c, &b) || b > (uint64_t)(c.end - c.p);
                    if (!bad) c.p += b;
                }
                if (!bad && out) fprintf(out, " expr%#x;", op);
                break;
            default:
                return ufail(err, errlen, "unknown or unsupported CFA opcode 0x%02x", op);
            }
        }
        if (bad)
            return ufail(err, errlen, "CFA opcode 0x%02x runs past the end of its entry", op);
        if (adv) {
            loc += adv;
            if (loc > range)
                return ufail(err, errlen, "CFA advance to +0x%" PRIx64 " is beyond the "
                             "function's 0x%" PRIx64 " bytes", loc, range);
            if (out) fprintf(out, " @%#" PRIx64 ":", pc0 + loc);
        }
    }
    return 0;
}

#define MAXFDE 64

int jh_jdr_check_unwind(const uint8_t *eh, size_t eh_len, const uint8_t *hdr, size_t hdr_len,
                        uint64_t eh_addr, uint64_t text_addr, uint64_t code_size, FILE *out,
                        char *err, size_t errlen)
{
    struct { size_t off; uint8_t enc; int64_t daf; bool z; } cies[8];
    int ncie = 0;
    struct { uint64_t pc, range; size_t off; } fdes[MAXFDE];
    int nfde = 0;
    size_t off = 0;
    bool term = false;
    while (off < eh_len) {
        if (eh_len - off < 4)
            return ufail(err, errlen, ".eh_frame+0x%zx: %zu stray bytes at the end", off,
                         eh_len - off);
        uint32_t len;
        memcpy(&len, eh + off, 4);
        if (len == 0) {
            term = true;
            off += 4;
            break;
        }
        if (len == 0xffffffffu)
            return ufail(err, errlen, ".eh_frame+0x%zx: 64-bit DWARF entries are not used by "
                         "JIT writers and not supported here", off);
        if (len > eh_len - off - 4)
            return ufail(err, errlen, ".eh_frame+0x%zx: entry length %" PRIu32 " runs past "
                         "the .eh_frame (%zu bytes)", off, len, eh_len);
        if (len < 4)
            return ufail(err, errlen, ".eh_frame+0x%zx: entry length %" PRIu32 " too short",
                         off, len);
        struct cur c = { eh + off + 8, eh + off + 4 + len };
        uint32_t id;
        memcpy(&id, eh + off + 4, 4);
        if (id == 0) {                                  /* CIE */
            uint8_t ver = 0, ra8;
            if (c_u8(&c, &ver) || (ver != 1 && ver != 3))
                return ufail(err, errlen, ".eh_frame+0x%zx: CIE version %u (want 1 or 3)",
                             off, ver);
            const uint8_t *aug = c.p;
            const uint8_t *nul = memchr(c.p, 0, (size_t)(c.end - c.p));
            if (!nul)
                return ufail(err, errlen, ".eh_frame+0x%zx: CIE augmentation string not "
                             "terminated", off);
            c.p = nul + 1;
            uint64_t caf, ra, auglen = 0;
            int64_t daf;
            if (c_uleb(&c, &caf) || c_sleb(&c, &daf))
                return ufail(err, errlen, ".eh_frame+0x%zx: CIE truncated", off);
            if (ver == 1) {
                if (c_u8(&c, &ra8))
                    return ufail(err, errlen, ".eh_frame+0x%zx: CIE truncated", off);
                ra = ra8;
            } else if (c_uleb(&c, &ra)) {
                return ufail(err, errlen, ".eh_frame+0x%zx: CIE truncated", off);
            }
            uint8_t enc = 0;
            bool z = aug[0] == 'z';
            if (z) {
                if (c_uleb(&c, &auglen) || auglen > (uint64_t)(c.end - c.p))
                    return ufail(err, errlen, ".eh_frame+0x%zx: CIE augmentation data runs "
                                 "past the entry", off);
                struct cur a = { c.p, c.p + auglen };
                for (const uint8_t *s = aug + 1; *s; s++) {
                    uint8_t x;
                    if (*s == 'R' || *s == 'L') {
                        if (c_u8(&a, &x))
                            return ufail(err, errlen, ".eh_frame+0x%zx: CIE augmentation "
                                         "data too short", off);
                        if (*s == 'R')
                            enc = x;
                    } else if (*s == 'P') {
                        uint64_t pv;
                        if (c_u8(&a, &x) || c_ptr(&a, x, 0, 0, &pv, false))
                            return ufail(err, errlen, ".eh_frame+0x%zx: bad personality "
                                         "pointer", off);
                    } else if (*s != 'S') {
                        return ufail(err, errlen, ".eh_frame+0x%zx: unknown augmentation "
                                     "'%c'", off, *s);
                    }
                }
                c.p += auglen;
            } else if (aug[0]) {
                return ufail(err, errlen, ".eh_frame+0x%zx: augmentation \"%s\" without 'z' "
                             "cannot be skipped", off, (const char *)aug);
            }
            if (out)
                fprintf(out, "      CIE @0x%zx: v%u \"%s\" code_align %" PRIu64 " data_align %"
                        PRId64 " ra %s ptr-enc 0x%02x:", off, ver, (const char *)aug, caf, daf,
                        x86_reg(ra), enc);
            int e = cfa_insns(c, daf, 0, UINT64_MAX, out, err, errlen);
            if (out)
                fputc('\n', out);
            if (e)
                return e;
            if (ncie < 8) {
                cies[ncie].off = off;
                cies[ncie].enc = enc;
                cies[ncie].daf = daf;
                cies[ncie].z = z;
                ncie++;
            }
        } else {                                        /* FDE: id = distance back to CIE */
            size_t cie_off = off + 4 >= id ? off + 4 - id : SIZE_MAX;
            int ci = -1;
            for (int i = 0; i < ncie; i++)
                if (cies[i].off == cie_off)
                    ci = i;
            if (ci < 0)
                return ufail(err, errlen, ".eh_frame+0x%zx: FDE's CIE pointer %" PRIu32
                             " does not lead to a CIE before it", off, id);
            uint64_t pc, range;
            uint64_t field = eh_addr + off + 8;
            if (c_ptr(&c, cies[ci].enc, field, 0, &pc, true) ||
                c_ptr(&c, cies[ci].enc & 0x0f, 0, 0, &range, false))
                return ufail(err, errlen, ".eh_frame+0x%zx: FDE pc_begin/pc_range truncated or "
                             "encoding 0x%02x unsupported", off, cies[ci].enc);
            if (cies[ci].z) {
                uint64_t al;
                if (c_uleb(&c, &al) || al > (uint64_t)(c.end - c.p))
                    return ufail(err, errlen, ".eh_frame+0x%zx: FDE augmentation data runs "
                                 "past the entry", off);
                c.p += al;
            }
            if (out)
                fprintf(out, "      FDE @0x%zx: pc 0x%" PRIx64 "..0x%" PRIx64 ":", off, pc,
                        pc + range);
            int e = cfa_insns(c, cies[ci].daf, pc, range, out, err, errlen);
            if (out)
                fputc('\n', out);
            if (e)
                return e;
            if (pc < text_addr || range > code_size || pc - text_addr > code_size - range)
                return ufail(err, errlen, ".eh_frame+0x%zx: FDE covers 0x%" PRIx64 "..0x%"
                             PRIx64 " but perf puts the code at 0x%" PRIx64 "..0x%" PRIx64,
                             off, pc, pc + range, text_addr, text_addr + code_size);
            if (nfde < MAXFDE) {
                fdes[nfde].pc = pc;
                fdes[nfde].range = range;
                fdes[nfde].off = off;
                nfde++;
            }
        }
        off += 4 + (size_t)len;
    }
    if (!term)
        return ufail(err, errlen, ".eh_frame has no zero terminator");
    if (ncie == 0 || nfde == 0)
        return ufail(err, errlen, ".eh_frame has %d CIE and %d FDE: nothing to unwind with",
                     ncie, nfde);

    /* .eh_frame_hdr right after it, at eh_addr + eh_len */
    uint64_t hdr_addr = eh_addr + eh_len;
    if (hdr_len < 4)
        return ufail(err, errlen, ".eh_frame_hdr of %zu bytes is too short", hdr_len);
    if (hdr[0] != 1)
        return ufail(err, errlen, ".eh_frame_hdr version %u (want 1)", hdr[0]);
    struct cur c = { hdr + 4, hdr + hdr_len };
    uint64_t ehp, count = 0;
    if (c_ptr(&c, hdr[1], hdr_addr + 4, hdr_addr, &ehp, true))
        return ufail(err, errlen, ".eh_frame_hdr eh_frame_ptr truncated or encoding 0x%02x "
                     "unsupported", hdr[1]);
    if (ehp != eh_addr)
        return ufail(err, errlen, ".eh_frame_hdr eh_frame_ptr points at 0x%" PRIx64 ", but "
                     ".eh_frame is at 0x%" PRIx64 " in perf's layout", ehp, eh_addr);
    if (hdr[2] != 0xff) {
        if (c_ptr(&c, hdr[2], 0, 0, &count, false))
            return ufail(err, errlen, ".eh_frame_hdr fde_count truncated");
    }
    if (hdr[2] != 0xff && hdr[3] != 0xff) {
        if (hdr[3] != 0x3b)
            return ufail(err, errlen, ".eh_frame_hdr table encoding 0x%02x: unwinders only "
                         "binary-search datarel|sdata4 (0x3b)", hdr[3]);
        if (count > (uint64_t)(c.end - c.p) / 8)
            return ufail(err, errlen, ".eh_frame_hdr claims %" PRIu64 " table entries, has "
                         "room for %zu", count, (size_t)(c.end - c.p) / 8);
        uint64_t prev = 0;
        for (uint64_t i = 0; i < count; i++) {
            uint64_t loc, fde;
            c_ptr(&c, 0x3b, 0, hdr_addr, &loc, true);
            c_ptr(&c, 0x3b, 0, hdr_addr, &fde, true);
            if (i && loc < prev)
                return ufail(err, errlen, ".eh_frame_hdr table not sorted at entry %" PRIu64, i);
            prev = loc;
            int hit = 0;
            for (int k = 0; k < nfde; k++)
                if (fdes[k].pc == loc && eh_addr + fdes[k].off == fde)
                    hit = 1;
            if (!hit)
                return ufail(err, errlen, ".eh_frame_hdr entry %" PRIu64 " (pc 0x%" PRIx64
                             ", FDE 0x%" PRIx64 ") matches no FDE of the .eh_frame", i, loc, fde);
        }
        if (count != (uint64_t)nfde && nfde < MAXFDE)
            return ufail(err, errlen, ".eh_frame_hdr lists %" PRIu64 " FDEs, .eh_frame has %d",
                         count, nfde);
    }
    if (out)
        fprintf(out, "      .eh_frame_hdr: v1, eh_frame at 0x%" PRIx64 ", %" PRIu64
                " table entries\n", ehp, count);
    return 0;
}

/* ---- the whole-file check ------------------------------------------------------------ */

/* code_index -> (address, size) of LOADs seen so far: open addressing, grows. */
struct idx_set {
    struct slot { uint64_t key, addr, size; bool used; } *t;
    size_t cap, n;
};

static struct slot *set_find(struct idx_set *s, uint64_t key)
{
    if (!s->cap)
        return NULL;
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
    while (s->t[i].used) {
        if (s->t[i].key == key)
            return &s->t[i];
        i = (i + 1) & (s->cap - 1);
    }
    return NULL;
}

static int set_add(struct idx_set *s, uint64_t key, uint64_t addr, uint64_t size)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        struct slot *t = calloc(cap, sizeof *t);
        if (!t)
            return -ENOMEM;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->t[i].used)
                continue;
            size_t j = (size_t)(s->t[i].key * 0x9e3779b97f4a7c15ull) & (cap - 1);
            while (t[j].used)
                j = (j + 1) & (cap - 1);
            t[j] = s->t[i];
        }
        free(s->t);
        s->t = t;
        s->cap = cap;
    }
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
    while (s->t[i].used)
        i = (i + 1) & (s->cap - 1);
    s->t[i] = (struct slot){ key, addr, size, true };
    s->n++;
    return 0;
}

static const char *rec_name(uint32_t id)
{
    static const char *const n[] = { "LOAD", "MOVE", "DEBUG_INFO", "CLOSE", "UNWINDING_INFO" };
    return id < JH__JD_CODE_MAX ? n[id] : "UNKNOWN";
}

static void print_name(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n && i < 200; i++) {
        unsigned char ch = (unsigned char)s[i];
        fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, out);
    }
    if (n > 200)
        fputs("...", out);
}

int jh_jdr_check(struct jh_jdr *r, const uint8_t *data, size_t len, FILE *out, bool verbose,
                 FILE *warn, struct jh_jdr_stats *stats)
{
    struct jh_jdr_stats st = { 0 };
    struct idx_set seen = { 0 };
    int rc = jh_jdr_open(r, data, len);
    if (rc)
        goto done;
    if (out)
        fprintf(out, "jitdump %s-endian, version %" PRIu32 ", header %" PRIu32 " bytes, "
                "elf_mach %" PRIu32 "%s, pid %" PRIu32 ", timestamp %" PRIu64 ", flags 0x%"
                PRIx64 "\n", r->swap ? "other" : "host", r->hdr.version, r->hdr.total_size,
                r->hdr.elf_mach, r->hdr.elf_mach == JH__JD_EM_X86_64 ? " (x86-64)" :
                r->hdr.elf_mach == JH__JD_EM_AARCH64 ? " (aarch64)" : "", r->hdr.pid,
                r->hdr.timestamp, r->hdr.flags);
    if (r->hdr.version != JH__JD_VERSION) {
        rc = fail(r, 4, "version %" PRIu32 ": perf 6.1 reads version 1 only", r->hdr.version);
        goto done;
    }
    if (r->hdr.flags & ~JH__JD_FLAG_ARCH_TIMESTAMP) {
        rc = fail(r, 32, "unknown flag bits 0x%" PRIx64 ": perf rejects the whole file",
                  r->hdr.flags & ~JH__JD_FLAG_ARCH_TIMESTAMP);
        goto done;
    }
    if (warn && (r->hdr.flags & JH__JD_FLAG_ARCH_TIMESTAMP))
        fprintf(warn, "warning: timestamps are TSC ticks (flag 1): perf needs its TSC "
                "conversion for them\n");

    struct jh_jdr_rec rec, dbg = { 0 }, unw = { 0 };
    bool have_dbg = false, have_unw = false, closed = false;
    uint64_t last_ts = 0;
    while ((rc = jh_jdr_next(r, &rec)) > 0) {
        st.records++;
        if (out)
            fprintf(out, "0x%08zx %-14s ts %" PRIu64, rec.off, rec_name(rec.id), rec.timestamp);
        if (warn && rec.timestamp < last_ts)
            fprintf(warn, "warning: offset 0x%zx: timestamp goes backwards\n", rec.off);
        last_ts = rec.timestamp;
        if (closed && warn)
            fprintf(warn, "warning: offset 0x%zx: %s after CLOSE\n", rec.off, rec_name(rec.id));
        switch (rec.id) {
        case JH__JD_CODE_DEBUG_INFO: {
            st.debug++;
            if (out)
                fprintf(out, " code 0x%" PRIx64 ", %" PRIu64 " entries\n",
                        rec.u.debug.code_addr, rec.u.debug.nr_entry);
            if (have_dbg) {
                rc = fail(r, rec.off, "second DEBUG_INFO before the LOAD the one at 0x%zx "
                          "belongs to (perf keeps only the last)", dbg.off);
                goto done;
            }
            if (have_unw) {
                rc = fail(r, rec.off, "DEBUG_INFO after UNWINDING_INFO at 0x%zx: write both "
                          "right before their LOAD", unw.off);
                goto done;
            }
            size_t pos = 0;
            uint64_t prev = 0;
            for (uint64_t i = 0; i < rec.u.debug.nr_entry; i++) {
                struct jh_jdr_line l;
                if (jh_jdr_debug_entry(r, &rec, &pos, &l)) {
                    rc = fail(r, rec.off, "DEBUG_INFO entry %" PRIu64 " runs past the record or "
                              "has no NUL-terminated file name", i);
                    goto done;
                }
                if (i && l.addr < prev) {
                    rc = fail(r, rec.off, "DEBUG_INFO entry %" PRIu64 " address 0x%" PRIx64
                              " goes backwards (perf's line program cannot)", i, l.addr);
                    goto done;
                }
                if (l.name_len == 0) {
                    rc = fail(r, rec.off, "DEBUG_INFO entry %" PRIu64 " has an empty file name",
                              i);
                    goto done;
                }
                prev = l.addr;
                if (out && verbose) {
                    fprintf(out, "      0x%" PRIx64 " (+0x%" PRIx64 ") ", l.addr,
                            l.addr - rec.u.debug.code_addr);
                    print_name(out, l.name, l.name_len);
                    fprintf(out, ":%" PRId32 "\n", l.lineno);
                }
            }
            dbg = rec;
            have_dbg = true;
            break;
        }
        case JH__JD_CODE_UNWINDING_INFO:
            st.unwind++;
            if (out)
                fprintf(out, " %" PRIu64 " bytes (.eh_frame_hdr %" PRIu64 "), mapped %" PRIu64
                        "\n", rec.u.unwind.unwinding_size, rec.u.unwind.eh_frame_hdr_size,
                        rec.u.unwind.mapped_size);
            if (have_unw) {
                rc = fail(r, rec.off, "second UNWINDING_INFO before the LOAD the one at 0x%zx "
                          "belongs to", unw.off);
                goto done;
            }
            if (rec.u.unwind.eh_frame_hdr_size < 12) {
                rc = fail(r, rec.off, "eh_frame_hdr_size %" PRIu64 ": a .eh_frame_hdr has at "
                          "least 12 bytes (perf finds it at the end of the data)",
                          rec.u.unwind.eh_frame_hdr_size);
                goto done;
            }
            if (rec.u.unwind.mapped_size < rec.u.unwind.unwinding_size) {
                rc = fail(r, rec.off, "mapped_size %" PRIu64 " is smaller than unwinding_size %"
                          PRIu64, rec.u.unwind.mapped_size, rec.u.unwind.unwinding_size);
                goto done;
            }
            unw = rec;
            have_unw = true;
            break;
        case JH__JD_CODE_LOAD: {
            st.loads++;
            const __typeof__(rec.u.load) *l = &rec.u.load;
            if (out) {
                fprintf(out, " #%" PRIu64 " 0x%" PRIx64 "+0x%" PRIx64 " pid %" PRIu32 " tid %"
                        PRIu32 " ", l->code_index, l->code_addr, l->code_size, l->pid, l->tid);
                print_name(out, l->name, l->name_len);
                fputc('\n', out);
            }
            if (l->name_len == 0) {
                rc = fail(r, rec.off, "LOAD #%" PRIu64 " has an empty name", l->code_index);
                goto done;
            }
            if (l->code_size == 0) {
                rc = fail(r, rec.off, "LOAD #%" PRIu64 " has code_size 0", l->code_index);
                goto done;
            }
            if (l->code_addr + l->code_size < l->code_addr) {
                rc = fail(r, rec.off, "LOAD #%" PRIu64 " wraps around the address space",
                          l->code_index);
                goto done;
            }
            if (JH__JD_LOAD_FIXED + l->name_len + 1 + l->code_size != rec.total_size) {
                rc = fail(r, rec.off, "LOAD #%" PRIu64 " total_size %" PRIu32 " is not 56 + "
                          "name %zu + 1 + code %" PRIu64 ": bytes between name and code",
                          l->code_index, rec.total_size, l->name_len, l->code_size);
                goto done;
            }
            if (warn && l->vma != l->code_addr)
                fprintf(warn, "warning: offset 0x%zx: LOAD vma 0x%" PRIx64 " != code_addr 0x%"
                        PRIx64 " (perf uses code_addr)\n", rec.off, l->vma, l->code_addr);
            if (warn && l->pid != r->hdr.pid)
                fprintf(warn, "warning: offset 0x%zx: LOAD pid %" PRIu32 " differs from the "
                        "header's %" PRIu32 "\n", rec.off, l->pid, r->hdr.pid);
            if (set_find(&seen, l->code_index)) {
                rc = fail(r, rec.off, "LOAD reuses code_index %" PRIu64 ": perf would overwrite "
                          "jitted-%" PRIu32 "-%" PRIu64 ".so", l->code_index, l->pid,
                          l->code_index);
                goto done;
            }
            if (set_add(&seen, l->code_index, l->code_addr, l->code_size)) {
                rc = fail(r, rec.off, "out of memory");
                goto done;
            }
            if (have_dbg) {
                if (dbg.u.debug.code_addr != l->code_addr) {
                    rc = fail(r, dbg.off, "DEBUG_INFO for code 0x%" PRIx64 " precedes the LOAD "
                              "of 0x%" PRIx64 " at 0x%zx", dbg.u.debug.code_addr, l->code_addr,
                              rec.off);
                    goto done;
                }
                size_t pos = 0;
                for (uint64_t i = 0; i < dbg.u.debug.nr_entry; i++) {
                    struct jh_jdr_line ln;
                    jh_jdr_debug_entry(r, &dbg, &pos, &ln);     /* checked above */
                    if (ln.addr < l->code_addr || ln.addr - l->code_addr > l->code_size) {
                        rc = fail(r, dbg.off, "DEBUG_INFO entry %" PRIu64 " at 0x%" PRIx64
                                  " is outside the code 0x%" PRIx64 "..0x%" PRIx64 " (relative "
                                  "or offset addresses? perf wants absolute ones)", i, ln.addr,
                                  l->code_addr, l->code_addr + l->code_size);
                        goto done;
                    }
                }
            }
            if (have_unw) {
                uint64_t us = unw.u.unwind.unwinding_size, hs = unw.u.unwind.eh_frame_hdr_size;
                uint64_t eh_addr = (JH__JD_PERF_TEXT_OFFSET + l->code_size + 7) & ~7ull;
                char uerr[200];
                if (jh_jdr_check_unwind(unw.u.unwind.data, (size_t)(us - hs),
                                        unw.u.unwind.data + (us - hs), (size_t)hs, eh_addr,
                                        JH__JD_PERF_TEXT_OFFSET, l->code_size,
                                        out && verbose ? out : NULL, uerr, sizeof uerr)) {
                    rc = fail(r, unw.off, "UNWINDING_INFO for the LOAD at 0x%zx: %s", rec.off,
                              uerr);
                    goto done;
                }
            }
            have_dbg = have_unw = false;
            break;
        }
        case JH__JD_CODE_MOVE: {
            st.moves++;
            const __typeof__(rec.u.move) *m = &rec.u.move;
            if (out)
                fprintf(out, " #%" PRIu64 " 0x%" PRIx64 " -> 0x%" PRIx64 " size 0x%" PRIx64 "\n",
                        m->code_index, m->old_code_addr, m->new_code_addr, m->code_size);
            if (have_dbg || have_unw) {
                rc = fail(r, rec.off, "MOVE between a %s and its LOAD", have_dbg ? "DEBUG_INFO"
                          : "UNWINDING_INFO");
                goto done;
            }
            struct slot *s = set_find(&seen, m->code_index);
            if (!s) {
                rc = fail(r, rec.off, "MOVE of code_index %" PRIu64 ", which no earlier LOAD has",
                          m->code_index);
                goto done;
            }
            if (s->size != m->code_size || s->addr != m->old_code_addr) {
                rc = fail(r, rec.off, "MOVE of #%" PRIu64 " says 0x%" PRIx64 "+0x%" PRIx64
                          ", but it is at 0x%" PRIx64 "+0x%" PRIx64, m->code_index,
                          m->old_code_addr, m->code_size, s->addr, s->size);
                goto done;
            }
            s->addr = m->new_code_addr;
            break;
        }
        case JH__JD_CODE_CLOSE:
            st.closes++;
            if (out)
                fputc('\n', out);
            if (have_dbg || have_unw) {
                rc = fail(r, rec.off, "CLOSE between a %s and its LOAD", have_dbg ? "DEBUG_INFO"
                          : "UNWINDING_INFO");
                goto done;
            }
            closed = true;
            break;
        default:
            st.unknown++;
            if (out)
                fprintf(out, " id %" PRIu32 ", %" PRIu32 " bytes\n", rec.id, rec.total_size);
            if (warn)
                fprintf(warn, "warning: offset 0x%zx: unknown record id %" PRIu32 " (perf skips "
                        "it)\n", rec.off, rec.id);
            break;
        }
    }
    if (rc < 0)
        goto done;
    if (have_dbg || have_unw) {
        rc = fail(r, have_dbg ? dbg.off : unw.off, "%s at the end of the file with no LOAD "
                  "after it", have_dbg ? "DEBUG_INFO" : "UNWINDING_INFO");
        goto done;
    }
    if (!closed && warn)
        fprintf(warn, "warning: no CLOSE record (the process is still running, or did not "
                "call jh_close)\n");
    rc = 0;
done:
    free(seen.t);
    if (stats)
        *stats = st;
    return rc;
}

int jh_read_file(const char *path, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    uint8_t *p = malloc(cap);
    while (p) {
        if (n == cap) {
            uint8_t *q = realloc(p, cap * 2);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = -errno;
            free(p);
            close(fd);
            return err;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!p)
        return -ENOMEM;
    *data = p;
    *len = n;
    return 0;
}
