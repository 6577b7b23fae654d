/*
 * restart.c — a fork child's restart, and the audit log's lock-free entry points.
 *
 * The fork handler (fork.c) only bumps the generation; each context restarts its
 * per-process state (files named by pid, the attach socket, the live code announced again)
 * at the child's first call, under its lock (jh__ctx_lock, check_fork). When that first
 * call is a jh_log_*, which may come from a signal handler that interrupted malloc, stdio or
 * the loader, only the lock-free channels restart there, async-signal-safely
 * (check_fork_lockfree; channel.h, forked_lockfree), and the rest waits for the child's
 * first other call.
 */
#include <errno.h>

#include "core/control.h"
#include "core/core.h"

/* In a fork child's first call: per-process state starts afresh. Lock held. */
static void check_fork(jh_ctx *ctx)
{
    unsigned gen = jh__fork_generation();
    if (atomic_load_explicit(&ctx->fork_gen, memory_order_relaxed) == gen)
        return;
    jh__control_start(ctx);                 /* the child's own socket */
    for (int i = 0; i < JH__NCHAN; i++) {
        /* (gen: a lock-free channel that a jh_log_* restarted already, check_fork_lockfree) */
        if (!jh__chan_live(ctx, i) || !ctx->chan[i].ops->forked || ctx->chan[i].gen == gen)
            continue;
        int err = ctx->chan[i].ops->forked(ctx->chan[i].state);
        ctx->chan[i].gen = gen;
        if (err < 0)
            jh__channel_failed(ctx, i, "restart after fork", err);
    }
    /* Only now, release: the lock-free entry points (lockfree_state) pass without the lock
     * once they see it, and must then find the restarted state (the audit log: the child's
     * file mapped), never the parent's mapping being dropped. */
    atomic_store_explicit(&ctx->lf_gen, gen, memory_order_release);
    atomic_store_explicit(&ctx->fork_gen, gen, memory_order_release);
}

/* A fork child's first call is a jh_log_*, perhaps from a signal handler that interrupted
 * malloc, stdio or the loader on this thread: only the lock-free channels' state restarts
 * here, async-signal-safely (channel.h, forked_lockfree): the audit log's file, its header
 * and the code that is live. The control socket's thread and the other channels' files
 * wait for the child's first other call (check_fork). Lock held. */
static void check_fork_lockfree(jh_ctx *ctx)
{
    unsigned gen = jh__fork_generation();
    if (atomic_load_explicit(&ctx->lf_gen, memory_order_relaxed) == gen)
        return;
    for (int i = 0; i < JH__NCHAN; i++) {
        const struct jh__channel_ops *ops = ctx->chan[i].ops;
        if (!jh__chan_live(ctx, i) || !jh__chan_lockfree(ops) || !ops->forked_lockfree ||
            ctx->chan[i].gen == gen)
            continue;
        int err = ops->forked_lockfree(ctx->chan[i].state);
        ctx->chan[i].gen = gen;
        if (err < 0)
            jh__channel_failed(ctx, i, "restart after fork", err);
    }
    atomic_store_explicit(&ctx->lf_gen, gen, memory_order_release);
}

/* This thread is taking a context's lock to restart it in a fork child, or to wait for
 * that: a signal handler that interrupts it there must not wait on the lock too. */
static _Thread_local volatile bool in_restart;     /* (volatile: a signal handler reads it) */

void jh__ctx_lock(jh_ctx *ctx)
{
    if (JH__UNLIKELY(atomic_load_explicit(&ctx->fork_gen, memory_order_relaxed) !=
                     jh__fork_generation())) {
        bool was = in_restart;
        in_restart = true;
        jh__lock(&ctx->lock);
        check_fork(ctx);
        in_restart = was;
        return;
    }
    jh__lock(&ctx->lock);
    check_fork(ctx);
}

/* ---- the audit log's lock-free entry points ---------------------------------------------- */
static void *lockfree_state(jh_ctx *ctx, int i)
{
    /* acquire: pairs with jh_open's fetch_or, so the state stored before it is seen */
    if (!(atomic_load_explicit(&ctx->live, memory_order_acquire) & ctx->chan[i].ops->bit))
        return NULL;
    /* A fork child's first call restarts the lock-free channels' state under the lock,
     * once, async-signal-safely (check_fork_lockfree). */
    if (JH__UNLIKELY(atomic_load_explicit(&ctx->lf_gen, memory_order_acquire) !=
                     jh__fork_generation())) {
        /* a signal handler (a profiler's, a crash handler logging the fault) on a thread
         * that holds the lock for a restart or waits for it: the record is dropped
         * rather than the thread hung */
        if (in_restart)
            return NULL;
        in_restart = true;
        jh__lock(&ctx->lock);
        check_fork_lockfree(ctx);
        jh__unlock(&ctx->lock);
        in_restart = false;
        if (!jh__chan_live(ctx, i))
            return NULL;
    }
    return ctx->chan[i].state;
}

int jh_log_memory(jh_ctx *ctx, const void *addr, size_t size, const char *type_hint)
{
    if (!ctx || (!addr && size))
        return -EINVAL;
    int e = errno;                  /* a signal handler's call leaves the program's errno */
    void *st = lockfree_state(ctx, JH__CH_AUDITLOG);
    int rc = st ? ctx->chan[JH__CH_AUDITLOG].ops->log_memory(st, addr, size, type_hint) : 0;
    errno = e;
    return rc;
}

int jh_log_event(jh_ctx *ctx, const char *name, const struct jh_attr *attrs, size_t nattrs)
{
    if (!ctx || !name || (nattrs && !attrs))
        return -EINVAL;
    for (size_t i = 0; i < nattrs; i++)
        if (!attrs[i].key || (unsigned)attrs[i].kind > JH_ATTR_ADDR)
            return -EINVAL;
    int e = errno;
    void *st = lockfree_state(ctx, JH__CH_AUDITLOG);
    int rc = st ? ctx->chan[JH__CH_AUDITLOG].ops->log_event(st, name, attrs, nattrs) : 0;
    errno = e;
    return rc;
}
