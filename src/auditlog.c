/* auditlog.c — the auditlog channel. Not written yet: it refuses to start, and says so once. */
#include "internal.h"

static int auditlog_open(jh_ctx *ctx, void **state)
{
    (void)state;
    jh__log(ctx, JH_LOG_WARN, "auditlog: channel not implemented yet");
    return -ENOSYS;
}

const struct jh_channel_ops jh__auditlog_ops = {
    .name = "auditlog", .bit = JH_AUDITLOG, .open = auditlog_open,
};

int jh__auditlog_memory(void *state, const void *addr, size_t size, const char *type_hint)
{
    (void)state; (void)addr; (void)size; (void)type_hint;
    return -ENOSYS;
}

int jh__auditlog_event(void *state, const char *name, const struct jh_attr *attrs, size_t n)
{
    (void)state; (void)name; (void)attrs; (void)n;
    return -ENOSYS;
}
