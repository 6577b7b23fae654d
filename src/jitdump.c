/* jitdump.c — the jitdump channel. Not written yet: it refuses to start, and says so once. */
#include "internal.h"

static int jitdump_open(jh_ctx *ctx, void **state)
{
    (void)state;
    jh__log(ctx, JH_LOG_WARN, "jitdump: channel not implemented yet");
    return -ENOSYS;
}

const struct jh_channel_ops jh__jitdump_ops = {
    .name = "jitdump", .bit = JH_JITDUMP, .open = jitdump_open,
};
