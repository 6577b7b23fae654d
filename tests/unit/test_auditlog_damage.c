/*
 * test_auditlog_damage.c — reading damaged audit logs (issue 11, item 15): the reader finds
 * the same frames as the obvious algorithm (try every 0xce byte, decode the frame it would
 * start), on thousands of logs damaged at random, and does so in one pass: on garbage built
 * of nested frame-like bytes, where the obvious algorithm decodes up to the rest of the file
 * at each candidate (quadratic: 512 KiB took 56 s), the number of values it decodes stays
 * below the number of bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"
#include "lib/auditlog_read.h"

/* ---- the obvious algorithm, as the reader had it, kept here as the reference ----------- */

/* A complete frame at off whose map decodes to exactly its length and has a string type
 * (first: true, as its first key, which is how the reader recognises a frame after damage
 * and how every writer writes it). */
static bool frame_at(const uint8_t *d, size_t size, size_t off, bool first, uint32_t *len)
{
    if (size - off < 5 || d[off] != 0xce)
        return false;
    *len = (uint32_t)jhr_mp_be(d + off + 1, 4);
    if (*len > size - off - 5)
        return false;
    const uint8_t *p = d + off + 5;
    struct jhr_mp m, k, t;
    if (jhr_mp_decode(p, p + *len, &m) < 0 || m.t != JHR_MP_MAP || m.end != p + *len)
        return false;
    if (!first)
        return jhr_mp_get(&m, "type", &t) == 0 && t.t == JHR_MP_STR;
    const uint8_t *it = m.p;
    return m.n && jhr_mp_next(&m, &it, &k) == 0 && jhr_mp_str_eq(&k, "type") &&
           jhr_mp_next(&m, &it, &t) == 0 && t.t == JHR_MP_STR;
}

struct ref { size_t offs[4096], n, cut, bad, resyncs; };

/* The frames the reader should take, and its damage counts. (It stops where the reader
 * stops, at a record it cannot store, only on an out-of-memory that does not happen here.) */
static void reference(const uint8_t *d, size_t size, struct ref *r)
{
    memset(r, 0, sizeof *r);
    size_t off = 0;
    uint32_t len;
    while (off < size) {
        if (!frame_at(d, size, off, false, &len)) {
            size_t left = size - off;
            if (left >= 5 && d[off] == 0) {
                len = (uint32_t)jhr_mp_be(d + off + 1, 4);
                if (len && len <= left - 5) {
                    r->cut++;
                    off += 5 + len;
                    continue;
                }
            }
            if (d[off] == 0xce && left >= 5 && jhr_mp_be(d + off + 1, 4) <= left - 5) {
                r->bad++;
                off += 5 + jhr_mp_be(d + off + 1, 4);
                continue;
            }
            size_t q = off + 1;
            while (q < size && !frame_at(d, size, q, true, &len))
                q++;
            bool zeros = true;
            for (size_t k = off; k < q && zeros; k++)
                zeros = d[k] == 0;
            if (q >= size) {
                if (!zeros)
                    r->cut++;
                break;
            }
            r->resyncs++;
            off = q;
            frame_at(d, size, off, false, &len);
        }
        if (r->n < sizeof r->offs / sizeof r->offs[0])
            r->offs[r->n++] = off;
        off += 5 + len;
    }
}

/* ---- logs to damage ------------------------------------------------------------------- */

static char dir[] = "/tmp/jh-damage-XXXXXX";

/* A log the library wrote: functions with lines, memory, events, moves, removals. */
static uint8_t *real_log(size_t *n)
{
    static uint8_t buf[1 << 20];
    static size_t len;
    if (len) {
        *n = len;
        return buf;
    }
    jh_ctx *ctx = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir, .engine = "dmg",
                            .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    static uint8_t code[40][32];
    static const char *files[] = { "damage.mini" };
    uint64_t ids[40];
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "fn%d", i);
        memset(code[i], 0xce, sizeof code[i]);          /* marks inside the code bytes too */
        struct jh_line lines[2] = { { 0, (uint32_t)i + 1, 0, 0 }, { 8, (uint32_t)i + 2, 3, 0 } };
        struct jh_code c = { .sz = sizeof c, .name = name, .start = code[i], .size = 32,
                             .files = files, .nfiles = 1, .lines = lines, .nlines = 2 };
        CHECK_EQ(jh_code_add(ctx, &c, &ids[i]), 0);
        struct jh_attr a[2] = { { "n", JH_ATTR_INT, { .i = i } },
                                { "at", JH_ATTR_ADDR, { .u = (uintptr_t)code[i] } } };
        jh_log_event(ctx, "compiled", a, 2);
        jh_log_memory(ctx, code[i], 16, "bytes");
    }
    for (int i = 0; i < 40; i += 3)
        jh_code_remove(ctx, ids[i]);
    jh_close(ctx);
    char path[300];
    snprintf(path, sizeof path, "%s/dmg-%d.jhlog", dir, (int)getpid());
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        exit(check_done());
    *n = len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unlink(path);
    return buf;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Bytes that look like frames nested in one another: each a candidate whose map starts
 * with a type key and whose walk runs through the ones after it. lens: 0 = to the end of
 * the run, else random. */
static size_t nested(uint8_t *p, size_t room, bool random_lens)
{
    static const uint8_t tail[] = { 0x82, 0xa4, 't', 'y', 'p', 'e', 0xa1, 'x' };
    size_t unit = 5 + sizeof tail, k = room / unit;
    for (size_t i = 0; i < k; i++) {
        uint32_t len = random_lens ? (uint32_t)(rnd() % (room + 8)) : (uint32_t)((k - i) * unit - 5);
        uint8_t *u = p + i * unit;
        u[0] = 0xce;
        u[1] = (uint8_t)(len >> 24), u[2] = (uint8_t)(len >> 16);
        u[3] = (uint8_t)(len >> 8), u[4] = (uint8_t)len;
        memcpy(u + 5, tail, sizeof tail);
    }
    return k * unit;
}

static void damage(uint8_t *d, size_t n, const uint8_t *orig)
{
    int times = 1 + (int)(rnd() % 4);
    while (times--) {
        size_t at = 1 + rnd() % (n - 1), len = 1 + rnd() % 300;
        if (len > n - at)
            len = n - at;
        switch (rnd() % 7) {
        case 0: for (size_t i = 0; i < len; i++) d[at + i] = (uint8_t)rnd(); break;
        case 1: memset(d + at, 0, len); break;
        case 2: nested(d + at, len, rnd() & 1); break;
        case 3: d[at] = 0xce; break;                            /* a mark where none was */
        case 4: d[at] ^= (uint8_t)(1u << (rnd() % 8)); break;   /* one flipped bit */
        case 5: {                                               /* a frame copied elsewhere */
            size_t from = rnd() % n;
            memmove(d + at, orig + from, len > n - from ? n - from : len);
            break;
        }
        case 6: memmove(d + at, d + at + 1, n - at - 1); break; /* a byte lost */
        }
    }
}

static void test_random_damage(void)
{
    size_t n;
    const uint8_t *orig = real_log(&n);
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, orig, n, err, sizeof err), 0);
    size_t clean = lf.nrecs;
    CHECK(clean > 130);
    CHECK_EQ(lf.resyncs + lf.cut + lf.bad, 0);
    jhr_al_free(&lf);

    uint8_t *d = malloc(n);
    struct ref *r = malloc(sizeof *r);
    int differ = 0, damaged = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(d, orig, n);
        damage(d, n, orig);
        reference(d, n, r);
        if (jhr_al_parse(&lf, d, n, err, sizeof err) < 0)
            continue;                   /* the header itself was hit: refused by both */
        damaged += lf.resyncs > 0;
        /* a frame whose record does not make sense (a code_add without its code...) is
         * counted as bad and left out of recs */
        bool same = lf.cut == r->cut && lf.resyncs == r->resyncs && lf.bad >= r->bad &&
                    lf.nrecs + (lf.bad - r->bad) == r->n;
        for (size_t i = 0, j = 0; same && i < lf.nrecs; i++, j++) {
            while (j < r->n && r->offs[j] != lf.recs[i].off)
                j++;
            same = j < r->n;
        }
        if (!same && differ++ < 3)
            fprintf(stderr, "iteration %d: %zu records (reference %zu), cut %zu (%zu), "
                    "resyncs %zu (%zu)\n", iter, lf.nrecs, r->n, lf.cut, r->cut, lf.resyncs,
                    r->resyncs);
        jhr_al_free(&lf);
    }
    CHECK_EQ(differ, 0);
    CHECK(damaged > 1000);              /* most damage needed a resynchronisation */
    printf("3000 damaged logs: same frames as the reference; %d needed a resync\n", damaged);
    free(d);
    free(r);
}

/* The reader's own walk over garbage: values decoded, against bytes. */
static void test_linear(void)
{
    size_t n;
    const uint8_t *orig = real_log(&n);
    uint32_t hlen = (uint32_t)jhr_mp_be(orig + 1, 4);
    size_t head = 5 + hlen, rest = n - head;
    for (size_t garbage = 64 << 10; garbage <= 1 << 20; garbage *= 4) {
        uint8_t *d = malloc(head + 1 + garbage + rest);
        memcpy(d, orig, head);
        d[head] = 0x01;                 /* not a frame: the reader must scan */
        size_t g = nested(d + head + 1, garbage, false);
        memcpy(d + head + 1 + g, orig + head, rest);
        size_t total = head + 1 + g + rest;
        struct jhr_al lf;
        char err[256];
        CHECK_EQ(jhr_al_parse(&lf, d, total, err, sizeof err), 0);
        struct ref *r = malloc(sizeof *r);
        if (garbage == 64 << 10) {      /* the reference is quadratic: the small one only */
            reference(d, total, r);
            CHECK_EQ(lf.nrecs, r->n);
        }
        printf("%zu KiB of nested frame-like garbage: %zu values decoded to resynchronise, "
               "%zu records after it\n", garbage >> 10, lf.resync_steps, lf.nrecs - 1);
        CHECK(lf.resync_steps <= g);    /* the obvious algorithm: ~g * g / 26 */
        CHECK_EQ(lf.resyncs, 1);
        CHECK(lf.closed);               /* every frame after the garbage was read */
        jhr_al_free(&lf);
        free(r);
        free(d);
    }
}

int main(void)
{
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    test_random_damage();
    test_linear();
    rmdir(dir);
    return check_done();
}
