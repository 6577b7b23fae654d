/*
 * cfi_hdr.c — the .eh_frame_hdr search table and perf's UNWINDING_INFO layout (an .eh_frame
 * run followed by its .eh_frame_hdr), on top of the encoder in cfi.c. See cfi.h.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fmt/cfi.h"

static int fits_s32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

size_t jh__cfi_eh_frame_hdr_size(size_t nfde) { return 12 + 8 * nfde; }

int jh__cfi_eh_frame_hdr(struct jh__buf *b, uint64_t hdr_addr, uint64_t eh_addr,
                         const struct jh__cfi_index *idx, size_t nfde)
{
    if (!b)
        return -EINVAL;
    size_t base = b->len;
    jh__buf_zeros(b, jh__cfi_eh_frame_hdr_size(nfde));
    if (b->err)
        return b->err;
    int err = jh__cfi_eh_frame_hdr_from(b, base, hdr_addr, eh_addr, idx, nfde, 0);
    if (err)
        b->len = base;
    return err;
}

int jh__cfi_eh_frame_hdr_from(struct jh__buf *b, size_t at, uint64_t hdr_addr,
                              uint64_t eh_addr, const struct jh__cfi_index *idx, size_t nfde,
                              size_t from)
{
    if (!b || (nfde && !idx) || nfde > UINT32_MAX || from > nfde ||
        at > b->len || b->len - at < jh__cfi_eh_frame_hdr_size(nfde))
        return -EINVAL;
    int64_t rel = (int64_t)(eh_addr - (hdr_addr + 4));
    if (!fits_s32(rel))
        return -ERANGE;
    if (b->err)
        return b->err;
    /* Checked whole first (on error nothing changes), then stored in one tight pass: a
     * LuaJIT trace lands below the others, so each add rewrites the whole table (elfmap:
     * 8% of its time when each entry went through jh__buf_set_u32, docs/cost.md). */
    for (size_t i = from; i < nfde; i++) {
        if (i && idx[i].pc < idx[i - 1].pc)
            return -EINVAL;                     /* the table is binary-searched */
        if (!fits_s32((int64_t)(idx[i].pc - hdr_addr)) ||
            !fits_s32((int64_t)(eh_addr + idx[i].off - hdr_addr)))
            return -ERANGE;
    }
    uint8_t *p = b->p + at;
    p[0] = 1;                                           /* version */
    p[1] = JH__DW_EH_PE_pcrel | JH__DW_EH_PE_sdata4;    /* eh_frame_ptr */
    p[2] = JH__DW_EH_PE_udata4;                         /* fde_count */
    p[3] = JH__DW_EH_PE_datarel | JH__DW_EH_PE_sdata4;  /* table */
    put_le32(p + 4, (uint32_t)rel);
    put_le32(p + 8, (uint32_t)nfde);
    for (size_t i = from; i < nfde; i++) {
        put_le32(p + 12 + 8 * i, (uint32_t)(idx[i].pc - hdr_addr));
        put_le32(p + 16 + 8 * i, (uint32_t)(eh_addr + idx[i].off - hdr_addr));
    }
    return 0;
}

int jh__cfi_eh_frame_hdr_insert(struct jh__buf *b, size_t at, uint64_t hdr_addr,
                                uint64_t eh_addr, const struct jh__cfi_index *idx, size_t nfde,
                                size_t i, bool replace)
{
    if (!b || !idx || nfde > UINT32_MAX || i >= nfde || at > b->len ||
        b->len - at < jh__cfi_eh_frame_hdr_size(nfde))
        return -EINVAL;
    if ((i && idx[i].pc < idx[i - 1].pc) || (i + 1 < nfde && idx[i + 1].pc < idx[i].pc))
        return -EINVAL;                         /* the table is binary-searched */
    if (!fits_s32((int64_t)(eh_addr - (hdr_addr + 4))) ||
        !fits_s32((int64_t)(idx[i].pc - hdr_addr)) ||
        !fits_s32((int64_t)(eh_addr + idx[i].off - hdr_addr)))
        return -ERANGE;
    if (b->err)
        return b->err;
    /* The other entries' values are relative to hdr_addr and to eh_addr, neither of which
     * moved: their bytes move up one entry as they are (LuaJIT adds each trace below the
     * others: one memmove instead of encoding the whole table again, docs/cost.md). */
    uint8_t *p = b->p + at;
    if (!replace)
        memmove(p + 20 + 8 * i, p + 12 + 8 * i, 8 * (nfde - 1 - i));
    put_le32(p + 8, (uint32_t)nfde);
    put_le32(p + 12 + 8 * i, (uint32_t)(idx[i].pc - hdr_addr));
    put_le32(p + 16 + 8 * i, (uint32_t)(eh_addr + idx[i].off - hdr_addr));
    return 0;
}

int jh__cfi_perf_unwinding(struct jh__buf *b, const struct jh__func *f, uint64_t text_addr,
                           const struct jh__arch *arch, size_t *hdr_size)
{
    if (!b || !f)
        return -EINVAL;
    if (f->unwind == JH_UNWIND_NONE) {
        if (hdr_size)
            *hdr_size = 0;
        return 0;
    }
    struct jh__func g = *f;
    g.start = text_addr;
    /* genelf.c: .eh_frame at ALIGN_8(text + csize), .eh_frame_hdr right after it. */
    uint64_t eh_addr = (text_addr + g.size + 7) & ~(uint64_t)7;
    struct jh__cfi_opts o = { .arch = arch, .ptr = JH__CFI_PCREL, .addr = eh_addr };
    struct jh__cfi_index idx;
    size_t base = b->len;
    int n = jh__cfi_eh_frame(b, &o, &g, 1, &idx);
    if (n < 0)
        return n;
    int err = jh__cfi_eh_frame_hdr(b, eh_addr + (b->len - base), eh_addr, &idx, (size_t)n);
    if (err) {
        if (!b->err)
            b->len = base;
        return err;
    }
    if (hdr_size)
        *hdr_size = jh__cfi_eh_frame_hdr_size((size_t)n);
    return n;
}
