/*
 * test_add_many.c — jh_code_add_many gives every tool what jh_code_add one by one gives:
 * the same functions 1,000 at a time (at area B) as one at a time (at area A), with gdb
 * and unwind on: jh_lookup names each with its range, libgcc's _Unwind_Find_FDE finds
 * each function's own FDE, and a debugger attaching (the JIT interface's list) sees each
 * symbol once at its address. What the batch changes: the unwind channel builds one run
 * for the batch (a run rebuilt per function one at a time), the gdb channel one image
 * (one per function, then merged). Then the results per code
 * (a malformed one, one over live code refused, the others added), a batch landing in the
 * gaps of an existing run (added one at a time by the channel: still found), and the
 * arguments.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include "channels/unwind_stats.h"
#include "check.h"
#include "gdb_view.h"
#include "jitherald.h"

struct eh_bases { void *tbase, *dbase, *func; };
extern const void *_Unwind_Find_FDE(void *pc, struct eh_bases *bases);

#define N 1000
#define SLOT 32
static char names[2][N][16];

static struct jh_code code_at(uint8_t *area, size_t i, char *name)
{
    snprintf(name, 16, "fn_%zu", i);
    return (struct jh_code){ .sz = sizeof(struct jh_code), .name = name, .start = area + i * SLOT,
                             .size = 8 + (i * 7) % 24, .unwind = JH_UNWIND_FRAME_POINTER,
                             .fp_push_end = 1, .fp_set_end = 4 };
}

static uint64_t rebuilds(void)
{
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    return st.rebuilds;
}

/* Each function i in [from, n) step `step` of area: named by jh_lookup with its range and
 * found by libgcc with its own start; the number of misses. */
static size_t found(jh_ctx *jh, uint8_t *area, size_t from, size_t step)
{
    size_t bad = 0;
    for (size_t i = from; i < N; i += step) {
        char want[16], name[32];
        struct jh_code c = code_at(area, i, want);
        const void *s = NULL;
        size_t sz = 0;
        struct eh_bases b = { 0 };
        uint8_t *last = (uint8_t *)c.start + c.size - 1;
        if (jh_lookup(jh, last, NULL, &s, &sz, name, sizeof name) || s != c.start ||
            sz != c.size || strcmp(name, want) || !_Unwind_Find_FDE(last, &b) ||
            b.func != c.start) {
            if (bad++ < 3)
                fprintf(stderr, "%s at %p: lookup %p+%zu \"%s\", FDE of %p\n", want, c.start, s,
                        sz, name, b.func);
        }
    }
    return bad;
}

int main(void)
{
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB | JH_UNWIND };
    jh_ctx *jh = NULL;
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK_EQ(jh_channels(jh), JH_GDB | JH_UNWIND);
    /* two areas far apart, never run (PROT_NONE): A one at a time, B in one batch */
    uint8_t *a = mmap(NULL, N * SLOT, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *b = mmap(NULL, (size_t)64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED && b != MAP_FAILED);
    b += (size_t)32 << 20;

    uint64_t r0 = rebuilds();
    for (size_t i = 0; i < N; i++) {
        struct jh_code c = code_at(a, i, names[0][i]);
        CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    }
    uint64_t one_by_one = rebuilds() - r0;

    static struct jh_code codes[N];
    static int rc[N];
    for (size_t i = 0; i < N; i++)
        codes[i] = code_at(b, i, names[1][i]);
    r0 = rebuilds();
    CHECK_EQ(jh_code_add_many(jh, codes, N, NULL, rc), N);
    uint64_t batched = rebuilds() - r0;
    /* a debugger sees the batch when the call returns, in one image: each function built
     * once, one stop (one image per function, then merged by 64, before) */
    CHECK_EQ(snapshot(), 0);
    size_t seen_now = 0, in_first = 0;
    const void *first = NULL;
    for (size_t v = 0; v < nview; v++) {
        if ((uintptr_t)b <= view[v].addr && view[v].addr < (uintptr_t)(b + N * SLOT)) {
            first = first ? first : view[v].image;
            seen_now++;
            in_first += view[v].image == first;
        }
    }
    printf("gdb: the batch's %zu functions, %zu of them in one image\n", seen_now, in_first);
    CHECK_EQ(seen_now, N);
    CHECK_EQ(in_first, N);
    size_t failed = 0;
    for (size_t i = 0; i < N; i++)
        failed += rc[i] != 0;
    CHECK_EQ(failed, 0);
    printf("unwind runs built: %llu one at a time, %llu for the batch\n",
           (unsigned long long)one_by_one, (unsigned long long)batched);
    CHECK(one_by_one >= N / 2);
    CHECK(batched >= 1 && batched <= 2);        /* its run, and a merge at most */

    CHECK_EQ(found(jh, a, 0, 1), 0);
    CHECK_EQ(found(jh, b, 0, 1), 0);
    /* a debugger attaching now: each function once, at its address, in both areas */
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(snapshot(), 0);
    size_t seen = 0;
    for (size_t i = 0; i < N; i++)
        seen += count_named(names[0][i], (uintptr_t)(a + i * SLOT)) == 1 &&
                count_named(names[1][i], (uintptr_t)(b + i * SLOT)) == 1;
    CHECK_EQ(seen, N);

    /* results per code: a malformed one refused, one over live code refused, the rest in */
    struct jh_code more[4];
    char mn[4][16];
    uint8_t *c0 = b + N * SLOT + 4096;
    for (int i = 0; i < 4; i++)
        more[i] = code_at(c0, (size_t)i, mn[i]);
    more[1].size = 0;
    more[2].start = b;                  /* fn_0 of B is there */
    int mrc[4];
    uint64_t mid[4] = { 7, 7, 7, 7 };
    CHECK_EQ(jh_code_add_many(jh, more, 4, mid, mrc), 2);
    CHECK_EQ(mrc[0], 0);
    CHECK_EQ(mrc[1], -EINVAL);
    CHECK_EQ(mrc[2], JH_EOVERLAP);
    CHECK_EQ(mrc[3], 0);
    CHECK(mid[0] != 0 && mid[3] != 0 && mid[0] != mid[3]);     /* ids as jh_code_add's */
    CHECK_EQ(mid[1], 0);
    CHECK_EQ(mid[2], 0);
    char name[32];
    uint64_t got = 0;
    CHECK_EQ(jh_lookup(jh, c0 + 3 * SLOT, &got, NULL, NULL, name, sizeof name), 0);
    CHECK_STR(name, "fn_3");
    CHECK_EQ(got, mid[3]);
    CHECK_EQ(jh_code_remove(jh, mid[3]), 0);                   /* removable by that id */
    CHECK_EQ(jh_lookup(jh, c0 + 3 * SLOT, NULL, NULL, NULL, name, sizeof name), -ENOENT);

    /* every other function of B removed, then added again in one batch: inside B's run,
     * so the channel adds them one at a time; each found again */
    size_t k = 0;
    for (size_t i = 1; i < N; i += 2) {
        CHECK_EQ(jh_code_remove_range(jh, b + i * SLOT, SLOT), 1);
        codes[k++] = code_at(b, i, names[1][i]);
    }
    CHECK_EQ(found(jh, b, 0, 2), 0);
    CHECK_EQ(jh_code_add_many(jh, codes, k, NULL, NULL), (int)k);
    CHECK_EQ(found(jh, b, 0, 1), 0);

    CHECK_EQ(jh_code_add_many(NULL, codes, 1, NULL, NULL), -EINVAL);
    CHECK_EQ(jh_code_add_many(jh, NULL, 1, NULL, NULL), -EINVAL);
    CHECK_EQ(jh_code_add_many(jh, NULL, 0, NULL, NULL), 0);
    jh_close(jh);

    /* no channel live: validated, nothing stored, the same results */
    struct jh_options none = { .sz = sizeof none, .channels = 0 };
    CHECK_EQ(jh_open(&jh, &none), 0);
    CHECK_EQ(jh_code_add_many(jh, more, 4, mid, mrc), 3);
    CHECK_EQ(mrc[1], -EINVAL);
    CHECK(mid[0] != 0 && mid[2] != 0 && mid[3] != 0 && mid[1] == 0);
    CHECK_EQ(jh_code_remove(jh, mid[2]), 0);                   /* unstored, still removable */
    jh_close(jh);
    return check_done();
}
