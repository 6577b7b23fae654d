/*
 * fuzz_eh_frame.c — the .eh_frame + .eh_frame_hdr decoder (tools/lib/eh_frame.c) that
 * `jitherald check` runs on a jitdump's UNWINDING_INFO, on arbitrary bytes with arbitrary
 * layouts: the first 8 bytes give the code size and where the header starts, the rest is
 * the section data. The layout is perf's: .text at 0x80, .eh_frame at ALIGN_8(text end).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
                       err, sizeof err);
    jhr_eh_frame_check(data, split, data + split, size - split, eh, text, code_size, null,
                       err, sizeof err);
    return 0;
}
