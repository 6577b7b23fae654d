/* buf.c — see buf.h. */
#include "buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void jh__buf_free(struct jh__buf *b)
{
    if (!b->fixed)
        free(b->p);
    b->fixed = 0;
    b->p = NULL;
    b->len = b->cap = 0;
    b->err = 0;
}

int jh__buf_reserve(struct jh__buf *b, size_t extra)
{
    if (b->err)
        return b->err;
    if (extra > SIZE_MAX - b->len)
        return b->err = -ENOMEM;
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    if (b->fixed) {
        b->fixed = 2;
        return b->err = -ENOBUFS;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return b->err = -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

void jh__buf_put_slow(struct jh__buf *b, const void *p, size_t n)
{
    if (n == 0 || jh__buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

void jh__buf_zeros(struct jh__buf *b, size_t n)
{
    if (n == 0 || jh__buf_reserve(b, n))
        return;
    memset(b->p + b->len, 0, n);
    b->len += n;
}

void jh__buf_align(struct jh__buf *b, size_t a)
{
    if (a > 1 && b->len % a)
        jh__buf_zeros(b, a - b->len % a);
}

void jh__buf_uleb(struct jh__buf *b, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        jh__buf_u8(b, c | (v ? 0x80 : 0));
    } while (v);
}

void jh__buf_sleb(struct jh__buf *b, int64_t v)
{
    for (;;) {
        uint8_t c = v & 0x7f;
        v >>= 7;    /* arithmetic shift: gcc and clang define it for signed values */
        if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
            jh__buf_u8(b, c);
            return;
        }
        jh__buf_u8(b, c | 0x80);
    }
}

void jh__buf_str(struct jh__buf *b, const char *s) { jh__buf_put(b, s, strlen(s) + 1); }

void jh__buf_set_u32(struct jh__buf *b, size_t at, uint32_t v)
{
    if (b->err || at > b->len || b->len - at < 4)
        return;
    /* (one store: byte by byte through b->p, which a byte store might change, the
     * compiler reloaded it each time; ~75 instructions a u64, jitdump restamps 5 a trace) */
    uint8_t x[4];
    jh__le32(x, v);
    memcpy(b->p + at, x, 4);
}

void jh__buf_set_u64(struct jh__buf *b, size_t at, uint64_t v)
{
    if (b->err || at > b->len || b->len - at < 8)
        return;
    uint8_t x[8];
    jh__le64(x, v);
    memcpy(b->p + at, x, 8);
}
