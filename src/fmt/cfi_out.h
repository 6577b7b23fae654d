/*
 * cfi_out.h — the byte sink of the .eh_frame/.debug_frame encoder (cfi.c, cfi_reuse.c):
 * each write appends to a jh_buf, or only counts (the dry run that sizes a run), or, in
 * raw mode, stores into room reserved before.
 */
#ifndef JH__FMT_CFI_OUT_H
#define JH__FMT_CFI_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "fmt/arch.h"
#include "fmt/cfa.h"
#include "fmt/cfi.h"
#include "fmt/func.h"

/* ---- a byte sink that writes, or only counts (the dry run) ----------------------------
 * Raw mode (eh_frame, for a CIE or an FDE whose size it can bound): room for the bound is
 * reserved first and byte n goes to raw[n] with no check, b->len catching up after; the
 * checked writes cost a third of a gdb image's .eh_frame (issue 30). */
struct out {
    struct jh__buf *b;          /* NULL: count only */
    size_t n;
    uint8_t *raw;               /* raw mode: where byte 0 of the count goes; else NULL */
};

/* Raw mode for the next record of at most bound bytes (0: checked), the run starting at
 * base in the buffer; raw_end brings b->len up to what was written. */
static inline void raw_begin(struct out *w, size_t base, size_t bound)
{
    w->raw = NULL;
    if (bound && !jh__buf_room(w->b, base + w->n + bound - w->b->len))
        w->raw = w->b->p + base;
}

static inline void raw_end(struct out *w, size_t base)
{
    if (w->raw)
        w->b->len = base + w->n;
    w->raw = NULL;
}

static inline void o8(struct out *o, uint8_t v)
{
    if (o->raw)
        o->raw[o->n] = v;
    else if (o->b)
        jh__buf_u8(o->b, v);
    o->n++;
}

/* len is a constant at every call: one store */
static inline void ole(struct out *o, uint64_t v, size_t len)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);       /* its first len bytes: the low ones, little-endian */
#endif
    if (o->raw)
        __builtin_memcpy(o->raw + o->n, &v, len);
    else if (o->b)
        jh__buf_put(o->b, &v, len);
    o->n += len;
}

/* n bytes as they are (a CFI program, instructions encoded before) */
static inline void oput(struct out *o, const uint8_t *p, size_t n)
{
    if (o->raw)
        __builtin_memcpy(o->raw + o->n, p, n);
    else if (o->b)
        jh__buf_put(o->b, p, n);
    o->n += n;
}

static inline void o32(struct out *o, uint32_t v) { ole(o, v, 4); }
static inline void o64(struct out *o, uint64_t v) { ole(o, v, 8); }

/* Patch the 4-byte length of the record that began at count n0 (buffer offset at). */
static inline void olength(struct out *o, size_t n0, size_t at)
{
    uint32_t len = (uint32_t)(o->n - n0 - 4);
    if (o->raw) {
        for (size_t i = 0; i < 4; i++)
            o->raw[n0 + i] = (uint8_t)(len >> (8 * i));
    } else if (o->b && !o->b->err) {
        jh__buf_set_u32(o->b, at, len);
    }
}

static inline void ouleb(struct out *o, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        o8(o, c | (v ? 0x80 : 0));
    } while (v);
}

static inline void osleb(struct out *o, int64_t v)
{
    for (;;) {
        uint8_t c = v & 0x7f;
        v >>= 7;                /* implementation-defined for v < 0: arithmetic in GCC, Clang */
        if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
            o8(o, c);
            return;
        }
        o8(o, c | 0x80);
    }
}

static inline void oadvance(struct out *o, uint64_t d)
{
    uint8_t tmp[5];                     /* the longest: advance_loc4 */
    struct jh__buf b = { .p = tmp, .cap = sizeof tmp };
    jh__cfa_put_advance(&b, d);
    for (size_t i = 0; i < b.len; i++)
        o8(o, tmp[i]);
}

/* The caller's value of reg is at CFA - back (a multiple of the data alignment). */
static inline void osaved(struct out *o, const struct jh__arch *a, uint64_t reg, uint64_t back)
{
    uint64_t n = back / (uint64_t)-a->data_align;
    if (reg < 0x40) {
        o8(o, (uint8_t)(JH__CFA_offset | reg));
    } else {
        o8(o, JH__CFA_offset_extended);
        ouleb(o, reg);
    }
    ouleb(o, n);
}

static inline void orestore(struct out *o, uint64_t reg)
{
    o8(o, (uint8_t)(JH__CFA_restore | reg));     /* reg < 64: the frame pointer, ra */
}

/* An FDE's CIE pointer, pc_begin and pc_range (after its length): put_fde's, and those
 * cfi_reuse.c patches into a copy. */
static inline void ofde_head(struct out *w, const struct jh__cfi_opts *o, const struct jh__func *f,
                             uint32_t cie_ptr, uint64_t pc_field)
{
    o32(w, cie_ptr);
    if (o->ptr == JH__CFI_ABS) {
        o64(w, f->start);
        o64(w, f->size);
    } else {
        o32(w, (uint32_t)pc_field);
        o32(w, (uint32_t)f->size);
    }
}

/* cfi.c: is f's description valid for a; f's FDE instructions for a; the most bytes the FDE
 * takes (0: arm64's signing state spliced in, written checked). */
int jh__cfi_func_ok(const struct jh__arch *a, const struct jh__func *f);
void jh__cfi_put_insns(struct out *w, const struct jh__arch *a, const struct jh__func *f);
size_t jh__cfi_fde_bound(const struct jh__arch *a, const struct jh__func *f);

/* f's instructions encoded once already, for a (jh__cfi_memo, cfi_reuse.c): copied, not
 * encoded again, and their description not checked again (it passed when they were made). */
static inline bool jh__cfi_memo_for(const struct jh__arch *a, const struct jh__func *f)
{
    return f->insns && a == JH__ARCH_HOST;
}

/* cfi_reuse.c: whether p's FDE instructions are f's too; f's FDE as a copy of the len bytes
 * written at count from (raw mode), its CIE pointer and addresses patched. */
bool jh__cfi_same_insns(const struct jh__func *p, const struct jh__func *f);
void jh__cfi_copy_fde(struct out *w, const struct jh__cfi_opts *o, const struct jh__func *f,
                      size_t from, size_t len, uint32_t cie_ptr, uint64_t pc_field);

/* The last few FDEs encoded (not copied) in raw mode, for a run that comes back to a shape
 * a few functions after leaving it (node's builtins: a quarter of their FDEs were encoded
 * again, ~220 instructions each, where a copy is ~60; issue 30). A copy is the same bytes
 * wherever its source lies. */
#define JH__CFI_SEEN 4
struct jh__cfi_seen {
    struct { const struct jh__func *fn; size_t k, at, len; } v[JH__CFI_SEEN];
    size_t n;
};
/* One with f's instructions and CIE k (other than skip, already tried): its function, and
 * *from and *len, its offset and length; NULL if none. (Inline: asked of most FDEs.) */
static inline const struct jh__func *jh__cfi_seen_find(const struct jh__cfi_seen *s,
                                                       const struct jh__func *skip, size_t k,
                                                       const struct jh__func *f, size_t *from,
                                                       size_t *len)
{
    for (size_t j = 0; j < s->n && j < JH__CFI_SEEN; j++)
        if (s->v[j].k == k && s->v[j].fn != skip && jh__cfi_same_insns(s->v[j].fn, f)) {
            *from = s->v[j].at, *len = s->v[j].len;
            return s->v[j].fn;
        }
    return NULL;
}

/* f's FDE, encoded with CIE k at offset at, len bytes. */
static inline void jh__cfi_seen_add(struct jh__cfi_seen *s, const struct jh__func *f, size_t k,
                                    size_t at, size_t len)
{
    size_t j = s->n++ % JH__CFI_SEEN;
    s->v[j].fn = f, s->v[j].k = k, s->v[j].at = at, s->v[j].len = len;
}

#endif
