/*
 * unwind_near.c — memory for runs: libunwind reads 32-bit offsets from a run's address to
 * its code and FDEs, so a run it is given lies within 2 GiB of its code. Small runs are
 * carved from chunks mapped near the code, big ones get their own mapping; without
 * libunwind, plain malloc.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "channels/unwind.h"

static bool fits(uintptr_t base, uintptr_t lo, uintptr_t hi, size_t len)
{
    int64_t a = (int64_t)(lo - base), b = (int64_t)(hi - base);
    return a >= INT32_MIN && a <= INT32_MAX && b >= INT32_MIN && b <= INT32_MAX &&
           len < INT32_MAX;
}

/* Anonymous memory of len bytes within 2 GiB of [lo, hi), or MAP_FAILED. */
static void *map_near(size_t len, uintptr_t lo, uintptr_t hi)
{
    uintptr_t gap = (uintptr_t)1 << 20, pm = ~(uintptr_t)(jh__uw.page - 1);
    uintptr_t hints[5] = { 0, 0, (hi + gap + jh__uw.page - 1) & pm, 0, (hi + (gap << 8)) & pm };
    if (lo > len + gap)
        hints[1] = (lo - len - gap) & pm;
    if (lo > len + (gap << 8))
        hints[3] = (lo - len - (gap << 8)) & pm;
    for (int i = 0; i < 5; i++) {
        if (i && !hints[i])
            continue;           /* hint 0: wherever the kernel puts mmaps, often near */
        void *q = mmap((void *)hints[i], len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
            continue;
        if (fits((uintptr_t)q, lo, hi, len))
            return q;
        munmap(q, len);
    }
    return MAP_FAILED;
}

/* Carve len bytes near [lo, hi) from an open chunk, opening one if needed. */
static uint8_t *chunk_alloc(struct uw_img *im, size_t len, uintptr_t lo, uintptr_t hi)
{
    len = (len + 15) & ~(size_t)15;
    if (len > CHUNK_SIZE / 4)
        return NULL;
    int slot = -1;
    for (int i = 0; i < NCHUNK; i++) {
        struct uw_chunk *c = jh__uw.chunk[i];
        if (!c) {
            slot = slot < 0 ? i : slot;
            continue;
        }
        if (c->size - c->used >= len && fits((uintptr_t)c->base, lo, hi, c->size)) {
            im->chunk = c;
            c->refs++;
            c->used += len;
            return c->base + c->used - len;
        }
        if (slot < 0 || (jh__uw.chunk[slot] && jh__uw.chunk[slot]->used < c->used))
            slot = i;           /* replace the fullest one if none is free */
    }
    struct uw_chunk *c = calloc(1, sizeof *c);
    void *q = c ? map_near(CHUNK_SIZE, lo, hi) : MAP_FAILED;
    if (q == MAP_FAILED) {
        free(c);
        return NULL;
    }
    c->base = q;
    c->size = CHUNK_SIZE;
    struct uw_chunk *old = jh__uw.chunk[slot];
    jh__uw.chunk[slot] = c;
    if (old && !old->refs) {
        munmap(old->base, old->size);
        free(old);
    }
    im->chunk = c;
    c->refs = 1;
    c->used = len;
    return c->base;
}

/*
 * libunwind reads 32-bit offsets from the run's address to its code and FDEs, so a run it
 * is given must lie within 2 GiB of its code: malloc's heap is usually next to the
 * program, terabytes away from mmap'd JIT code. Small runs are carved from chunks mapped
 * near the code (an mmap per run cost 30-50 us per jh_code_add), big ones get their own.
 */
uint8_t *jh__uw_img_alloc(struct uw_img *im, size_t len, uintptr_t lo, uintptr_t hi,
                          bool *near)
{
    *near = false;
    if (!jh__uw.dyn)
        return malloc(len);
    uint8_t *p = chunk_alloc(im, len, lo, hi);
    if (p) {
        *near = true;
        return p;
    }
    size_t ml = (len + jh__uw.page - 1) & ~(jh__uw.page - 1);
    void *q = map_near(ml, lo, hi);
    if (q != MAP_FAILED) {
        im->maplen = ml;
        *near = true;
        return q;
    }
    jh__uw.far++;
    return malloc(len);
}

/* Build (not register) the run for fn[0..n), sorted by start. */

void jh__uw_img_free(struct uw_img *im)
{
    if (!im)
        return;
    if (im->chunk) {
        struct uw_chunk *c = im->chunk;
        bool open = false;
        for (int i = 0; i < NCHUNK; i++)
            open |= jh__uw.chunk[i] == c;
        if (--c->refs == 0 && !open) {
            munmap(c->base, c->size);
            free(c);
        }
    } else if (im->maplen)
        munmap(im->buf, im->maplen);
    else
        free(im->buf);
    free(im->table);
    free(im);
}

