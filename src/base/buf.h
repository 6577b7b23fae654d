/*
 * buf.h — a growable byte buffer for the pure encoders (ELF, DWARF, CFI, jitdump records,
 * msgpack). Writes never fail on the spot: an allocation failure sets buf->err (sticky)
 * and later writes do nothing, so an encoder checks once at the end.
 */
#ifndef JH__BASE_BUF_H
#define JH__BASE_BUF_H

#include <stddef.h>
#include <stdint.h>

struct jh__buf {
    uint8_t *p;
    size_t len, cap;
    int err;                    /* 0 or -ENOMEM, sticky */
    /* 0: p is the buffer's own (malloc). 1: p is the caller's, cap bytes that never move
     * (fmt/elf_grow_mem.c's sections, in one mapping): growing fails with -ENOBUFS instead,
     * and sets fixed to 2 so the caller knows which buffer wanted more room; free forgets p */
    uint8_t fixed;
};

void   jh__buf_free(struct jh__buf *b);
int    jh__buf_reserve(struct jh__buf *b, size_t extra);   /* 0 or -ENOMEM (sets err) */
void   jh__buf_put_slow(struct jh__buf *b, const void *p, size_t n);   /* grows first */
void   jh__buf_zeros(struct jh__buf *b, size_t n);
void   jh__buf_align(struct jh__buf *b, size_t a);         /* pad with zeros to a multiple */
void   jh__buf_uleb(struct jh__buf *b, uint64_t v);
void   jh__buf_sleb(struct jh__buf *b, int64_t v);
void   jh__buf_str(struct jh__buf *b, const char *s);      /* with its NUL */
/* Overwrite bytes already written (e.g. a length known only at the end). */
void   jh__buf_set_u32(struct jh__buf *b, size_t at, uint32_t v);
void   jh__buf_set_u64(struct jh__buf *b, size_t at, uint64_t v);

/* jh__buf_reserve without a call while there is room (encoders that reserve a record's
 * bound before writing it unchecked). */
static inline int jh__buf_room(struct jh__buf *b, size_t n)
{
    return !b->err && n <= b->cap - b->len ? 0 : jh__buf_reserve(b, n);
}

/* The writes the encoders make byte by byte and field by field: inline, a bounds check and
 * a copy while there is room (the images' encoders spent a third of their time in the
 * calls, issue 30); the slow path grows the buffer or keeps a failure sticky. */
static inline void jh__buf_put(struct jh__buf *b, const void *p, size_t n)
{
    if (n <= b->cap - b->len && !b->err) {
        if (n) {
            __builtin_memcpy(b->p + b->len, p, n);
            b->len += n;
        }
        return;
    }
    jh__buf_put_slow(b, p, n);
}

static inline void jh__buf_u8(struct jh__buf *b, uint8_t v)
{
    if (b->len < b->cap && !b->err)
        b->p[b->len++] = v;
    else
        jh__buf_put_slow(b, &v, 1);
}

/* little-endian, as all targets */
static inline void jh__buf_u16(struct jh__buf *b, uint16_t v)
{
    uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    jh__buf_put(b, x, 2);
}

static inline void jh__buf_u32(struct jh__buf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    jh__buf_put(b, x, 4);
}

/* v's bytes, little-endian, at x: one store on a little-endian host (a loop of byte
 * shifts is not unrolled at -O2: ~25 instructions a u64 in every encoder) */
static inline void jh__le32(uint8_t *x, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    __builtin_memcpy(x, &v, 4);
#else
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
#endif
}

static inline void jh__le64(uint8_t *x, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    __builtin_memcpy(x, &v, 8);
#else
    jh__le32(x, (uint32_t)v);
    jh__le32(x + 4, (uint32_t)(v >> 32));
#endif
}

static inline void jh__buf_u64(struct jh__buf *b, uint64_t v)
{
    uint8_t x[8];
    jh__le64(x, v);
    jh__buf_put(b, x, 8);
}

#endif
