/*
 * test_callgrind_rewrite.c — the callgrind.out rewriter (tools/lib/callgrind_rewrite.c, in
 * the reader library) on a small hand-written profile that has every trap of the format:
 * ids defined on cfn= lines, relative positions (also as call targets), a JIT callee whose
 * file callgrind left implicit, a call into the middle of a JIT function (a second piece
 * of it: kept, as every call callgrind recorded), real recursion, a JIT caller calling C,
 * jump= lines, a fn= block after an fi= switch, context names (--separate-callers).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jitherald.h"
#include "lib/callgrind_rewrite.h"

static const char profile[] =
    "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 42\n\n"
    "positions: instr line\nevents: Ir\nsummary: 1040\n\n"
    "ob=(1) /bin/host\nfl=(1) host.c\nfn=(1) main\n0x401000 10 5\n"
    "cob=(2) ???\ncfi=(2) ???\ncfn=(3) 0x0000000010000000\ncalls=1 0x10000000 0\n+4 +1 900\n+2 * 3\n\n"
    "ob=(2)\nfl=(2)\nfn=(3)\n0x10000000 0 10\n+1 * 20\n"
    "cfn=(4) 0x0000000010000010\ncalls=5 +15 *\n* * 300\n"
    "cfn=(3)\ncalls=2 0x10000000 0\n+3 * 400\n"
    "cob=(1)\ncfi=(1)\ncfn=(5) helper\ncalls=1 0x401100 20\n+2 * 50\n\n"
    "fn=(4)\n0x10000010 0 250\njump=3 +16 *\n+4 *\n"
    "cfn=(6) 0x0000000000500000\ncalls=1 0x500000 0\n* * 7\n\n"
    "ob=(1)\nfl=(1)\nfn=(5)\n0x401100 20 100\n+1 +1 0\ntotals: 1040\n";

static int has(const char *out, const char *s)
{
    if (strstr(out, s))
        return 1;
    fprintf(stderr, "missing in output: \"%s\"\n", s);
    return 0;
}

int main(void)
{
    struct jhr_syms s = { 0 };
    const char map[] = "10000000 40 fib\n";
    CHECK_EQ(jhr_syms_load_perfmap(&s, (const uint8_t *)map, sizeof map - 1), 0);
    CHECK_EQ(s.nfns, 1);
    /* the map has no lines: add fib's line table the way the jitdump loader does */
    CHECK_EQ(jhr_syms_add_line(&s, 0, 0x10000000, 5, "fib.x", 5), 0);
    CHECK_EQ(jhr_syms_add_line(&s, 0, 0x10000010, 6, "fib.x", 5), 0);
    CHECK_EQ(jhr_syms_add_line(&s, 0, 0x10000004, 9, "lib.x", 5), 0);
    /* a later load over the same addresses wins */
    int moved = jhr_syms_add(&s, 0x20000000, 0x10, "old", 3);
    int newer = jhr_syms_add(&s, 0x20000000, 0x20, "new", 3);
    CHECK(moved >= 0 && newer > moved);
    jhr_syms_finish(&s);
    const struct jhr_sym_fn *f = jhr_syms_find(&s, 0x20000008);
    CHECK(f && !strcmp(s.strs[f->name], "new"));
    CHECK(!jhr_syms_find(&s, 0x10000040));
    CHECK(jhr_syms_find(&s, 0x1000003f) != NULL);

    struct jh__buf out = { 0 };
    struct jhr_cg_stats st;
    CHECK_EQ(jhr_cg_rewrite(profile, sizeof profile - 1, &s, &out, &st), 0);
    jh__buf_u8(&out, 0);
    const char *o = (const char *)out.p;
    printf("%s", o);
    CHECK_EQ(st.fns_named, 2);
    CHECK_EQ(st.calls, 5);
    /* main's call into JIT code: object, file and name spelled out, positions absolute */
    CHECK(has(o, "fn=(1) main\n0x401000 10 5\ncob=(3) [jit]\ncfi=(3) fib.x\ncfn=(3) fib\n"
                 "calls=1 0x10000000 5\n0x401004 11 900\n0x401006 11 3\n"));
    /* the JIT block: ob/fl switched, lines from the table, an inlined file with fi=/fe= */
    CHECK(has(o, "ob=(3)\nfl=(3)\nfn=(3)\n0x10000000 5 10\n0x10000001 5 20\n"));
    CHECK(has(o, "fi=(4) lib.x\n"));
    /* real recursion kept, and the call into the second piece: fib calling fib */
    CHECK(has(o, "cfn=(3)\ncalls=2 0x10000000 5\n"));
    CHECK(has(o, "cob=(3)\ncfi=(3)\ncfn=(3)\ncalls=5 0x10000010 6\n0x10000001 5 300\n"));
    /* JIT calling C: the C function's object and file, given explicitly */
    CHECK(has(o, "cob=(1)\ncfi=(1)\ncfn=(5) helper\ncalls=1 0x401100 20\n"));
    /* the second piece (input id 4) is written with the first one's id; after the fi=
     * switch to lib.x its block says fl= again (a function's file is the current one) */
    CHECK(has(o, "fl=(3)\nfn=(3)\n0x10000010 6 250\njump=3 0x10000020 6\n0x10000014 6\n"));
    CHECK(!strstr(o, "fn=(4)"));
    /* a callee with no symbol outside JIT code: untouched name, the caller's original
     * object and file (callgrind's defaults) spelled out, defined here: their first use */
    CHECK(has(o, "cob=(2) ???\ncfi=(2) ???\ncfn=(6) 0x0000000000500000\ncalls=1 0x500000 0\n"));
    CHECK(has(o, "fn=(5)\n0x401100 20 100\n0x401101 21 0\ntotals: 1040\n"));

    /* Rewriting the output again changes nothing. */
    struct jh__buf again = { 0 };
    CHECK_EQ(jhr_cg_rewrite(o, out.len - 1, &s, &again, &st), 0);
    CHECK_EQ(again.len, out.len - 1);
    CHECK(again.len == out.len - 1 && !memcmp(again.p, out.p, again.len));
    CHECK_EQ(st.calls, 5);

    /* Context names (--separate-callers=2, --separate-recs): every address part in JIT
     * code is named; two pieces of fib in the same context share one id; uncompressed
     * names are named too. */
    static const char ctx[] =
        "# callgrind format\nevents: Ir\n"
        "ob=(1) /bin/host\nfl=(1) host.c\nfn=(1) main\n10 1\n"
        "cob=(2) ???\ncfi=(2) ???\ncfn=(2) 0x0000000010000000'main\ncalls=1 0\n11 100\n"
        "ob=(2)\nfl=(2)\nfn=(2)\n0 40\n"
        "cfn=(3) 0x0000000010000010'2'0x0000000010000000\ncalls=1 0\n0 60\n"
        "cfn=(4) 0x0000000010000000'2'0x0000000010000010\ncalls=1 0\n0 7\n"
        "fn=(3)\n0 60\nfn=(4)\n0 7\n"
        "fn=0x0000000010000004'helper'0x0000000000500000\n0 1\n";
    struct jh__buf cb = { 0 };
    CHECK_EQ(jhr_cg_rewrite(ctx, sizeof ctx - 1, &s, &cb, &st), 0);
    jh__buf_u8(&cb, 0);
    const char *c = (const char *)cb.p;
    printf("%s", c);
    CHECK(has(c, "cfn=(2) fib'main\n"));
    CHECK(has(c, "cfn=(3) fib'2'fib\n"));
    CHECK(has(c, "cfn=(3)\ncalls=1 5\n"));    /* fib'2'fib again: the first piece's id */
    CHECK(!strstr(c, "fn=(4)"));
    CHECK(has(c, "fn=fib'helper'0x0000000000500000\n"));
    CHECK(!strstr(c, "0x00000000100000"));
    jh__buf_free(&cb);

    /* Not a profile. */
    struct jh__buf junk = { 0 };
    CHECK_EQ(jhr_cg_rewrite("hello\nworld\n", 12, &s, &junk, NULL), JH_EFORMAT);
    jh__buf_free(&junk);
    jh__buf_free(&again);
    jh__buf_free(&out);
    jhr_syms_free(&s);
    return check_done();
}
