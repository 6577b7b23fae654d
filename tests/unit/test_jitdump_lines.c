/*
 * test_jitdump_lines.c — a LOAD's line table from the DEBUG_INFO before it, as jitherald run
 * reads it (tools/lib/jitdump_lines.h), on records shaped like node 20's: for a script's
 * own functions V8 writes each entry's file name from a buffer that is no longer the name,
 * of the right length but other bytes. Walked by terminators those entries are misaligned;
 * walked by the script name's length (taken from the LOAD's name, "JS:*f FILE:L:C"), they
 * give V8's addresses and lines. Cases: a name with a NUL inside (what node writes most
 * often), a printable one ("$Z", once in ten runs of tests/run/node_trap.js: the terminator
 * walk then decoded misaligned entries into a wrong line), true names, a table mixing two
 * scripts (left to the terminator walk), V8's +0x40, padding, and a name that fits no
 * length (dropped: no lines rather than wrong ones). And node's real record, from the fuzz
 * corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lib/jitdump_lines.h"
#include "lib/jitdump_read.h"

#define CODE 0x7f0000001000ull
#define SCRIPT "/srv/app/app.js"

static uint8_t buf[8192];
static size_t len;

static void put(const void *p, size_t n) { memcpy(buf + len, p, n); len += n; }
static void u32(uint32_t v) { put(&v, 4); }
static void u64(uint64_t v) { put(&v, 8); }

/* A file: header, DEBUG_INFO with the entries (name i is names[i], written as given, of
 * name_len[i] bytes and a NUL), `pad` zero bytes, then the LOAD of `load_name`. */
static void file(const char *load_name, size_t n, const uint32_t *off, const int *line,
                 const char *const *names, const size_t *name_len, size_t pad)
{
    len = 0;
    u32(0x4A695444), u32(1), u32(40), u32(62), u32(0), u32(42), u64(0), u64(0);
    size_t at = len, body = 0;
    for (size_t i = 0; i < n; i++)
        body += 16 + name_len[i] + 1;
    u32(2), u32((uint32_t)(32 + body + pad)), u64(0), u64(CODE), u64(n);
    for (size_t i = 0; i < n; i++) {
        u64(CODE + 0x40 + off[i]), u32((uint32_t)line[i]), u32(0);
        put(names[i], name_len[i]);
        put("", 1);
    }
    memset(buf + len, 0, pad);
    len += pad;
    CHECK_EQ(len - at, 32 + body + pad);
    size_t nl = strlen(load_name) + 1, code = 0x100;
    u32(0), u32((uint32_t)(16 + 40 + nl + code)), u64(0);
    u32(42), u32(42), u64(CODE), u64(CODE), u64(code), u64(7);
    put(load_name, nl);
    memset(buf + len, 0x90, code);
    len += code;
}

/* The rows of the file's LOAD, as jitherald run gets them (ln in place: its files may point
 * into ln->file). */
static void read_lines_into(struct jhr_lines *out, struct jh_line *rows, uint32_t cap)
{
    *out = (struct jhr_lines){ .rows = rows, .cap = cap };
    struct jhr_lines *lp = out;
    struct jhr_jd r;
    CHECK_EQ(jhr_jd_open(&r, buf, len), 0);
    struct jhr_jd_rec rec, dbg = { 0 };
    while (jhr_jd_next(&r, &rec) == 1) {
        if (rec.id == JH__JD_CODE_DEBUG_INFO)
            dbg = rec;
        else if (rec.id == JH__JD_CODE_LOAD)
            jhr_jd_load_lines(&r, &dbg, &rec, lp);
    }
}


static const uint32_t off[3] = { 0x0, 0x44, 0x90 };
static const int line[3] = { 2, 4, 7 };

static void expect_script_rows(const struct jhr_lines *ln, const char *what)
{
    CHECK_EQ(ln->n, 3);
    CHECK_EQ(ln->nfiles, 1);
    if (ln->nfiles)
        CHECK_STR(ln->files[0], SCRIPT);
    for (uint32_t i = 0; i < ln->n && i < 3; i++) {
        CHECK_EQ(ln->rows[i].offset, off[i]);      /* V8's +0x40 undone */
        CHECK_EQ(ln->rows[i].line, (uint32_t)line[i]);
    }
    if (ln->n != 3)
        fprintf(stderr, "  (%s)\n", what);
}

int main(void)
{
    struct jh_line rows[16];
    const size_t L = strlen(SCRIPT);
    const char *load = "JS:*outer " SCRIPT ":2:15";

    /* node's usual garbage: the right length, a NUL inside */
    char g1[64];
    memcpy(g1, "oy\001\000\000\000\000\000\321\3746\227\216\025~5.js", L);
    const char *n1[3] = { g1, g1, g1 };
    const size_t l1[3] = { L, L, L };
    file(load, 3, off, line, n1, l1, 4);
    struct jhr_lines ln;
    read_lines_into(&ln, rows, 16);
    CHECK(ln.realigned);
    expect_script_rows(&ln, "a name with a NUL inside");

    /* printable garbage: "$Z", a NUL, then bytes that decode as more entries */
    char g2[64] = { '$', 'Z', 0, 0, 0, 0, 0x0b };
    const char *n2[3] = { g2, g2, g2 };
    file(load, 3, off, line, n2, l1, 0);
    read_lines_into(&ln, rows, 16);
    CHECK(ln.realigned);
    expect_script_rows(&ln, "printable garbage");

    /* true names: the same rows either way */
    const char *n3[3] = { SCRIPT, SCRIPT, SCRIPT };
    file(load, 3, off, line, n3, l1, 2);
    read_lines_into(&ln, rows, 16);
    expect_script_rows(&ln, "true names");

    /* two scripts (inlined code from another): true names of two lengths, by terminators */
    const char *n4[3] = { SCRIPT, "node:internal/util", SCRIPT };
    const size_t l4[3] = { L, strlen("node:internal/util"), L };
    file(load, 3, off, line, n4, l4, 0);
    read_lines_into(&ln, rows, 16);
    CHECK(!ln.realigned);
    CHECK_EQ(ln.n, 3);
    CHECK_EQ(ln.nfiles, 2);
    if (ln.n == 3 && ln.nfiles == 2)
        CHECK_STR(ln.files[ln.rows[1].file], "node:internal/util");

    /* garbage of another length than the script's: no way to walk it, no lines */
    char g5[8] = "\377\376ab";
    const char *n5[3] = { g5, g5, g5 };
    const size_t l5[3] = { 4, 4, 4 };
    file(load, 3, off, line, n5, l5, 0);
    read_lines_into(&ln, rows, 16);
    CHECK(ln.dropped);
    CHECK_EQ(ln.n, 0);

    /* not a V8 name: printable names are taken as written (Erlang, LLVM...) */
    file("erl_lint:exprs/2", 3, off, line, n2, l1, 0);
    read_lines_into(&ln, rows, 16);
    CHECK(!ln.realigned);

    /* node's own record (fuzz/corpus/jitdump/v8_garbage_names: JS:*outer, 17 entries) */
    char path[256];
    snprintf(path, sizeof path, "%s/fuzz/corpus/jitdump/v8_garbage_names",
             getenv("JH_ROOT") ? getenv("JH_ROOT") : ".");
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) {
        len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        read_lines_into(&ln, rows, 16);
        CHECK(ln.realigned);
        CHECK_EQ(ln.n, 16);                 /* 17 entries, one row past the code's end? */
        CHECK_EQ(ln.nfiles, 1);
        if (ln.nfiles)
            CHECK(strstr(ln.files[0], "app2.js") != NULL);
        int first = ln.n ? (int)ln.rows[0].line : 0;
        CHECK_EQ(first, 2);                 /* outer() is on line 2 of its script */
    }
    return check_done();
}
