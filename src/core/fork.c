/*
 * fork.c — the one fork handler. Before fork(): take the context list's lock, every
 * context's lock (and through the channels' fork hooks, their own locks), then every
 * process-wide lock (base/lock.h); after it, release them all on both sides. So the child
 * never inherits a lock some other thread held, whatever it was doing: inside jh_open, in
 * the middle of a perf map line, growing the audit log. The child then only bumps the fork
 * generation; each context restarts its per-process files on its first call (jh__ctx_lock),
 * so a child that only calls exec() pays nothing.
 */
#include "core/core.h"

static struct jh__lock list_lock = JH__LOCK_INIT("contexts");
static jh_ctx *all_ctx;

void jh__ctx_list_add(jh_ctx *ctx)
{
    jh__lock(&list_lock);
    ctx->next_ctx = all_ctx;
    all_ctx = ctx;
    jh__unlock(&list_lock);
}

void jh__ctx_list_remove(jh_ctx *ctx)
{
    jh__lock(&list_lock);
    for (jh_ctx **p = &all_ctx; *p; p = &(*p)->next_ctx) {
        if (*p == ctx) {
            *p = ctx->next_ctx;
            break;
        }
    }
    jh__unlock(&list_lock);
}

void jh__ctx_each(void (*fn)(jh_ctx *ctx, void *arg), void *arg)
{
    jh__lock(&list_lock);
    for (jh_ctx *c = all_ctx; c; c = c->next_ctx)
        fn(c, arg);
    jh__unlock(&list_lock);
}

static void prepare(void)
{
    jh__lock(&list_lock);
    for (jh_ctx *c = all_ctx; c; c = c->next_ctx) {
        jh__lock(&c->lock);
        for (int i = 0; i < JH__NCHAN; i++)
            if (c->chan[i].state && c->chan[i].ops->fork_prepare)
                c->chan[i].ops->fork_prepare(c->chan[i].state);
    }
    jh__locks_take_all();
}

static void release(bool child)
{
    jh__locks_release_all();
    for (jh_ctx *c = all_ctx; c; c = c->next_ctx) {
        for (int i = JH__NCHAN - 1; i >= 0; i--)
            if (c->chan[i].state && c->chan[i].ops->fork_release)
                c->chan[i].ops->fork_release(c->chan[i].state, child);
        jh__unlock(&c->lock);
    }
    jh__unlock(&list_lock);
}

static void parent(void) { release(false); }

static void child(void)
{
    atomic_fetch_add(&jh__fork_gen, 1);
    release(true);
}

static void install(void) { jh__atfork(prepare, parent, child); }

void jh__fork_install(void)
{
    static struct jh__once once = JH__ONCE_INIT;
    jh__call_once(&once, install);
}
