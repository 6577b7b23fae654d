/*
 * fuzz_cfi.c — a JIT's raw CFI (jh_code.cfi, JH_UNWIND_CFI) on arbitrary bytes: the first
 * two bytes give the code size, the third the architecture, the rest are the instructions.
 *   - jh__cfi_validate, the check the core runs before any channel sees the code, and
 *     jh__cfa_next, the decoder under it and under the CLI, must agree: what validates
 *     decodes to the end, instruction by instruction, advancing no further than the code;
 *   - jh_code_add through the public API refuses exactly what the validator refuses (and
 *     an empty list, which the core refuses before validating);
 *   - what validates must encode (an .eh_frame run in both pointer flavours, perf's
 *     UNWINDING_INFO layout) to exactly the size announced, and the CLI's decoder
 *     (tools/lib/eh_frame.c) must accept perf's layout as written: a library that writes
 *     what its own reader refuses is a bug of one or the other.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "jitherald.h"
#include "fmt/cfa.h"
#include "fmt/cfi.h"
#include "lib/eh_frame.h"

static uint8_t code[65536];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static jh_ctx *ctx;
    if (!ctx) {
        struct jh_options o = { .sz = sizeof o, .flags = JH_OPT_IGNORE_ENV };
        if (jh_open(&ctx, &o) < 0)
            abort();
    }
    if (size < 3)
        return 0;
    uint64_t code_size = 1 + (data[0] | (uint64_t)data[1] << 8);
    const struct jh__arch *arch = data[2] & 1 ? &jh__arch_arm64 : &jh__arch_x86_64;
    const uint8_t *cfi = data + 3;
    size_t len = size - 3;

    int valid = jh__cfi_validate(cfi, len, code_size);
    if (valid != 0 && valid != -EINVAL)
        abort();
    const uint8_t *p = cfi, *end = cfi + len;
    uint64_t loc = 0;
    struct jh__cfa_insn in;
    int rc;
    while ((rc = jh__cfa_next(&p, end, &in)) == 1) {
        if (p > end)
            abort();
        loc += in.advance;
    }
    if (valid == 0 && (rc != 0 || p != end || loc > code_size))
        abort();                /* validated, yet the decoder stops or advances too far */

    struct jh_code c = { .sz = sizeof c, .name = "f", .start = code,
                         .size = (size_t)code_size, .unwind = JH_UNWIND_CFI, .cfi = cfi,
                         .cfi_len = len };
    uint64_t id;
    rc = jh_code_add(ctx, &c, &id);
    /* the core also wants at least one instruction (describe.c) */
    if ((rc == 0) != (valid == 0 && len > 0))
        abort();                /* the public API and the validator disagree */
    if (rc == 0 && jh_code_remove(ctx, id) != 0)
        abort();
    if (valid != 0 || len == 0)
        return 0;

    struct jh__func f = { .start = 0x1000, .size = code_size, .name = "f",
                          .unwind = JH_UNWIND_CFI, .cfi = cfi, .cfi_len = len };
    for (int ptr = JH__CFI_PCREL; ptr <= JH__CFI_ABS; ptr++) {
        struct jh__cfi_opts o = { .arch = arch, .ptr = ptr, .addr = 0x2000 };
        struct jh__buf b = { 0 };
        size_t want = jh__cfi_eh_frame_size(&o, &f, 1);
        struct jh__cfi_index idx;
        if (jh__cfi_eh_frame(&b, &o, &f, 1, &idx) != 1 || b.len != want)
            abort();
        jh__buf_free(&b);
    }
    struct jh__buf b = { 0 };
    size_t hdr = 0;
    if (jh__cfi_perf_unwinding(&b, &f, 0x80, arch, &hdr) != 1 || hdr > b.len)
        abort();
    char err[256];
    uint64_t eh = (0x80 + code_size + 7) & ~(uint64_t)7;
    if (jhr_eh_frame_check(b.p, b.len - hdr, b.p + (b.len - hdr), hdr, eh, 0x80, code_size,
                           arch, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "the CLI refuses the library's own UNWINDING_INFO: %s\n", err);
        abort();
    }
    jh__buf_free(&b);
    return 0;
}
