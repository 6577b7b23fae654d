/*
 * test_auditlog_encode.c — the audit log's code records are sized first and then written
 * straight into their frame (fmt/auditlog.c), so a size that is one byte off would cut a
 * record or overwrite the next one's mark. Every number and length at each of msgpack's
 * form boundaries (fixint/uint8/16/32/64, fixstr/str8/16/32, fixarray/array16, fixmap/map16,
 * bin8/16/32), every unwind kind and optional key: each put must write exactly the bytes
 * its size said (the guard bytes after them stay untouched), and the CLI's reader must read
 * every field back as it went in.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fmt/auditlog.h"
#include "fmt/msgpack.h"
#include "lib/auditlog_read.h"

static const uint64_t edges[] = { 0, 127, 128, 255, 256, 65535, 65536, 0xffffffffu,
                                  0x100000000u, UINT64_MAX };
#define NEDGES (sizeof edges / sizeof *edges)
static const size_t lens[] = { 0, 31, 32, 255, 256, 65535, 65536 };
#define NLENS (sizeof lens / sizeof *lens)

static uint8_t code[70000];
static char text[3][70000];

/* One record: sized, put between guard bytes, the guards intact, the length as said. */
static struct jh__buf log_;
static void place(size_t n, uint8_t *(*put)(uint8_t *p, const void *arg), const void *arg)
{
    enum { SLACK = 4096 };          /* room for a size that is short: a failure, not a crash */
    uint8_t *b = malloc(n + 1 + SLACK);
    CHECK(b != NULL);
    if (!b)
        return;
    b[0] = 0x5a;
    memset(b + 1 + n, 0xa5, SLACK);
    uint8_t *end = put(b + 1, arg);
    CHECK_EQ(end - (b + 1), (long long)n);
    CHECK_EQ(b[0], 0x5a);
    size_t spoiled = 0;
    for (size_t i = 0; i < SLACK; i++)
        spoiled += b[1 + n + i] != 0xa5;
    CHECK_EQ(spoiled, 0);
    uint8_t hdr[JH__AL_FRAME_HDR] = { JH__AL_FRAME_MARK };
    jh__mp_be32(hdr + 1, (uint32_t)n);
    jh__buf_put(&log_, hdr, sizeof hdr);
    jh__buf_put(&log_, b + 1, n);
    free(b);
}

struct add {
    uint64_t ts, id;
    uint32_t tid;
    const struct jh__func *f;
    const struct jh__al_ref *ref;
};
static uint8_t *put_add(uint8_t *p, const void *arg)
{
    const struct add *a = arg;
    return jh__al_put_code_add(p, a->ts, a->tid, a->id, a->f, a->ref);
}
static uint8_t *put_header(uint8_t *p, const void *arg)
{
    (void)arg;
    p = jh__al_put_head(p, 5, "header", 6, 1, 2);
    p = jh__mp_put_str(p, JH__AL_K_FORMAT, strlen(JH__AL_K_FORMAT));
    p = jh__mp_put_str(p, JH__AL_FORMAT, strlen(JH__AL_FORMAT));
    p = jh__mp_put_str(p, JH__AL_K_VERSION, strlen(JH__AL_K_VERSION));
    return jh__mp_put_uint(p, JH__AL_VERSION);
}

/* a: the start, b: the new start (move) or size (remove), c: size (move) or length (patch) */
struct span { uint64_t ts, id, a, b, c; uint32_t tid; int kind; };
static uint8_t *put_span(uint8_t *p, const void *arg)
{
    const struct span *s = arg;
    switch (s->kind) {
    case 0: return jh__al_put_code_move(p, s->ts, s->tid, s->id, s->a, s->b, s->c);
    case 1: return jh__al_put_code_patched(p, s->ts, s->tid, s->id, s->a, code, (size_t)s->c);
    default: return jh__al_put_code_remove(p, s->ts, s->tid, s->id, s->a, s->b);
    }
}

/* The bound at its tightest: every key a code_add can hold, one-byte strings and one of
 * each array, every number at its widest, for each unwind kind, by reference or not. */
static void check_bound_tight(void)
{
    static const struct jh_epilogue ep[1] = { { UINT32_MAX, UINT32_MAX } };
    static const struct jh_cfa_step st[1] = { { UINT32_MAX, UINT32_MAX } };
    static const struct jh_saved_reg sr[1] = { { UINT32_MAX, INT32_MIN } };
    static const struct jh_range rs[1] = { { UINT32_MAX, UINT32_MAX } };
    static const uint8_t cfi[1] = { 0 }, bid[1] = { 1 };
    for (int k = 0; k < 8; k++) {
        struct jh__func f = { .start = UINT64_MAX - 1, .size = 1, .name = "n", .symbol = "s",
            .unwind = (enum jh_unwind_kind)(k % 4), .fp_push_end = UINT32_MAX,
            .fp_set_end = UINT32_MAX, .nepilogues = 1, .epilogues = ep, .cfi = cfi,
            .cfi_len = 1, .prologue_end = UINT32_MAX, .cfa_offset = UINT32_MAX,
            .ncfa_steps = 1, .cfa_steps = st, .nsaved_regs = 1, .saved_regs = sr,
            .personality = UINT64_MAX, .lsda = UINT64_MAX, .nra_signed = 1, .ra_signed = rs,
            .ra_key = UINT32_MAX };
        struct jh__al_ref ref = { .path = "/", .build_id = bid, .build_id_len = 1,
                                  .offset = UINT64_MAX };
        const struct jh__al_ref *r = k & 4 ? &ref : NULL;
        CHECK(jh__al_code_add_bound(&f, r) >=
              jh__al_code_add_size(UINT64_MAX, UINT32_MAX, UINT64_MAX, &f, r));
    }
}

/* A code_add's head (its map header, type, time and thread) is jh__al_put_head's, for
 * times and threads of every width. */
static void check_code_add_head(void)
{
    static const uint8_t code1[1] = { 0xc3 };
    struct jh__func f = { .start = (uintptr_t)code1, .size = 1, .name = "n" };
    const uint64_t ts[] = { 0, 127, 128, 0xffff, 0x10000, UINT32_MAX, UINT64_MAX };
    const uint32_t tid[] = { 0, 127, 255, 256, UINT32_MAX };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        for (size_t k = 0; k < sizeof tid / sizeof tid[0]; k++) {
            uint8_t a[256], b[256];
            size_t n = (size_t)(jh__al_put_code_add(a, ts[i], tid[k], 7, &f, NULL) - a);
            CHECK(n <= sizeof a && (a[0] & 0xf0) == 0x80);
            size_t h = (size_t)(jh__al_put_head(b, a[0] & 0x0fu, "code_add", 8, ts[i], tid[k]) - b);
            CHECK(h < n && !memcmp(a, b, h));
        }
}

int main(void)
{
    check_bound_tight();
    check_code_add_head();
    for (int i = 0; i < 3; i++)
        memset(text[i], 'a' + i, sizeof text[i] - 1);
    for (size_t i = 0; i < sizeof code; i++)
        code[i] = (uint8_t)(i * 7);
    size_t hn = jh__al_head_size(5, 6, 1, 2) + jh__mp_str_size(strlen(JH__AL_K_FORMAT)) +
                jh__mp_str_size(strlen(JH__AL_FORMAT)) + jh__mp_str_size(strlen(JH__AL_K_VERSION)) +
                jh__mp_uint_size(JH__AL_VERSION);
    place(hn, put_header, NULL);

    /* functions: each unwind kind in turn, numbers and lengths walking the edges */
    enum { NF = 40 };
    static struct jh__func fs[NF];
    static struct jh_line lines[NF][17];
    static const char *files[NF][16];
    static struct jh_epilogue ep[16];
    static struct jh_cfa_step cs[16];
    static struct jh_saved_reg sr[16];
    static struct jh_range rr[16];
    static uint8_t cfi[300];
    static uint8_t bid[64];
    for (int k = 0; k < 16; k++) {
        uint32_t e = (uint32_t)edges[(size_t)k % 8];
        ep[k] = (struct jh_epilogue){ e, e };
        cs[k] = (struct jh_cfa_step){ e, e };
        sr[k] = (struct jh_saved_reg){ e, k % 2 ? -(int32_t)(e >> 1) : (int32_t)(e >> 1) };
        rr[k] = (struct jh_range){ e, e };
    }
    /* sizes at bin8/16/32's edges; ids and starts at uint's (ids unique, as the core's) */
    static const uint64_t sizes[] = { 1, 255, 256, 65535, 65536, 69999 };
    static const uint64_t ids[] = { UINT64_MAX, 0x100000000u, 0xffffffffu, 65536, 65535, 256,
                                    255, 128, 127, 1 };
    for (int i = 0; i < NF; i++) {
        struct jh__func *f = &fs[i];
        f->start = (uintptr_t)code;
        f->size = sizes[(size_t)i % 6];
        uint32_t nl = (uint32_t)(i % 3 == 0 ? 16 : i % 3 == 1 ? 15 : 1);
        for (uint32_t k = 0; k < nl; k++) {
            uint64_t e = edges[(size_t)(i + (int)k) % 7];     /* offsets inside the code */
            lines[i][k] = (struct jh_line){ (uint32_t)(e < f->size ? e : f->size - 1),
                                            (uint32_t)edges[(k + 1) % 8],
                                            k % 4 ? 0 : (uint32_t)edges[(size_t)i % 8], k % 2 };
        }
        uint32_t nfl = (uint32_t)(i % 2 ? 16 : 2);
        for (uint32_t k = 0; k < nfl; k++)
            files[i][k] = text[k % 3] + sizeof text[0] - 1 - lens[(size_t)(i + (int)k) % NLENS];
        f->name = text[0] + sizeof text[0] - 1 - lens[(size_t)i % NLENS];
        f->files = files[i];
        f->nfiles = nfl;
        f->lines = lines[i];
        f->nlines = nl;
        f->unwind = (enum jh_unwind_kind)(i % 4);       /* none, frame pointer, CFI, frameless */
        f->fp_push_end = (uint32_t)edges[(size_t)i % 8];
        f->fp_set_end = (uint32_t)edges[(size_t)(i + 3) % 8];
        f->cfi = cfi;
        f->cfi_len = i % 5 == 0 ? 256 : i % 5 == 1 ? 255 : 3;
        f->symbol = i % 3 ? text[1] + sizeof text[1] - 1 - lens[(size_t)(i + 2) % NLENS] : NULL;
        f->prologue_end = (uint32_t)(edges[(size_t)i % 7] % f->size);
        f->cfa_offset = (uint32_t)edges[(size_t)(i + 1) % 8];
        f->ncfa_steps = f->nsaved_regs = f->nepilogues = (uint32_t)(i % 2 ? 16 : 15);
        f->cfa_steps = cs;
        f->saved_regs = sr;
        f->epilogues = ep;
        f->nra_signed = i % 4 == 1 ? 16 : 0;
        f->ra_signed = rr;
        f->ra_key = i % 4 == 1;
        f->personality = i % 2 ? edges[(size_t)i % NEDGES] | 1 : 0;
        f->lsda = i % 3 ? UINT64_MAX : 0;
        struct jh__al_ref ref = { .path = files[i][0], .build_id = bid,
                                  .build_id_len = 1 + (uint32_t)i % 64,
                                  .offset = edges[(size_t)i % NEDGES] };
        uint64_t id = i < 10 ? ids[i] : 1000 + (uint64_t)i;
        struct add a = { edges[(size_t)i % NEDGES], id, (uint32_t)edges[(size_t)i % 8], f,
                         i % 4 == 2 && f->files[0][0] ? &ref : NULL };
        place(jh__al_code_add_size(a.ts, a.tid, a.id, f, a.ref), put_add, &a);
        /* the channel's bound for encoding a record before its frame (every record of
         * these at the largest numbers, without source files, by reference and not, with
         * and without lengths known): never below the record's size */
        CHECK_EQ(jh__al_code_add_bound(f, a.ref), SIZE_MAX);
        struct jh__func g = *f;
        g.nfiles = 0, g.files = NULL;
        for (int k = 0; k < 4; k++) {
            g.name_len = k & 1 ? (uint32_t)strlen(g.name) : 0;
            g.symbol_len = k & 1 && g.symbol ? (uint32_t)strlen(g.symbol) : 0;
            const struct jh__al_ref *r = k & 2 ? &ref : NULL;
            CHECK(jh__al_code_add_bound(&g, r) >=
                  jh__al_code_add_size(UINT64_MAX, UINT32_MAX, UINT64_MAX, &g, r));
        }
    }
    /* then one move, patch or removal of each of the first 30 */
    for (int i = 0; i < 30; i++) {
        const struct jh__func *f = &fs[i];
        struct span s = { edges[(size_t)i % NEDGES], i < 10 ? ids[i] : 1000 + (uint64_t)i,
                          f->start, 0, f->size, (uint32_t)edges[(size_t)i % 8], i % 3 };
        size_t n;
        if (s.kind == 0) {
            s.b = edges[(size_t)i % NEDGES] + (uint64_t)i;      /* the new start */
            n = jh__al_code_move_size(s.ts, s.tid, s.id, s.a, s.b, s.c);
        } else if (s.kind == 1) {
            s.c = lens[(size_t)i % NLENS] + 1 < f->size ? lens[(size_t)i % NLENS] + 1 : f->size;
            n = jh__al_code_patched_size(s.ts, s.tid, s.id, s.a, (size_t)s.c);
        } else {
            s.b = f->size;
            n = jh__al_code_remove_size(s.ts, s.tid, s.id, s.a, s.b);
        }
        place(n, put_span, &s);
    }
    CHECK_EQ(log_.err, 0);

    struct jhr_al lf;
    char err[256] = "";
    CHECK_EQ(jhr_al_parse(&lf, log_.p, log_.len, err, sizeof err), 0);
    CHECK_EQ(lf.bad, 0);
    CHECK_EQ(lf.cut, 0);
    CHECK_EQ(lf.nfns, NF);
    CHECK_EQ(lf.resyncs, 0);
    for (size_t i = 0; i < lf.nfns && i < NF; i++) {
        const struct jh__func *f = &fs[i];
        const struct jhr_al_fn *g = &lf.fns[i];
        CHECK_EQ(g->id, i < 10 ? ids[i] : 1000 + i);
        CHECK_EQ(strlen(g->name), strlen(f->name));
        CHECK_EQ(g->start, f->start);
        CHECK_EQ(g->size, f->size);
        CHECK_EQ(g->nfiles, f->nfiles);
        for (uint32_t k = 0; k < g->nfiles && k < f->nfiles; k++)
            CHECK(!strcmp(g->files[k], f->files[k]));
        CHECK_EQ(g->nlines, f->nlines);
        for (uint32_t k = 0; k < g->nlines && k < f->nlines; k++)
            CHECK(g->lines[k].offset == f->lines[k].offset &&
                  g->lines[k].line == f->lines[k].line &&
                  g->lines[k].column == f->lines[k].column &&
                  g->lines[k].file == f->lines[k].file);
        CHECK_EQ(g->prologue_end, f->prologue_end);
        CHECK_EQ(g->personality, f->personality);
        CHECK_EQ(g->lsda, f->lsda);
        CHECK_EQ(g->nra_signed, f->nra_signed);
        CHECK_EQ(g->ra_key, f->ra_key);
        if (f->symbol)
            CHECK(g->symbol && !strcmp(g->symbol, f->symbol));
        if (i < 30) {
            CHECK_EQ(g->nmoves, i % 3 == 0);
            CHECK_EQ(g->cur_start, i % 3 == 0 ? edges[i % NEDGES] + i : f->start);
            CHECK_EQ(g->removed, i % 3 == 2);
            if (i % 3 == 1 && g->code)
                CHECK_EQ(g->npatches, 1);
        }
        if (i % 4 == 2 && f->files[0][0]) {
            CHECK(g->code_file && !strcmp(g->code_file, f->files[0]));
            CHECK_EQ(g->code_idlen, 1 + i % 64);
            CHECK_EQ(g->code_offset, edges[i % NEDGES]);
        } else {
            CHECK(g->code && !memcmp(g->code, code, f->size));
        }
        switch (f->unwind) {
        case JH_UNWIND_FRAME_POINTER:
            CHECK_STR(g->unwind, JH__AL_UNWIND_FRAME_POINTER);
            CHECK_EQ(g->fp_push_end, f->fp_push_end);
            CHECK_EQ(g->fp_set_end, f->fp_set_end);
            CHECK_EQ(g->nepilogues, f->nepilogues);
            CHECK(g->epilogues && g->epilogues[14].start == ep[14].start);
            break;
        case JH_UNWIND_CFI:
            CHECK_STR(g->unwind, JH__AL_UNWIND_CFI);
            CHECK_EQ(g->cfi_len, f->cfi_len);
            break;
        case JH_UNWIND_FRAMELESS:
            CHECK_STR(g->unwind, JH__AL_UNWIND_FRAMELESS);
            CHECK_EQ(g->cfa_offset, f->cfa_offset);
            CHECK_EQ(g->ncfa_steps, f->ncfa_steps);
            CHECK_EQ(g->nsaved_regs, f->nsaved_regs);
            CHECK(g->saved_regs && g->saved_regs[13].cfa_offset == sr[13].cfa_offset);
            break;
        default:
            CHECK_STR(g->unwind, JH__AL_UNWIND_NONE);
        }
    }
    jhr_al_free(&lf);
    jh__buf_free(&log_);
    return check_done();
}
