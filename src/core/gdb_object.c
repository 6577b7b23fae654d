/*
 * gdb_object.c — jh_gdb_object_*: a ready-made ELF object registered as it is with the GDB
 * JIT interface (jitherald.h). The list, its lock and the hook are gdb_jit.c's; this checks
 * the arguments and that the context's gdb channel is live.
 */
#include <errno.h>
#include <string.h>

#include "channels/gdb_jit.h"
#include "core/core.h"

static int refused(jh_ctx *ctx, const char *fn, const char *why)
{
    jh__diag(&ctx->cfg.diag, JH_LOG_INFO, "%s: -EINVAL: %s", fn, why);
    return -EINVAL;
}

int jh_gdb_object_add(jh_ctx *ctx, const void *elf, size_t len, jh_gdb_object **obj)
{
    static const unsigned char magic[4] = { 0x7f, 'E', 'L', 'F' };
    if (!ctx)
        return -EINVAL;
    if (!obj)
        return refused(ctx, "jh_gdb_object_add", "obj is NULL");
    *obj = NULL;
    if (!elf)
        return refused(ctx, "jh_gdb_object_add", "elf is NULL");
    if (len < 64)
        return refused(ctx, "jh_gdb_object_add", "len is shorter than an ELF header (64 bytes)");
    if (memcmp(elf, magic, sizeof magic) != 0)
        return refused(ctx, "jh_gdb_object_add", "elf does not start with the ELF magic");
    if (!(jh_channels(ctx) & JH_GDB))
        return -ENODEV;
    struct jit_code_entry *ce;
    int err = jh__gdb_object_add(elf, len, &ce);
    if (!err)
        *obj = (jh_gdb_object *)ce;
    return err;
}

int jh_gdb_object_remove(jh_ctx *ctx, jh_gdb_object *obj)
{
    if (!ctx)
        return -EINVAL;
    if (!obj)
        return refused(ctx, "jh_gdb_object_remove", "obj is NULL");
    jh__gdb_object_remove((struct jit_code_entry *)obj);
    return 0;
}

int jh_gdb_listening(void)
{
    return jh__gdb_listening();
}
