/* auditlog_resync.c — see auditlog_resync.h. */
#include "lib/auditlog_resync.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "fmt/auditlog.h"
#include "lib/msgpack_read.h"

enum { PENDING, FOUND, FAILED };

/* One candidate frame: a node of the leftist heap of the walk it has merged into. Indexes
 * are positions in rs->w plus one (0: none), so the array may move when it grows. */
struct jhr_rs_walk {
    size_t q, bound;            /* where the frame would start and end */
    int64_t owed;               /* values still owed before its map ends (pending adds applied) */
    int64_t add;                /* change to owed not yet passed on to the children */
    size_t l, r;
    uint32_t rank;              /* leftist heap: length of the right spine */
    uint8_t state;
};

struct jhr_rs_group {
    size_t pos;                 /* the offset its candidates read next */
    size_t root;
};

#define W(i) (rs->w[(i) - 1])

void jhr_resync_init(struct jhr_resync *rs, const uint8_t *d, size_t size)
{
    memset(rs, 0, sizeof *rs);
    rs->d = d;
    rs->size = size;
}

void jhr_resync_free(struct jhr_resync *rs)
{
    free(rs->w);
    free(rs->g);
    free(rs->stack);
    memset(rs, 0, sizeof *rs);
}

static uint32_t rank_of(const struct jhr_resync *rs, size_t i) { return i ? W(i).rank : 0; }

static void push_down(struct jhr_resync *rs, size_t i)
{
    int64_t a = W(i).add;
    if (!a)
        return;
    if (W(i).l) { W(W(i).l).owed += a; W(W(i).l).add += a; }
    if (W(i).r) { W(W(i).r).owed += a; W(W(i).r).add += a; }
    W(i).add = 0;
}

/* Merge two heaps by owed. Recursion only along right spines: depth O(log n). */
static size_t merge(struct jhr_resync *rs, size_t a, size_t b)
{
    if (!a || !b)
        return a ? a : b;
    if (W(a).owed > W(b).owed) {
        size_t t = a;
        a = b;
        b = t;
    }
    push_down(rs, a);
    W(a).r = merge(rs, W(a).r, b);
    if (rank_of(rs, W(a).l) < rank_of(rs, W(a).r)) {
        size_t t = W(a).l;
        W(a).l = W(a).r;
        W(a).r = t;
    }
    W(a).rank = rank_of(rs, W(a).r) + 1;
    return a;
}

static size_t pop(struct jhr_resync *rs, size_t root)
{
    push_down(rs, root);
    return merge(rs, W(root).l, W(root).r);
}

/* Every candidate of a heap is done for (the bytes stop decoding). */
static void fail_all(struct jhr_resync *rs, size_t root)
{
    size_t n = 0;
    if (root && !JH__VEC_RESERVE(rs->stack, rs->capstack, 1))
        rs->stack[n++] = root;
    while (n) {
        size_t i = rs->stack[--n];
        W(i).state = FAILED;
        for (int k = 0; k < 2; k++) {
            size_t c = k ? W(i).r : W(i).l;
            if (c && !JH__VEC_RESERVE(rs->stack, rs->capstack, n + 1))
                rs->stack[n++] = c;
        }
    }
}

static bool group_less(const struct jhr_rs_group *x, const struct jhr_rs_group *y)
{
    return x->pos < y->pos;
}

static int group_push(struct jhr_resync *rs, size_t pos, size_t root)
{
    if (JH__VEC_RESERVE(rs->g, rs->capg, rs->ng + 1))
        return -1;
    size_t i = rs->ng++;
    struct jhr_rs_group x = { pos, root };
    while (i && group_less(&x, &rs->g[(i - 1) / 2])) {
        rs->g[i] = rs->g[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    rs->g[i] = x;
    return 0;
}

static struct jhr_rs_group group_pop(struct jhr_resync *rs)
{
    struct jhr_rs_group top = rs->g[0], x = rs->g[--rs->ng];
    size_t i = 0, n = rs->ng;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && group_less(&rs->g[c + 1], &rs->g[c]))
            c++;
        if (!group_less(&rs->g[c], &x))
            break;
        rs->g[i] = rs->g[c];
        i = c;
    }
    if (n)
        rs->g[i] = x;
    return top;
}

/* The walks that read their next value at p: decode it once for all of them. */
static void advance(struct jhr_resync *rs, size_t p)
{
    size_t root = 0;
    while (rs->ng && rs->g[0].pos == p)
        root = merge(rs, root, group_pop(rs).root);
    struct jhr_mp v;
    const uint8_t *e = jhr_mp_head(rs->d + p, rs->d + rs->size, &v);
    rs->steps++;
    if (!e) {
        fail_all(rs, root);
        return;
    }
    int64_t delta = v.t == JHR_MP_ARRAY ? (int64_t)v.n - 1 :
                    v.t == JHR_MP_MAP ? 2 * (int64_t)v.n - 1 : -1;
    W(root).owed += delta;
    W(root).add += delta;
    size_t next = (size_t)(e - rs->d);
    /* owed drops by at most one per value, so the ones that end here are exactly 0 */
    while (root && W(root).owed == 0) {
        size_t done = root;
        root = pop(rs, root);
        W(done).state = W(done).bound == next ? FOUND : FAILED;
    }
    if (root && (next >= rs->size || group_push(rs, next, root) < 0))
        fail_all(rs, root);
}

/* A candidate frame at q: its map's header and first key must decode here and now. */
static void start(struct jhr_resync *rs, size_t q)
{
    const uint8_t *d = rs->d, *end = d + rs->size;
    if (rs->size - q < JH__AL_FRAME_HDR)
        return;
    uint64_t len = jhr_mp_be(d + q + 1, 4);
    if (len > rs->size - q - JH__AL_FRAME_HDR)
        return;
    struct jhr_mp m, k, t;
    const uint8_t *p = jhr_mp_head(d + q + JH__AL_FRAME_HDR, end, &m);
    if (!p || m.t != JHR_MP_MAP || m.n == 0 || !(p = jhr_mp_head(p, end, &k)) ||
        !jhr_mp_str_eq(&k, JH__AL_K_TYPE) || !(p = jhr_mp_head(p, end, &t)) || t.t != JHR_MP_STR)
        return;
    rs->steps += 3;
    if (JH__VEC_RESERVE(rs->w, rs->capw, rs->nw + 1))
        return;
    size_t i = ++rs->nw, at = (size_t)(p - d);
    W(i) = (struct jhr_rs_walk){ .q = q, .bound = q + JH__AL_FRAME_HDR + len,
                                 .owed = 2 * (int64_t)m.n - 2, .rank = 1, .state = PENDING };
    if (W(i).owed == 0)
        W(i).state = at == W(i).bound ? FOUND : FAILED;
    else if (at >= rs->size || group_push(rs, at, i) < 0)
        W(i).state = FAILED;
}

/* One step of the sweep: the next offset where a walk reads or a candidate starts. */
static void step(struct jhr_resync *rs)
{
    /* cand came from a search at or before pos; it stands while no mark was passed (a fresh
     * state starts at 0, which the test of the byte settles) */
    if (rs->cand < rs->pos || (rs->cand < rs->size && rs->d[rs->cand] != JH__AL_FRAME_MARK)) {
        const uint8_t *c = rs->pos < rs->size ?
            memchr(rs->d + rs->pos, JH__AL_FRAME_MARK, rs->size - rs->pos) : NULL;
        rs->cand = c ? (size_t)(c - rs->d) : rs->size;
    }
    size_t p = rs->ng && rs->g[0].pos < rs->cand ? rs->g[0].pos : rs->cand;
    if (p >= rs->size) {
        while (rs->ng)
            fail_all(rs, group_pop(rs).root);
        rs->pos = rs->size;
        return;
    }
    if (rs->ng && rs->g[0].pos == p)
        advance(rs, p);
    if (rs->cand == p)
        start(rs, p);
    rs->pos = p + 1;
}

size_t jhr_resync_next(struct jhr_resync *rs, size_t off)
{
    if (rs->pos <= off) {
        /* The parser is past everything swept: what is known is about frames behind it. */
        const uint8_t *d = rs->d;
        size_t size = rs->size, steps = rs->steps;
        jhr_resync_free(rs);
        jhr_resync_init(rs, d, size);
        rs->steps = steps;
        rs->pos = off + 1;
    }
    for (;;) {
        while (rs->first < rs->nw) {
            const struct jhr_rs_walk *w = &rs->w[rs->first];
            if (w->q > off && w->state != FAILED && !(w->state == PENDING && w->bound <= rs->pos))
                break;
            rs->first++;
        }
        if (rs->first < rs->nw && rs->w[rs->first].state == FOUND)
            return rs->w[rs->first].q;
        if (rs->pos >= rs->size)
            return rs->size;
        step(rs);
    }
}
