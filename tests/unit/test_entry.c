/*
 * test_entry.c — the core's copy of a description (core/describe.c, jh__entry_new): every
 * field the channels read is the JIT's, copied (the JIT may free or reuse its arrays once
 * jh_code_add returns), for each unwind kind; and the copy is one allocation, the entry's
 * own block (a LuaJIT trace paid ~1,900 instructions of malloc and free for an entry's
 * pieces): every piece lies inside malloc_usable_size(entry).
 */
#include <malloc.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/describe.h"
#include "fmt/build_id.h"
#include "fmt/symbol.h"

/* p..p+len lies in e's block (len 0: p is NULL or in it). */
static int inside(const struct jh__entry *e, const void *p, size_t len)
{
    uintptr_t lo = (uintptr_t)e, hi = lo + malloc_usable_size((void *)e);
    if (!p)
        return len == 0;
    return (uintptr_t)p >= lo + sizeof *e && (uintptr_t)p + len <= hi;
}

static void poison(void *p, size_t n)
{
    memset(p, 0xa5, n);
}

/* The lengths an entry keeps are its strings' (the encoders write that many bytes of the
 * name and the symbol instead of measuring them: a wrong one is a wrong record, symbol or
 * build-id), and whether the symbol differs from the name is told right. */
static void check_lengths(const struct jh__func *f)
{
    CHECK_EQ(f->name_len, strlen(f->name));
    CHECK_EQ(jh__func_name_len(f), strlen(f->name));
    if (f->symbol) {
        CHECK_EQ(f->symbol_len, strlen(f->symbol));
        CHECK_EQ(jh__func_symbol_differs(f), strcmp(f->symbol, f->name) != 0);
    } else {
        CHECK_EQ(f->symbol_len, 0);
        CHECK_EQ(jh__func_symbol_differs(f), 0);
    }
    CHECK_EQ(jh__func_symbol_or_name_len(f), strlen(jh__func_symbol(f)));
}

static void check_frameless(struct jh__strings *s)
{
    char name[] = "lua:fib line 12", symbol[] = "TRACE_7";
    char f0[] = "fib.lua", f1[] = "lib.lua";
    const char *files[] = { f0, f1 };
    struct jh_line lines[] = { { 0, 12, 0, 0 }, { 16, 13, 0, 1 }, { 40, 14, 0, 0 } };
    struct jh_cfa_step steps[] = { { 4, 96 }, { 60, 80 } };
    struct jh_saved_reg regs[] = { { 3, -16 }, { 6, -24 }, { 12, -32 } };
    struct jh_code c = { .sz = sizeof c, .name = name, .symbol = symbol, .start = (void *)0x10000,
                         .size = 64, .files = files, .nfiles = 2, .lines = lines, .nlines = 3,
                         .unwind = JH_UNWIND_FRAMELESS, .cfa_offset = 80, .cfa_steps = steps,
                         .ncfa_steps = 2, .saved_regs = regs, .nsaved_regs = 3,
                         .prologue_end = 4 };
    struct jh__entry *e = jh__entry_new(s, &c);
    CHECK(e != NULL);
    if (!e)
        return;
    /* the JIT's buffers reused: the entry keeps what it was given */
    poison(name, sizeof name - 1);
    poison(symbol, sizeof symbol - 1);
    poison(f0, sizeof f0 - 1);
    poison(lines, sizeof lines);
    poison(steps, sizeof steps);
    poison(regs, sizeof regs);
    files[0] = files[1] = NULL;
    const struct jh__func *f = &e->fn;
    CHECK_EQ(f->start, 0x10000);
    CHECK_EQ(f->size, 64);
    CHECK_EQ(e->node.start, 0x10000);
    CHECK_EQ(e->node.size, 64);
    CHECK_EQ(f->prologue_end, 4);
    CHECK_STR(f->name, "lua:fib line 12");
    CHECK_STR(f->symbol, "TRACE_7");
    check_lengths(f);
    CHECK_EQ(f->nfiles, 2);
    CHECK_STR(f->files[0], "fib.lua");
    CHECK_STR(f->files[1], "lib.lua");
    CHECK_EQ(f->nlines, 3);
    CHECK(f->lines[1].offset == 16 && f->lines[1].line == 13 && f->lines[1].file == 1);
    CHECK(f->lines[2].offset == 40 && f->lines[2].line == 14 && f->lines[2].file == 0);
    CHECK_EQ(f->unwind, JH_UNWIND_FRAMELESS);
    CHECK_EQ(f->cfa_offset, 80);
    CHECK_EQ(f->ncfa_steps, 2);
    CHECK(f->cfa_steps[1].offset == 60 && f->cfa_steps[1].cfa_offset == 80);
    CHECK_EQ(f->nsaved_regs, 3);
    CHECK(f->saved_regs[2].reg == 12 && f->saved_regs[2].cfa_offset == -32);
    CHECK(f->cfi == NULL && f->epilogues == NULL && f->ra_signed == NULL);
    /* one block: every piece in the entry's own allocation (the file names are interned,
     * the context's, shared by all its entries) */
    CHECK(inside(e, f->name, strlen(f->name) + 1));
    CHECK(inside(e, f->symbol, strlen(f->symbol) + 1));
    CHECK(inside(e, f->files, 2 * sizeof *f->files));
    CHECK(inside(e, f->lines, 3 * sizeof *f->lines));
    CHECK(inside(e, f->cfa_steps, 2 * sizeof *f->cfa_steps));
    CHECK(inside(e, f->saved_regs, 3 * sizeof *f->saved_regs));
    CHECK((uintptr_t)f->lines % _Alignof(struct jh_line) == 0);
    CHECK((uintptr_t)f->files % _Alignof(const char *) == 0);
    jh__entry_free(e);
}

static void check_fp_and_cfi(struct jh__strings *s)
{
    /* frame pointer, epilogues, PAC ranges; a name that needs a derived symbol */
    struct jh_epilogue ep[] = { { 30, 34 } };
    struct jh_range ra[] = { { 0, 8 } };
    struct jh_code c = { .sz = sizeof c, .name = "fib (a.mini:3)", .start = (void *)0x20000,
                         .size = 40, .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                         .fp_set_end = 4, .epilogues = ep, .nepilogues = 1, .ra_signed = ra,
                         .nra_signed = 1, .ra_key = JH_PAC_KEY_B };
    struct jh__entry *e = jh__entry_new(s, &c);
    CHECK(e != NULL);
    if (e) {
        char want[64];
        jh__symbol_from_name(want, sizeof want, c.name);
        CHECK_STR(e->fn.symbol, want);
        CHECK(e->fn.symbol != NULL && strcmp(e->fn.symbol, c.name) != 0);
        CHECK_EQ(e->fn.nepilogues, 1);
        CHECK(e->fn.epilogues[0].start == 30 && e->fn.epilogues[0].end == 34);
        CHECK_EQ(e->fn.nra_signed, 1);
        CHECK(e->fn.ra_signed[0].end == 8);
        CHECK_EQ(e->fn.ra_key, JH_PAC_KEY_B);
        CHECK(e->fn.files == NULL && e->fn.lines == NULL && e->fn.cfa_steps == NULL);
        CHECK(inside(e, e->fn.symbol, strlen(e->fn.symbol) + 1));
        CHECK(inside(e, e->fn.epilogues, sizeof *e->fn.epilogues));
        CHECK(inside(e, e->fn.ra_signed, sizeof *e->fn.ra_signed));
        jh__entry_free(e);
    }
    /* CFI: the program's bytes; a safe name has no symbol of its own */
    uint8_t cfi[] = { 0x41, 0x0e, 0x10, 0x86, 0x02 };
    struct jh_code d = { .sz = sizeof d, .name = "safe_name", .start = (void *)0x30000,
                         .size = 32, .unwind = JH_UNWIND_CFI, .cfi = cfi, .cfi_len = sizeof cfi };
    e = jh__entry_new(s, &d);
    CHECK(e != NULL);
    if (e) {
        poison(cfi, sizeof cfi);
        CHECK(e->fn.symbol == NULL);
        CHECK_EQ(e->fn.cfi_len, 5);
        CHECK(e->fn.cfi && e->fn.cfi[0] == 0x41 && e->fn.cfi[4] == 0x02);
        CHECK(inside(e, e->fn.cfi, 5));
        CHECK(inside(e, e->fn.name, sizeof "safe_name"));
        jh__entry_free(e);
    }
}

/* The description's build-id hash, kept on the entry for gdb's and elfmap's images alike
 * (channel.h, jh__entry_bid): the same hash, computed once, then the one jh__bid_func
 * folds in. */
static void check_bid(struct jh__strings *s)
{
    struct jh_line lines[] = { { 0, 5, 0, 0 }, { 8, 6, 0, 0 } };
    const char *files[] = { "t.lua" };
    struct jh_code c = { .sz = sizeof c, .name = "TRACE_3 t.lua:5", .start = (void *)0x40000,
                         .size = 24, .files = files, .nfiles = 1, .lines = lines, .nlines = 2 };
    struct jh__entry *e = jh__entry_new(s, &c);
    CHECK(e != NULL);
    if (!e)
        return;
    CHECK_EQ(e->fn.bid_hash, 0);            /* not hashed until a channel needs it */
    uint64_t h = jh__bid_func_hash(&e->fn);
    CHECK(h != 0);
    CHECK(jh__entry_bid(e) == h);
    CHECK(e->fn.bid_hash == h);
    struct jh__bid a = { 0 }, b = { 0 }, kept = { 0 }, fresh = { 0 };
    jh__bid_func(&a, &e->fn);
    jh__bid_add(&b, h);
    CHECK(a.a == b.a && a.b == b.b && a.n == b.n);
    /* the kept hash is what is folded in: another value there changes the sums */
    e->fn.bid_hash = h ^ 1;
    jh__bid_func(&kept, &e->fn);
    jh__bid_add(&fresh, h ^ 1);
    CHECK(kept.a == fresh.a && kept.b == fresh.b);
    CHECK(kept.a != a.a || kept.b != a.b);
    jh__entry_free(e);
}

/* Every entry the core keeps carries a jh__func (node's 2,200 builtins under `jitherald run
 * -c all`: kept twice, ~4,800 entries at start), so it holds no padding: the sum of its
 * members' sizes is its size (184 bytes on LP64 with the names' lengths and the FDE
 * instructions' memo; 200 while its 32-bit fields stood alone). */
static void check_func_packed(void)
{
    struct jh__func f;
    size_t sum = sizeof f.start + sizeof f.size + sizeof f.name + sizeof f.files +
                 sizeof f.lines + sizeof f.nfiles + sizeof f.nlines + sizeof f.unwind +
                 sizeof f.fp_push_end + sizeof f.fp_set_end + sizeof f.nepilogues +
                 sizeof f.epilogues + sizeof f.cfi + sizeof f.cfi_len + sizeof f.symbol +
                 sizeof f.prologue_end + sizeof f.cfa_offset + sizeof f.ncfa_steps +
                 sizeof f.nsaved_regs + sizeof f.cfa_steps + sizeof f.saved_regs +
                 sizeof f.personality + sizeof f.lsda + sizeof f.nra_signed + sizeof f.ra_key +
                 sizeof f.ra_signed + sizeof f.bid_hash + sizeof f.name_len +
                 sizeof f.symbol_len + sizeof f.insns;
    if (sizeof(void *) == 8)
        CHECK_EQ(sizeof f, sum);
    else
        CHECK(sizeof f <= sum + 8);     /* ILP32: 64-bit fields may leave a hole or two */
}

/* Entries made together (jh__entries_new, jh_code_add_many's): each the copy jh__entry_new
 * makes, all in one block, which stays while any of them lives (freed in any order; ASan
 * says whether one was read after its block went). */
static void check_group(struct jh__strings *s)
{
    char f0[] = "a.js";
    const char *files[] = { f0 };
    struct jh_line lines[] = { { 0, 1, 0, 0 }, { 8, 2, 0, 0 } };
    uint8_t cfi[] = { 0x07, 0x10 };
    char n0[] = "Builtin:ArrayPrototypePush", n1[] = "JS:*f a.js:1", n2[] = "safe_name";
    struct jh_code c[3] = {
        { .sz = sizeof c[0], .name = n0, .start = (void *)0x40000, .size = 64,
          .unwind = JH_UNWIND_CFI, .cfi = cfi, .cfi_len = sizeof cfi },
        { .sz = sizeof c[1], .name = n1, .start = (void *)0x40040, .size = 32,
          .files = files, .nfiles = 1, .lines = lines, .nlines = 2 },
        { .sz = sizeof c[2], .name = n2, .start = (void *)0x40060, .size = 16,
          .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 },
    };
    const struct jh_code *cp[3] = { &c[0], &c[1], &c[2] };
    struct jh__entry *one[3], *g[3];
    for (int i = 0; i < 3; i++)
        one[i] = jh__entry_new(s, &c[i]);
    CHECK(jh__entries_new(s, cp, 3, g));
    CHECK(!jh__entries_new(s, cp, 0, g));
    poison(n0, sizeof n0), poison(n1, sizeof n1), poison(n2, sizeof n2);
    poison(cfi, sizeof cfi), poison(lines, sizeof lines), poison(f0, sizeof f0);
    CHECK(g[0]->block != NULL && g[1]->block == g[0]->block && g[2]->block == g[0]->block);
    CHECK(one[0]->block == NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_STR(g[i]->fn.name, one[i]->fn.name);
        check_lengths(&g[i]->fn);
        check_lengths(&one[i]->fn);
        CHECK((g[i]->fn.symbol == NULL) == (one[i]->fn.symbol == NULL));
        if (g[i]->fn.symbol && one[i]->fn.symbol)
            CHECK_STR(g[i]->fn.symbol, one[i]->fn.symbol);
        CHECK(g[i]->fn.start == one[i]->fn.start && g[i]->fn.size == one[i]->fn.size);
        CHECK(g[i]->node.start == one[i]->node.start && g[i]->node.size == one[i]->node.size);
        CHECK_EQ(g[i]->fn.unwind, one[i]->fn.unwind);
        CHECK_EQ(g[i]->fn.cfi_len, one[i]->fn.cfi_len);
        CHECK(!g[i]->fn.cfi_len || !memcmp(g[i]->fn.cfi, one[i]->fn.cfi, g[i]->fn.cfi_len));
        CHECK_EQ(g[i]->fn.nlines, one[i]->fn.nlines);
        CHECK(!g[i]->fn.nlines ||
              !memcmp(g[i]->fn.lines, one[i]->fn.lines, g[i]->fn.nlines * sizeof *lines));
        CHECK_EQ(g[i]->fn.nfiles, one[i]->fn.nfiles);
        CHECK(!g[i]->fn.nfiles || g[i]->fn.files[0] == one[i]->fn.files[0]);   /* interned */
        CHECK_EQ(g[i]->fn.fp_set_end, one[i]->fn.fp_set_end);
        CHECK((uintptr_t)g[i] % _Alignof(struct jh__entry) == 0);
        jh__entry_free(one[i]);
    }
    /* the middle one first, then the first: the last still whole */
    jh__entry_free(g[1]);
    jh__entry_free(g[0]);
    CHECK_STR(g[2]->fn.name, "safe_name");
    CHECK_EQ(g[2]->fn.fp_set_end, 4);
    jh__entry_free(g[2]);
}

/* Each way an entry gets its symbol: given (equal to the name, differing by one byte, of
 * another length), derived from a name that is not one, none for a name that is. */
static void check_symbols(struct jh__strings *s)
{
    static const char *const pairs[][2] = {
        { "fib", "fib" }, { "fib", "fob" }, { "fib", "fib_1" }, { "Builtin:Abort", NULL },
        { "9 lives", NULL }, { "  x  ", NULL }, { "safe_name", NULL }, { "x", "y" },
        { "Builtin:Abort", "Builtin_Abort" }, { "Builtin_Abort", "Builtin_Abort" },
        { "Builtin_Abort", "Builtin_Abore" }, { "12345678", "12345678" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        struct jh_code c = { .sz = sizeof c, .name = pairs[i][0], .symbol = pairs[i][1],
                             .start = (void *)0x10000, .size = 16 };
        struct jh__entry *e = jh__entry_new(s, &c);
        const struct jh_code *cp = &c;
        struct jh__entry *g = NULL;
        CHECK(e != NULL);
        CHECK(jh__entries_new(s, &cp, 1, &g));
        if (e)
            check_lengths(&e->fn);
        if (g)
            check_lengths(&g->fn);
        jh__entry_free(e);
        jh__entry_free(g);
    }
}

int main(void)
{
    check_func_packed();
    struct jh__strings s = { 0 };
    check_frameless(&s);
    check_fp_and_cfi(&s);
    check_bid(&s);
    check_group(&s);
    check_symbols(&s);
    jh__strings_free(&s);
    jh__entry_free(NULL);
    return check_done();
}
