/*
 * test_sort.c — jh__sort (base/vec.h): an array already in order (code announced in
 * address order, as node's builtins are) costs n - 1 comparisons and is left as it is;
 * any other order comes out as qsort's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "check.h"

static size_t calls;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    calls++;
    return x < y ? -1 : x > y;
}

#define N 2000

int main(void)
{
    static uint64_t a[N], want[N];
    for (size_t i = 0; i < N; i++)
        a[i] = 0x1000 + 64 * i;
    memcpy(want, a, sizeof a);
    calls = 0;
    jh__sort(a, N, sizeof a[0], cmp_u64);
    CHECK_EQ(calls, N - 1);
    CHECK(!memcmp(a, want, sizeof a));

    for (int round = 0; round < 3; round++) {
        srand(7 + round);
        for (size_t i = 0; i < N; i++)
            a[i] = round == 0 ? 0x1000 + 64 * (N - i) :         /* reversed */
                   round == 1 ? (uint64_t)rand() * 64 :         /* shuffled */
                   0x1000 + 64 * i;                             /* sorted but the last */
        if (round == 2)
            a[N - 1] = 0;
        memcpy(want, a, sizeof a);
        qsort(want, N, sizeof want[0], cmp_u64);
        jh__sort(a, N, sizeof a[0], cmp_u64);
        CHECK(!memcmp(a, want, sizeof a));
    }
    calls = 0;
    jh__sort(a, 0, sizeof a[0], cmp_u64);
    jh__sort(a, 1, sizeof a[0], cmp_u64);
    CHECK_EQ(calls, 0);
    return check_done();
}
