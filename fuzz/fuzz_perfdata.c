/*
 * fuzz_perfdata.c — the perf.data reader behind `jitherald log FILE profile` fed arbitrary
 * bytes: the header and attributes, every record of the data section, every call chain
 * entry. The mappings it finds then feed perf's symbol tree (lib/perfmap_pick.h) as perf
 * map lines, and every sample's ip is looked up in it: a name found must be one of a line
 * that holds the ip (perf's walk may miss one among overlaps, never invent one).
 */
#include <stdint.h>
#include <stdlib.h>

#include "lib/perfdata_read.h"
#include "lib/perfmap_pick.h"

struct line { uint64_t start, size; };

volatile uint64_t fuzz_perfdata_sink;   /* keeps the chain reads from being optimised away */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jhr_pd pd;
    char err[256];
    if (jhr_pd_open(&pd, data, size, err, sizeof err) < 0)
        return 0;
    (void)jhr_pd_monotonic(&pd);
    struct jhr_pmpick pk = { 0 };
    static struct line lines[256];
    size_t nlines = 0;
    struct jhr_pd_ev ev;
    uint64_t sum = 0;
    for (size_t pos = 0; jhr_pd_next(&pd, &pos, &ev) > 0;) {
        if ((ev.type == JHR_PD_MMAP || ev.type == JHR_PD_MMAP2) && nlines < 256) {
            lines[nlines] = (struct line){ ev.m.addr, ev.m.len };
            /* the name is the line's index: lines[] says what range it had */
            if (jhr_pmpick_add(&pk, ev.m.addr, ev.m.len, (const char *)&lines[nlines]) < 0)
                abort();
            nlines++;
        }
        if (ev.type != JHR_PD_SAMPLE)
            continue;
        for (uint32_t i = 0; i < ev.s.nchain; i++)
            sum += jhr_pd_chain(&ev.s, i);
        const struct line *l = (const struct line *)jhr_pmpick_find(&pk, ev.s.ip);
        if (l && !(ev.s.ip >= l->start && (ev.s.ip - l->start < l->size ||
                                           (ev.s.ip == l->start && !l->size))))
            abort();
    }
    jhr_pmpick_free(&pk);
    jhr_pd_free(&pd);
    fuzz_perfdata_sink = sum;

    return 0;
}
