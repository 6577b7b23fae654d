/*
 * auditlog_resync.h — finding the next frame of a damaged audit log in one pass
 * (auditlog_read.c calls it when the bytes at the current offset are not a frame).
 *
 * A frame is 0xce, a big-endian length LEN, then a map of exactly LEN bytes whose first key
 * is `type` with a string value (every writer puts it first: fmt/auditlog.h, jh__al_head).
 * Trying each 0xce byte in turn and decoding the frame it would start costs up to the rest
 * of the file per candidate: on bytes that look like nested frames that was quadratic
 * (64 KiB of them read in 1 s, 512 KiB in 56 s).
 *
 * Here every candidate is followed at once, in one sweep forward. The value at an offset
 * decodes the same way whichever frame it is read for, so candidates whose walks reach the
 * same offset merge and go on as one, and each offset is decoded at most once. What still
 * tells merged candidates apart is how many values each still owes before its map ends (all
 * change by the same amount at each step): a leftist heap per merged walk keeps the one
 * closest to its end on top. Each value is decoded once and each candidate enters and
 * leaves a heap once: O(n log n) for n bytes, and memory for the candidates still open.
 *
 *     struct jhr_resync rs;
 *     jhr_resync_init(&rs, data, size);
 *     size_t q = jhr_resync_next(&rs, off);   // first frame after off, or size
 *     jhr_resync_free(&rs);
 *
 * Successive calls must ask about increasing offsets (a parser moving forward): the sweep
 * keeps what it learnt ahead of the parser.
 */
#ifndef JHR_AUDITLOG_RESYNC_H
#define JHR_AUDITLOG_RESYNC_H

#include <stddef.h>
#include <stdint.h>

struct jhr_rs_walk;
struct jhr_rs_group;

struct jhr_resync {
    const uint8_t *d;
    size_t size;
    size_t pos;                 /* every offset below pos has been swept */
    size_t cand;                /* the next 0xce at or after pos (size: none) */
    struct jhr_rs_walk *w;      /* candidates, in file order */
    size_t nw, capw, first;     /* walks before first are settled or behind the parser */
    struct jhr_rs_group *g;     /* merged walks, a min-heap by the offset each reads next */
    size_t ng, capg;
    size_t *stack, capstack;    /* scratch: walking a heap to fail all its candidates */
    size_t steps;               /* values decoded: linear in the bytes swept */
};

void jhr_resync_init(struct jhr_resync *rs, const uint8_t *d, size_t size);
/* The first offset after `off` where a frame starts, or size when none does (or memory
 * ran out). off must not decrease from one call to the next. */
size_t jhr_resync_next(struct jhr_resync *rs, size_t off);
void jhr_resync_free(struct jhr_resync *rs);

#endif
