/*
 * fuzz_perfmap.c — the perf map reader behind `jitherald inspect/check`, fed arbitrary
 * bytes, with printing on (to /dev/null) so every path is covered; and the file-kind
 * sniffer every command runs on its input first (lib/filekind.h).
 */
#include <stdint.h>
#include <stdio.h>

#include "lib/filekind.h"
#include "lib/perfmap_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null)
        null = fopen("/dev/null", "w");
    enum jhr_kind k = jhr_kind_of(data, size < JHR_KIND_PEEK ? size : JHR_KIND_PEEK);
    if (!jhr_kind_name(k)[0])
        return 0;
    char err[256];
    size_t n;
    jhr_pm_check(data, size, NULL, NULL, false, err, sizeof err, &n);
    jhr_pm_check(data, size, null, null, true, err, sizeof err, &n);
    return 0;
}
