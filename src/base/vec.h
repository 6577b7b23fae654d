/*
 * vec.h — growing arrays without writing the realloc-doubling dance by hand each time:
 *
 *     if (JH__VEC_RESERVE(m->pend, m->cap, m->n + 1)) return -ENOMEM;
 *     m->pend[m->n++] = e;
 *
 * The capacity at least doubles (amortised O(1) appends), starts at 16, and every product
 * is checked for overflow: a count from a file can never make a short allocation.
 */
#ifndef JH__BASE_VEC_H
#define JH__BASE_VEC_H

#include <stddef.h>

/* 0, or -ENOMEM (arr and cap unchanged). arr: an lvalue of pointer type. */
#define JH__VEC_RESERVE(arr, cap, need) \
    ((size_t)(need) <= (cap) ? 0 : jh__vec_grow((void *)&(arr), &(cap), (need), sizeof *(arr)))

int jh__vec_grow(void *arrp, size_t *cap, size_t need, size_t elem);

/* qsort, unless a[0..n) is already in order (checked in n - 1 comparisons): code is mostly
 * announced in address order (node's 2,200 builtins), and glibc's merge sort still spends
 * n log n calls of cmp on sorted input. The result is qsort's where no two elements compare
 * equal (qsort is not stable). */
void jh__sort(void *a, size_t n, size_t elem, int (*cmp)(const void *, const void *));

#endif
