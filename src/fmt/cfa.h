/*
 * cfa.h — decoding DWARF call-frame instructions (DWARF 4, section 6.4.2), one at a time:
 * what the library uses to validate a JIT's raw CFI before any channel sees it, and what
 * the CLI uses to print and check the .eh_frame of a jitdump. Bounds-checked; never reads
 * past end; operands that do not fit 64 bits are malformed.
 */
#ifndef JH__FMT_CFA_H
#define JH__FMT_CFA_H

#include <stddef.h>
#include <stdint.h>

/* DW_CFA_* opcodes. The three primary ones carry an operand in their low 6 bits. */
enum {
    JH__CFA_advance_loc = 0x40, JH__CFA_offset = 0x80, JH__CFA_restore = 0xc0,
    JH__CFA_nop = 0x00, JH__CFA_set_loc = 0x01, JH__CFA_advance_loc1 = 0x02,
    JH__CFA_advance_loc2 = 0x03, JH__CFA_advance_loc4 = 0x04, JH__CFA_offset_extended = 0x05,
    JH__CFA_restore_extended = 0x06, JH__CFA_undefined = 0x07, JH__CFA_same_value = 0x08,
    JH__CFA_register = 0x09, JH__CFA_remember_state = 0x0a, JH__CFA_restore_state = 0x0b,
    JH__CFA_def_cfa = 0x0c, JH__CFA_def_cfa_register = 0x0d, JH__CFA_def_cfa_offset = 0x0e,
    JH__CFA_def_cfa_expression = 0x0f, JH__CFA_expression = 0x10,
    JH__CFA_offset_extended_sf = 0x11, JH__CFA_def_cfa_sf = 0x12,
    JH__CFA_def_cfa_offset_sf = 0x13, JH__CFA_val_offset = 0x14, JH__CFA_val_offset_sf = 0x15,
    JH__CFA_val_expression = 0x16, JH__CFA_GNU_window_save = 0x2d,
    JH__CFA_GNU_args_size = 0x2e, JH__CFA_GNU_negative_offset_extended = 0x2f,
};

/* One instruction. op is the opcode (0x40/0x80/0xc0 for the primary ones, whose register or
 * delta is then in reg/advance). Operands by opcode:
 *   advance_loc*            advance (bytes of code; the CIE's code alignment is 1 for us)
 *   offset, offset_extended, val_offset, GNU_negative_offset_extended: reg, a (factored)
 *   *_sf forms              reg, s (signed, factored)
 *   def_cfa                 reg, a;    def_cfa_sf: reg, s
 *   def_cfa_register, restore*, undefined, same_value: reg
 *   def_cfa_offset, GNU_args_size: a;   def_cfa_offset_sf: s
 *   register                reg, a (the second register)
 *   *expression             reg (not for def_cfa_expression), expr/expr_len
 */
struct jh__cfa_insn {
    uint8_t op;
    uint64_t reg, a, advance;
    int64_t s;
    const uint8_t *expr;
    size_t expr_len;
};

/*
 * Decode the instruction at *p and move *p past it. 1: *in filled; 0: *p == end;
 * -EINVAL: cut short or an operand out of range; -ENOTSUP: an opcode we do not accept
 * (unknown, or DW_CFA_set_loc, whose operand depends on the CIE's pointer encoding).
 * in->op is set in every case where an opcode was read.
 */
int jh__cfa_next(const uint8_t **p, const uint8_t *end, struct jh__cfa_insn *in);

/* The LEB128 numbers of CIE and FDE fields (code and data alignment, return register,
 * augmentation length), read as the instructions' operands are: 0 and *p past the number,
 * or -EINVAL when it is cut short or does not fit 64 bits. */
int jh__cfa_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v);
int jh__cfa_sleb(const uint8_t **p, const uint8_t *end, int64_t *v);

/* Append an advance of d code units (< 2^32) in its shortest form (advance_loc, _loc1,
 * _loc2, _loc4); nothing for 0. */
struct jh__buf;
void jh__cfa_put_advance(struct jh__buf *b, uint64_t d);

#endif
