/*
 * test_build_id.c — the GNU build-id notes of jitherald's ELF images (fmt/build_id.h), as
 * readelf and eu-readelf read them: the growing image elfmap writes (fmt/elf_grow.h) and the
 * image the gdb channel registers (fmt/elf_image.h). The id must follow the content: the
 * same functions and code give the same id (in any order, from any heap address), one more
 * function, a patched byte, another line or another window give another.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "fmt/build_id.h"
#include "fmt/elf_grow.h"
#include "fmt/elf_image.h"
#include "fmt/func.h"

#define PG 4096u
#define ANCHOR 0x7f1234500000ull

static char tmpdir[] = "/tmp/jh-test-bid.XXXXXX";
static const char *files[] = { "fib.mini" };
static struct jh_line lines[] = { { 0, 3, 1, 0 }, { 4, 4, 9, 0 } };
static uint8_t code[3][32];

static struct jh__func fn(int i)
{
    return (struct jh__func){ .start = ANCHOR + 64 * (uint64_t)i, .size = 32,
        .name = i == 0 ? "fib" : i == 1 ? "main" : "helper", .files = files, .lines = lines,
        .nfiles = 1, .nlines = 2, .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
        .fp_set_end = 4 };
}

static void hex(const uint8_t id[JH__BUILD_ID_SIZE], char out[2 * JH__BUILD_ID_SIZE + 1])
{
    for (int i = 0; i < JH__BUILD_ID_SIZE; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
}

/* An image of functions order[0..n) (with their code), written as elfmap writes it. */
static void grow(const int *order, int n, uint64_t anchor, uint8_t id[JH__BUILD_ID_SIZE],
                 const char *path)
{
    struct jh__elfg_spec s = { .anchor_addr = anchor, .anchor_off = PG + (1u << 20),
        .lo = anchor, .hi = anchor + PG, .meta_off = PG + (4u << 20), .page_size = PG };
    struct jh__elfg g;
    CHECK_EQ(jh__elfg_init(&g, &s), 0);
    for (int k = 0; k < n; k++) {
        struct jh__func f = fn(order[k]);
        f.start += anchor - ANCHOR;
        CHECK_EQ(jh__elfg_add(&g, &f), 0);
        jh__elfg_code(&g, f.start, code[order[k]], f.size);
    }
    jh__elfg_build_id(&g, id);
    if (path) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        struct jh__elfg_span v[JH__ELFG_MAXSPANS];
        int ns = jh__elfg_spans(&g, v);
        CHECK(fd >= 0 && ns > 0);
        for (int i = 0; i < ns; i++)
            CHECK_EQ(pwrite(fd, v[i].p, v[i].len, (off_t)v[i].off), (ssize_t)v[i].len);
        close(fd);
    }
    jh__elfg_free(&g);
}

static void readelf_says(const char *tool, const char *path, const uint8_t id[JH__BUILD_ID_SIZE])
{
    char cmd[512], want[64], h[2 * JH__BUILD_ID_SIZE + 1];
    hex(id, h);
    snprintf(cmd, sizeof cmd, "%s -n %s 2>&1", tool, path);
    snprintf(want, sizeof want, "Build ID: %s", h);
    int rc;
    char *o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    CHECK(o && strstr(o, want));
    if (!o || !strstr(o, want))
        fprintf(stderr, "%s: wanted \"%s\" in:\n%s\n", cmd, want, o ? o : "(none)");
    free(o);
}

static int differ(const uint8_t *a, const uint8_t *b)
{
    return memcmp(a, b, JH__BUILD_ID_SIZE) != 0;
}


/* A description's hash as build_id.h defines it, written out plainly: its fields
 * serialized in order (numbers as 8 bytes little-endian, strings with their NUL, a symbol
 * equal to the name or none as the word ~0), hashed 256 bytes at a time, each XXH64 seeded
 * with the one before (the first with 1). jh__bid_func_hash takes shortcuts (known
 * lengths, a small description written without room checks): it must give this. */
struct ref_ser {
    uint8_t b[8192];
    size_t n;
};

static void ref_put(struct ref_ser *r, const void *p, size_t len)
{
    if (r->n + len <= sizeof r->b)
        memcpy(r->b + r->n, p, len);
    r->n += len;
}

static void ref_u64(struct ref_ser *r, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    ref_put(r, b, 8);
}

static void ref_str(struct ref_ser *r, const char *p)
{
    if (p)
        ref_put(r, p, strlen(p) + 1);
    else
        ref_u64(r, ~0ull);
}

static uint64_t ref_func_hash(const struct jh__func *f)
{
    static struct ref_ser r;
    r.n = 0;
    ref_u64(&r, f->start);
    ref_u64(&r, f->size);
    ref_u64(&r, f->unwind);
    ref_str(&r, f->name);
    ref_str(&r, f->symbol && strcmp(f->symbol, f->name) ? f->symbol : NULL);
    ref_u64(&r, f->nfiles);
    for (uint32_t i = 0; i < f->nfiles; i++)
        ref_str(&r, f->files[i]);
    ref_u64(&r, f->nlines);
    for (uint32_t i = 0; i < f->nlines; i++) {
        ref_u64(&r, (uint64_t)f->lines[i].offset << 32 | f->lines[i].line);
        ref_u64(&r, (uint64_t)f->lines[i].column << 32 | f->lines[i].file);
    }
    ref_u64(&r, (uint64_t)f->fp_push_end << 32 | f->fp_set_end);
    ref_u64(&r, f->prologue_end);
    ref_u64(&r, f->cfi ? f->cfi_len : 0);
    if (f->cfi)
        ref_put(&r, f->cfi, f->cfi_len);
    ref_u64(&r, (uint64_t)f->cfa_offset << 32 | f->ncfa_steps);
    for (uint32_t i = 0; i < f->ncfa_steps; i++)
        ref_u64(&r, (uint64_t)f->cfa_steps[i].offset << 32 | f->cfa_steps[i].cfa_offset);
    ref_u64(&r, f->nsaved_regs);
    for (uint32_t i = 0; i < f->nsaved_regs; i++)
        ref_u64(&r, (uint64_t)f->saved_regs[i].reg << 32 | (uint32_t)f->saved_regs[i].cfa_offset);
    ref_u64(&r, f->nepilogues);
    for (uint32_t i = 0; i < f->nepilogues; i++)
        ref_u64(&r, (uint64_t)f->epilogues[i].start << 32 | f->epilogues[i].end);
    ref_u64(&r, f->personality);
    ref_u64(&r, f->lsda);
    CHECK(r.n <= sizeof r.b);
    uint64_t h = 1;
    size_t at = 0;
    for (; r.n - at >= 256; at += 256)
        h = jh__hash64(r.b + at, 256, h);
    return jh__hash64(r.b + at, r.n - at, h);
}

/* Descriptions of every size around the serializer's 256 bytes (names and symbols of 1 to
 * 300 bytes, CFI, lines, steps, registers, epilogues, files or none), with their lengths
 * known or not, hashed both ways. */
static void check_func_hash(void)
{
    static char name[301], symbol[301];
    static uint8_t cfi[64];
    static const char *fl[] = { "a.lua", "b.lua" };
    static struct jh_line ln[20];
    static struct jh_cfa_step st[4];
    static struct jh_saved_reg sr[4];
    static struct jh_epilogue ep[4];
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 20; i++)
        ln[i] = (struct jh_line){ .offset = (uint32_t)i * 3, .line = (uint32_t)i + 1,
                                  .column = (uint32_t)i % 3, .file = (uint32_t)i % 2 };
    for (int i = 0; i < 4; i++) {
        st[i] = (struct jh_cfa_step){ (uint32_t)i + 1, 16 * (uint32_t)i };
        sr[i] = (struct jh_saved_reg){ (uint32_t)i + 3, -8 * (i + 1) };
        ep[i] = (struct jh_epilogue){ (uint32_t)i * 10, (uint32_t)i * 10 + 2 };
    }
    for (int i = 0; i < (int)sizeof cfi; i++)
        cfi[i] = (uint8_t)(i * 7 + 1);
    for (int round = 0; round < 6000; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t nl = 1 + (size_t)(x % 300), sl = 1 + (size_t)((x >> 9) % 300);
        if (round < 600)
            nl = 1 + (size_t)round % 150, sl = nl;
        memset(name, 'a' + (int)(x >> 20) % 26, nl);
        name[nl] = 0;
        int symk = (int)(x >> 30) % 4;      /* none, the name itself, a copy, another */
        memcpy(symbol, name, nl + 1);
        if (symk == 3) {
            memset(symbol, 'B', sl);
            symbol[sl] = 0;
            if (round % 5 == 0)             /* the same length, one byte apart */
                memcpy(symbol, name, nl + 1), symbol[nl / 2] ^= 1;
        }
        struct jh__func f = { .start = x & 0xffffffffffffull, .size = 1 + (x >> 40) % 5000,
                              .name = name, .symbol = symk == 0 ? NULL : symk == 1 ? name : symbol,
                              .prologue_end = (uint32_t)(x >> 50) % 7 };
        int kind = (int)(x >> 33) % 4;
        if (kind == 0) {
            f.unwind = JH_UNWIND_FRAME_POINTER, f.fp_push_end = 1, f.fp_set_end = 4;
            f.nepilogues = (uint32_t)(x >> 36) % 5, f.epilogues = ep;
        } else if (kind == 1) {
            f.unwind = JH_UNWIND_CFI, f.cfi = cfi, f.cfi_len = (size_t)(x >> 36) % 65;
        } else if (kind == 2) {
            f.unwind = JH_UNWIND_FRAMELESS, f.cfa_offset = 24;
            f.ncfa_steps = (uint32_t)(x >> 36) % 5, f.cfa_steps = st;
            f.nsaved_regs = (uint32_t)(x >> 39) % 5, f.saved_regs = sr;
        }
        if ((x >> 42) % 3 == 0)
            f.nlines = (uint32_t)(x >> 44) % 20, f.lines = ln;
        if ((x >> 46) % 4 == 0)
            f.nfiles = 2, f.files = fl;
        if ((x >> 48) % 2 == 0)
            f.personality = 0x1234, f.lsda = x >> 51;
        uint64_t want = ref_func_hash(&f);
        CHECK(jh__bid_func_hash(&f) == want);
        f.name_len = (uint32_t)strlen(f.name);
        f.symbol_len = f.symbol ? (uint32_t)strlen(f.symbol) : 0;
        CHECK(jh__bid_func_hash(&f) == want);
    }
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        SKIP("no temporary directory");
    /* the published XXH64 test vectors */
    CHECK(jh__hash64("", 0, 0) == 0xef46db3751d8e999ull);
    CHECK(jh__hash64("abc", 3, 0) == 0x44bc2cf5ad770999ull);
    check_func_hash();
    /* the id of given sums and layout, as every version since the id exists computes it:
     * an audit log's images rebuilt by a later CLI (to-elf) keep the ids they had live */
    {
        static const uint8_t want[JH__BUILD_ID_SIZE] = { 0x77, 0xe7, 0x32, 0x61, 0xeb, 0x99,
            0xa5, 0x6c, 0x7c, 0x30, 0xd5, 0xe8, 0x6e, 0xee, 0xbe, 0xe5, 0x2e, 0x75, 0x17, 0xab };
        struct jh__bid id = { 0x0123456789abcdefull, 0xfedcba9876543210ull, 7 };
        uint8_t got[JH__BUILD_ID_SIZE];
        jh__bid_final(&id, 0x555500001000ull, 4096, got);
        CHECK(!differ(got, want));
    }
    /* the id is three XXH64s of the five words stored little-endian (seeds P1, 2 P1,
     * 3 P1), each most significant byte first: jh__bid_final unrolls that hash */
    {
        uint64_t x = 0x9e3779b97f4a7c15ull;
        for (int i = 0; i < 2000; i++) {
            uint64_t w[5];
            for (int k = 0; k < 5; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                w[k] = i < 5 && k == i ? 0 : x;         /* (a zero word too) */
            }
            uint8_t le[40], want[24], got[JH__BUILD_ID_SIZE];
            for (int k = 0; k < 40; k++)
                le[k] = (uint8_t)(w[k / 8] >> (8 * (k % 8)));
            for (int k = 0; k < 3; k++) {
                uint64_t v = jh__hash64(le, sizeof le, 0x9E3779B185EBCA87ull * (uint64_t)(k + 1));
                for (int b = 0; b < 8; b++)
                    want[8 * k + b] = (uint8_t)(v >> (56 - 8 * b));
            }
            struct jh__bid id = { w[0], w[1], w[2] };
            jh__bid_final(&id, w[3], w[4], got);
            CHECK(!differ(got, want));
        }
    }
    /* the same for two functions' descriptions (every field kind, a name longer than the
     * serializer's 256-byte buffer), and jh__bid_func as its two steps (the gdb channel
     * keeps each function's hash between images) */
    {
        static const uint8_t want[JH__BUILD_ID_SIZE] = { 0x47, 0x6d, 0x6c, 0x67, 0xc4, 0xc4,
            0x41, 0xa4, 0xd4, 0x7f, 0x76, 0x03, 0x90, 0xa9, 0xd1, 0xe8, 0xde, 0x9d, 0xe1, 0x5f };
        static char longname[400];
        memset(longname, 'x', sizeof longname - 1);
        static const char *fl[] = { "a.lua", "/abs/dir/b.lua" };
        static const struct jh_line ln[] = { { .offset = 0, .line = 3, .file = 0 },
            { .offset = 9, .line = 4, .column = 2, .file = 1 }, { .offset = 20, .line = 70000 } };
        static const struct jh_saved_reg regs[] = { { 3, -16 }, { 6, -24 } };
        static const struct jh_cfa_step steps[] = { { 4, 32 } };
        const struct jh__func f[2] = {
            { .start = 0x7f0000001000ull, .size = 64, .name = "TRACE_1", .files = fl,
              .nfiles = 2, .lines = ln, .nlines = 3, .unwind = JH_UNWIND_FRAMELESS,
              .cfa_offset = 24, .nsaved_regs = 2, .saved_regs = regs, .ncfa_steps = 1,
              .cfa_steps = steps, .prologue_end = 4 },
            { .start = 0x7f0000002000ull, .size = 300, .name = longname, .symbol = "sym",
              .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4,
              .personality = 0x1234, .lsda = 0x5678 } };
        struct jh__bid one = { 0 }, two = { 0 };
        uint8_t got[JH__BUILD_ID_SIZE];
        for (int i = 0; i < 2; i++) {
            jh__bid_func(&one, &f[i]);
            jh__bid_add(&two, jh__bid_func_hash(&f[i]));
        }
        jh__bid_final(&one, 1, 2, got);
        CHECK(!differ(got, want));
        CHECK(one.a == two.a && one.b == two.b && one.n == two.n);
    }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 32; k++)
            code[i][k] = (uint8_t)(i * 32 + k);

    char p1[128], p2[128];
    snprintf(p1, sizeof p1, "%s/a.elf", tmpdir);
    snprintf(p2, sizeof p2, "%s/b.elf", tmpdir);
    uint8_t a[JH__BUILD_ID_SIZE], b[JH__BUILD_ID_SIZE], zero[JH__BUILD_ID_SIZE] = { 0 };

    /* elf_grow: the id is in the note readelf and eu-readelf find, and follows the content */
    int fwd[] = { 0, 1, 2 }, rev[] = { 2, 0, 1 };
    grow(fwd, 3, ANCHOR, a, p1);
    grow(rev, 3, ANCHOR, b, p2);
    CHECK(differ(a, zero));
    CHECK(!differ(a, b));                       /* same content, another order */
    readelf_says("readelf", p1, a);
    readelf_says("eu-readelf", p1, a);
    readelf_says("readelf", p2, a);
    grow(fwd, 2, ANCHOR, b, NULL);
    CHECK(differ(a, b));                        /* one function fewer */
    grow(fwd, 3, ANCHOR + (1u << 20), b, NULL);
    CHECK(differ(a, b));                        /* the same code in another window */
    code[1][7] ^= 1;
    grow(fwd, 3, ANCHOR, b, NULL);
    CHECK(differ(a, b));                        /* one code byte */
    code[1][7] ^= 1;
    lines[1].line = 5;
    grow(fwd, 3, ANCHOR, b, NULL);
    CHECK(differ(a, b));                        /* one line number */
    lines[1].line = 4;
    grow(fwd, 3, ANCHOR, b, NULL);
    CHECK(!differ(a, b));

    /* elf_image (the gdb channel's): the same functions built in two buffers (so .eh_frame
     * lies at two addresses) carry the same id; another line, another id */
    struct jh__func f[3] = { fn(0), fn(1), fn(2) };
    const struct jh__func *fs[3] = { &f[0], &f[1], &f[2] };
    struct jh__elf_spec s = { .fns = fs, .nfns = 3, .flags = JH__ELF_NO_PHDRS };
    char ids[3][64];
    for (int k = 0; k < 3; k++) {
        struct jh__buf buf = { 0 };
        if (k == 2)
            lines[0].line = 9;
        CHECK_EQ(jh__elf_image(&buf, &s, NULL), 0);
        snprintf(p1, sizeof p1, "%s/g%d.elf", tmpdir, k);
        FILE *o = fopen(p1, "wb");
        CHECK(o && fwrite(buf.p, 1, buf.len, o) == buf.len);
        if (o)
            fclose(o);
        jh__buf_free(&buf);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "readelf -n %s | sed -n 's/.*Build ID: //p'", p1);
        char *out = capture(cmd, NULL);
        snprintf(ids[k], sizeof ids[k], "%s", out ? out : "");
        free(out);
        CHECK_EQ(strlen(ids[k]), 2 * JH__BUILD_ID_SIZE + 1);
    }
    CHECK_STR(ids[0], ids[1]);
    CHECK(strcmp(ids[0], ids[2]) != 0);

    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK_EQ(system(cmd), 0);
    return check_done();
}
