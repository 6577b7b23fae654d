/*
 * gdb_object_win.c — jh_gdb_object_* on Windows, which has no gdb channel (absent_win.c):
 * the calls check their arguments as on ELF and register nothing.
 */
#include <errno.h>

#include "core/core.h"

int jh_gdb_object_add(jh_ctx *ctx, const void *elf, size_t len, jh_gdb_object **obj)
{
    if (obj)
        *obj = NULL;
    return !ctx || !elf || !obj || len < 64 ? -EINVAL : -ENODEV;
}

int jh_gdb_object_remove(jh_ctx *ctx, jh_gdb_object *obj)
{
    return !ctx || !obj ? -EINVAL : 0;
}

int jh_gdb_listening(void)
{
    return 0;
}
