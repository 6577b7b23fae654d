/*
 * fuzz_jitdump.c — the jitdump reader and checker behind `jitherald inspect/check` (and the
 * other tools that read jitdump files), fed arbitrary bytes. Printing is on, to /dev/null,
 * so the inspect paths are covered too. The second half of each input is also decoded as a
 * bare .eh_frame + .eh_frame_hdr pair, the parser UNWINDING_INFO records reach. Every LOAD
 * after a DEBUG_INFO gets its line table read as `jitherald run` reads it
 * (jitdump_lines.h: V8's misaligned names walked by the script name's length).
 */
#include <stdint.h>
#include <stdio.h>

#include "fmt/arch.h"
#include "lib/eh_frame.h"
#include "lib/jitdump_check.h"
#include "lib/jitdump_lines.h"
#include "lib/jitdump_read.h"

/* The line table of each LOAD from the DEBUG_INFO before it. */
static void lines(const uint8_t *data, size_t size)
{
    struct jhr_jd r;
    if (jhr_jd_open(&r, data, size) < 0)
        return;
    static struct jh_line rows[64];
    struct jhr_jd_rec rec, dbg;
    int have_dbg = 0;
    while (jhr_jd_next(&r, &rec) == 1) {
        if (rec.id == JH__JD_CODE_DEBUG_INFO) {
            dbg = rec;
            have_dbg = 1;
        } else if (rec.id == JH__JD_CODE_LOAD && have_dbg) {
            struct jhr_lines ln = { .rows = rows, .cap = 64 };
            jhr_jd_load_lines(&r, &dbg, &rec, &ln);
            for (uint32_t i = 0; i < ln.n; i++)        /* what the rows point at is there */
                if (ln.rows[i].file >= ln.nfiles || !ln.files[ln.rows[i].file][0] ||
                    ln.rows[i].offset >= rec.u.load.code_size)
                    __builtin_trap();
            have_dbg = 0;
        }
    }
}

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
    lines(data, size);
    if (size >= 4) {
        size_t hdr = size > 40 ? 20 : size / 4;
        char err[128];
        jhr_eh_frame_check(data, size - hdr, data + size - hdr, hdr, 0x1000, 0x80,
                           data[0] * 16u, &jh__arch_x86_64, null, err, sizeof err);
    }
    return 0;
}
