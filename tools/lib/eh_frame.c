/*
 * eh_frame.c — see eh_frame.h. Records are read by the library's own reader
 * (fmt/eh_frame.h, what jh_code_add's JH_UNWIND_EH_FRAME uses); this file adds what a
 * checker wants on top: the rules printed, each FDE inside perf's code range, the
 * .eh_frame_hdr table against the FDEs found (kept in fixed arrays: a JIT's
 * UNWINDING_INFO holds one CIE and a handful of FDEs; past MAX_FDE the table is checked
 * against what was kept).
 */
#include "lib/eh_frame.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "jitherald.h"
#include "fmt/arch.h"
#include "fmt/cfa.h"
#include "fmt/eh_frame.h"
#include "lib/text.h"

#define MAX_FDE 64

struct cur { const uint8_t *p, *end; };

static int c_bytes(struct cur *c, void *v, size_t n)
{
    if ((size_t)(c->end - c->p) < n)
        return -1;
    memcpy(v, c->p, n);
    c->p += n;
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

/* Register r's name on arch (NULL: not known). */
static const char *reg_name(const struct jh__arch *arch, uint64_t r)
{
    return arch && r < arch->nreg_names ? arch->reg_names[r] : "r?";
}

/* x times the CIE's data alignment, as a rule shows it ("+16" with sign, "16" without), or
 * "(x * daf overflows)": the operands come from the file and may be any size. */
static const char *factored(char *buf, size_t n, int64_t x, int64_t daf, bool sign)
{
    int64_t v;
    if (__builtin_mul_overflow(x, daf, &v))
        snprintf(buf, n, "(%" PRId64 " * %" PRId64 " overflows)", x, daf);
    else
        snprintf(buf, n, sign ? "%+" PRId64 : "%" PRId64, v);
    return buf;
}

static void print_insn(FILE *out, const struct jh__arch *arch, const struct jh__cfa_insn *in,
                       int64_t daf)
{
    const char *reg = reg_name(arch, in->reg);
    char b[64];
    switch (in->op) {
    case JH__CFA_offset:
        fprintf(out, " %s@cfa%s;", reg, factored(b, sizeof b, (int64_t)in->a, daf, true));
        break;
    case JH__CFA_restore: fprintf(out, " restore %s;", reg); break;
    case JH__CFA_remember_state: fprintf(out, " remember;"); break;
    case JH__CFA_restore_state: fprintf(out, " restore_state;"); break;
    case JH__CFA_def_cfa: fprintf(out, " cfa=%s%+" PRId64 ";", reg, (int64_t)in->a); break;
    case JH__CFA_def_cfa_register: fprintf(out, " cfa=%s;", reg); break;
    case JH__CFA_def_cfa_offset: fprintf(out, " cfa_off=%" PRIu64 ";", in->a); break;
    case JH__CFA_def_cfa_offset_sf:
        fprintf(out, " cfa_off=%s;", factored(b, sizeof b, in->s, daf, false));
        break;
    case JH__CFA_offset_extended: case JH__CFA_register: case JH__CFA_val_offset:
    case JH__CFA_GNU_negative_offset_extended:
        fprintf(out, " op%#x(%s,%" PRIu64 ");", in->op, reg, in->a);
        break;
    case JH__CFA_offset_extended_sf: case JH__CFA_def_cfa_sf: case JH__CFA_val_offset_sf:
        fprintf(out, " op%#x(%s,%" PRId64 ");", in->op, reg, in->s);
        break;
    case JH__CFA_restore_extended: case JH__CFA_undefined: case JH__CFA_same_value:
        fprintf(out, " op%#x(%s);", in->op, reg);
        break;
    case JH__CFA_GNU_args_size:     /* a size, shown as the register rules are */
        fprintf(out, " op%#x(%s);", in->op, reg_name(arch, in->a));
        break;
    case JH__CFA_def_cfa_expression: case JH__CFA_expression: case JH__CFA_val_expression:
        fprintf(out, " expr%#x;", in->op);
        break;
    default:
        break;                  /* advances (printed by the caller), nop, GNU_window_save */
    }
}

struct fde { uint64_t pc; size_t off; };

struct eh {
    const uint8_t *data;
    uint64_t addr, text_addr, code_size;
    const struct jh__arch *arch;    /* for register names; NULL: not known */
    FILE *out;
    char *err;
    size_t errlen;
    struct fde fdes[MAX_FDE];
    int ncie, nfde;
};

/* Set the message; evaluates to JH_EFORMAT. */
#define fail(e, ...) (jhr_errf((e)->err, (e)->errlen, __VA_ARGS__), JH_EFORMAT)

/* Walk (and print) CFA instructions; advances must stay within [0, range]. */
static int cfa_insns(struct eh *e, struct cur c, int64_t daf, uint64_t pc0, uint64_t range)
{
    uint64_t loc = 0;
    struct jh__cfa_insn in;
    for (;;) {
        uint8_t op = c.p < c.end ? *c.p : 0;
        int r = jh__cfa_next(&c.p, c.end, &in);
        if (r == 0)
            return 0;
        if (r == -ENOTSUP)
            return fail(e, "unknown or unsupported CFA opcode 0x%02x", op);
        if (r < 0)
            return fail(e, "CFA opcode 0x%02x runs past the end of its entry", op);
        if (e->out)
            print_insn(e->out, e->arch, &in, daf);
        if (in.advance) {
            if (in.advance > range - loc)
                return fail(e, "CFA advance to +0x%" PRIx64 " is beyond the function's 0x%"
                            PRIx64 " bytes", loc + in.advance, range);
            loc += in.advance;
            if (e->out)
                fprintf(e->out, " @%#" PRIx64 ":", pc0 + loc);
        }
    }
}

static void print_cie(struct eh *e, const struct jh__eh_cie *c)
{
    fprintf(e->out, "      CIE @0x%zx: v%u \"%s\" code_align %" PRIu64 " data_align %" PRId64
            " ra %s ptr-enc 0x%02x:", c->off, c->version, c->aug, c->caf, c->daf,
            reg_name(e->arch, c->ra), c->fde_enc);
}

/* Every record, read as the library reads them, printed and checked. */
static int entries(struct eh *e, size_t eh_len)
{
    size_t off = 0, next;
    uint32_t id;
    int r;
    char msg[200];
    struct jh__eh_cie cie = { .off = SIZE_MAX };
    while ((r = jh__eh_record(e->data, eh_len, off, &id, &next, msg, sizeof msg)) == 1) {
        int err;
        if (id == 0) {
            if (jh__eh_cie(e->data, eh_len, e->addr, off, &cie, msg, sizeof msg))
                return fail(e, "%s", msg);
            if (e->out)
                print_cie(e, &cie);
            err = cfa_insns(e, (struct cur){ cie.insns, cie.insns + cie.insns_len }, cie.daf,
                            0, UINT64_MAX);
            e->ncie++;
        } else {
            struct jh__eh_fde f;
            if (off + 4 < id || off + 4 - id != cie.off) {
                /* not the CIE just read: an earlier one (the library reads any) */
                struct jh__eh_cie other;
                if (off + 4 < id || off + 4 - id >= off ||
                    jh__eh_cie(e->data, eh_len, e->addr, off + 4 - id, &other, msg, sizeof msg))
                    return fail(e, ".eh_frame+0x%zx: FDE's CIE pointer %" PRIu32 " does not "
                                "lead to a CIE before it", off, id);
                cie = other;
            }
            if (jh__eh_fde(e->data, eh_len, e->addr, off, &cie, &f, msg, sizeof msg))
                return fail(e, "%s", msg);
            if (e->out)
                fprintf(e->out, "      FDE @0x%zx: pc 0x%" PRIx64 "..0x%" PRIx64 ":", off, f.pc,
                        f.pc + f.range);
            err = cfa_insns(e, (struct cur){ f.insns, f.insns + f.insns_len }, cie.daf, f.pc,
                            f.range);
            if (!err && (f.pc < e->text_addr || f.range > e->code_size ||
                         f.pc - e->text_addr > e->code_size - f.range))
                err = fail(e, ".eh_frame+0x%zx: FDE covers 0x%" PRIx64 "..0x%" PRIx64 " but "
                           "perf puts the code at 0x%" PRIx64 "..0x%" PRIx64, off, f.pc,
                           f.pc + f.range, e->text_addr, e->text_addr + e->code_size);
            if (!err && e->nfde < MAX_FDE)
                e->fdes[e->nfde] = (struct fde){ f.pc, off };
            e->nfde++;
        }
        if (e->out)
            fputc('\n', e->out);
        if (err)
            return err;
        off = next;
    }
    if (r < 0)
        return fail(e, "%s", msg);
    if (off >= eh_len)
        return fail(e, ".eh_frame has no zero terminator");
    return 0;
}

/* The .eh_frame_hdr right after the .eh_frame, at hdr_addr: its pointer to the .eh_frame
 * and its sorted table, which must list the FDEs found. */
static int eh_frame_hdr(struct eh *e, const uint8_t *hdr, size_t hdr_len, uint64_t hdr_addr)
{
    if (hdr_len < 4)
        return fail(e, ".eh_frame_hdr of %zu bytes is too short", hdr_len);
    if (hdr[0] != 1)
        return fail(e, ".eh_frame_hdr version %u (want 1)", hdr[0]);
    struct cur c = { hdr + 4, hdr + hdr_len };
    uint64_t ehp, count = 0;
    if (c_ptr(&c, hdr[1], hdr_addr + 4, hdr_addr, &ehp, true))
        return fail(e, ".eh_frame_hdr eh_frame_ptr truncated or encoding 0x%02x unsupported",
                    hdr[1]);
    if (ehp != e->addr)
        return fail(e, ".eh_frame_hdr eh_frame_ptr points at 0x%" PRIx64 ", but .eh_frame is "
                    "at 0x%" PRIx64 " in perf's layout", ehp, e->addr);
    if (hdr[2] != 0xff) {
        if (c_ptr(&c, hdr[2], 0, 0, &count, false))
            return fail(e, ".eh_frame_hdr fde_count truncated");
    }
    if (hdr[2] != 0xff && hdr[3] != 0xff) {
        if (hdr[3] != 0x3b)
            return fail(e, ".eh_frame_hdr table encoding 0x%02x: unwinders only binary-search "
                        "datarel|sdata4 (0x3b)", hdr[3]);
        if (count > (uint64_t)(c.end - c.p) / 8)
            return fail(e, ".eh_frame_hdr claims %" PRIu64 " table entries, has room for %zu",
                        count, (size_t)(c.end - c.p) / 8);
        uint64_t prev = 0;
        for (uint64_t i = 0; i < count; i++) {
            /* the room was checked above, so c_ptr cannot fail here; GCC for arm64 cannot
             * see that through it (-Wmaybe-uninitialized) */
            uint64_t loc = 0, at = 0;
            c_ptr(&c, 0x3b, 0, hdr_addr, &loc, true);
            c_ptr(&c, 0x3b, 0, hdr_addr, &at, true);
            if (i && loc < prev)
                return fail(e, ".eh_frame_hdr table not sorted at entry %" PRIu64, i);
            prev = loc;
            bool hit = false;
            for (int k = 0; k < e->nfde; k++)
                if (e->fdes[k].pc == loc && e->addr + e->fdes[k].off == at)
                    hit = true;
            if (!hit)
                return fail(e, ".eh_frame_hdr entry %" PRIu64 " (pc 0x%" PRIx64 ", FDE 0x%"
                            PRIx64 ") matches no FDE of the .eh_frame", i, loc, at);
        }
        if (count != (uint64_t)e->nfde && e->nfde < MAX_FDE)
            return fail(e, ".eh_frame_hdr lists %" PRIu64 " FDEs, .eh_frame has %d", count,
                        e->nfde);
    }
    if (e->out)
        fprintf(e->out, "      .eh_frame_hdr: v1, eh_frame at 0x%" PRIx64 ", %" PRIu64
                " table entries\n", ehp, count);
    return 0;
}

static int check(struct eh *e, const uint8_t *hdr, size_t hdr_len, size_t eh_len)
{
    int rc = entries(e, eh_len);
    if (rc)
        return rc;
    if (e->ncie == 0 || e->nfde == 0)
        return fail(e, ".eh_frame has %d CIE and %d FDE: nothing to unwind with", e->ncie,
                    e->nfde);
    return eh_frame_hdr(e, hdr, hdr_len, e->addr + eh_len);
}

int jhr_eh_frame_check(const uint8_t *eh, size_t eh_len, const uint8_t *hdr, size_t hdr_len,
                       uint64_t eh_addr, uint64_t text_addr, uint64_t code_size,
                       const struct jh__arch *arch, FILE *out, char *err, size_t errlen)
{
    struct eh e = { .data = eh, .addr = eh_addr, .text_addr = text_addr,
                    .code_size = code_size, .arch = arch, .out = out, .err = err,
                    .errlen = errlen };
    return check(&e, hdr, hdr_len, eh_len);
}
