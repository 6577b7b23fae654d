/*
 * unwind_host.c — code inside a region the JIT registered its own unwind information over.
 *
 * LuaJIT registers one FDE over each machine-code area (64 KiB by default), with its
 * personality routine and no CFA rule at all: its personality turns a Lua error thrown
 * through a trace (from a C function the trace called) into a trace exit, and needs nothing
 * else; but a walk that reaches a trace (backtrace(), a crash reporter, a sampling
 * profiler) cannot go on, and libgcc aborts the process. Left to the JIT's FDE (what the
 * channel does for code it finds covered), its traces can be thrown through but never
 * walked; shadowed by one FDE per trace, Lua errors skip the personality.
 *
 * So a JIT may ask for both: announce a function inside its region with the personality
 * of its own FDE there (jh_code.personality). The function is then described by jitherald
 * with that personality (errors still reach the JIT, walks go on), and the rest of the
 * region keeps what the JIT registered. With libgcc's list (GCC <= 12), which for a pc
 * searches only the object with the highest start at or below it, that takes runs that
 * give every byte of the region from its lowest function to its end an FDE: the
 * functions', and fillers in the gaps, which carry the JIT's personality, CFA = sp + 8
 * and the return address undefined (an exception still reaches the personality; a walk
 * ends there cleanly instead of aborting). Below the lowest run libgcc finds the JIT's
 * own object. The runs tile the region, each up to where the next begins (uw_seg.hi), so
 * that they grow and merge as other runs do (unwind_runs.c) instead of one run per region
 * rebuilt whole at every add. With libgcc's b-tree (GCC 13+) and LLVM's libunwind the
 * function is left to the JIT's FDE as before (docs/unwind.md).
 */
#include <stdlib.h>

#include "base/vec.h"
#include "channels/unwind.h"
#include "fmt/cfa.h"
#include "fmt/cfi.h"

/* An encoded pointer at *p (DW_EH_PE_*: absptr, udata/sdata 2/4/8, optionally pcrel or
 * indirect), moved past. false for an encoding this does not read. */
static bool read_ptr(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t *v)
{
    const uint8_t *q = *p;
    uint64_t x = 0;
    size_t w;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: w = 8; break;
    case 0x03: case 0x0b: w = 4; break;
    case 0x02: case 0x0a: w = 2; break;
    default: return false;
    }
    if ((size_t)(end - q) < w)
        return false;
    for (size_t i = 0; i < w; i++)
        x |= (uint64_t)q[i] << (8 * i);
    if ((enc & 0x0f) == 0x0b)
        x = (uint64_t)(int64_t)(int32_t)(uint32_t)x;
    else if ((enc & 0x0f) == 0x0a)
        x = (uint64_t)(int64_t)(int16_t)(uint16_t)x;
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: x += (uintptr_t)q; break;
    default: return false;
    }
    if (enc & 0x80) {
        if (!x)
            return false;
        memcpy(&x, (const void *)(uintptr_t)x, sizeof x);
    }
    *v = x;
    *p = q + w;
    return true;
}

/* The range and personality of the FDE at fde (one the process's unwinder returned, so
 * well formed; still bounded): false where this cannot tell, or the FDE has an LSDA (the
 * fillers could not carry it). */
static bool read_fde(const uint8_t *fde, uintptr_t *lo, uintptr_t *hi, uint64_t *pers)
{
    uint32_t len = rd32(fde);
    if (len < 12 || len > 4096)
        return false;
    const uint8_t *cie = fde + 4 - rd32(fde + 4);
    uint32_t clen = rd32(cie);
    if (clen < 8 || clen > 4096 || rd32(cie + 4) != 0)
        return false;
    const uint8_t *p = cie + 9, *end = cie + 4 + clen;
    const char *aug = (const char *)p;
    size_t alen = strnlen(aug, (size_t)(end - p));
    if (p + alen >= end || (cie[8] != 1 && cie[8] != 3))
        return false;
    p += alen + 1;
    uint64_t u;
    int64_t s;
    if (jh__cfa_uleb(&p, end, &u) || jh__cfa_sleb(&p, end, &s) || jh__cfa_uleb(&p, end, &u))
        return false;
    uint8_t fenc = 0, lenc = 0xff;
    *pers = 0;
    if (aug[0] == 'z') {
        if (jh__cfa_uleb(&p, end, &u))
            return false;
        for (size_t i = 1; i < alen; i++) {
            if (p >= end)
                return false;
            if (aug[i] == 'R')
                fenc = *p++;
            else if (aug[i] == 'L')
                lenc = *p++;
            else if (aug[i] == 'P') {
                uint8_t penc = *p++;
                if (!read_ptr(&p, end, penc, pers))
                    return false;
            } else if (aug[i] != 'S')
                return false;
        }
    } else if (alen) {
        return false;
    }
    const uint8_t *q = fde + 8, *fend = fde + 4 + len;
    uint64_t begin = 0, range = 0;
    if (!read_ptr(&q, fend, fenc, &begin) || !read_ptr(&q, fend, fenc & 0x0f, &range))
        return false;
    if (lenc != 0xff) {
        uint64_t lsda = 0;
        if (jh__cfa_uleb(&q, fend, &u) || !read_ptr(&q, fend, lenc, &lsda) || lsda)
            return false;
    }
    *lo = (uintptr_t)begin;
    *hi = (uintptr_t)(begin + range);
    return *hi > *lo;
}

/*
 * Is u inside a region the JIT covered with an FDE of its own whose personality is the one
 * u was given? 1: yes, *h is the region; 0: no (the caller looks for foreign FDEs as for
 * any code); -1: inside a hosted region without its personality, left to the JIT's FDE
 * like any code it covers. Known regions first (the hosted runs, whose fillers libgcc
 * would return as ours), then libgcc's lookup. Only with libgcc's list: see above.
 */
int jh__uw_host_of(const struct uw_fn *u, uint64_t personality, struct uw_host *h)
{
    if (jh__uw.mode != JH__UW_LIST || !jh__uw.find_fde_gcc)
        return 0;
    size_t i = jh__uw_seg_upper(u->start);
    if (i < jh__uw.nseg && jh__uw.seg[i]->hosted) {
        const struct uw_host *k = &jh__uw.seg[i]->host;
        if (k->lo < u->end && u->start < k->hi) {
            *h = *k;
            return k->personality == personality && k->lo <= u->start && u->end <= k->hi ?
                   1 : -1;
        }
    }
    if (!personality)
        return 0;
    void *bases[3];
    const uint8_t *fde = jh__uw.find_fde_gcc((void *)u->start, bases);
    if (!fde || jh__uw_run_holds(u->start, fde))
        return 0;
    struct uw_host k;
    if (!read_fde(fde, &k.lo, &k.hi, &k.personality) || k.personality != personality ||
        u->start < k.lo || u->end > k.hi || k.hi - k.lo > SPAN_MAX)
        return 0;
    *h = k;
    return 1;
}

/* A filler's FDE for the region's personality: the CIE's CFA, the return address undefined.
 * Encoded once per personality through the one CFI encoder (absolute pointers: pc_begin
 * and pc_range are the 8-byte words at 8 and 16 of the FDE, checked here); each gap copies
 * it and jh__uw_img_build writes the gap's range in (uw_fn.filler). A rebuild of a hosted
 * run then costs a copy per gap, not an encoding. */
static const struct uw_fn *template_for(uint64_t personality)
{
    const uint8_t ra_undefined[] = { JH__CFA_undefined, JH__ARCH_HOST->ra };
    for (size_t i = 0; i < jh__uw.nfillers; i++)
        if (jh__uw.fillers[i].personality == personality)
            return &jh__uw.fillers[i].fn;
    if (JH__VEC_RESERVE(jh__uw.fillers, jh__uw.capfillers, jh__uw.nfillers + 1))
        return NULL;
    struct uw_fn u = { .start = 0x1000, .end = 0x2000, .filler = true };
    struct jh__func f = { .start = u.start, .size = u.end - u.start, .name = "filler",
                          .unwind = JH_UNWIND_CFI, .cfi = ra_undefined,
                          .cfi_len = sizeof ra_undefined, .personality = personality };
    if (jh__uw_fn_encode(&u, &f) != 1)
        return NULL;
    uint64_t b, r;
    memcpy(&b, u.run + u.fde_off + 8, 8);
    memcpy(&r, u.run + u.fde_off + 16, 8);
    if (b != u.start || r != u.end - u.start) {
        free(u.run);
        return NULL;
    }
    jh__uw.fillers[jh__uw.nfillers] = (struct uw_filler){ personality, u };
    return &jh__uw.fillers[jh__uw.nfillers++].fn;
}

/* The functions of hosted run s, live ones sorted, with fillers in every gap from the
 * lowest one to the region's end: *all (to pass to jh__uw_img_build; jh__uw's, valid until
 * the next call). */
int jh__uw_host_fill(const struct uw_seg *s, struct uw_fn ***all, size_t *n)
{
    const struct uw_fn *t = template_for(s->host.personality);
    jh__uw.fill_grown += 2 * s->n + 1 > jh__uw.fill_all_cap;
    if (!t || JH__VEC_RESERVE(jh__uw.fill_all, jh__uw.fill_all_cap, 2 * s->n + 1) ||
        JH__VEC_RESERVE(jh__uw.fill_gap, jh__uw.fill_gap_cap, s->n + 1))
        return -ENOMEM;
    struct uw_fn **a = jh__uw.fill_all, *gap = jh__uw.fill_gap;
    size_t k = 0, g = 0;
    uintptr_t at = s->lo;
    for (size_t i = 0; i <= s->n; i++) {
        uintptr_t next = i < s->n ? s->fn[i]->start : s->hi;
        if (i < s->n && s->fn[i]->dead)
            continue;
        if (next > at) {
            gap[g] = *t;
            gap[g].start = at;
            gap[g].end = next;
            a[k++] = &gap[g++];
        }
        if (i < s->n) {
            a[k++] = s->fn[i];
            at = s->fn[i]->end;
        }
    }
    *all = a;
    *n = k;
    return 0;
}
