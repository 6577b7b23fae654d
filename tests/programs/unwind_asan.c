/*
 * unwind_asan.c — for tests/integration/unwind_asan.sh, built with -fsanitize=address:
 * the host callback below the five JIT frames of the chain (tests/support/chain.h) reads
 * freed memory, and ASan's report must walk through the JIT frames to main. With the
 * argument "control" the unwind channel is off.
 */
#include <stdlib.h>
#include <string.h>

#include "chain.h"

/* volatile: the bad read is the point, the compiler must neither warn nor drop it */
static char *volatile stale;

__attribute__((noinline)) static int64_t use_after_free(int64_t x)
{
    stale = malloc(16);
    free(stale);
    return x + stale[3];
}

int main(int argc, char **argv)
{
    mj_set_callback(use_after_free);
    jh_ctx *jh = chain_open(argc > 1 && !strcmp(argv[1], "control") ? 0 : JH_UNWIND);
    mj_program *p = jh ? chain_compile(jh, "chain.mini") : NULL;
    if (!p)
        return 2;
    return (int)mj_run(p, "main", NULL, 0);
}
