/*
 * unwind_llvm.c — for tests/integration/unwind_llvm.sh, linked with LLVM's libunwind
 * (libunwind.so.1) ahead of libgcc: from below the five JIT frames of the chain
 * (tests/support/chain.h), LLVM's _Unwind_Backtrace must pass d, c, b, a, main in order
 * and reach our main; the unwind channel must have chosen LLVM mode. Twice: the second
 * time re-added at the same addresses. With the argument "control" the channel is off
 * (and the walk must then stop at the first JIT frame: exit 1).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "chain.h"
#include "channels/unwind_stats.h"

static mj_program *prog;
static struct chain_walk walk;
static int depth;
int main(int argc, char **argv);

static int64_t cb(int64_t x)
{
    void *pcs[128];
    depth = chain_unwind_backtrace(pcs, 128, NULL, NULL);
    chain_walk_begin(&walk, prog, "main", (const void *)main, NULL);
    for (int i = 0; i < depth; i++)
        chain_walk_pc(&walk, (uintptr_t)pcs[i]);
    return x;
}

int main(int argc, char **argv)
{
    Dl_info di;
    if (!dladdr((void *)_Unwind_Backtrace, &di) || !strstr(di.dli_fname, "libunwind.so.1")) {
        printf("_Unwind_Backtrace comes from %s, not LLVM's libunwind\n", di.dli_fname);
        return 2;
    }
    mj_set_callback(cb);
    int control = argc > 1 && !strcmp(argv[1], "control");
    jh_ctx *jh = chain_open(control ? 0 : JH_UNWIND);
    if (!jh)
        return 2;
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    if (!control && st.mode != JH__UW_LLVM) {
        printf("channel mode %d, expected LLVM (%d)\n", st.mode, JH__UW_LLVM);
        return 2;
    }
    int r = 0;
    for (int round = 0; round < 2; round++) {   /* again after re-adding at the same place */
        if (!(prog = chain_compile(jh, "chain.mini")))
            return 2;
        mj_run(prog, "main", NULL, 0);
        char buf[128];
        printf("round %d: %s\n", round, chain_walk_summary(&walk, depth, buf, sizeof buf));
        r |= !chain_walk_complete(&walk);
        mj_free(prog);
    }
    jh_close(jh);
    return r;
}
