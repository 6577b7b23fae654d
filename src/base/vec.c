/* vec.c — see vec.h. */
#include "base/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int jh__vec_grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap < 8 ? 16 : *cap;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : 2 * n;
    if (!elem || n > SIZE_MAX / elem)
        return -ENOMEM;
    void *old;
    memcpy(&old, arrp, sizeof old);     /* the caller's pointer, whatever its type */
    void *p = realloc(old, n * elem);
    if (!p)
        return -ENOMEM;
    memcpy(arrp, &p, sizeof p);
    *cap = n;
    return 0;
}

void jh__sort(void *a, size_t n, size_t elem, int (*cmp)(const void *, const void *))
{
    const char *p = a;
    size_t i = 1;
    while (i < n && cmp(p + (i - 1) * elem, p + i * elem) <= 0)
        i++;
    if (i < n)
        qsort(a, n, elem, cmp);
}
