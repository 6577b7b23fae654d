/*
 * fuzz_msgpack.c — the bounded msgpack decoder (tools/lib/msgpack_read.c) on arbitrary
 * bytes, read as a stream of values the way the audit log is: each value decoded, printed,
 * its map keys looked up and its elements walked. Two ways of finding where a value ends
 * must agree: jhr_mp_decode, and stepping with jhr_mp_head while counting the values still
 * owed (how the audit log's resynchronisation walks, auditlog_resync.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/msgpack_read.h"

/* Where the value at p ends, by stepping over headers. NULL where decoding fails. */
static const uint8_t *walk(const uint8_t *p, const uint8_t *end)
{
    uint64_t owed = 1;
    while (owed) {
        struct jhr_mp v;
        if (!(p = jhr_mp_head(p, end, &v)))
            return NULL;
        owed += v.t == JHR_MP_ARRAY ? v.n : v.t == JHR_MP_MAP ? 2 * (uint64_t)v.n : 0;
        owed--;
        if (owed > (uint64_t)(end - p))
            return NULL;
    }
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null && !(null = fopen("/dev/null", "w")))
        return 0;
    const uint8_t *p = data, *end = data + size;
    for (int k = 0; k < 256 && p < end; k++) {
        struct jhr_mp v, x;
        int rc = jhr_mp_decode(p, end, &v);
        const uint8_t *w = walk(p, end);
        if ((rc == 0) != (w != NULL) || (rc == 0 && w != v.end))
            abort();            /* the two walkers disagree on where the value ends */
        if (rc < 0)
            break;
        if (v.end <= p || v.end > end)
            abort();
        jhr_mp_print(null, &v, 0);
        if (v.t == JHR_MP_MAP) {
            uint64_t u;
            const char *s;
            uint32_t n;
            jhr_mp_get(&v, "type", &x);
            jhr_mp_get_u64(&v, "time", &u);
            jhr_mp_get_str(&v, "name", &s, &n);
        }
        if (v.t == JHR_MP_MAP || v.t == JHR_MP_ARRAY) {
            const uint8_t *it = v.p;
            uint64_t want = v.t == JHR_MP_MAP ? 2 * (uint64_t)v.n : v.n, got = 0;
            while (jhr_mp_next(&v, &it, &x) == 0) {
                if (x.end > v.end)
                    abort();
                uint64_t addr;
                jhr_mp_addr(&x, &addr);
                got++;
            }
            if (got != want || it != v.end)
                abort();        /* a container that decoded must walk to its own end */
        }
        p = v.end;
    }
    return 0;
}
