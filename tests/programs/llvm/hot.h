/* hot.h — inlined into work(): its rows in work's line table name this file. */
static inline __attribute__((always_inline)) long mix(long i)
{
    long x = i * 2654435761L;
    return x ^ (x >> 13);
}
