/* work.c — the hot loop perf and callgrind see: work's own lines and hot.h's. */
#include "hot.h"

long work(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += mix(i) & 0xff;
    return s;
}
