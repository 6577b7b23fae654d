/*
 * unwind_near_win.c — where UNWIND_INFO lives. A RUNTIME_FUNCTION names its unwind info by
 * a 32-bit offset from the base of the table that holds it (the region's base), so the
 * bytes must sit in the 4 GiB above that base, and the heap is rarely there. Chunks of
 * WU_CHUNK bytes are allocated in free address space within reach — from the top of the
 * 4 GiB down, out of the way of a JIT that grows its own reservations upwards — and shared:
 * by every region they are within reach of, and by every function with the same bytes
 * (most functions of a JIT share a handful of prologues; an UNWIND_INFO is 8 to a few
 * dozen bytes). A chunk is freed when the last function referring to it is (after the
 * grace period: unwind_index_win.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "channels/unwind_win.h"

#define GRANULE ((uintptr_t)64 << 10)   /* VirtualAlloc's allocation granularity */

static size_t info_len(const uint8_t *p) { return 4 + 2 * (size_t)((p[2] + 1) & ~1); }

static uint32_t hash_bytes(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* The offset of these bytes in c, 0 if not there yet (offset 0 is never used). */
static uint32_t find(const struct wu_chunk *c, const uint8_t *info, size_t len, uint32_t *slot)
{
    if (!c->hcap)
        return 0;
    uint32_t i = hash_bytes(info, len) & (c->hcap - 1);
    for (; c->hash[i]; i = (i + 1) & (c->hcap - 1)) {
        const uint8_t *q = c->base + c->hash[i] - 1;
        if (info_len(q) == len && !memcmp(q, info, len))
            return c->hash[i] - 1;
    }
    if (slot)
        *slot = i;
    return 0;
}

static int rehash(struct wu_chunk *c)
{
    uint32_t cap = c->hcap ? c->hcap * 2 : 64;
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h)
        return -ENOMEM;
    for (uint32_t i = 0; i < c->hcap; i++) {
        if (!c->hash[i])
            continue;
        const uint8_t *q = c->base + c->hash[i] - 1;
        uint32_t j = hash_bytes(q, info_len(q)) & (cap - 1);
        while (h[j])
            j = (j + 1) & (cap - 1);
        h[j] = c->hash[i];
    }
    free(c->hash);
    c->hash = h;
    c->hcap = cap;
    return 0;
}

/* Copy the bytes into c: their offset, or 0 when c is full. */
static uint32_t intern(struct wu_chunk *c, const uint8_t *info, size_t len)
{
    uint32_t at = find(c, info, len, NULL);
    if (at)
        return at;
    if (len > WU_CHUNK - c->used)
        return 0;
    if ((c->hn + 1) * 2 > c->hcap && rehash(c) < 0)
        return 0;
    uint32_t slot;
    find(c, info, len, &slot);
    at = c->used;
    memcpy(c->base + at, info, len);
    c->used += (uint32_t)len;       /* len is a multiple of 4: the next one stays aligned */
    c->hash[slot] = at + 1;
    c->hn++;
    return at;
}

static bool reachable(const struct wu_chunk *c, uintptr_t base)
{
    return (uintptr_t)c->base >= base && (uintptr_t)c->base - base <= WU_REACH - WU_CHUNK;
}

/* A new chunk in free address space within [lo, hi], as high as possible. */
static struct wu_chunk *chunk_new(uintptr_t lo, uintptr_t hi)
{
    uintptr_t at = hi & ~(GRANULE - 1);
    lo = (lo + GRANULE - 1) & ~(GRANULE - 1);
    void *p = NULL;
    while (!p && at >= lo && at != 0) {
        MEMORY_BASIC_INFORMATION m;
        if (!VirtualQuery((void *)at, &m, sizeof m))
            break;
        uintptr_t rb = (uintptr_t)m.BaseAddress;
        if (m.State == MEM_FREE) {
            uintptr_t top = rb + m.RegionSize;
            uintptr_t cand = (top - WU_CHUNK < at ? top - WU_CHUNK : at) & ~(GRANULE - 1);
            if (cand >= rb && cand >= lo)
                p = VirtualAlloc((void *)cand, WU_CHUNK, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
            if (p || cand < rb || cand < lo)
                break;
            continue;               /* taken meanwhile by another thread: look again */
        }
        if (rb < GRANULE)
            break;
        at = (rb - 1) & ~(GRANULE - 1);
    }
    if (!p)
        return NULL;
    struct wu_chunk *c = calloc(1, sizeof *c);
    if (!c) {
        VirtualFree(p, 0, MEM_RELEASE);
        return NULL;
    }
    c->base = p;
    c->used = 4;                    /* offset 0 means "not found" in the table */
    return c;
}

static int chunk_insert(struct wu_chunk *c)
{
    if (JH__VEC_RESERVE(jh__wu.chunk, jh__wu.chunkcap, jh__wu.nchunk + 1))
        return -ENOMEM;
    size_t i = jh__wu.nchunk;
    while (i > 0 && jh__wu.chunk[i - 1]->base > c->base) {
        jh__wu.chunk[i] = jh__wu.chunk[i - 1];
        i--;
    }
    jh__wu.chunk[i] = c;
    jh__wu.nchunk++;
    return 0;
}

int jh__wu_place(uintptr_t base, uintptr_t end, const uint8_t *info, size_t len,
                 uint32_t *rva, struct wu_chunk **chunk)
{
    /* The chunks within reach, lowest first: one that has the bytes, else one with room. */
    size_t lo = 0, hi = jh__wu.nchunk;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)jh__wu.chunk[mid]->base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    struct wu_chunk *room = NULL;
    for (size_t i = lo; i < jh__wu.nchunk && reachable(jh__wu.chunk[i], base); i++) {
        struct wu_chunk *c = jh__wu.chunk[i];
        uint32_t at = find(c, info, len, NULL);
        if (at) {
            *rva = (uint32_t)((uintptr_t)c->base + at - base);
            c->refs++;
            *chunk = c;
            return 0;
        }
        if (!room && len <= WU_CHUNK - c->used)
            room = c;
    }
    if (!room) {
        uintptr_t top = base + (WU_REACH - WU_CHUNK);
        if (top < base || top > jh__wu.max_addr - WU_CHUNK)
            top = jh__wu.max_addr - WU_CHUNK;
        if (!(room = chunk_new(end, top)))
            return -ENOSPC;
        if (chunk_insert(room) < 0) {
            VirtualFree(room->base, 0, MEM_RELEASE);
            free(room);
            return -ENOMEM;
        }
    }
    uint32_t at = intern(room, info, len);
    if (!at)
        return -ENOMEM;
    *rva = (uint32_t)((uintptr_t)room->base + at - base);
    room->refs++;
    *chunk = room;
    return 0;
}

void jh__wu_chunk_put(struct wu_chunk *c)
{
    if (!c || --c->refs)
        return;
    for (size_t i = 0; i < jh__wu.nchunk; i++) {
        if (jh__wu.chunk[i] == c) {
            memmove(jh__wu.chunk + i, jh__wu.chunk + i + 1,
                    (jh__wu.nchunk - i - 1) * sizeof *jh__wu.chunk);
            jh__wu.nchunk--;
            break;
        }
    }
    VirtualFree(c->base, 0, MEM_RELEASE);
    free(c->hash);
    free(c);
}
