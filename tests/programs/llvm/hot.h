/* hot.h — inlined into work(): its rows in work's line table name this file. Four dependent
 * multiply-xorshift rounds, so that most of the loop's cycles (and of perf's samples, which
 * land on the instruction after a slow one) are in this file's rows whatever the load: one
 * round, strength-reduced by LLVM to three instructions, held 0.01-1.5% of work's samples
 * on a loaded machine, some runs none (llvm_perf.sh failed). */
static inline __attribute__((always_inline)) long mix(long i)
{
    long x = i;
    for (int k = 0; k < 4; k++) {
        x *= 2654435761L;
        x ^= x >> 13;
    }
    return x;
}
