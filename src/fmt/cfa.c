/* cfa.c — see cfa.h. */
#include "fmt/cfa.h"

#include <errno.h>
#include <string.h>

#include "base/buf.h"
#include "fmt/cfi.h"

int jh__cfa_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        if (shift >= 64 || (shift == 63 && (c & 0x7e)))
            return -EINVAL;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -EINVAL;
}

int jh__cfa_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
    uint64_t r = 0;
    unsigned shift = 0;
    uint8_t c;
    do {
        if (*p >= end || shift >= 64)
            return -EINVAL;
        c = *(*p)++;
        if (shift == 63 && (c & 0x7f) != 0 && (c & 0x7f) != 0x7f)
            return -EINVAL;
        r |= (uint64_t)(c & 0x7f) << shift;
        shift += 7;
    } while (c & 0x80);
    if (shift < 64 && (c & 0x40))
        r |= ~(uint64_t)0 << shift;
    memcpy(v, &r, sizeof r);
    return 0;
}

static int fixed(const uint8_t **p, const uint8_t *end, size_t n, uint64_t *v)
{
    if ((size_t)(end - *p) < n)
        return -EINVAL;
    uint64_t r = 0;
    for (size_t i = 0; i < n; i++)
        r |= (uint64_t)(*p)[i] << (8 * i);      /* little-endian, as we emit */
    *p += n;
    *v = r;
    return 0;
}

static int block(const uint8_t **p, const uint8_t *end, struct jh__cfa_insn *in)
{
    uint64_t n;
    if (jh__cfa_uleb(p, end, &n) || n > (uint64_t)(end - *p))
        return -EINVAL;
    in->expr = *p;
    in->expr_len = (size_t)n;
    *p += n;
    return 0;
}

int jh__cfa_next(const uint8_t **p, const uint8_t *end, struct jh__cfa_insn *in)
{
    if (*p >= end)
        return 0;
    memset(in, 0, sizeof *in);
    uint8_t op = *(*p)++;
    int err = 0;
    in->op = op & 0xc0 ? op & 0xc0 : op;
    switch (op & 0xc0) {
    case JH__CFA_advance_loc:
        in->advance = op & 0x3f;
        return 1;
    case JH__CFA_offset:
        in->reg = op & 0x3f;
        return jh__cfa_uleb(p, end, &in->a) ? -EINVAL : 1;
    case JH__CFA_restore:
        in->reg = op & 0x3f;
        return 1;
    }
    switch (op) {
    case JH__CFA_nop: case JH__CFA_remember_state: case JH__CFA_restore_state:
    case JH__CFA_GNU_window_save:
        break;
    case JH__CFA_advance_loc1: err = fixed(p, end, 1, &in->advance); break;
    case JH__CFA_advance_loc2: err = fixed(p, end, 2, &in->advance); break;
    case JH__CFA_advance_loc4: err = fixed(p, end, 4, &in->advance); break;
    case JH__CFA_restore_extended: case JH__CFA_undefined: case JH__CFA_same_value:
    case JH__CFA_def_cfa_register:
        err = jh__cfa_uleb(p, end, &in->reg);
        break;
    case JH__CFA_def_cfa_offset: case JH__CFA_GNU_args_size:
        err = jh__cfa_uleb(p, end, &in->a);
        break;
    case JH__CFA_def_cfa_offset_sf:
        err = jh__cfa_sleb(p, end, &in->s);
        break;
    case JH__CFA_offset_extended: case JH__CFA_register: case JH__CFA_def_cfa:
    case JH__CFA_val_offset: case JH__CFA_GNU_negative_offset_extended:
        err = jh__cfa_uleb(p, end, &in->reg) || jh__cfa_uleb(p, end, &in->a) ? -EINVAL : 0;
        break;
    case JH__CFA_offset_extended_sf: case JH__CFA_def_cfa_sf: case JH__CFA_val_offset_sf:
        err = jh__cfa_uleb(p, end, &in->reg) || jh__cfa_sleb(p, end, &in->s) ? -EINVAL : 0;
        break;
    case JH__CFA_def_cfa_expression:
        err = block(p, end, in);
        break;
    case JH__CFA_expression: case JH__CFA_val_expression:
        err = jh__cfa_uleb(p, end, &in->reg) || block(p, end, in) ? -EINVAL : 0;
        break;
    default:
        return -ENOTSUP;
    }
    return err ? -EINVAL : 1;
}

void jh__cfa_put_advance(struct jh__buf *b, uint64_t d)
{
    if (d == 0)
        return;
    if (d < 0x40) {
        jh__buf_u8(b, (uint8_t)(JH__CFA_advance_loc | d));
    } else if (d <= 0xff) {
        jh__buf_u8(b, JH__CFA_advance_loc1);
        jh__buf_u8(b, (uint8_t)d);
    } else if (d <= 0xffff) {
        jh__buf_u8(b, JH__CFA_advance_loc2);
        jh__buf_u16(b, (uint16_t)d);
    } else {
        jh__buf_u8(b, JH__CFA_advance_loc4);
        jh__buf_u32(b, (uint32_t)d);
    }
}

int jh__cfi_validate(const uint8_t *cfi, size_t len, uint64_t code_size)
{
    if (len && !cfi)
        return -EINVAL;
    const uint8_t *p = cfi, *end = cfi + len;
    struct jh__cfa_insn in;
    uint64_t loc = 0;
    int r;
    while ((r = jh__cfa_next(&p, end, &in)) > 0) {
        if (in.advance > code_size - loc)
            return -EINVAL;
        loc += in.advance;
    }
    /* -ENOTSUP too: set_loc needs the CIE's pointer encoding, which differs per flavour;
     * anything else unknown to us is probably unknown to some consumer. */
    return r == 0 ? 0 : -EINVAL;
}
