/*
 * test_slotless.c — a channel marked slotless (channels/channel.h: perfmap, the audit log)
 * keeps nothing in the entries' slot[]: closing it walks no entry to clear its slot, so a
 * slot it did set would outlive the channel and be read by it when it is switched on
 * again. Every channel is opened on one context (an elfmap, jitdump and audit log in a
 * temporary directory), functions are added, moved and patched, and each entry's slots
 * are read: a slotless channel's are all NULL, and each channel that keeps state there
 * (gdb, unwind, jitdump, elfmap) has set its own, so the check can tell.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"
#include "jitherald.h"

#define N 64

int main(void)
{
    char dir[] = "/tmp/jh-test-slotless.XXXXXX";
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *code = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        SKIP("mmap");
    for (long i = 0; i < 2 * page; i++)
        code[i] = 0xc3;                         /* ret */
    mprotect(code, 2 * (size_t)page, PROT_READ | PROT_EXEC);
    jh_ctx *ctx = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ALL, .dir = dir, .engine = "slotless",
                            .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    if (!ctx)
        return check_done();
    uint64_t ids[N];
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "fn%d", i);
        struct jh_code c = { .sz = sizeof c, .name = name, .start = code + 32 * i, .size = 32 };
        CHECK_EQ(jh_code_add(ctx, &c, &ids[i]), 0);
    }
    CHECK_EQ(jh_code_patched(ctx, code + 40, 4), 0);
    unsigned live = (unsigned)jh_channels(ctx);
    int slotless = 0, kept = 0;
    jh__ctx_lock(ctx);
    for (int i = 0; i < JH__NCHAN; i++) {
        const struct jh__channel_ops *ops = ctx->chan[i].ops;
        if (!ops || !ops->open || !(live & ops->bit))
            continue;
        size_t set = 0, n = 0;
        for (struct jh__node *e = jh__reg_ceil(&ctx->reg, 0); e; e = jh__reg_next(&ctx->reg, e), n++)
            set += jh__entry_of(e)->slot[i] != NULL;
        CHECK_EQ(n, N);
        if (ops->slotless) {
            slotless++;
            if (set)
                fprintf(stderr, "%s is marked slotless but set %zu slots\n", ops->name, set);
            CHECK_EQ(set, 0);
        } else {
            kept += set > 0;
        }
    }
    jh__ctx_unlock(ctx);
    CHECK_EQ(slotless, 2);      /* perfmap and the audit log, both live */
    CHECK(kept >= 2);           /* gdb and unwind at least */
    jh_close(ctx);
    munmap(code, 2 * (size_t)page);
    rm_tree(dir);
    return check_done();
}
