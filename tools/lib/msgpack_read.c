/*
 * msgpack_read.c — see msgpack_read.h. decode_head reads one value's header (and a scalar's
 * or string's payload); containers are walked by the caller or skipped by counting the
 * values still owed, never by recursion.
 */
#include "lib/msgpack_read.h"

#include <string.h>

#include "fmt/msgpack.h"
#include "lib/text.h"

uint64_t jhr_mp_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Header of the value at p: type, scalar, and for str/bin/ext the payload. For containers
 * p/n are set and end is not (the caller walks). Returns the byte after the header or
 * payload, or NULL. */
static const uint8_t *decode_head(const uint8_t *p, const uint8_t *end, struct jhr_mp *v)
{
    if (p >= end)
        return NULL;
    size_t left = (size_t)(end - p) - 1;
    uint8_t c = *p++;
    memset(v, 0, sizeof *v);
    uint64_t len = 0;
    int lenbytes = 0;
#define NEED(k) do { if (left < (size_t)(k)) return NULL; } while (0)
    if (c <= 0x7f) { v->t = JHR_MP_UINT; v->v.u = c; return p; }
    if (c >= 0xe0) { v->t = JHR_MP_INT; v->v.i = (int8_t)c; return p; }
    if ((c & 0xf0) == 0x80) { v->t = JHR_MP_MAP; len = c & 0x0f; goto container; }
    if ((c & 0xf0) == 0x90) { v->t = JHR_MP_ARRAY; len = c & 0x0f; goto container; }
    if ((c & 0xe0) == 0xa0) { v->t = JHR_MP_STR; len = c & 0x1f; goto payload; }
    switch (c) {
    case 0xc0: v->t = JHR_MP_NIL; return p;
    case 0xc2: case 0xc3: v->t = JHR_MP_BOOL; v->v.b = c == 0xc3; return p;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        lenbytes = 1 << (c - 0xcc);
        NEED(lenbytes);
        v->t = JHR_MP_UINT; v->v.u = jhr_mp_be(p, lenbytes);
        return p + lenbytes;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        lenbytes = 1 << (c - 0xd0);
        NEED(lenbytes);
        uint64_t u = jhr_mp_be(p, lenbytes);
        int sh = 64 - 8 * lenbytes;
        v->t = JHR_MP_INT;
        v->v.i = sh ? (int64_t)(u << sh) >> sh : (int64_t)u;
        return p + lenbytes;
    }
    case 0xca: {
        NEED(4);
        uint32_t u = (uint32_t)jhr_mp_be(p, 4);
        float f;
        memcpy(&f, &u, 4);
        v->t = JHR_MP_DOUBLE; v->v.d = f;
        return p + 4;
    }
    case 0xcb: {
        NEED(8);
        uint64_t u = jhr_mp_be(p, 8);
        v->t = JHR_MP_DOUBLE;
        memcpy(&v->v.d, &u, 8);
        return p + 8;
    }
    case 0xd9: case 0xda: case 0xdb:
        v->t = JHR_MP_STR; lenbytes = 1 << (c - 0xd9); goto sized;
    case 0xc4: case 0xc5: case 0xc6:
        v->t = JHR_MP_BIN; lenbytes = 1 << (c - 0xc4); goto sized;
    case 0xdc: case 0xdd:
        v->t = JHR_MP_ARRAY; lenbytes = c == 0xdc ? 2 : 4; NEED(lenbytes);
        len = jhr_mp_be(p, lenbytes); p += lenbytes; left -= lenbytes; goto container;
    case 0xde: case 0xdf:
        v->t = JHR_MP_MAP; lenbytes = c == 0xde ? 2 : 4; NEED(lenbytes);
        len = jhr_mp_be(p, lenbytes); p += lenbytes; left -= lenbytes; goto container;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        v->t = JHR_MP_EXT; len = 1u << (c - 0xd4);
        NEED(1);
        v->ext = (int8_t)*p++; left--;
        goto payload;
    case 0xc7: case 0xc8: case 0xc9:
        v->t = JHR_MP_EXT; lenbytes = 1 << (c - 0xc7); NEED(lenbytes + 1);
        len = jhr_mp_be(p, lenbytes); p += lenbytes; left -= lenbytes;
        v->ext = (int8_t)*p++; left--;
        goto payload;
    default:
        return NULL;            /* 0xc1 is never used */
    }
sized:
    NEED(lenbytes);
    len = jhr_mp_be(p, lenbytes);
    p += lenbytes;
    left -= lenbytes;
payload:
    NEED(len);
    v->p = p;
    v->n = (uint32_t)len;
    v->end = p + len;
    return p + len;
container:
    /* Every element takes at least one byte: a count larger than what is left is a lie. */
    if (len > left || (v->t == JHR_MP_MAP && len * 2 > left))
        return NULL;
    v->p = p;
    v->n = (uint32_t)len;
    return p;
#undef NEED
}

const uint8_t *jhr_mp_head(const uint8_t *p, const uint8_t *end, struct jhr_mp *v)
{
    return decode_head(p, end, v);
}

/* Skip the value at p without recursion: count the values still owed. */
static const uint8_t *skip(const uint8_t *p, const uint8_t *end)
{
    uint64_t owed = 1;
    while (owed) {
        struct jhr_mp v;
        p = decode_head(p, end, &v);
        if (!p)
            return NULL;
        owed--;
        if (v.t == JHR_MP_ARRAY)
            owed += v.n;
        else if (v.t == JHR_MP_MAP)
            owed += 2 * (uint64_t)v.n;
        if (owed > (uint64_t)(end - p))
            return NULL;
    }
    return p;
}

int jhr_mp_decode(const uint8_t *p, const uint8_t *end, struct jhr_mp *out)
{
    const uint8_t *q = decode_head(p, end, out);
    if (!q)
        return -1;
    if (out->t == JHR_MP_ARRAY || out->t == JHR_MP_MAP) {
        const uint8_t *e = skip(p, end);
        if (!e)
            return -1;
        out->end = e;
    } else {
        out->end = q;
    }
    return 0;
}

int jhr_mp_next(const struct jhr_mp *c, const uint8_t **it, struct jhr_mp *out)
{
    if (*it >= c->end || jhr_mp_decode(*it, c->end, out) < 0)
        return -1;
    *it = out->end;
    return 0;
}

bool jhr_mp_str_eq(const struct jhr_mp *v, const char *s)
{
    size_t n = strlen(s);
    return v->t == JHR_MP_STR && v->n == n && !memcmp(v->p, s, n);
}

int jhr_mp_get(const struct jhr_mp *map, const char *key, struct jhr_mp *out)
{
    if (map->t != JHR_MP_MAP)
        return -1;
    const uint8_t *it = map->p;
    for (uint32_t i = 0; i < map->n; i++) {
        struct jhr_mp k;
        if (jhr_mp_next(map, &it, &k) < 0 || jhr_mp_next(map, &it, out) < 0)
            return -1;
        if (jhr_mp_str_eq(&k, key))
            return 0;
    }
    return -1;
}

bool jhr_mp_get_u64(const struct jhr_mp *map, const char *key, uint64_t *out)
{
    struct jhr_mp v;
    if (jhr_mp_get(map, key, &v) < 0)
        return false;
    if (v.t == JHR_MP_UINT)
        *out = v.v.u;
    else if (v.t == JHR_MP_EXT && v.n == 8)
        *out = jhr_mp_be(v.p, 8);
    else
        return false;
    return true;
}

bool jhr_mp_addr(const struct jhr_mp *v, uint64_t *addr)
{
    if (v->t != JHR_MP_EXT || v->ext != JH__MP_EXT_ADDR || v->n != 8)
        return false;
    *addr = jhr_mp_be(v->p, 8);
    return true;
}

bool jhr_mp_get_str(const struct jhr_mp *map, const char *key, const char **s, uint32_t *n)
{
    struct jhr_mp v;
    if (jhr_mp_get(map, key, &v) < 0 || v.t != JHR_MP_STR)
        return false;
    *s = (const char *)v.p;
    *n = v.n;
    return true;
}

static void print_str(FILE *f, const uint8_t *p, uint32_t n)
{
    fputc('"', f);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void jhr_mp_print(FILE *f, const struct jhr_mp *v, int depth)
{
    const uint8_t *it = v->p;
    struct jhr_mp a, b;
    uint64_t addr;
    switch (v->t) {
    case JHR_MP_NIL: fputs("nil", f); break;
    case JHR_MP_BOOL: fputs(v->v.b ? "true" : "false", f); break;
    case JHR_MP_UINT: fprintf(f, "%llu", (unsigned long long)v->v.u); break;
    case JHR_MP_INT: fprintf(f, "%lld", (long long)v->v.i); break;
    case JHR_MP_DOUBLE: fprintf(f, "%g", v->v.d); break;
    case JHR_MP_STR: print_str(f, v->p, v->n); break;
    case JHR_MP_BIN: fprintf(f, "<%u bytes>", v->n); break;
    case JHR_MP_EXT:
        if (jhr_mp_addr(v, &addr))
            fprintf(f, "0x%llx", (unsigned long long)addr);
        else
            fprintf(f, "<ext %d, %u bytes>", v->ext, v->n);
        break;
    case JHR_MP_ARRAY:
        if (depth > 8) { fputs("[...]", f); break; }
        fputc('[', f);
        for (uint32_t i = 0; i < v->n && jhr_mp_next(v, &it, &a) == 0; i++) {
            if (i) fputs(", ", f);
            jhr_mp_print(f, &a, depth + 1);
        }
        fputc(']', f);
        break;
    case JHR_MP_MAP:
        if (depth > 8) { fputs("{...}", f); break; }
        fputc('{', f);
        for (uint32_t i = 0; i < v->n && jhr_mp_next(v, &it, &a) == 0 && jhr_mp_next(v, &it, &b) == 0; i++) {
            if (i) fputs(", ", f);
            if (a.t == JHR_MP_STR)
                jhr_text_safe(f, a.p, a.n);
            else
                jhr_mp_print(f, &a, depth + 1);
            fputc('=', f);
            jhr_mp_print(f, &b, depth + 1);
        }
        fputc('}', f);
        break;
    }
}
