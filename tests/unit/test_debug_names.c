/*
 * test_debug_names.c — what debuggers get to break on, checked with the real decoders:
 *   1. the symbol derived from a display name (fmt/symbol.c), edge cases included;
 *   2. an image with JH__ELF_SYMBOLS: .symtab holds the symbols (readelf -s), the DWARF
 *      keeps the display names (llvm-dwarfdump), and --verify is clean;
 *   3. prologue_end: a flagged row at that offset in the line table, wherever it falls
 *      (inside a row, at a row, before the first, after the last), the other rows as
 *      given (llvm-dwarfdump --debug-line).
 * That gdb and lldb then break there is tested with the real debuggers in
 * tests/integration/gdb_break_names.sh.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "check.h"
#include "fmt/elf_image.h"
#include "fmt/func.h"
#include "fmt/symbol.h"

static char tmpdir[] = "/tmp/jh-test-names.XXXXXX";

static void expect_sym(const char *name, const char *want)
{
    char out[128];
    size_t n = jh__symbol_from_name(out, sizeof out, name);
    CHECK_STR(out, want);
    CHECK_EQ(n, strlen(want));
    CHECK(n <= strlen(name) + 1);
    CHECK_EQ(jh__symbol_is_safe(out), 1);
    /* the unbounded derivation: the same symbol, and "changed" exactly for a name that is
     * not a symbol already */
    char roomy[130];
    bool changed = jh__symbol_is_safe(name);    /* (the wrong answer, unless derived) */
    CHECK_EQ(jh__symbol_derive(roomy, name, &changed), n);
    CHECK_STR(roomy, want);
    CHECK_EQ(changed, !jh__symbol_is_safe(name));
    /* with just the room the core gives (strlen + 2: the unbounded path) and with less (the
     * bounded one): the same symbol, cut to the room */
    for (size_t cap = 0; cap <= strlen(name) + 2; cap++) {
        char cut[130];
        memset(cut, 'Z', sizeof cut);
        CHECK_EQ(jh__symbol_from_name(cut, cap, name), n);
        CHECK_EQ(cut[cap], 'Z');
        if (cap) {
            CHECK_EQ(strlen(cut), n < cap ? n : cap - 1);
            CHECK(!strncmp(cut, want, strlen(cut)));
        }
    }
}

static void test_derive(void)
{
    expect_sym("TRACE_12 script.lua:34", "TRACE_12_script_lua_34");
    expect_sym("fib", "fib");
    expect_sym("ns::fn(int, char*)", "ns_fn_int_char");
    expect_sym("a_ b", "a_b");
    expect_sym("::x", "x");
    expect_sym("x::", "x");
    expect_sym("3d", "_3d");
    expect_sym("???", "_");
    expect_sym("caf\xc3\xa9 1", "caf_1");
    expect_sym("Builtin:ArrayPrototypePush", "Builtin_ArrayPrototypePush");
    expect_sym("_::x", "_x");
    expect_sym("a__ b", "a__b");
    expect_sym("", "_");
    expect_sym("9", "_9");
    expect_sym(" 9 ", "_9");          /* the first byte kept starts with a digit */
    expect_sym("::1abc x", "_1abc_x");
    for (int ch = 1; ch < 256; ch++) {     /* every byte: a word byte kept, others a gap */
        char name[4] = { 'a', (char)ch, 'b', 0 }, out[8];
        bool w = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9') || ch == '_';
        jh__symbol_from_name(out, sizeof out, name);
        CHECK_STR(out, w ? name : "a_b");
        CHECK_EQ(jh__symbol_is_safe(name), w);
    }
    CHECK(jh__symbol_is_safe("TRACE_1"));
    CHECK(!jh__symbol_is_safe("TRACE 1"));
    CHECK(!jh__symbol_is_safe("1x"));
    CHECK(!jh__symbol_is_safe(""));
    /* cut to the room given, still NUL-terminated; the length says what it wanted */
    char small[6];
    CHECK_EQ(jh__symbol_from_name(small, sizeof small, "TRACE_12 x"), 10);
    CHECK_STR(small, "TRACE");
}

static char *run(const char *fmt, const char *arg)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, arg);
    int st;
    char *out = capture(cmd, &st);
    CHECK_EQ(st, 0);
    return out;
}

#define EXPECT_IN(hay, needle) do { check_count++; if (!(hay) || !strstr((hay), (needle))) { \
    check_failures++; fprintf(stderr, "%s:%d: expected in output: \"%s\"\n%s\n", __FILE__, \
    __LINE__, (needle), (hay) ? (hay) : "(no output)"); } } while (0)

/* The row of the line table at address addr, as llvm-dwarfdump prints it, or NULL. */
static const char *row_at(const char *out, unsigned long addr)
{
    char key[64];
    snprintf(key, sizeof key, "\n0x%016lx ", addr);
    return out ? strstr(out, key) : NULL;
}

static int row_has(const char *out, unsigned long addr, unsigned line, const char *flag)
{
    const char *r = row_at(out, addr);
    if (!r)
        return 0;
    const char *eol = strchr(r + 1, '\n');
    char buf[256];
    size_t n = eol ? (size_t)(eol - r) : strlen(r);
    snprintf(buf, sizeof buf, "%.*s", (int)(n < 255 ? n : 255), r);
    unsigned got = 0;
    sscanf(buf + 20, "%u", &got);
    return got == line && (!flag || strstr(buf, flag));
}

static void test_image(void)
{
    static const char *files[] = { "script.lua" };
    static const struct jh_line l1[] = { { 0, 10, 0, 0 }, { 16, 11, 0, 0 }, { 32, 12, 0, 0 } };
    static const struct jh_line l2[] = { { 8, 20, 0, 0 }, { 24, 21, 0, 0 } };
    struct jh__func f[5] = {
        /* inside the first row */
        { .name = "TRACE_1 script.lua:10", .symbol = "TRACE_1_script_lua_10",
          .start = 0x10000, .size = 48, .files = files, .nfiles = 1, .lines = l1, .nlines = 3,
          .prologue_end = 8 },
        /* at a row */
        { .name = "TRACE_2 script.lua:10", .symbol = "TRACE_2_script_lua_10",
          .start = 0x10100, .size = 48, .files = files, .nfiles = 1, .lines = l1, .nlines = 3,
          .prologue_end = 16 },
        /* before the first row */
        { .name = "before", .start = 0x10200, .size = 40, .files = files, .nfiles = 1,
          .lines = l2, .nlines = 2, .prologue_end = 4 },
        /* after the last row */
        { .name = "after", .start = 0x10300, .size = 40, .files = files, .nfiles = 1,
          .lines = l2, .nlines = 2, .prologue_end = 30 },
        /* none */
        { .name = "plain one", .symbol = "plain_one", .start = 0x10400, .size = 40,
          .files = files, .nfiles = 1, .lines = l2, .nlines = 2 },
    };
    const struct jh__func *fp[5] = { &f[0], &f[1], &f[2], &f[3], &f[4] };
    struct jh__elf_spec spec = { .fns = fp, .nfns = 5, .flags = JH__ELF_SYMBOLS };
    struct jh__buf img = { 0 };
    CHECK_EQ(jh__elf_image(&img, &spec, NULL), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/names.elf", tmpdir);
    FILE *fo = fopen(path, "wb");
    CHECK(fo && fwrite(img.p, 1, img.len, fo) == img.len);
    if (fo)
        fclose(fo);

    char *out = run("readelf -sW %s 2>&1", path);
    EXPECT_IN(out, " TRACE_1_script_lua_10\n");
    EXPECT_IN(out, " TRACE_2_script_lua_10\n");
    EXPECT_IN(out, " plain_one\n");
    EXPECT_IN(out, " before\n");
    CHECK(out && !strstr(out, "TRACE_1 script"));
    free(out);

    out = run("llvm-dwarfdump-14 --debug-info %s 2>&1", path);
    EXPECT_IN(out, "DW_AT_name\t(\"TRACE_1 script.lua:10\")");
    EXPECT_IN(out, "DW_AT_name\t(\"plain one\")");
    free(out);

    out = run("llvm-dwarfdump-14 --debug-line %s 2>&1", path);
    /* TRACE_1: rows 0 (10), 8 (10, prologue_end), 16 (11), 32 (12) */
    CHECK(row_has(out, 0x10000, 10, NULL) && !row_has(out, 0x10000, 10, "prologue_end"));
    CHECK(row_has(out, 0x10008, 10, "prologue_end"));
    CHECK(row_has(out, 0x10010, 11, NULL) && !row_has(out, 0x10010, 11, "prologue_end"));
    CHECK(row_has(out, 0x10020, 12, NULL));
    /* TRACE_2: the row at 16 itself flagged, no extra row */
    CHECK(row_has(out, 0x10110, 11, "prologue_end"));
    CHECK(!row_at(out, 0x10108));
    /* before: a row at 4 with the first row's line, then the rows as given */
    CHECK(row_has(out, 0x10204, 20, "prologue_end"));
    CHECK(row_has(out, 0x10208, 20, NULL) && !row_has(out, 0x10208, 20, "prologue_end"));
    CHECK(row_has(out, 0x10218, 21, NULL));
    /* after: a row at 30 with the last line */
    CHECK(row_has(out, 0x1031e, 21, "prologue_end"));
    CHECK(row_has(out, 0x10318, 21, NULL) && !row_has(out, 0x10318, 21, "prologue_end"));
    /* none: no flag anywhere in its rows */
    CHECK(row_has(out, 0x10408, 20, NULL) && !row_has(out, 0x10408, 20, "prologue_end"));
    CHECK(row_has(out, 0x10418, 21, NULL) && !row_has(out, 0x10418, 21, "prologue_end"));
    free(out);

    out = run("llvm-dwarfdump-14 --verify %s 2>&1", path);
    EXPECT_IN(out, "No errors.");
    free(out);
    jh__buf_free(&img);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_derive();
    test_image();
    if (!getenv("JH_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return check_done();
}
