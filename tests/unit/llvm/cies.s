# cies.s — .eh_frame records written by hand, for tests/unit/llvm/test_object.cc: CIEs
# that LLVM never emits (other alignment factors, other initial rules, another return
# address register, a signal frame), each with functions whose unwind rules the LLVM
# adapter must translate to jitherald's CFI contract or refuse, saying why.
    .text
    .p2align 4
    .globl f_caf4, f_odd, f_init, f_restore, f_ra, f_sig
    .type f_caf4, @function
f_caf4:     .fill 32, 1, 0x90
    .size f_caf4, 32
    .type f_odd, @function
f_odd:      .fill 32, 1, 0x90
    .size f_odd, 32
    .type f_init, @function
f_init:     .fill 32, 1, 0x90
    .size f_init, 32
    .type f_restore, @function
f_restore:  .fill 32, 1, 0x90
    .size f_restore, 32
    .type f_ra, @function
f_ra:       .fill 32, 1, 0x90
    .size f_ra, 32
    .type f_sig, @function
f_sig:      .fill 32, 1, 0x90
    .size f_sig, 32

    .section .eh_frame, "a", @unwind

# CIE A: code alignment 4, data alignment -4 (every factored operand must be rescaled)
cie_a:
    .long 1f - 0f
0:  .long 0
    .byte 1
    .asciz "zR"
    .uleb128 4
    .sleb128 -4
    .byte 16
    .uleb128 1
    .byte 0x1b                  # FDE pointers: pcrel sdata4
    .byte 0x0c, 7, 8            # def_cfa rsp+8
    .byte 0x90, 2               # rip at cfa + 2 * -4
    .p2align 2
1:

# f_caf4: at 4 CFA = rsp+16 (def_cfa_offset_sf -4 * -4), rbp at cfa-16; at 12 CFA = rbp+16,
# rbx at cfa-24; at 28 CFA = rsp+8 again
    .long 1f - 0f
0:  .long 0b - cie_a
    .long f_caf4 - .
    .long 32
    .uleb128 0
    .byte 0x41                  # advance 1 (x4)
    .byte 0x13, 0x7c            # def_cfa_offset_sf -4
    .byte 0x86, 4               # rbp at cfa + 4 * -4
    .byte 0x42                  # advance 2 (x4)
    .byte 0x0d, 6               # def_cfa_register rbp
    .byte 0x83, 6               # rbx at cfa + 6 * -4
    .byte 0x44                  # advance 4 (x4)
    .byte 0x0c, 7, 8            # def_cfa rsp+8
    .p2align 2
1:

# f_odd: rbx at cfa-12, which no multiple of -8 expresses
    .long 1f - 0f
0:  .long 0b - cie_a
    .long f_odd - .
    .long 32
    .uleb128 0
    .byte 0x41
    .byte 0x0e, 16
    .byte 0x83, 3
    .p2align 2
1:

# CIE B: the contract's factors, but its initial rules also keep rbx (same_value)
cie_b:
    .long 1f - 0f
0:  .long 0
    .byte 1
    .asciz "zR"
    .uleb128 1
    .sleb128 -8
    .byte 16
    .uleb128 1
    .byte 0x1b
    .byte 0x0c, 7, 8
    .byte 0x90, 1
    .byte 0x08, 3               # same_value rbx
    .p2align 2
1:

# f_init: push rbp at 1
    .long 1f - 0f
0:  .long 0b - cie_b
    .long f_init - .
    .long 32
    .uleb128 0
    .byte 0x41
    .byte 0x0e, 16
    .byte 0x86, 2
    .p2align 2
1:

# f_restore: DW_CFA_restore would restore the contract CIE's rule, not CIE B's
    .long 1f - 0f
0:  .long 0b - cie_b
    .long f_restore - .
    .long 32
    .uleb128 0
    .byte 0x41
    .byte 0x0e, 16
    .byte 0x86, 2
    .byte 0x44
    .byte 0xc6                  # restore rbp
    .byte 0x0e, 8
    .p2align 2
1:

# CIE C: return address in register 15
cie_c:
    .long 1f - 0f
0:  .long 0
    .byte 1
    .asciz "zR"
    .uleb128 1
    .sleb128 -8
    .byte 15
    .uleb128 1
    .byte 0x1b
    .byte 0x0c, 7, 8
    .byte 0x8f, 1
    .p2align 2
1:
    .long 1f - 0f
0:  .long 0b - cie_c
    .long f_ra - .
    .long 32
    .uleb128 0
    .p2align 2
1:

# CIE D: a signal frame ("zRS")
cie_d:
    .long 1f - 0f
0:  .long 0
    .byte 1
    .asciz "zRS"
    .uleb128 1
    .sleb128 -8
    .byte 16
    .uleb128 1
    .byte 0x1b
    .byte 0x0c, 7, 8
    .byte 0x90, 1
    .p2align 2
1:
    .long 1f - 0f
0:  .long 0b - cie_d
    .long f_sig - .
    .long 32
    .uleb128 0
    .p2align 2
1:
