/* eh_frame.c — see eh_frame.h. */
#include "fmt/eh_frame.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fmt/arch.h"
#include "fmt/cfa.h"

struct cur { const uint8_t *p, *end; };

static int say(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static uint64_t le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A DW_EH_PE_* value at c->p, whose own address is at (for pcrel); application bits other
 * than pcrel are refused. apply false: the raw value (an FDE's pc_range). */
static int get_ptr(struct cur *c, uint8_t enc, uint64_t at, bool apply, uint64_t *v)
{
    static const uint8_t width[16] = { [0x0] = 8, [0x2] = 2, [0x3] = 4, [0x4] = 8,
                                       [0xa] = 2, [0xb] = 4, [0xc] = 8 };
    uint64_t x;
    uint8_t form = enc & 0x0f;
    if (form == 0x1 || form == 0x9) {
        if (form == 0x1 ? jh__cfa_uleb(&c->p, c->end, &x)
                        : jh__cfa_sleb(&c->p, c->end, (int64_t *)&x))
            return -1;
    } else {
        size_t w = width[form];
        if (!w || (size_t)(c->end - c->p) < w)
            return -1;
        x = le(c->p, w);
        if (form >= 0x9 && w < 8 && (x >> (8 * w - 1)) & 1)
            x |= ~(uint64_t)0 << (8 * w);          /* sign-extend sdata2/4 */
        c->p += w;
    }
    if (apply) {
        switch (enc & 0x70) {
        case 0x00: break;
        case 0x10: x += at; break;
        default: return -1;
        }
    }
    *v = x;
    return 0;
}

int jh__eh_record(const uint8_t *eh, size_t len, size_t off, uint32_t *id, size_t *next,
                  char *why, size_t whylen)
{
    if (off >= len)
        return 0;
    if (len - off < 4)
        return say(why, whylen, ".eh_frame+0x%zx: %zu stray bytes at the end", off, len - off);
    uint32_t n = (uint32_t)le(eh + off, 4);
    if (n == 0)
        return 0;
    if (n == 0xffffffffu)
        return say(why, whylen, ".eh_frame+0x%zx: a 64-bit DWARF record (not read)", off);
    if (n < 4 || n > len - off - 4)
        return say(why, whylen, ".eh_frame+0x%zx: record length %" PRIu32 " %s", off, n,
                   n < 4 ? "too short" : "runs past the end of the bytes");
    *id = (uint32_t)le(eh + off + 4, 4);
    *next = off + 4 + n;
    return 1;
}

static int aug_data(const char *aug, struct cur a, uint64_t base, struct jh__eh_cie *o)
{
    for (const char *s = aug + 1; *s; s++) {
        switch (*s) {
        case 'R':
            if (a.p >= a.end)
                return -1;
            o->fde_enc = *a.p++;
            break;
        case 'L':
            if (a.p >= a.end)
                return -1;
            o->lsda_enc = *a.p++;
            break;
        case 'P': {
            if (a.p >= a.end)
                return -1;
            o->pers_enc = *a.p++;
            uint64_t at = base + (uint64_t)(a.p - (const uint8_t *)aug);
            if (get_ptr(&a, o->pers_enc, at, true, &o->personality))
                return -1;
            break;
        }
        case 'S': o->signal = true; break;
        case 'B': o->b_key = true; break;
        case 'G': o->mte = true; break;
        default: return -1;
        }
    }
    return 0;
}

int jh__eh_cie(const uint8_t *eh, size_t len, uint64_t addr, size_t off,
               struct jh__eh_cie *o, char *why, size_t whylen)
{
    uint32_t id;
    size_t next;
    int r = jh__eh_record(eh, len, off, &id, &next, why, whylen);
    if (r <= 0)
        return r ? r : say(why, whylen, ".eh_frame+0x%zx: no CIE there", off);
    if (id != 0)
        return say(why, whylen, ".eh_frame+0x%zx: an FDE where a CIE should be", off);
    memset(o, 0, sizeof *o);
    o->off = off;
    o->lsda_enc = o->pers_enc = JH__EH_PE_omit;
    struct cur c = { eh + off + 8, eh + next };
    if (c.p >= c.end || (*c.p != 1 && *c.p != 3 && *c.p != 4))
        return say(why, whylen, ".eh_frame+0x%zx: CIE version %u (1, 3 or 4 are read)", off,
                   c.p < c.end ? *c.p : 0);
    o->version = *c.p++;
    const uint8_t *nul = memchr(c.p, 0, (size_t)(c.end - c.p));
    if (!nul)
        return say(why, whylen, ".eh_frame+0x%zx: CIE augmentation not terminated", off);
    o->aug = (const char *)c.p;
    c.p = nul + 1;
    if (o->version == 4) {                       /* address_size, segment_selector_size */
        if (c.end - c.p < 2 || c.p[0] != 8 || c.p[1] != 0)
            return say(why, whylen, ".eh_frame+0x%zx: CIE v4 address size is not 8", off);
        c.p += 2;
    }
    if (jh__cfa_uleb(&c.p, c.end, &o->caf) || jh__cfa_sleb(&c.p, c.end, &o->daf))
        return say(why, whylen, ".eh_frame+0x%zx: CIE cut short", off);
    if (o->version == 1) {
        if (c.p >= c.end)
            return say(why, whylen, ".eh_frame+0x%zx: CIE cut short", off);
        o->ra = *c.p++;
    } else if (jh__cfa_uleb(&c.p, c.end, &o->ra)) {
        return say(why, whylen, ".eh_frame+0x%zx: CIE cut short", off);
    }
    if (o->aug[0] == 'z') {
        uint64_t n;
        if (jh__cfa_uleb(&c.p, c.end, &n) || n > (uint64_t)(c.end - c.p))
            return say(why, whylen, ".eh_frame+0x%zx: CIE augmentation data runs past the "
                       "record", off);
        o->z = true;
        if (aug_data(o->aug, (struct cur){ c.p, c.p + n },
                     addr + (uint64_t)((const uint8_t *)o->aug - eh), o))
            return say(why, whylen, ".eh_frame+0x%zx: CIE augmentation \"%s\": data cut "
                       "short, an unknown letter or a pointer encoding not read", off, o->aug);
        c.p += n;
    } else if (o->aug[0] && strcmp(o->aug, "eh")) {
        return say(why, whylen, ".eh_frame+0x%zx: augmentation \"%s\" without 'z' cannot be "
                   "skipped", off, o->aug);
    }
    o->insns = c.p;
    o->insns_len = (size_t)(c.end - c.p);
    return 0;
}

int jh__eh_fde(const uint8_t *eh, size_t len, uint64_t addr, size_t off,
               const struct jh__eh_cie *cie, struct jh__eh_fde *o, char *why, size_t whylen)
{
    uint32_t id;
    size_t next;
    int r = jh__eh_record(eh, len, off, &id, &next, why, whylen);
    if (r <= 0)
        return r ? r : say(why, whylen, ".eh_frame+0x%zx: no FDE there", off);
    if (id == 0 || off + 4 < id || off + 4 - id != cie->off)
        return say(why, whylen, ".eh_frame+0x%zx: not an FDE of the CIE at 0x%zx", off,
                   cie->off);
    memset(o, 0, sizeof *o);
    o->off = off;
    o->cie_off = cie->off;
    struct cur c = { eh + off + 8, eh + next };
    if (get_ptr(&c, cie->fde_enc, addr + off + 8, true, &o->pc) ||
        get_ptr(&c, cie->fde_enc & 0x0f, 0, false, &o->range))
        return say(why, whylen, ".eh_frame+0x%zx: FDE pc_begin/pc_range cut short, or "
                   "encoding 0x%02x not read", off, cie->fde_enc);
    if (cie->z) {
        uint64_t n;
        if (jh__cfa_uleb(&c.p, c.end, &n) || n > (uint64_t)(c.end - c.p))
            return say(why, whylen, ".eh_frame+0x%zx: FDE augmentation data runs past the "
                       "record", off);
        struct cur a = { c.p, c.p + n };
        if (cie->lsda_enc != JH__EH_PE_omit) {
            uint64_t at = addr + (uint64_t)(a.p - eh);
            if (get_ptr(&a, cie->lsda_enc, at, true, &o->lsda))
                return say(why, whylen, ".eh_frame+0x%zx: FDE LSDA pointer cut short or "
                           "encoding 0x%02x not read", off, cie->lsda_enc);
            o->has_lsda = o->lsda != 0 || (cie->lsda_enc & 0x70) == 0;
        }
        c.p += n;
    }
    o->insns = c.p;
    o->insns_len = (size_t)(c.end - c.p);
    return 0;
}

int jh__eh_find(const uint8_t *eh, size_t len, uint64_t addr, uint64_t pc,
                struct jh__eh_cie *cie, struct jh__eh_fde *fde, char *why, size_t whylen)
{
    size_t off = 0, next;
    uint32_t id;
    int r;
    bool have_cie = false;
    while ((r = jh__eh_record(eh, len, off, &id, &next, why, whylen)) == 1) {
        if (id == 0) {
            have_cie = false;                   /* read when an FDE needs it */
        } else {
            size_t co = off + 4 >= id ? off + 4 - id : SIZE_MAX;
            if (!have_cie || cie->off != co) {
                if (co >= off)
                    return say(why, whylen, ".eh_frame+0x%zx: FDE's CIE pointer %" PRIu32
                               " leads to no record before it", off, id);
                if ((r = jh__eh_cie(eh, len, addr, co, cie, why, whylen)))
                    return r;
                have_cie = true;
            }
            if ((r = jh__eh_fde(eh, len, addr, off, cie, fde, why, whylen)))
                return r;
            if (fde->pc == pc)
                return 0;
        }
        off = next;
    }
    if (r < 0)
        return r;
    say(why, whylen, "no FDE of the .eh_frame (%zu bytes) begins at 0x%" PRIx64, len, pc);
    return -ENOENT;
}

/* ---- the translation ------------------------------------------------------------------- */

/* The contract's CIE is the one fmt/cfi.c writes for the architecture (struct jh__arch:
 * its factors, return-address column and rules at entry). */
struct tr {
    const struct jh__arch *a;
    const struct jh__eh_cie *cie;
    struct jh__buf *out;
    char *why;
    size_t whylen;
};

/* A factored offset of the CIE's, in bytes, as a multiple of the contract's factor. */
static int refactor(struct tr *t, int64_t factored, int64_t *out)
{
    int64_t bytes;
    if (__builtin_mul_overflow(factored, t->cie->daf, &bytes))
        return say(t->why, t->whylen, "an offset overflows");
    if (bytes % t->a->data_align)
        return say(t->why, t->whylen, "offset %" PRId64 " is not a multiple of %d", bytes,
                   -t->a->data_align);
    *out = bytes / t->a->data_align;
    return 0;
}

static int advance(struct tr *t, uint64_t d)
{
    struct jh__buf *o = t->out;
    if (__builtin_mul_overflow(d, t->cie->caf, &d) || d > 0xffffffffu)
        return say(t->why, t->whylen, "an advance beyond 4 GiB");
    if (d % t->a->code_align)
        return say(t->why, t->whylen, "an advance of %" PRIu64 " bytes is not a multiple of "
                   "%u", d, (unsigned)t->a->code_align);
    if (!d) {                           /* a zero advance stays one: a row boundary */
        jh__buf_u8(o, JH__CFA_advance_loc);
        return 0;
    }
    jh__cfa_put_advance(o, d / t->a->code_align);
    return 0;
}

/* Re-encode one instruction for the contract's factors. */
static int put(struct tr *t, const struct jh__cfa_insn *in)
{
    struct jh__buf *o = t->out;
    int64_t f;
    switch (in->op) {
    case JH__CFA_advance_loc: case JH__CFA_advance_loc1: case JH__CFA_advance_loc2:
    case JH__CFA_advance_loc4:
        return advance(t, in->advance);
    case JH__CFA_nop:
        return 0;
    case JH__CFA_offset: case JH__CFA_offset_extended: case JH__CFA_offset_extended_sf:
    case JH__CFA_val_offset: case JH__CFA_val_offset_sf:
    case JH__CFA_GNU_negative_offset_extended: {
        int64_t v = in->op == JH__CFA_offset_extended_sf || in->op == JH__CFA_val_offset_sf
                        ? in->s
                    : in->op == JH__CFA_GNU_negative_offset_extended ? -(int64_t)in->a
                                                                      : (int64_t)in->a;
        if (refactor(t, v, &f))
            return -EINVAL;
        bool val = in->op == JH__CFA_val_offset || in->op == JH__CFA_val_offset_sf;
        if (!val && f >= 0 && in->reg < 64) {
            jh__buf_u8(o, (uint8_t)(JH__CFA_offset | in->reg));
            jh__buf_uleb(o, (uint64_t)f);
        } else {
            jh__buf_u8(o, val ? JH__CFA_val_offset_sf : JH__CFA_offset_extended_sf);
            jh__buf_uleb(o, in->reg);
            jh__buf_sleb(o, f);
        }
        return 0;
    }
    case JH__CFA_def_cfa_sf: case JH__CFA_def_cfa_offset_sf: {
        int64_t bytes;
        if (__builtin_mul_overflow(in->s, t->cie->daf, &bytes))
            return say(t->why, t->whylen, "a CFA offset overflows");
        if (bytes < 0) {                        /* stays factored, now by the contract's */
            if (refactor(t, in->s, &f))
                return -EINVAL;
            jh__buf_u8(o, in->op);
            if (in->op == JH__CFA_def_cfa_sf)
                jh__buf_uleb(o, in->reg);
            jh__buf_sleb(o, f);
            return 0;
        }
        jh__buf_u8(o, in->op == JH__CFA_def_cfa_sf ? JH__CFA_def_cfa : JH__CFA_def_cfa_offset);
        if (in->op == JH__CFA_def_cfa_sf)
            jh__buf_uleb(o, in->reg);
        jh__buf_uleb(o, (uint64_t)bytes);
        return 0;
    }
    case JH__CFA_restore:
        if (in->reg < 64) {
            jh__buf_u8(o, (uint8_t)(JH__CFA_restore | in->reg));
            return 0;
        }
        jh__buf_u8(o, JH__CFA_restore_extended);
        jh__buf_uleb(o, in->reg);
        return 0;
    default:
        break;
    }
    jh__buf_u8(o, in->op);                      /* unfactored: as they are */
    switch (in->op) {
    case JH__CFA_restore_extended: case JH__CFA_undefined: case JH__CFA_same_value:
    case JH__CFA_def_cfa_register:
        jh__buf_uleb(o, in->reg);
        break;
    case JH__CFA_def_cfa_offset: case JH__CFA_GNU_args_size:
        jh__buf_uleb(o, in->a);
        break;
    case JH__CFA_register: case JH__CFA_def_cfa:
        jh__buf_uleb(o, in->reg);
        jh__buf_uleb(o, in->a);
        break;
    case JH__CFA_def_cfa_expression:
        jh__buf_uleb(o, in->expr_len);
        break;
    case JH__CFA_expression: case JH__CFA_val_expression:
        jh__buf_uleb(o, in->reg);
        jh__buf_uleb(o, in->expr_len);
        break;
    default:                                    /* remember/restore_state, window_save */
        break;
    }
    if (in->expr_len)
        jh__buf_put(o, in->expr, in->expr_len);
    return 0;
}

/* Walk a program: check that it decodes, and with translate, write it out re-encoded. Notes
 * whether it holds a DW_CFA_restore and whether it sets a rule for register ra. */
static int walk(struct tr *t, const uint8_t *p, size_t n, bool translate, bool *has_restore,
                bool *sets_ra, uint64_t ra)
{
    const uint8_t *end = p + n;
    struct jh__cfa_insn in;
    int r;
    while ((r = jh__cfa_next(&p, end, &in)) > 0) {
        if (in.op == JH__CFA_restore || in.op == JH__CFA_restore_extended)
            *has_restore = true;
        if (in.reg == ra && in.op != JH__CFA_def_cfa && in.op != JH__CFA_def_cfa_register &&
            in.op != JH__CFA_def_cfa_sf && in.op != JH__CFA_advance_loc)
            *sets_ra = true;
        if (translate && put(t, &in))
            return -EINVAL;
    }
    if (r == -ENOTSUP)
        return say(t->why, t->whylen, "call-frame opcode 0x%02x is not one this library reads "
                   "(DW_CFA_set_loc included)", in.op);
    return r ? say(t->why, t->whylen, "call-frame instructions cut short") : 0;
}

/* Does the CIE's initial program set exactly what the contract's CIE sets? */
static bool initial_is_contract(const struct jh__eh_cie *c, const struct jh__arch *k)
{
    const uint8_t *p = c->insns, *end = c->insns + c->insns_len;
    struct jh__cfa_insn a, b;
    if (jh__cfa_next(&p, end, &a) != 1 || a.op != JH__CFA_def_cfa || a.reg != k->sp ||
        a.a != k->entry_cfa)
        return false;
    if (k->entry_ra) {
        int64_t bytes;
        if (jh__cfa_next(&p, end, &b) != 1 ||
            (b.op != JH__CFA_offset && b.op != JH__CFA_offset_extended) || b.reg != k->ra ||
            b.a > 64 || (bytes = (int64_t)b.a * c->daf) != -(int64_t)k->entry_ra)
            return false;
    }
    while (p < end && *p == JH__CFA_nop)
        p++;
    return p == end;
}

int jh__eh_translate(const struct jh__arch *arch, const struct jh__eh_cie *c,
                     const struct jh__eh_fde *f, struct jh__buf *out, char *why, size_t whylen)
{
    const struct jh__arch *k = arch ? arch : JH__ARCH_HOST;
    if (c->ra != k->ra)
        return say(why, whylen, "the CIE's return address is in register %" PRIu64 ", not %"
                   PRIu64, c->ra, (uint64_t)k->ra);
    if (c->signal)
        return say(why, whylen, "a signal frame ('S'): not described by jitherald");
    if (c->b_key && !k->pac)
        return say(why, whylen, "augmentation 'B' (return addresses signed with arm64's B "
                   "key) on %s", k->name);
    if (c->mte)
        return say(why, whylen, "augmentation 'G' (memory-tagged frames) is not described "
                   "by jitherald yet");
    if (!c->caf)
        return say(why, whylen, "the CIE's code alignment factor is 0");
    struct tr t = { k, c, out, why, whylen };
    bool restore = false, cie_sets_ra = false, unused = false;
    if (walk(&t, c->insns, c->insns_len, false, &unused, &cie_sets_ra, k->ra) ||
        walk(&t, f->insns, f->insns_len, false, &restore, &unused, k->ra))
        return -EINVAL;
    bool same = initial_is_contract(c, k);
    size_t start = out->len;
    if (same && c->caf == k->code_align && c->daf == k->data_align) {
        jh__buf_put(out, f->insns, f->insns_len);       /* the contract's CIE: as it is */
        return out->err;
    }
    if (!same && restore)
        return say(why, whylen, "DW_CFA_restore under a CIE whose initial rules differ from "
                   "the contract's");
    int r = 0;
    if (!same) {
        if (k->entry_ra && !cie_sets_ra) {
            jh__buf_u8(out, JH__CFA_undefined);
            jh__buf_uleb(out, k->ra);
        }
        r = walk(&t, c->insns, c->insns_len, true, &unused, &unused, k->ra);
    }
    if (!r)
        r = walk(&t, f->insns, f->insns_len, true, &unused, &unused, k->ra);
    if (r) {
        out->len = start;
        return r;
    }
    return out->err;
}

/* ---- evaluating a contract program ------------------------------------------------------ */

static void initial(const struct jh__arch *k, struct jh__eh_rules *r)
{
    memset(r, 0, sizeof *r);
    r->plain = true;
    r->cfa_reg = k->sp;
    r->cfa_off = k->entry_cfa;
    if (k->entry_ra) {
        r->saved = (uint64_t)1 << k->ra;
        r->at[k->ra] = -(int64_t)k->entry_ra;
    }
}

int jh__eh_rules_at(const struct jh__arch *arch, const uint8_t *cfi, size_t len,
                    uint64_t pc_off, struct jh__eh_rules *out)
{
    const struct jh__arch *k = arch ? arch : JH__ARCH_HOST;
    struct jh__eh_rules init, stack[8];
    initial(k, &init);
    *out = init;
    unsigned depth = 0;
    const uint8_t *p = cfi, *end = cfi + len;
    uint64_t loc = 0;
    struct jh__cfa_insn in;
    int r;
    while ((r = jh__cfa_next(&p, end, &in)) > 0) {
        if (in.advance || in.op == JH__CFA_advance_loc1 || in.op == JH__CFA_advance_loc2 ||
            in.op == JH__CFA_advance_loc4) {
            if (in.advance > pc_off - loc)
                return 0;                       /* the next row starts past pc_off */
            loc += in.advance;
            continue;
        }
        int64_t off;
        switch (in.op) {
        case JH__CFA_nop: case JH__CFA_GNU_args_size:
            break;
        case JH__CFA_def_cfa:
            out->cfa_reg = in.reg, out->cfa_off = (int64_t)in.a;
            break;
        case JH__CFA_def_cfa_sf:
            out->cfa_reg = in.reg, out->cfa_off = in.s * k->data_align;
            break;
        case JH__CFA_def_cfa_register:
            out->cfa_reg = in.reg;
            break;
        case JH__CFA_def_cfa_offset:
            out->cfa_off = (int64_t)in.a;
            break;
        case JH__CFA_def_cfa_offset_sf:
            out->cfa_off = in.s * k->data_align;
            break;
        case JH__CFA_offset: case JH__CFA_offset_extended: case JH__CFA_offset_extended_sf:
            off = (in.op == JH__CFA_offset_extended_sf ? in.s : (int64_t)in.a) * k->data_align;
            if (in.reg >= 64) {
                out->plain = false;
                break;
            }
            out->saved |= (uint64_t)1 << in.reg;
            out->at[in.reg] = off;
            break;
        case JH__CFA_restore: case JH__CFA_restore_extended:
            if (in.reg < 64) {
                out->saved = (out->saved & ~((uint64_t)1 << in.reg)) |
                             (init.saved & ((uint64_t)1 << in.reg));
                out->at[in.reg] = init.at[in.reg];
            }
            break;
        case JH__CFA_undefined: case JH__CFA_same_value:
            if (in.reg < 64)
                out->saved &= ~((uint64_t)1 << in.reg);
            break;
        case JH__CFA_remember_state:
            if (depth == sizeof stack / sizeof stack[0])
                return -EINVAL;
            stack[depth++] = *out;
            break;
        case JH__CFA_restore_state:             /* the CFA rule too, as libgcc does */
            if (!depth)
                return -EINVAL;
            *out = stack[--depth];
            break;
        default:                                /* expressions, register, val_offset... */
            out->plain = false;
            break;
        }
    }
    if (r < 0)
        return -EINVAL;
    if (out->cfa_reg != k->sp)
        out->plain = false;
    return 0;
}
