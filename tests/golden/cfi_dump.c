/*
 * cfi_dump.c — writes the golden corpus's cfi.dump and cfi.map (tests/golden/mkcorpus.sh
 * builds and runs it): a jitdump whose UNWINDING_INFO holds every DW_CFA opcode a JIT may
 * hand us as raw CFI, so `jitherald inspect` prints each rule kind; a frame-pointer function
 * with a prologue long enough for advance_loc2; one without unwind info; a name with a
 * control character; a move and a removal.
 *
 *     usage: cfi_dump DIR        (writes DIR/jit-PID.dump and /tmp/perf-PID.map)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cfi_dump DIR\n");
        return 2;
    }
    struct jh_options o = { .sz = sizeof o, .channels = JH_JITDUMP | JH_PERFMAP, .dir = argv[1],
                            .engine = "golden", .flags = JH_OPT_IGNORE_ENV };
    jh_ctx *jh;
    int err = jh_open(&jh, &o);
    if (err) {
        fprintf(stderr, "jh_open: %s\n", jh_strerror(err));
        return 1;
    }
    uint8_t *code = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
    if (code == MAP_FAILED)
        return 1;
    for (size_t i = 0; i < 1 << 16; i++)
        code[i] = (uint8_t)(i * 7);
    static const uint8_t cfi[] = {
        0x41,                   /* advance_loc 1 */
        0x0e, 0x10,             /* def_cfa_offset 16 */
        0x86, 0x02,             /* offset rbp, 2 (factored: cfa-16) */
        0x43,                   /* advance_loc 3 */
        0x0d, 0x06,             /* def_cfa_register rbp */
        0x02, 0x40,             /* advance_loc1 64 */
        0x0a,                   /* remember_state */
        0x83, 0x03,             /* offset rbx, 3 */
        0x11, 0x0c, 0x7d,       /* offset_extended_sf r12, -3 */
        0x03, 0x00, 0x01,       /* advance_loc2 256 */
        0x0b,                   /* restore_state */
        0xc3,                   /* restore rbx */
        0x07, 0x0d,             /* undefined r13 */
        0x08, 0x0e,             /* same_value r14 */
        0x09, 0x0f, 0x00,       /* register r15 in rax */
        0x14, 0x03, 0x04,       /* val_offset rbx, 4 */
        0x2e, 0x10,             /* GNU_args_size 16 */
        0x10, 0x03, 0x02, 0x91, 0x08,   /* expression rbx: DW_OP_fbreg 8 */
        0x0f, 0x02, 0x77, 0x08, /* def_cfa_expression: DW_OP_breg7 8 */
        0x12, 0x07, 0x02,       /* def_cfa_sf rsp, 2 */
        0x13, 0x7e,             /* def_cfa_offset_sf -2 */
        0x06, 0x03,             /* restore_extended rbx */
        0x05, 0x03, 0x03,       /* offset_extended rbx, 3 */
        0x16, 0x03, 0x01, 0x30, /* val_expression rbx: DW_OP_lit0 */
        0x2f, 0x03, 0x01,       /* GNU_negative_offset_extended rbx, 1 */
        0x04, 0x10, 0x00, 0x00, 0x00,   /* advance_loc4 16 */
        0x0c, 0x07, 0x08,       /* def_cfa rsp, 8 */
        0x00,                   /* nop */
    };
    static const char *const files[] = { "rich.src", "/abs/dir/inlined.h" };
    static const struct jh_line lines[] = { { 0, 1, 0, 0 }, { 4, 2, 5, 0 }, { 68, 40, 0, 1 },
                                            { 324, 3, 1, 0 } };
    struct jh_code c = { .sz = sizeof c, .name = "cfi_rich", .start = code, .size = 0x200,
                         .files = files, .nfiles = 2, .lines = lines, .nlines = 4,
                         .unwind = JH_UNWIND_CFI, .cfi = cfi, .cfi_len = sizeof cfi };
    uint64_t id[3];
    if ((err = jh_code_add(jh, &c, &id[0])))
        goto fail;
    c = (struct jh_code){ .sz = sizeof c, .name = "long_prologue", .start = code + 0x1000,
                          .size = 0x400, .unwind = JH_UNWIND_FRAME_POINTER,
                          .fp_push_end = 300, .fp_set_end = 303 };
    if ((err = jh_code_add(jh, &c, &id[1])))
        goto fail;
    c = (struct jh_code){ .sz = sizeof c, .name = "tab\there", .start = code + 0x2000,
                          .size = 0x30 };
    if ((err = jh_code_add(jh, &c, &id[2])))
        goto fail;
    memcpy(code + 0x3000, code + 0x2000, 0x30);
    if ((err = jh_code_move(jh, id[2], code + 0x3000)) || (err = jh_code_remove(jh, id[1])))
        goto fail;
    jh_close(jh);
    return 0;
fail:
    fprintf(stderr, "cfi_dump: %s\n", jh_strerror(err));
    return 1;
}
