/* msgpack.c — the jh_buf forms of the msgpack writer (see msgpack.h). No I/O. */
#include "fmt/msgpack.h"

#include <errno.h>

/* Every header is at most 9 bytes: reserve that, write in place, commit what was used. */
#define MP_WRITE(b, extra, expr) do { \
        if (jh__buf_reserve((b), 9 + (extra))) \
            return; \
        uint8_t *p_ = (b)->p + (b)->len; \
        uint8_t *e_ = (expr); \
        (b)->len += (size_t)(e_ - p_); \
    } while (0)

void jh__mp_nil(struct jh__buf *b)              { MP_WRITE(b, 0, jh__mp_put_nil(p_)); }
void jh__mp_bool(struct jh__buf *b, int v)      { MP_WRITE(b, 0, jh__mp_put_bool(p_, v)); }
void jh__mp_uint(struct jh__buf *b, uint64_t v) { MP_WRITE(b, 0, jh__mp_put_uint(p_, v)); }
void jh__mp_int(struct jh__buf *b, int64_t v)   { MP_WRITE(b, 0, jh__mp_put_int(p_, v)); }
void jh__mp_double(struct jh__buf *b, double d) { MP_WRITE(b, 0, jh__mp_put_double(p_, d)); }
void jh__mp_array(struct jh__buf *b, size_t n)  { MP_WRITE(b, 0, jh__mp_put_array(p_, n)); }
void jh__mp_map(struct jh__buf *b, size_t n)    { MP_WRITE(b, 0, jh__mp_put_map(p_, n)); }
void jh__mp_addr(struct jh__buf *b, uint64_t a) { MP_WRITE(b, 1, jh__mp_put_addr(p_, a)); }

void jh__mp_strn(struct jh__buf *b, const char *s, size_t n)
{
    if (n > 0xffffffffu)   /* msgpack cannot say it: a tool would misread the rest */
        n = 0xffffffffu;
    MP_WRITE(b, n, jh__mp_put_str(p_, s, n));
}

void jh__mp_str(struct jh__buf *b, const char *s)
{
    if (!s)
        jh__mp_nil(b);
    else
        jh__mp_strn(b, s, strlen(s));
}

void jh__mp_bin(struct jh__buf *b, const void *src, size_t n)
{
    if (n > 0xffffffffu) {
        b->err = b->err ? b->err : -EOVERFLOW;   /* bin32 is the largest msgpack has */
        return;
    }
    MP_WRITE(b, n, jh__mp_put_bin_header(p_, n));
    jh__buf_put(b, src, n);
}

void jh__mp_kuint(struct jh__buf *b, const char *key, uint64_t v)
{
    jh__mp_str(b, key);
    jh__mp_uint(b, v);
}

void jh__mp_kstr(struct jh__buf *b, const char *key, const char *s)
{
    jh__mp_str(b, key);
    jh__mp_str(b, s);
}
