/*
 * fuzz_jitdump.c — the jitdump reader and checker behind `jitherald inspect/check` (and the
 * other tools that read jitdump files), fed arbitrary bytes. Printing is on, to /dev/null,
 * so the inspect paths are covered too. The second half of each input is also decoded as a
 * bare .eh_frame + .eh_frame_hdr pair, the parser UNWINDING_INFO records reach.
 */
#include <stdint.h>
#include <stdio.h>

#include "lib/eh_frame.h"
#include "lib/jitdump_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null)
        null = fopen("/dev/null", "w");
    struct jhr_jd r;
    struct jhr_jd_stats st;
    jhr_jd_check(&r, data, size, NULL, false, NULL, &st);
    jhr_jd_check(&r, data, size, null, JHR_JD_VERBOSE, null, &st);
    jhr_jd_check(&r, data, size, null, JHR_JD_VERBOSE | JHR_JD_STRICT, null, &st);
    if (size >= 4) {
        size_t hdr = size > 40 ? 20 : size / 4;
        char err[128];
        jhr_eh_frame_check(data, size - hdr, data + size - hdr, hdr, 0x1000, 0x80,
                           data[0] * 16u, null, err, sizeof err);
    }
    return 0;
}
