/*
 * fuzz_core.c — the core file reader behind `jitherald core` (lib/core_read.h), fed
 * arbitrary bytes: the NT_FILE note, the segments, the bytes by address and the build-id
 * of every mapping at offset 0.
 */
#include <stdint.h>

#include "lib/core_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jhr_core c;
    if (jhr_core_read(&c, data, size))
        return 0;
    uint8_t id[64];
    for (size_t i = 0; i < c.nmaps; i++) {
        const uint8_t *p;
        jhr_core_bytes(&c, c.maps[i].start, &p);
        jhr_core_map_build_id(&c, i, id);
    }
    jhr_core_free(&c);
    return 0;
}
