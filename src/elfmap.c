/* elfmap.c — the elfmap channel. Not written yet: it refuses to start, and says so once. */
#include "internal.h"

static int elfmap_open(jh_ctx *ctx, void **state)
{
    (void)state;
    jh__log(ctx, JH_LOG_WARN, "elfmap: channel not implemented yet");
    return -ENOSYS;
}

const struct jh_channel_ops jh__elfmap_ops = {
    .name = "elfmap", .bit = JH_ELFMAP, .open = elfmap_open,
};
