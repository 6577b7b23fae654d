/*
 * test_minijit.c — the demo JIT compiles what it should, to code that runs right, with a
 * frame chain that unwinds and a line table that makes sense; the minijit program's
 * --threads runs agree with one thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"
#include "minijit.h"

static int64_t run_src(const char *src, const char *fn, const int64_t *args, int nargs)
{
    char err[256];
    mj_program *p = mj_compile(src, "t.mini", NULL, err, sizeof err);
    if (!p) {
        fprintf(stderr, "unexpected compile error: %s\n", err);
        check_failures++;
        return INT64_MIN;
    }
    int64_t r = 0;
    CHECK_EQ(mj_call(p, fn, args, nargs, &r), 0);
    mj_free(p);
    return r;
}

#define EXPR(e, want) do { \
    char src_[512]; snprintf(src_, sizeof src_, "fn f() { return %s }", e); \
    int64_t r_ = run_src(src_, "f", NULL, 0); check_count++; \
    if (r_ != (int64_t)(want)) { check_failures++; fprintf(stderr, \
        "%s:%d: %s gave %" PRId64 ", want %" PRId64 "\n", __FILE__, __LINE__, e, r_, (int64_t)(want)); } \
} while (0)

static void test_arithmetic(void)
{
    EXPR("1 + 2 * 3", 7);
    EXPR("(1 + 2) * 3", 9);
    EXPR("10 - 4 - 3", 3);
    EXPR("100 / 7 / 2", 7);
    EXPR("-7 / 2", -3);
    EXPR("-7 % 3", -1);
    EXPR("7 % -3", 1);
    EXPR("5 / 0", 0);
    EXPR("5 % 0", 0);
    EXPR("(0 - 9223372036854775807 - 1) / -1", INT64_MIN);
    EXPR("(0 - 9223372036854775807 - 1) % -1", 0);
    EXPR("9223372036854775807 + 1", INT64_MIN);
    EXPR("0x7fffffffffffffff", INT64_MAX);
    EXPR("0xffffffffffffffff", -1);
    EXPR("123456789012 * 1000", 123456789012000LL);
    EXPR("-(3 - 5)", 2);
    EXPR("--4", 4);
    EXPR("!0 + !5", 1);
    EXPR("3 < 4", 1);
    EXPR("4 < 3", 0);
    EXPR("3 <= 3", 1);
    EXPR("3 > 3", 0);
    EXPR("3 >= 3", 1);
    EXPR("3 == 3", 1);
    EXPR("3 != 3", 0);
    EXPR("-1 < 1", 1);
    EXPR("1 + 1 == 2", 1);
    EXPR("2 && 3", 1);
    EXPR("2 && 0", 0);
    EXPR("0 || 0", 0);
    EXPR("0 || 7", 1);
    EXPR("1 || 1 && 0", 1);
    EXPR("(1 || 1) && 0", 0);
}

/* Short-circuit: the right side must not run. */
static void test_short_circuit(void)
{
    const char *src =
        "fn boom(x) { print(x) return 1 }\n"
        "fn f() { var a = 0 && boom(1)  var b = 1 || boom(2)  return a * 10 + b }\n";
    CHECK_EQ(run_src(src, "f", NULL, 0), 1);
}

static void test_functions(void)
{
    const char *src =
        "# forward references, recursion, six parameters, locals and scopes\n"
        "fn main() { return fib(20) }\n"
        "fn fib(n) {\n"
        "    if n < 2 { return n }\n"
        "    return fib(n - 1) + fib(n - 2)\n"
        "}\n"
        "fn six(a, b, c, d, e, f) { return a + 2*b + 3*c + 4*d + 5*e + 6*f }\n"
        "fn call6() { return six(1, 2, 3, 4, 5, 6) }\n"
        "fn even(n) { if n == 0 { return 1 } return odd(n - 1) }\n"
        "fn odd(n) { if n == 0 { return 0 } return even(n - 1) }\n"
        "fn shadow(x) { var y = 1 { var y = 2 x = x + y } return x + y }\n"
        "fn noreturn() { var x = 5 }\n"
        "fn bare() { return }\n"
        "fn nested(x) { return six(x, six(1,1,1,1,1,1), x * 2, 0, 0, 1) }\n"
        "fn deep(n) { if n == 0 { return 0 } return 1 + deep(n - 1) }\n";
    char err[256];
    mj_program *p = mj_compile(src, "f.mini", NULL, err, sizeof err);
    CHECK(p != NULL);
    if (!p) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK_EQ(mj_function_count(p), 11);
    CHECK_EQ(mj_run(p, "main", NULL, 0), 6765);
    int64_t a6[] = { 1, 1, 1, 1, 1, 2 };
    CHECK_EQ(mj_run(p, "six", a6, 6), 1 + 2 + 3 + 4 + 5 + 12);
    CHECK_EQ(mj_run(p, "call6", NULL, 0), 1 + 4 + 9 + 16 + 25 + 36);
    int64_t n = 11;
    CHECK_EQ(mj_run(p, "even", &n, 1), 0);
    CHECK_EQ(mj_run(p, "odd", &n, 1), 1);
    int64_t x = 10;
    CHECK_EQ(mj_run(p, "shadow", &x, 1), 13);
    CHECK_EQ(mj_run(p, "noreturn", NULL, 0), 0);
    CHECK_EQ(mj_run(p, "bare", NULL, 0), 0);
    CHECK_EQ(mj_run(p, "nested", &x, 1), 10 + 2 * 21 + 3 * 20 + 6);
    int64_t d = 50000;          /* 50k JIT frames: the stack discipline holds up */
    CHECK_EQ(mj_run(p, "deep", &d, 1), 50000);

    int64_t (*fib)(int64_t) = (int64_t (*)(int64_t))mj_lookup(p, "fib");
    CHECK(fib != NULL);
    if (fib)
        CHECK_EQ(fib(25), 75025);
    CHECK(mj_lookup(p, "nope") == NULL);
    int64_t r;
    CHECK_EQ(mj_call(p, "nope", NULL, 0, &r), -ENOENT);
    CHECK_EQ(mj_call(p, "main", NULL, -1, &r), -EINVAL);

    /* Code is packed: consecutive functions 16-byte aligned, several on one page. */
    const struct mj_function *f0 = mj_function_at(p, 0), *f1 = mj_function_at(p, 1);
    CHECK(f0 && f1);
    if (f0 && f1) {
        CHECK_EQ((uintptr_t)f0->code % 16, 0);
        CHECK_EQ((uintptr_t)f1->code % 16, 0);
        CHECK_EQ((uintptr_t)f0->code / 4096, (uintptr_t)f1->code / 4096);
        const uint8_t *c = f0->code;
        CHECK(c[0] == 0x55 && c[1] == 0x48 && c[2] == 0x89 && c[3] == 0xe5);
        CHECK(c[f0->code_size - 2] == 0xc9 && c[f0->code_size - 1] == 0xc3);
    }
    mj_free(p);
}

/* print() goes to the hook: the tests see what a program printed. */
static int64_t test_prints[16];
static int test_nprints;
static void print_hook(int64_t v)
{
    if (test_nprints < 16)
        test_prints[test_nprints] = v;
    test_nprints++;
}

static void test_samples(void)
{
    struct { const char *file; int64_t ret; int n; int64_t prints[4]; } cases[] = {
        { "examples/minijit/loops.mini", 0, 4, { 76127, 111, 99, 21 } },
        { "examples/minijit/calls.mini", 225, 1, { 225 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[256];
        char *src = mj_read_file(cases[i].file, err, sizeof err);
        CHECK(src != NULL);
        if (!src) {
            fprintf(stderr, "%s (run from the source root)\n", err);
            continue;
        }
        mj_program *p = mj_compile(src, cases[i].file, NULL, err, sizeof err);
        CHECK(p != NULL);
        if (!p) {
            fprintf(stderr, "%s\n", err);
            free(src);
            continue;
        }
        test_nprints = 0;
        mj_set_print(print_hook);
        CHECK_EQ(mj_run(p, "main", NULL, 0), cases[i].ret);
        mj_set_print(NULL);
        CHECK_EQ(test_nprints, cases[i].n);
        for (int k = 0; k < cases[i].n && k < test_nprints; k++)
            CHECK_EQ(test_prints[k], cases[i].prints[k]);
        mj_free(p);
        free(src);
    }
}

/*
 * The callback hook walks the frame-pointer chain the way perf and gdb's fallback do, and
 * checks it meets c, b, a, main in that order, with the stack 16-byte aligned at the call.
 */
static mj_program *cb_prog;
static int cb_calls, cb_chain_ok, cb_aligned;

static __attribute__((noinline)) int64_t chain_hook(int64_t x)
{
    cb_calls++;
    void **fp = __builtin_frame_address(0);
    void **builtin_fp = fp[0];
    cb_aligned = ((uintptr_t)builtin_fp % 16) == 0;
    const char *want[] = { "c", "b", "a", "main" };
    int found = 0;
    for (int depth = 0; fp && depth < 16 && found < 4; depth++) {
        void *ret = fp[1];
        const struct mj_function *f = mj_function_get(cb_prog, want[found]);
        if (f && (uint8_t *)ret > (uint8_t *)f->code &&
            (uint8_t *)ret <= (uint8_t *)f->code + f->code_size)
            found++;
        fp = fp[0];
    }
    cb_chain_ok = found == 4;
    return x * 3;
}

static void test_callback(void)
{
    char err[256];
    char *src = mj_read_file("examples/minijit/calls.mini", err, sizeof err);
    CHECK(src != NULL);
    if (!src)
        return;
    cb_prog = mj_compile(src, "calls.mini", NULL, err, sizeof err);
    CHECK(cb_prog != NULL);
    if (cb_prog) {
        mj_set_callback(chain_hook);
        mj_set_print(print_hook);
        test_nprints = 0;
        /* c(111): callback(223) -> 669; b: 670; a: 671 */
        CHECK_EQ(mj_run(cb_prog, "main", NULL, 0), 671);
        mj_set_callback(NULL);
        CHECK_EQ(cb_calls, 1);
        CHECK(cb_chain_ok);
        CHECK(cb_aligned);
        CHECK_EQ(mj_run(cb_prog, "main", NULL, 0), 225);     /* no hook: callback(x) == x */
        mj_set_print(NULL);

        /* Line table: sorted, inside the code, on the function's lines, with a row on
         * the call to callback (line 7) that covers the call's return address. */
        for (int i = 0; i < mj_function_count(cb_prog); i++) {
            const struct mj_function *f = mj_function_at(cb_prog, i);
            CHECK(f->nlines >= 2);
            CHECK_EQ(f->lines[0].offset, 0);
            for (uint32_t k = 0; k < f->nlines; k++) {
                CHECK(f->lines[k].offset < f->code_size);
                CHECK(f->lines[k].line >= f->line && f->lines[k].line <= f->end_line);
                CHECK(f->lines[k].column >= 1);
                if (k)
                    CHECK(f->lines[k].offset > f->lines[k - 1].offset);
            }
        }
        const struct mj_function *c = mj_function_get(cb_prog, "c");
        int has7 = 0;
        for (uint32_t k = 0; c && k < c->nlines; k++)
            has7 |= c->lines[k].line == 7 && c->lines[k].column == 12;
        CHECK(has7);
        mj_free(cb_prog);
    }
    free(src);
}

static void test_errors(void)
{
    struct { const char *src, *want; } bad[] = {
        { "", "t.mini:1:1: error: no function in the program" },
        { "fn f() { return 1 + }", "t.mini:1:21: error: expected an expression, found '}'" },
        { "fn f() {\n  return x\n}", "t.mini:2:10: error: 'x' is not declared" },
        { "fn f() { g() }", "t.mini:1:10: error: unknown function 'g'" },
        { "fn f(a) { return f() }", "t.mini:1:18: error: 'f' takes 1 argument, 0 given" },
        { "fn f() { print(1, 2) }", "t.mini:1:10: error: 'print' takes 1 argument, 2 given" },
        { "fn f(a,b,c,d,e,f,g) { }", "t.mini:1:18: error: too many parameters (at most 6)" },
        { "fn f(a, a) { }", "t.mini:1:9: error: parameter 'a' appears twice" },
        { "fn f() { }\nfn f() { }", "t.mini:2:4: error: function 'f' is already defined on line 1" },
        { "fn f() { var x = 1 var x = 2 }", "t.mini:1:24: error: 'x' is already declared in this block" },
        { "fn f() {\n  if 1 { return 2 }\n", "t.mini:1:8: error: '{' is never closed" },
        { "fn f() { return 1 $ 2 }", "t.mini:1:19: error: unexpected character '$'" },
        { "fn f() { return 99999999999999999999 }", "t.mini:1:17: error: number too large" },
        { "var x = 1", "t.mini:1:1: error: expected 'fn' at top level, found 'var'" },
        { "fn print(x) { }", "t.mini:1:4: error: 'print' is a builtin function" },
        { "fn f() { fn g() { } }", "t.mini:1:10: error: functions cannot be nested" },
        { "fn f() { 1 = 2 }", "t.mini:1:12: error: expected an expression, found '='" },
        { "fn f() { x = 2 }", "t.mini:1:10: error: 'x' is not declared" },
        { "fn f() { return (1 }", "t.mini:1:20: error: expected ')', found '}'" },
        { "fn f() { while 1 return 2 }", "t.mini:1:18: error: expected '{', found 'return'" },
        { "fn f() { return 12ab }", "t.mini:1:17: error: bad digit 'a' in number" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[256] = "";
        mj_program *p = mj_compile(bad[i].src, "t.mini", NULL, err, sizeof err);
        CHECK(p == NULL);
        mj_free(p);
        check_count++;
        if (strncmp(err, bad[i].want, strlen(bad[i].want))) {
            check_failures++;
            fprintf(stderr, "%s:%d: for %s\n  got  %s\n  want %s\n", __FILE__, __LINE__,
                    bad[i].src, err, bad[i].want);
        }
    }
    /* Deep nesting is an error, not a stack overflow. */
    size_t n = 100000;
    char *deep = malloc(2 * n + 64);
    strcpy(deep, "fn f() { return ");
    size_t len = strlen(deep);
    memset(deep + len, '(', n);
    strcpy(deep + len + n, "1 }");
    char err[256];
    CHECK(mj_compile(deep, "t.mini", NULL, err, sizeof err) == NULL);
    CHECK(strstr(err, "nested too deeply") != NULL);
    free(deep);
    /* Tiny or missing error buffers are fine. */
    CHECK(mj_compile("fn", "t.mini", NULL, err, 4) == NULL);
    CHECK_EQ(strlen(err), 3);
    CHECK(mj_compile("fn", NULL, NULL, NULL, 0) == NULL);
    mj_free(NULL);
}

/*
 * Differential test: random expressions over a, b, c, evaluated by the JIT and by a C
 * model of the language's semantics (wrapping arithmetic, total division, 0/1 logic).
 */
static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static int64_t wrap_add(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
static int64_t wrap_sub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
static int64_t wrap_mul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }
static int64_t model_div(int64_t x, int64_t y)
{
    return y == 0 ? 0 : y == -1 ? wrap_sub(0, x) : x / y;
}
static int64_t model_mod(int64_t x, int64_t y) { return y == 0 || y == -1 ? 0 : x % y; }

/* Appends source for a random expression to buf and returns its value for (a, b, c). */
static int64_t gen(char *buf, size_t cap, int depth, const int64_t v[3])
{
    size_t len = strlen(buf);
    if (depth == 0 || rnd(4) == 0) {
        if (rnd(2)) {
            int k = (int)rnd(3);
            snprintf(buf + len, cap - len, "%c", "abc"[k]);
            return v[k];
        }
        static const int64_t lits[] = { 0, 1, 2, 3, 7, -1, 100, 65536, 2147483647, 4294967296LL,
                                        INT64_MAX };
        int64_t x = lits[rnd(sizeof lits / sizeof *lits)];
        snprintf(buf + len, cap - len, x < 0 ? "(%" PRId64 ")" : "%" PRId64, x);
        return x;
    }
    static const char *const ops[] = { "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=",
                                       "&&", "||", "neg", "!" };
    int op = (int)rnd(sizeof ops / sizeof *ops);
    if (op >= 13) {
        snprintf(buf + len, cap - len, op == 13 ? "-(" : "!(");
        int64_t x = gen(buf, cap, depth - 1, v);
        len = strlen(buf);
        snprintf(buf + len, cap - len, ")");
        return op == 13 ? wrap_sub(0, x) : !x;
    }
    snprintf(buf + len, cap - len, "(");
    int64_t x = gen(buf, cap, depth - 1, v);
    len = strlen(buf);
    snprintf(buf + len, cap - len, " %s ", ops[op]);
    int64_t y = gen(buf, cap, depth - 1, v);
    len = strlen(buf);
    snprintf(buf + len, cap - len, ")");
    switch (op) {
    case 0: return wrap_add(x, y);
    case 1: return wrap_sub(x, y);
    case 2: return wrap_mul(x, y);
    case 3: return model_div(x, y);
    case 4: return model_mod(x, y);
    case 5: return x == y;
    case 6: return x != y;
    case 7: return x < y;
    case 8: return x <= y;
    case 9: return x > y;
    case 10: return x >= y;
    case 11: return x && y;
    default: return x || y;
    }
}

static void test_random_expressions(void)
{
    static const int64_t inputs[][3] = { { 0, 0, 0 }, { 1, 2, 3 }, { -5, 7, -1 },
                                         { INT64_MAX, INT64_MIN, 2 }, { 1000003, -97, 13 } };
    enum { N = 300 };
    for (size_t in = 0; in < sizeof inputs / sizeof *inputs; in++) {
        /* The model needs the inputs while generating, so one program per input triple. */
        size_t cap = N * 1200 + 64;
        char *src = malloc(cap);
        int64_t want[N];
        src[0] = 0;
        for (int i = 0; i < N; i++) {
            char e[1024] = "";
            want[i] = gen(e, sizeof e, 1 + (int)rnd(5), inputs[in]);
            size_t len = strlen(src);
            snprintf(src + len, cap - len, "fn f%d(a, b, c) { return %s }\n", i, e);
        }
        char err[256];
        mj_program *p = mj_compile(src, "rand.mini", NULL, err, sizeof err);
        CHECK(p != NULL);
        if (!p) {
            fprintf(stderr, "%s\n", err);
            free(src);
            continue;
        }
        for (int i = 0; i < N; i++) {
            char name[16];
            snprintf(name, sizeof name, "f%d", i);
            int64_t got = mj_run(p, name, inputs[in], 3);
            check_count++;
            if (got != want[i]) {
                check_failures++;
                const struct mj_function *f = mj_function_get(p, name);
                fprintf(stderr, "random expression on line %u: got %" PRId64 ", want %" PRId64 "\n",
                        f ? f->line : 0, got, want[i]);
            }
        }
        mj_free(p);
        free(src);
    }
}

/* Mutated programs must compile or fail with a message: never crash or hang. */
static void test_mutations(void)
{
    char err[256];
    char *base = mj_read_file("examples/minijit/loops.mini", err, sizeof err);
    CHECK(base != NULL);
    if (!base)
        return;
    size_t len = strlen(base);
    char *m = malloc(len + 1);
    static const char alphabet[] = "(){}+-*/%=!<>&|,;#\n 0123456789abcfnvrwie_";
    int compiled = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(m, base, len + 1);
        for (int k = 1 + (int)rnd(4); k > 0; k--)
            m[rnd((uint32_t)len)] = alphabet[rnd(sizeof alphabet - 1)];
        err[0] = 0;
        mj_program *p = mj_compile(m, "mut.mini", NULL, err, sizeof err);
        if (p) {
            compiled++;
            mj_free(p);     /* not run: a mutation may well loop forever */
        } else {
            check_count++;
            if (strncmp(err, "mut.mini:", 9) || !strstr(err, ": error: ")) {
                check_failures++;
                fprintf(stderr, "bad error message: %s\n", err);
            }
        }
    }
    CHECK(compiled > 0);
    free(m);
    free(base);
}

/* Code freed and compiled again lands where it was (first fit): the address-reuse case. */
static void test_reuse(void)
{
    const char *src = "fn a() { return 1 } fn b() { return 2 }";
    char err[256];
    mj_program *p = mj_compile(src, "r.mini", NULL, err, sizeof err);
    CHECK(p != NULL);
    if (!p)
        return;
    void *a1 = mj_lookup(p, "a"), *b1 = mj_lookup(p, "b");
    size_t used = mj_arena_used();
    mj_free(p);
    CHECK_EQ(mj_arena_used(), used - 2 * 32);   /* each function rounds to 32 bytes here */
    p = mj_compile(src, "r.mini", NULL, err, sizeof err);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(mj_lookup(p, "a") == a1);
    CHECK(mj_lookup(p, "b") == b1);
    CHECK_EQ(mj_run(p, "b", NULL, 0), 2);
    mj_free(p);
}

/* Announced through jitherald: lookups by address find the JIT's names; removal works. */
static void test_announce(void)
{
    jh_ctx *jh = NULL;
    char dir[] = "/tmp/jh-test-minijit.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct jh_options o = { .sz = sizeof o, .channels = JH_PERFMAP, .dir = dir,
                            .engine = "minijit", .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&jh, &o), 0);
    if (!jh)
        return;
    char err[256];
    char *src = mj_read_file("examples/minijit/fib.mini", err, sizeof err);
    CHECK(src != NULL);
    mj_program *p = src ? mj_compile_ex(src, "fib.mini", jh, MJ_LOG_STRUCTS, err, sizeof err) : NULL;
    CHECK(p != NULL);
    if (p) {
        const struct mj_function *fib = mj_function_get(p, "fib");
        CHECK(fib && fib->announced);
        char name[32] = "";
        const void *start = NULL;
        size_t size = 0;
        CHECK(jh_channels(jh) & JH_PERFMAP);
        if (fib) {
            CHECK_EQ(jh_lookup(jh, (uint8_t *)fib->code + 5, NULL, &start, &size, name, sizeof name), 0);
            CHECK_STR(name, "fib");
            CHECK(start == fib->code);
            CHECK_EQ(size, fib->code_size);
        }
        int64_t n = 15;
        CHECK_EQ(mj_run(p, "fib", &n, 1), 610);
        CHECK_EQ(mj_remove_all(p), 0);
        CHECK(!fib->announced);
        CHECK_EQ(jh_lookup(jh, fib->code, NULL, NULL, NULL, NULL, 0), -ENOENT);
        CHECK_EQ(mj_remove_all(p), 0);          /* twice is harmless */
        mj_free(p);
    }
    free(src);
    jh_close(jh);
    char map[64];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
    unlink(map);
    rmdir(dir);
}

/* Several threads compile into the shared arena at once and all get working code. */
static void *compile_thread(void *arg)
{
    int64_t *out = arg;
    const char *src = "fn fib(n) { if n < 2 { return n } return fib(n - 1) + fib(n - 2) }\n"
                      "fn sq(x) { return x * x }\n";
    int64_t sum = 0;
    for (int i = 0; i < 50; i++) {
        char err[256];
        mj_program *p = mj_compile(src, "t.mini", NULL, err, sizeof err);
        if (!p)
            return NULL;
        int64_t n = 15;
        sum += mj_run(p, "fib", &n, 1) + mj_run(p, "sq", &n, 1);
        mj_free(p);
    }
    *out = sum;
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[4];
    int64_t r[4] = { 0 };
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, compile_thread, &r[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(r[i], 50 * (610 + 225));
    }
}

/* The minijit program: --threads N prints N identical results, a parse error names
 * file:line:col and fails. */
static void test_program(void)
{
    const char *build = getenv("JH_BUILD");
    if (!build) {
        printf("JH_BUILD not set: skipping the minijit program checks\n");
        return;
    }
    char cmd[1024], line[256];
    snprintf(cmd, sizeof cmd, "JITHERALD= %s/examples/minijit --threads 4 examples/minijit/fib.mini 20 2>&1", build);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    int results = 0, prints = 0;
    while (fgets(line, sizeof line, f)) {
        int t;
        long long v;
        if (sscanf(line, "thread %d: main returned %lld", &t, &v) == 2) {
            CHECK_EQ(v, 0);
            results++;
        } else if (!strcmp(line, "6765\n")) {
            prints++;
        } else {
            fprintf(stderr, "unexpected output: %s", line);
            check_failures++;
        }
    }
    CHECK_EQ(pclose(f), 0);
    CHECK_EQ(results, 4);
    CHECK_EQ(prints, 4);

    char tmp[] = "/tmp/jh-test-minijit-XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    const char bad[] = "fn main() {\n    return 1 +\n}\n";
    CHECK_EQ(write(fd, bad, sizeof bad - 1), (ssize_t)sizeof bad - 1);
    close(fd);
    snprintf(cmd, sizeof cmd, "JITHERALD= %s/examples/minijit %s 2>&1", build, tmp);
    f = popen(cmd, "r");
    char out[512] = "";
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = 0;
    int status = f ? pclose(f) : -1;
    CHECK(status != 0);
    char want[128];
    snprintf(want, sizeof want, "%s:3:1: error: expected an expression, found '}'", tmp);
    CHECK(strstr(out, want) != NULL);
    if (!strstr(out, want))
        fprintf(stderr, "got: %s\n", out);
    unlink(tmp);
}

int main(void)
{
    test_arithmetic();
    test_short_circuit();
    test_functions();
    test_samples();
    test_callback();
    test_errors();
    test_random_expressions();
    test_mutations();
    test_reuse();
    test_announce();
    test_threads();
    test_program();
    return check_done();
}
