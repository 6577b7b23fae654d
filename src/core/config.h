/*
 * config.h — what a context is configured with: jh_options and the environment, read in
 * this one place. Every configuration variable is ignored under JH_OPT_IGNORE_ENV:
 *   JITHERALD                  channels: perfmap,jitdump,gdb,unwind,elfmap,auditlog,all,none;
 *                              standby (retain for jh_channels_set)
 *   JITHERALD_DIR              directory for jitdump, elfmap and audit-log files
 *   JITHERALD_GDB_BATCH        functions per debugger image
 *   JITHERALD_GDB_DEFER        1: new code reaches debuggers at jh_flush
 *   JITHERALD_AUDITLOG_HELPER  0: the audit log's writers do not prepare its file ahead
 *   JITHERALD_AUDITLOG_REFS    0: the audit log copies code a loaded object's file holds
 *   JITHERALD_ELFMAP_FREEZE    1: no elfmap image file changes once written
 * Without a log callback, errors and warnings reach stderr (base/diag.h: once per cause,
 * with the fix); JITHERALD_DEBUG=1 (read even then: it changes nothing but what is printed)
 * adds info and debug.
 */
#ifndef JH__CORE_CONFIG_H
#define JH__CORE_CONFIG_H

#include <stdbool.h>

#include "base/diag.h"
#include "channels/channel.h"
#include "jitherald.h"

struct jh__config {
    unsigned channels;          /* requested (JH_PERFMAP ...) */
    unsigned flags;             /* JH_OPT_* */
    bool standby;               /* JH_OPT_STANDBY, or "standby" in $JITHERALD */
    unsigned attach_mask;       /* what jitherald attach may switch (jh_options.attach_channels) */
    char *dir;                  /* owned */
    char *engine;               /* owned, "jit" by default */
    struct jh__diag diag;
    struct jh__gdb_opts gdb;
    struct jh__auditlog_opts auditlog;
    struct jh__elfmap_opts elfmap;
};

/* Fill c from opts (may be NULL) and the environment. 0, -EINVAL (opts malformed: sz, a
 * non-zero unknown tail, unknown flags or channel bits), -ENOMEM. Unknown channel names and
 * malformed numbers in the environment are reported through c->diag and ignored. */
int jh__config_load(struct jh__config *c, const struct jh_options *opts);
void jh__config_free(struct jh__config *c);

/* The libbpf rule for extensible structs: bytes past what this library knows must be 0. */
bool jh__tail_is_zero(const void *p, size_t known, size_t sz);

#endif
