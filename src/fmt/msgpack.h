/*
 * msgpack.h — a small dependency-free msgpack writer (https://msgpack.org/ spec, 2017).
 *
 * Two forms of every writer:
 *   - jh__mp_put_*(p, ...) store at p and return the byte after; the caller sized the
 *     space beforehand with jh__mp_*_size() (the audit log's hot path encodes straight into
 *     a reserved slice of its file mapping, so it must know the exact size first);
 *   - jh__mp_*(buf, ...) append to a struct jh__buf (sticky ENOMEM, checked once at the end).
 * Everything is big-endian as the spec requires, and always uses the shortest form, which
 * is what jh__mp_*_size() assumes. Only the types the audit log writes are here.
 */
#ifndef JH__FMT_MSGPACK_H
#define JH__FMT_MSGPACK_H

#include <stdint.h>
#include <string.h>

#include "base/buf.h"

/* Ext type of an address (JH_ATTR_ADDR): fixext 8, big-endian u64. */
#define JH__MP_EXT_ADDR 1

static inline uint8_t *jh__mp_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v;
    return p + 2;
}
static inline uint8_t *jh__mp_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
    return p + 4;
}
static inline uint8_t *jh__mp_be64(uint8_t *p, uint64_t v)
{
    jh__mp_be32(p, (uint32_t)(v >> 32));
    return jh__mp_be32(p + 4, (uint32_t)v);
}

/* ---- sizes ---------------------------------------------------------------------------- */
static inline size_t jh__mp_uint_size(uint64_t v)
{
    return v < 128 ? 1 : v <= 0xff ? 2 : v <= 0xffff ? 3 : v <= 0xffffffffu ? 5 : 9;
}
static inline size_t jh__mp_int_size(int64_t v)
{
    if (v >= 0)
        return jh__mp_uint_size((uint64_t)v);
    return v >= -32 ? 1 : v >= INT8_MIN ? 2 : v >= INT16_MIN ? 3 : v >= INT32_MIN ? 5 : 9;
}
/* Header of a str, bin, array or map of n elements/bytes (not the payload). */
static inline size_t jh__mp_str_hsize(size_t n)   { return n < 32 ? 1 : n <= 0xff ? 2 : n <= 0xffff ? 3 : 5; }
static inline size_t jh__mp_bin_hsize(size_t n)   { return n <= 0xff ? 2 : n <= 0xffff ? 3 : 5; }
static inline size_t jh__mp_cont_hsize(size_t n)  { return n < 16 ? 1 : n <= 0xffff ? 3 : 5; }
static inline size_t jh__mp_str_size(size_t n)    { return jh__mp_str_hsize(n) + n; }
#define JH__MP_DOUBLE_SIZE 9
#define JH__MP_ADDR_SIZE 10

/* ---- raw writers ---------------------------------------------------------------------- */
static inline uint8_t *jh__mp_put_nil(uint8_t *p) { *p = 0xc0; return p + 1; }
static inline uint8_t *jh__mp_put_bool(uint8_t *p, int v) { *p = v ? 0xc3 : 0xc2; return p + 1; }

static inline uint8_t *jh__mp_put_uint(uint8_t *p, uint64_t v)
{
    if (v < 128) { *p = (uint8_t)v; return p + 1; }
    if (v <= 0xff) { p[0] = 0xcc; p[1] = (uint8_t)v; return p + 2; }
    if (v <= 0xffff) { *p = 0xcd; return jh__mp_be16(p + 1, (uint16_t)v); }
    if (v <= 0xffffffffu) { *p = 0xce; return jh__mp_be32(p + 1, (uint32_t)v); }
    *p = 0xcf;
    return jh__mp_be64(p + 1, v);
}

static inline uint8_t *jh__mp_put_int(uint8_t *p, int64_t v)
{
    if (v >= 0)
        return jh__mp_put_uint(p, (uint64_t)v);
    if (v >= -32) { *p = (uint8_t)(int8_t)v; return p + 1; }
    if (v >= INT8_MIN) { p[0] = 0xd0; p[1] = (uint8_t)(int8_t)v; return p + 2; }
    if (v >= INT16_MIN) { *p = 0xd1; return jh__mp_be16(p + 1, (uint16_t)(int16_t)v); }
    if (v >= INT32_MIN) { *p = 0xd2; return jh__mp_be32(p + 1, (uint32_t)(int32_t)v); }
    *p = 0xd3;
    return jh__mp_be64(p + 1, (uint64_t)v);
}

static inline uint8_t *jh__mp_put_double(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    *p = 0xcb;
    return jh__mp_be64(p + 1, v);
}

static inline uint8_t *jh__mp_put_str_header(uint8_t *p, size_t n)
{
    if (n < 32) { *p = (uint8_t)(0xa0 | n); return p + 1; }
    if (n <= 0xff) { p[0] = 0xd9; p[1] = (uint8_t)n; return p + 2; }
    if (n <= 0xffff) { *p = 0xda; return jh__mp_be16(p + 1, (uint16_t)n); }
    *p = 0xdb;
    return jh__mp_be32(p + 1, (uint32_t)n);
}

static inline uint8_t *jh__mp_put_str(uint8_t *p, const char *s, size_t n)
{
    p = jh__mp_put_str_header(p, n);
    memcpy(p, s, n);
    return p + n;
}

static inline uint8_t *jh__mp_put_bin_header(uint8_t *p, size_t n)
{
    if (n <= 0xff) { p[0] = 0xc4; p[1] = (uint8_t)n; return p + 2; }
    if (n <= 0xffff) { *p = 0xc5; return jh__mp_be16(p + 1, (uint16_t)n); }
    *p = 0xc6;
    return jh__mp_be32(p + 1, (uint32_t)n);
}

static inline uint8_t *jh__mp_put_array(uint8_t *p, size_t n)
{
    if (n < 16) { *p = (uint8_t)(0x90 | n); return p + 1; }
    if (n <= 0xffff) { *p = 0xdc; return jh__mp_be16(p + 1, (uint16_t)n); }
    *p = 0xdd;
    return jh__mp_be32(p + 1, (uint32_t)n);
}

static inline uint8_t *jh__mp_put_map(uint8_t *p, size_t n)
{
    if (n < 16) { *p = (uint8_t)(0x80 | n); return p + 1; }
    if (n <= 0xffff) { *p = 0xde; return jh__mp_be16(p + 1, (uint16_t)n); }
    *p = 0xdf;
    return jh__mp_be32(p + 1, (uint32_t)n);
}

static inline uint8_t *jh__mp_put_addr(uint8_t *p, uint64_t a)
{
    p[0] = 0xd7;
    p[1] = JH__MP_EXT_ADDR;
    return jh__mp_be64(p + 2, a);
}

/* ---- jh_buf writers (msgpack.c) ------------------------------------------------------- */
void jh__mp_nil(struct jh__buf *b);
void jh__mp_bool(struct jh__buf *b, int v);
void jh__mp_uint(struct jh__buf *b, uint64_t v);
void jh__mp_int(struct jh__buf *b, int64_t v);
void jh__mp_double(struct jh__buf *b, double d);
void jh__mp_str(struct jh__buf *b, const char *s);            /* NULL writes nil */
void jh__mp_strn(struct jh__buf *b, const char *s, size_t n);
void jh__mp_bin(struct jh__buf *b, const void *p, size_t n);
void jh__mp_array(struct jh__buf *b, size_t n);
void jh__mp_map(struct jh__buf *b, size_t n);
void jh__mp_addr(struct jh__buf *b, uint64_t a);
/* A map entry whose key is a C string literal: key + value in one call. */
void jh__mp_kuint(struct jh__buf *b, const char *key, uint64_t v);
void jh__mp_kstr(struct jh__buf *b, const char *key, const char *s);

#endif
