/*
 * fuzz_eh_frame.c — the .eh_frame + .eh_frame_hdr decoder (tools/lib/eh_frame.c) that
 * `jitherald check` runs on a jitdump's UNWINDING_INFO, on arbitrary bytes with arbitrary
 * layouts: the first 8 bytes give the code size and where the header starts, the rest is
 * the section data. The layout is perf's: .text at 0x80, .eh_frame at ALIGN_8(text end).
 * The same bytes then go through the library's reader and translator (fmt/eh_frame.h, what
 * jh_code_add's JH_UNWIND_EH_FRAME runs): every record read, every FDE translated for both
 * architectures, and the FDE search.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "fmt/cfi.h"
#include "fmt/eh_frame.h"
#include "lib/eh_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null && !(null = fopen("/dev/null", "w")))
        return 0;
    if (size < 8)
        return 0;
    uint32_t code_size, split;
    memcpy(&code_size, data, 4);
    memcpy(&split, data + 4, 4);
    data += 8;
    size -= 8;
    split = size ? split % (uint32_t)(size + 1) : 0;
    uint64_t text = 0x80, eh = (text + code_size + 7) & ~(uint64_t)7;
    char err[256];
    jhr_eh_frame_check(data, split, data + split, size - split, eh, text, code_size, NULL,
                       NULL, err, sizeof err);
    jhr_eh_frame_check(data, split, data + split, size - split, eh, text, code_size,
                       size & 1 ? &jh__arch_arm64 : &jh__arch_x86_64, null, err, sizeof err);
    size_t off = 0, next;
    uint32_t id;
    struct jh__eh_cie cie = { .off = SIZE_MAX }, fc;
    struct jh__eh_fde fde;
    uint64_t last_pc = 0;
    while (jh__eh_record(data, size, off, &id, &next, err, sizeof err) == 1) {
        if (id == 0) {
            if (jh__eh_cie(data, size, eh, off, &cie, err, sizeof err))
                cie.off = SIZE_MAX;
        } else if (cie.off != SIZE_MAX &&
                   !jh__eh_fde(data, size, eh, off, &cie, &fde, err, sizeof err)) {
            for (size_t a = 0; jh__arch_list[a]; a++) {
                struct jh__buf out = { 0 };
                jh__eh_translate(jh__arch_list[a], &cie, &fde, &out, err, sizeof err);
                jh__buf_free(&out);
            }
            last_pc = fde.pc;
        }
        off = next;
    }
    jh__eh_find(data, size, eh, last_pc, &fc, &fde, err, sizeof err);
    return 0;
}
