/* gdb.c — the gdb channel. Not written yet: it refuses to start, and says so once. */
#include "internal.h"

static int gdb_open(jh_ctx *ctx, void **state)
{
    (void)state;
    jh__log(ctx, JH_LOG_WARN, "gdb: channel not implemented yet");
    return -ENOSYS;
}

const struct jh_channel_ops jh__gdb_ops = {
    .name = "gdb", .bit = JH_GDB, .open = gdb_open,
};
