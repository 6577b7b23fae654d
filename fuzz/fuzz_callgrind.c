/*
 * fuzz_callgrind.c — the `jitherald callgrind` rewriter (tools/lib/callgrind_rewrite.c) on
 * arbitrary input: the bytes before the first NUL are a perf map (the JIT's functions),
 * the rest a callgrind.out. The rewritten output is rewritten again, which must not fail
 * where the first pass succeeded (it is a callgrind.out with the same header).
 * Corpus: fuzz/corpus/callgrind/ (a real profile of minijit calls.mini with its perf map,
 * a piece of one made with --separate-callers=2, pieces of erl's (+JPperf true,
 * --separate-callers=2: entries at +0x28, a 0x map) and node's (--perf-basic-prof,
 * --dump-instr=yes: calls into the middle of JIT code, recursion) cut with
 * tests/producers/cg-excerpt.pl, and hand-written ones with relative positions, ids
 * defined on cfn= lines, a call into the middle of a JIT function, recursion, context
 * names and a 0x perf map).
 * The same callgrind.out also goes through the cost reader of `jitherald log FILE profile`
 * (tools/lib/callgrind_cost.c), whose self costs must add up to its total.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jitherald.h"
#include "lib/callgrind_cost.h"
#include "lib/callgrind_rewrite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t map_len = nul ? (size_t)(nul - data) : 0;
    const char *text = (const char *)(nul ? nul + 1 : data);
    size_t text_len = nul ? size - map_len - 1 : size;
    struct jhr_syms s = { 0 };
    jhr_syms_load_perfmap(&s, data, map_len);
    jhr_syms_finish(&s);
    struct jh__buf out = { 0 }, again = { 0 };
    int err = jhr_cg_rewrite(text, text_len, &s, &out, NULL);
    if (!err && jhr_cg_rewrite((const char *)out.p, out.len, &s, &again, NULL) == JH_EFORMAT)
        abort();
    jh__buf_free(&out);
    jh__buf_free(&again);
    struct jhr_cgc c = { 0 };
    if (jhr_cgc_read(&c, text, text_len) == 0) {
        uint64_t sum = 0;
        for (size_t i = 0; i < c.nfns; i++)
            sum += c.fns[i].self;
        if (sum != c.total)
            abort();
    }
    jhr_cgc_free(&c);
    jhr_syms_free(&s);
    return 0;
}
