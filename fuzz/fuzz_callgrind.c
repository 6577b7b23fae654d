/*
 * fuzz_callgrind.c — the `jitherald callgrind` rewriter (tools/callgrind.c) on arbitrary
 * input: the bytes before the first NUL are a perf map (the JIT's functions), the rest a
 * callgrind.out. The rewritten output is rewritten again, which must not fail where the
 * first pass succeeded (it is a callgrind.out with the same header).
 * Corpus: fuzz/corpus/callgrind/ (a real profile of minijit calls.mini with its perf map,
 * and a hand-written one with relative positions, ids defined on cfn= lines, a jump into
 * the middle of a JIT function and recursion).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "callgrind.h"
#include "jitherald.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t map_len = nul ? (size_t)(nul - data) : 0;
    const char *text = (const char *)(nul ? nul + 1 : data);
    size_t text_len = nul ? size - map_len - 1 : size;
    struct jh_cgsyms s = { 0 };
    jh_cgsyms_load_perfmap(&s, data, map_len);
    jh_cgsyms_finish(&s);
    struct jh__buf out = { 0 }, again = { 0 };
    int err = jh_callgrind_rewrite(text, text_len, &s, &out, NULL);
    if (!err && jh_callgrind_rewrite((const char *)out.p, out.len, &s, &again, NULL) == JH_EFORMAT)
        abort();
    jh__buf_free(&out);
    jh__buf_free(&again);
    jh_cgsyms_free(&s);
    return 0;
}
