/*
 * build_id.c — build-ids of jitherald's ELF images (see build_id.h).
 * Verify: xxh64 of "" with seed 0 is 0xef46db3751d8e999 (tests/unit/test_build_id.c).
 */
#include "fmt/build_id.h"

#include <elf.h>
#include <stdbool.h>
#include <string.h>

#include "fmt/func.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static uint64_t round1(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
static uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round1(0, v)) * P1 + P4; }

static uint64_t avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ h >> 32;
}

uint64_t jh__hash64(const void *data, size_t n, uint64_t seed)
{
    const uint8_t *p = data, *end = p + n;
    uint64_t h;
    if (n >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        do {
            v1 = round1(v1, rd64(p));
            v2 = round1(v2, rd64(p + 8));
            v3 = round1(v3, rd64(p + 16));
            v4 = round1(v4, rd64(p + 24));
            p += 32;
        } while (end - p >= 32);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = merge(merge(merge(merge(h, v1), v2), v3), v4);
    } else {
        h = seed + P5;
    }
    h += n;
    for (; end - p >= 8; p += 8)
        h = rotl(h ^ round1(0, rd64(p)), 27) * P1 + P4;
    if (end - p >= 4) {
        h = rotl(h ^ (uint64_t)rd32(p) * P1, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++)
        h = rotl(h ^ *p * P5, 11) * P1;
    return avalanche(h);
}

/* One item: its chained hash, and a second lane derived from it, added to the sums. */
static void add(struct jh__bid *id, uint64_t h)
{
    id->a += h;
    id->b += avalanche(h ^ P4) * P3 + rotl(h, 17);
    id->n++;
}

/* A function's description is serialized into a small buffer hashed as it fills: one
 * XXH64 per 256 bytes rather than one per field. */
struct ser {
    uint64_t h;
    size_t n;
    uint8_t b[256];
};

static __attribute__((noinline)) void put_slow(struct ser *s, const void *p, size_t len)
{
    const uint8_t *q = p;
    while (len) {
        size_t k = sizeof s->b - s->n < len ? sizeof s->b - s->n : len;
        memcpy(s->b + s->n, q, k);
        s->n += k;
        q += k;
        len -= k;
        if (s->n == sizeof s->b) {
            s->h = jh__hash64(s->b, s->n, s->h);
            s->n = 0;
        }
    }
}

/* Bytes that leave room in the buffer: copied in place, no hash due. */
static inline void put(struct ser *s, const void *p, size_t len)
{
    if (len < sizeof s->b - s->n) {
        memcpy(s->b + s->n, p, len);
        s->n += len;
        return;
    }
    put_slow(s, p, len);
}

/* Inline: a function's description is ~30 of these (a gdb image's build-id spent half
 * its time in the calls, issue 30). */
static inline __attribute__((always_inline)) void u64(struct ser *s, uint64_t v)
{
    if (sizeof s->b - s->n > 8) {       /* room, and no hash due: the bytes in place */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        memcpy(s->b + s->n, &v, sizeof v);
        s->n += 8;
        return;
    }
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(s, b, sizeof b);
}

static inline void str(struct ser *s, const char *p)
{
    if (p)
        put(s, p, strlen(p) + 1);
    else
        u64(s, 0xffffffffffffffffull);
}

void jh__bid_add(struct jh__bid *id, uint64_t func_hash)
{
    add(id, func_hash);
}

void jh__bid_func(struct jh__bid *id, const struct jh__func *f)
{
    add(id, f->bid_hash ? f->bid_hash : jh__bid_func_hash(f));
}

/* v stored little-endian at p: the next byte. */
static inline uint8_t *le64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof v);
    return p + 8;
}

/* jh__bid_func_hash of a description whose serialization is shorter than the buffer and
 * names no source file (node's builtins, most LuaJIT traces): the same bytes written with
 * no room check per field, then one hash (the general path checked room ~20 times a
 * function: ~100 of its ~450 instructions for a builtin, issue 30). false: not such a one. */
static bool func_hash_small(const struct jh__func *f, uint64_t *out)
{
    bool sym = jh__func_symbol_differs(f);
    size_t nl = jh__func_name_len(f), sl = sym ? jh__func_symbol_len(f) : 0;
    size_t cfi = f->cfi ? f->cfi_len : 0;
    if (f->nfiles || nl > 255 || sl > 255 || cfi > 255 || f->nlines > 16 || f->ncfa_steps > 32 ||
        f->nsaved_regs > 32 || f->nepilogues > 32)
        return false;
    size_t total = 13 * 8 + nl + 1 + (sym ? sl + 1 : 8) + 16 * (size_t)f->nlines + cfi +
                   8 * ((size_t)f->ncfa_steps + f->nsaved_regs + f->nepilogues);
    if (total >= 256)
        return false;
    uint8_t b[256], *p = b;
    p = le64(p, f->start);
    p = le64(p, f->size);
    p = le64(p, f->unwind);
    memcpy(p, f->name, nl + 1);
    p += nl + 1;
    if (sym) {
        memcpy(p, f->symbol, sl + 1);
        p += sl + 1;
    } else {
        p = le64(p, 0xffffffffffffffffull);
    }
    p = le64(p, 0);                                     /* nfiles */
    p = le64(p, f->nlines);
    for (uint32_t i = 0; i < f->nlines; i++) {
        const struct jh_line *l = &f->lines[i];
        p = le64(p, (uint64_t)l->offset << 32 | l->line);
        p = le64(p, (uint64_t)l->column << 32 | l->file);
    }
    p = le64(p, (uint64_t)f->fp_push_end << 32 | f->fp_set_end);
    p = le64(p, f->prologue_end);
    p = le64(p, cfi);
    if (cfi) {
        memcpy(p, f->cfi, cfi);
        p += cfi;
    }
    p = le64(p, (uint64_t)f->cfa_offset << 32 | f->ncfa_steps);
    for (uint32_t i = 0; i < f->ncfa_steps; i++)
        p = le64(p, (uint64_t)f->cfa_steps[i].offset << 32 | f->cfa_steps[i].cfa_offset);
    p = le64(p, f->nsaved_regs);
    for (uint32_t i = 0; i < f->nsaved_regs; i++)
        p = le64(p, (uint64_t)f->saved_regs[i].reg << 32 | (uint32_t)f->saved_regs[i].cfa_offset);
    p = le64(p, f->nepilogues);
    for (uint32_t i = 0; i < f->nepilogues; i++)
        p = le64(p, (uint64_t)f->epilogues[i].start << 32 | f->epilogues[i].end);
    p = le64(p, f->personality);
    p = le64(p, f->lsda);
    *out = jh__hash64(b, (size_t)(p - b), 1);
    return true;
}

uint64_t jh__bid_func_hash(const struct jh__func *f)
{
    uint64_t h;
    if (func_hash_small(f, &h))
        return h;
    struct ser s;               /* not zeroed: a 256-byte memset a function (issue 30) */
    s.h = 1;
    s.n = 0;
    u64(&s, f->start);
    u64(&s, f->size);
    u64(&s, f->unwind);
    put(&s, f->name, jh__func_name_len(f) + 1);
    if (jh__func_symbol_differs(f))
        put(&s, f->symbol, jh__func_symbol_len(f) + 1);
    else
        u64(&s, 0xffffffffffffffffull);
    u64(&s, f->nfiles);
    for (uint32_t i = 0; i < f->nfiles; i++)
        str(&s, f->files[i]);
    u64(&s, f->nlines);
    for (uint32_t i = 0; i < f->nlines; i++) {
        const struct jh_line *l = &f->lines[i];
        u64(&s, (uint64_t)l->offset << 32 | l->line);
        u64(&s, (uint64_t)l->column << 32 | l->file);
    }
    u64(&s, (uint64_t)f->fp_push_end << 32 | f->fp_set_end);
    u64(&s, f->prologue_end);
    u64(&s, f->cfi ? f->cfi_len : 0);
    if (f->cfi)
        put(&s, f->cfi, f->cfi_len);
    u64(&s, (uint64_t)f->cfa_offset << 32 | f->ncfa_steps);
    for (uint32_t i = 0; i < f->ncfa_steps; i++)
        u64(&s, (uint64_t)f->cfa_steps[i].offset << 32 | f->cfa_steps[i].cfa_offset);
    u64(&s, f->nsaved_regs);
    for (uint32_t i = 0; i < f->nsaved_regs; i++)
        u64(&s, (uint64_t)f->saved_regs[i].reg << 32 | (uint32_t)f->saved_regs[i].cfa_offset);
    u64(&s, f->nepilogues);
    for (uint32_t i = 0; i < f->nepilogues; i++)
        u64(&s, (uint64_t)f->epilogues[i].start << 32 | f->epilogues[i].end);
    u64(&s, f->personality);
    u64(&s, f->lsda);
    return jh__hash64(s.b, s.n, s.h);
}

void jh__bid_bytes(struct jh__bid *id, uint64_t addr, const void *p, size_t len)
{
    add(id, jh__hash64(p, len, (addr * P1) ^ (len + 2) * P2));
}

/* jh__hash64 of five words stored little-endian (40 bytes: one stripe and one word of
 * tail), with the loops and reads unrolled away: jh__bid_final runs at every change of an
 * elfmap image (each add and each patch: ~1.7 a LuaJIT trace) and each gdb image, and its
 * three calls were ~770 instructions (issue 30). test_build_id holds jh__bid_final to
 * jh__hash64 of the words. */
static uint64_t hash_words5(const uint64_t w[5], uint64_t seed)
{
    uint64_t v1 = round1(seed + P1 + P2, w[0]), v2 = round1(seed + P2, w[1]),
             v3 = round1(seed, w[2]), v4 = round1(seed - P1, w[3]);
    uint64_t h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4) + 5 * sizeof *w;
    h = rotl(h ^ round1(0, w[4]), 27) * P1 + P4;
    return avalanche(h);
}

void jh__bid_final(const struct jh__bid *id, uint64_t layout1, uint64_t layout2,
                   uint8_t out[JH__BUILD_ID_SIZE])
{
    /* the five words (as if stored little-endian), each hash's bytes most significant
     * first: whole words stored, not byte by byte */
    const uint64_t w[5] = { id->a, id->b, id->n, layout1, layout2 };
    uint8_t h[24];
    for (int k = 0; k < 3; k++) {
        uint64_t v = hash_words5(w, P1 * (uint64_t)(k + 1));
#if __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        memcpy(h + 8 * k, &v, sizeof v);
    }
    memcpy(out, h, JH__BUILD_ID_SIZE);
}

void jh__bid_note(uint8_t out[JH__BUILD_ID_NOTE_SIZE], const uint8_t id[JH__BUILD_ID_SIZE])
{
    Elf64_Nhdr nh = { .n_namesz = 4, .n_descsz = JH__BUILD_ID_SIZE, .n_type = NT_GNU_BUILD_ID };
    memcpy(out, &nh, sizeof nh);
    memcpy(out + sizeof nh, "GNU", 4);
    memcpy(out + sizeof nh + 4, id, JH__BUILD_ID_SIZE);
}

size_t jh__note_build_id(const uint8_t *d, size_t n, uint8_t id[64])
{
    for (uint64_t at = 0; n - at >= 12;) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, d + at, 4);
        memcpy(&descsz, d + at + 4, 4);
        memcpy(&type, d + at + 8, 4);
        uint64_t desc = at + 12 + ((namesz + 3ull) & ~3ull);
        if (namesz > n || desc > n || descsz > n - desc)
            return 0;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(d + at + 12, "GNU", 4) &&
            descsz > 0 && descsz <= 64) {
            memcpy(id, d + desc, descsz);
            return (size_t)descsz;
        }
        at = desc + ((descsz + 3ull) & ~3ull);
        if (at > n)
            return 0;
    }
    return 0;
}
