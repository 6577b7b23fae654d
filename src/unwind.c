/* unwind.c — the unwind channel. Not written yet: it refuses to start, and says so once. */
#include "internal.h"

static int unwind_open(jh_ctx *ctx, void **state)
{
    (void)state;
    jh__log(ctx, JH_LOG_WARN, "unwind: channel not implemented yet");
    return -ENOSYS;
}

const struct jh_channel_ops jh__unwind_ops = {
    .name = "unwind", .bit = JH_UNWIND, .open = unwind_open,
};
