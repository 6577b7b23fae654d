/*
 * core.h — the context: configuration, the live-code registry and the channels it feeds.
 * Only src/core/ sees this; channels get a jh__chan_env (channels/channel.h).
 */
#ifndef JH__CORE_CORE_H
#define JH__CORE_CORE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/files.h"
#include "base/lock.h"
#include "base/registry.h"
#include "channels/channel.h"
#include "core/config.h"
#include "core/describe.h"
#include "core/idset.h"

struct jh_ctx {
    struct jh__lock lock;       /* every hook runs under it */
    _Atomic unsigned live;      /* channel bits live now; read without the lock */
    unsigned add_live, add_slots;   /* add_locked's: the slots whose add hook a value of live
                                       calls (bit i: slot i), for the last value seen; lock */
    struct {
        const struct jh__channel_ops *ops;
        void *state;            /* non-NULL while open (a failed lock-free channel's state
                                   stays until jh_close: see channel.h) */
        struct jh__chan_env env;
        unsigned gen;           /* jh__fork_gen when state was opened or last restarted */
    } chan[JH__NCHAN];
    struct jh__registry reg;    /* entries, while a channel has been live */
    struct jh__idset gone;      /* unstored ids removed (core/idset.h) */
    _Atomic uint64_t unstored_from; /* the first id handed out while nothing was retained
                                       (no channel live, no standby): every id below it was
                                       stored (UINT64_MAX: none yet) */
    _Atomic uint64_t next_id;
    _Atomic bool stored;        /* the registry has held an entry */
    bool closing;               /* jh_close has begun (under the lock) */
    bool log_ended;             /* jh_run_auditlog_close ran: no audit log opens again */
    _Atomic bool retain;        /* store entries with no channel live (standby, or since a
                                   jh_channels_set) */
    _Atomic unsigned fork_gen;  /* jh__fork_gen when per-process state was last restarted */
    _Atomic unsigned lf_gen;    /* the same for the lock-free channels' state alone: a fork
                                   child's jh_log_* restarts only that (lockfree_state) */
    struct jh__config cfg;
    struct jh__dir dir;
    struct jh__strings strings;
    jh_ctx *next_ctx;           /* all contexts (core/fork.c) */
};

/* Every context of the process, for the fork handler. */
void jh__ctx_list_add(jh_ctx *ctx);
void jh__ctx_list_remove(jh_ctx *ctx);
/* fn on every context, the list locked (a context in it is not freed meanwhile; one being
 * closed says so: jh_channels_set returns -ESHUTDOWN). */
void jh__ctx_each(void (*fn)(jh_ctx *ctx, void *arg), void *arg);
void jh__fork_install(void);

/* Channel i is live now (read without the lock). */
static inline bool jh__chan_live(const jh_ctx *ctx, int i)
{
    return atomic_load_explicit(&ctx->live, memory_order_relaxed) & ctx->chan[i].ops->bit;
}
/* A channel with lock-free entry points (jh_log_*): kept open until jh_close. */
static inline bool jh__chan_lockfree(const struct jh__channel_ops *ops)
{
    return ops->log_memory || ops->log_event;
}
/* Channel i failed doing what: said once, switched off (closed unless lock-free). Lock held. */
void jh__channel_failed(jh_ctx *ctx, int i, const char *what, int err);

/* Take the context lock; in a fork child's first call, restart per-process state first. */
void jh__ctx_lock(jh_ctx *ctx);
static inline void jh__ctx_unlock(jh_ctx *ctx) { jh__unlock(&ctx->lock); }

#endif
