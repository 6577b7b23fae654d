/*
 * context.c — contexts and the dispatch to channels.
 *
 * Every public call that changes what is live takes the context lock, updates the registry,
 * then calls each live channel's hook in a fixed order. A hook that fails gets its channel
 * reported once and switched off; the JIT's call still succeeds, because the code itself is
 * fine and the other tools still deserve to hear about it.
 *
 * With no channel live, jh_code_add only validates, hands out an id and marks it live in a
 * lock-free bit set: no lock, no copy (bench/core.c measures it) — unless the context
 * retains (standby, or since a jh_channels_set): then it stores the description as if a
 * channel were live, so that a channel switched on later hears every live function (the
 * rundown, chan_on). Switching runs under the context lock, so adds, moves and removes in
 * other threads come wholly before or after it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/run_close.h"
#include "core/control.h"
#include "core/core.h"

#define OPS(U, l, w, r) [JH__CH_##U] = &jh__##l##_ops,
static const struct jh__channel_ops *const channel_table[JH__NCHAN] = { JH__CHANNELS(OPS) };
#undef OPS

const char *jh_version(void) { return JH_VERSION_STRING; }

/* Why a channel failed or could not start, for the diagnostic: a file most of the time
 * (its directory, its file), so in words about files (jh__file_error: -ENOENT is "No such
 * file or directory", not jh_strerror's "no such code registered", which is about the
 * API's arguments); the library's own codes in jh_strerror's words. */
static const char *why(int err)
{
    return err > JH_EOVERLAP ? jh__file_error(err) : jh_strerror(err);
}

/* And what fixes it, for a file that failed after it was made (a channel that cannot
 * start has said why, and the fix, itself): the perf map's file is in /tmp, the others'
 * in JITHERALD_DIR; the unwinder and the debugger interface have none. */
static const char *fix(const struct jh__channel_ops *ops, int err)
{
    if (err <= JH_EOVERLAP || ops->bit == JH_UNWIND || ops->bit == JH_GDB)
        return "";
    return jh__diag_file_fix(err, ops->bit != JH_PERFMAP);
}

/* Close channel i (not live any more). Lock held. Its bookkeeping in each entry goes with
 * it: a channel switched on again starts from empty slots. */
static void chan_close(jh_ctx *ctx, int i)
{
    ctx->chan[i].ops->close(ctx->chan[i].state);
    ctx->chan[i].state = NULL;
    if (!ctx->chan[i].ops->slotless)
        for (struct jh__node *n = jh__reg_ceil(&ctx->reg, 0); n; n = jh__reg_next(&ctx->reg, n))
            jh__entry_of(n)->slot[i] = NULL;
}

/* A channel failed: say so once, switch it off, carry on without it. Lock held. A channel
 * with lock-free entry points is closed only by jh_close: a jh_log_* call that saw it live
 * an instant ago may still be using its state. */
void jh__channel_failed(jh_ctx *ctx, int i, const char *what, int err)
{
    const struct jh__channel_ops *ops = ctx->chan[i].ops;
    jh__diag(&ctx->cfg.diag, JH_LOG_ERROR, "%s: %s failed: %s%s; channel switched off, others "
             "carry on", ops->name, what, why(err), fix(ops, err));
    atomic_fetch_and(&ctx->live, ~ops->bit);
    if (jh__chan_lockfree(ops))
        return;
    chan_close(ctx, i);
}

#define EACH_LIVE(ctx, i, hook)                                                    \
    for (int i = 0; i < JH__NCHAN; i++)                                            \
        if (jh__chan_live(ctx, i) && ctx->chan[i].ops->hook)
#define EACH_LIVE_REVERSE(ctx, i, hook)                                            \
    for (int i = JH__NCHAN - 1; i >= 0; i--)                                       \
        if (jh__chan_live(ctx, i) && ctx->chan[i].ops->hook)

/* ---- open and close ---------------------------------------------------------------------- */
static void ctx_free(jh_ctx *ctx)
{
    jh__idset_free(&ctx->gone);
    jh__strings_free(&ctx->strings);
    jh__config_free(&ctx->cfg);
    jh__lock_fini(&ctx->lock);
    free(ctx);
}

/* Open channel i and make it live. Lock held. 0, or why not (said here): -ENOSYS when
 * it is not built for this platform. */
static int chan_open(jh_ctx *ctx, int i)
{
    const struct jh__channel_ops *ops = channel_table[i];
    if (!ops->open) {           /* not built here: "all" means all there are */
        bool all = ctx->cfg.channels == JH_ALL;
        jh__diag(&ctx->cfg.diag, all ? JH_LOG_DEBUG : JH_LOG_ERROR, "%s: not built for "
                 "this platform (nothing here reads it); the other channels carry on",
                 ops->name);
        return -ENOSYS;
    }
    ctx->chan[i].env = (struct jh__chan_env){
        .engine = ctx->cfg.engine, .diag = &ctx->cfg.diag, .reg = &ctx->reg,
        .dir = &ctx->dir, .slot = i,
        .opts = i == JH__CH_GDB ? (const void *)&ctx->cfg.gdb :
                i == JH__CH_AUDITLOG ? (const void *)&ctx->cfg.auditlog :
                i == JH__CH_ELFMAP ? (const void *)&ctx->cfg.elfmap : NULL };
    void *state = NULL;
    int err = ops->open(&ctx->chan[i].env, &state);
    if (err < 0) {
        jh__diag(&ctx->cfg.diag, JH_LOG_ERROR, "%s: cannot start: %s; the other channels "
                 "carry on", ops->name, why(err));
        return err;
    }
    ctx->chan[i].state = state;
    ctx->chan[i].gen = jh__fork_generation();
    atomic_fetch_or(&ctx->live, ops->bit);
    return 0;
}

int jh_open(jh_ctx **out, const struct jh_options *opts)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    jh_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return -ENOMEM;
    int err = jh__config_load(&ctx->cfg, opts);
    if (err) {
        free(ctx);
        return err;
    }
    jh__lock_init(&ctx->lock, "context");
    atomic_init(&ctx->next_id, 1);
    atomic_init(&ctx->unstored_from, UINT64_MAX);
    atomic_init(&ctx->fork_gen, jh__fork_generation());
    atomic_init(&ctx->lf_gen, jh__fork_generation());
    ctx->dir = (struct jh__dir){ .path = ctx->cfg.dir, .err = 1 };
    for (int i = 0; i < JH__NCHAN; i++)
        ctx->chan[i].ops = channel_table[i];

    /* On the fork handler's list before any channel opens, and locked while they do: a fork
     * in the middle of jh_open takes this lock like any other. */
    jh__fork_install();
    jh__ctx_list_add(ctx);
    jh__lock(&ctx->lock);
    int strict_err = 0;
    for (int i = 0; i < JH__NCHAN; i++) {
        if (!(ctx->cfg.channels & channel_table[i]->bit))
            continue;
        err = chan_open(ctx, i);
        if (err < 0 && !strict_err && !(err == -ENOSYS && ctx->cfg.channels == JH_ALL))
            strict_err = err;
    }
    atomic_store(&ctx->retain, ctx->cfg.standby);
    jh__control_start(ctx);
    jh__unlock(&ctx->lock);
    if (strict_err && (ctx->cfg.flags & JH_OPT_STRICT)) {
        jh_close(ctx);
        return JH_ECHANNEL;
    }
    *out = ctx;
    return 0;
}

unsigned jh_channels(const jh_ctx *ctx)
{
    return ctx ? atomic_load(&ctx->live) : 0;
}

/* Channel i hears every live function (the rundown), then is live. Lock held. */
static int chan_on(jh_ctx *ctx, int i)
{
    const struct jh__channel_ops *ops = channel_table[i];
    void *st = ctx->chan[i].state;      /* a lock-free channel switched off keeps its state */
    if (st && ctx->chan[i].gen != jh__fork_generation() && ops->forked) {
        /* kept through a fork while off: the parent's files */
        int err = ops->forked(st);
        if (err < 0) {
            jh__channel_failed(ctx, i, "restart after fork", err);
            return err;
        }
        ctx->chan[i].gen = jh__fork_generation();
    }
    if (!st) {
        int err = chan_open(ctx, i);
        if (err < 0)
            return err;
        st = ctx->chan[i].state;
        atomic_fetch_and(&ctx->live, ~ops->bit);    /* live once it has heard them all */
    }
    if (ops->rundown)
        ops->rundown(st, true);
    /* one batch, as jh_code_add_many's: the gdb channel one image for all of it (not an
     * image per function, merged by 64 and 16), the unwind channel one run */
    int err = ops->batch ? ops->batch(st, true) : 0;
    for (struct jh__node *n = jh__reg_ceil(&ctx->reg, 0); n && err >= 0;
         n = jh__reg_next(&ctx->reg, n))
        err = ops->add(st, jh__entry_of(n));
    int berr = ops->batch ? ops->batch(st, false) : 0;
    if (err >= 0 && berr < 0)
        err = berr;
    if (err < 0) {
        jh__channel_failed(ctx, i, "announcing the code live at switch-on", err);
        return err;
    }
    if (ops->rundown)
        ops->rundown(st, false);
    err = ops->flush ? ops->flush(st) : 0;         /* debuggers hear it now */
    if (err < 0) {
        jh__channel_failed(ctx, i, "flushing", err);
        return err;
    }
    atomic_fetch_or_explicit(&ctx->live, ops->bit, memory_order_release);
    return 0;
}

/* Channel i is switched off while the program runs. Lock held. */
static void chan_off(jh_ctx *ctx, int i)
{
    const struct jh__channel_ops *ops = channel_table[i];
    atomic_fetch_and(&ctx->live, ~ops->bit);
    if (jh__chan_lockfree(ops))          /* jh_log_* may be in it: kept until jh_close */
        return;
    if (ops->off)
        ops->off(ctx->chan[i].state);
    chan_close(ctx, i);
}

int jh_channels_set(jh_ctx *ctx, unsigned channels)
{
    if (!ctx || (channels & ~(unsigned)JH_ALL))
        return -EINVAL;
    jh__ctx_lock(ctx);
    if (ctx->closing) {
        jh__ctx_unlock(ctx);
        return -ESHUTDOWN;
    }
    if (!atomic_exchange(&ctx->retain, true) && !atomic_load(&ctx->live) &&
        atomic_load(&ctx->unstored_from) != UINT64_MAX)
        jh__diag(&ctx->cfg.diag, JH_LOG_WARN, "channels switched on in a context that "
                 "retained nothing (opened with no channel and without JH_OPT_STANDBY or "
                 "JITHERALD=standby): code added before now is not announced to them");
    unsigned live = atomic_load(&ctx->live);
    for (int i = JH__NCHAN - 1; i >= 0; i--)
        if ((live & channel_table[i]->bit) && !(channels & channel_table[i]->bit))
            chan_off(ctx, i);
    int first_err = 0;
    for (int i = 0; i < JH__NCHAN; i++) {
        if (!(channels & channel_table[i]->bit) || jh__chan_live(ctx, i))
            continue;
        /* the process has ended its record (a `jitherald attach --on auditlog` arriving
         * during exit): a new log would never get its `close` */
        int err = i == JH__CH_AUDITLOG && ctx->log_ended ? -ESHUTDOWN : chan_on(ctx, i);
        if (err < 0 && !first_err && !(err == -ENOSYS && channels == JH_ALL))
            first_err = err;
    }
    int now = (int)atomic_load(&ctx->live);
    jh__ctx_unlock(ctx);
    return first_err ? first_err : now;
}

int jh_run_auditlog_close(jh_ctx *ctx)
{
    if (!ctx)
        return -EINVAL;
    jh__ctx_lock(ctx);          /* (in a fork child: the child's log, started first) */
    atomic_fetch_and(&ctx->live, ~(unsigned)JH_AUDITLOG);
    ctx->log_ended = true;
    bool open = ctx->chan[JH__CH_AUDITLOG].state != NULL;
    if (open)
        chan_close(ctx, JH__CH_AUDITLOG);
    jh__ctx_unlock(ctx);
    return open;
}

void jh_close(jh_ctx *ctx)
{
    if (!ctx)
        return;
    jh__ctx_lock(ctx);
    ctx->closing = true;
    /* Channels drop their registrations for everything still live, then close. */
    for (int i = JH__NCHAN - 1; i >= 0; i--) {
        if (ctx->chan[i].state)
            ctx->chan[i].ops->close(ctx->chan[i].state);
        ctx->chan[i].state = NULL;
    }
    atomic_store(&ctx->live, 0);
    for (struct jh__node *n; (n = ctx->reg.root);) {
        jh__reg_erase(&ctx->reg, n);
        jh__entry_free(jh__entry_of(n));
    }
    jh__reg_fini(&ctx->reg);
    jh__unlock(&ctx->lock);
    jh__ctx_list_remove(ctx);
    ctx_free(ctx);
}

/* ---- the calls ------------------------------------------------------------------------- */
/* Nothing live, nothing retained: an id, no copy, no lock. */
static bool unkept(jh_ctx *ctx, uint64_t *id)
{
    if (atomic_load_explicit(&ctx->live, memory_order_relaxed) ||
        atomic_load_explicit(&ctx->retain, memory_order_relaxed))
        return false;
    uint64_t n = atomic_fetch_add_explicit(&ctx->next_id, 1, memory_order_relaxed);
    uint64_t u = atomic_load_explicit(&ctx->unstored_from, memory_order_relaxed);
    while (n < u && !atomic_compare_exchange_weak(&ctx->unstored_from, &u, n))
        ;
    if (id)
        *id = n;
    return true;
}

/* e (a new entry) into the registry and every live channel; the context lock held. */
static int add_entry_locked(jh_ctx *ctx, struct jh__entry *e, uint64_t *id)
{
    e->node.id = atomic_fetch_add_explicit(&ctx->next_id, 1, memory_order_relaxed);
    int err = jh__reg_insert(&ctx->reg, &e->node);
    if (err) {
        jh__idset_mark(&ctx->gone, e->node.id);     /* never handed out (and maybe in the
                                                       unstored range: see jh_code_remove) */
        jh__entry_free(e);
        return err;
    }
    atomic_store_explicit(&ctx->stored, true, memory_order_release);
    /* the live channels' slots, in order, from one load and the mask kept for it (~60
     * instructions a function in a batch, issue 30): a hook failing switches off its own
     * channel only, which the loop has passed */
    unsigned live = atomic_load_explicit(&ctx->live, memory_order_relaxed);
    if (live != ctx->add_live) {
        ctx->add_slots = 0;
        for (int i = 0; i < JH__NCHAN; i++)
            if ((live & channel_table[i]->bit) && channel_table[i]->add)
                ctx->add_slots |= 1u << i;
        ctx->add_live = live;
    }
    for (unsigned todo = ctx->add_slots; todo; todo &= todo - 1) {
        int i = __builtin_ctz(todo);
        int cerr = ctx->chan[i].ops->add(ctx->chan[i].state, e);
        if (cerr < 0)
            jh__channel_failed(ctx, i, "announcing code", cerr);
    }
    if (id)
        *id = e->node.id;
    return 0;
}

/* c (prepared) into the registry and every live channel; the context lock held. */
static int add_locked(jh_ctx *ctx, const struct jh_code *c, uint64_t *id)
{
    struct jh__entry *e = jh__entry_new(&ctx->strings, c);
    return e ? add_entry_locked(ctx, e, id) : -ENOMEM;
}

int jh_code_add(jh_ctx *ctx, const struct jh_code *code, uint64_t *id)
{
    if (!ctx || !code)
        return -EINVAL;
    struct jh_code tmp;
    struct jh__buf cfi = { 0 };
    char why[320];
    int err;
    const struct jh_code *c = jh__code_prepare(&ctx->cfg.diag, code, &tmp, &cfi, why,
                                               sizeof why, &err);
    if (c && !unkept(ctx, id)) {
        jh__ctx_lock(ctx);
        err = add_locked(ctx, c, id);
        jh__ctx_unlock(ctx);
    }
    jh__buf_free(&cfi);
    return err;
}

/* Channels with a batch hook hear begin (true) and end (false) of a batch. */
static void batch_hooks(jh_ctx *ctx, bool begin, const char *what)
{
    EACH_LIVE(ctx, i, batch) {
        int cerr = ctx->chan[i].ops->batch(ctx->chan[i].state, begin);
        if (cerr < 0)
            jh__channel_failed(ctx, i, what, cerr);
    }
}

/* A description prepare() takes as it is (no older struct to read, no .eh_frame to lower). */
static bool plain(const struct jh_code *c)
{
    return c->sz == sizeof *c && c->unwind != JH_UNWIND_EH_FRAME;
}

/* The plain descriptions at codes[0..n) (n >= 1, codes[0] plain), up to JH__ENTRY_GROUP of
 * them, validated and added with their entries in one block (describe.c; a batch's ~200
 * instructions of malloc an entry, issue 30), in order, each refused one reported as
 * prepare() would; the context lock held. Returns how many of codes were taken. */
static size_t add_group_locked(jh_ctx *ctx, const struct jh_code *codes, size_t n,
                               uint64_t *ids, int *rc, int *added)
{
    const struct jh_code *ok[JH__ENTRY_GROUP];
    size_t at[JH__ENTRY_GROUP], nok = 0, k = 0;
    for (; k < n && k < JH__ENTRY_GROUP && plain(&codes[k]); k++) {
        char why[320];
        int err;
        if (ids)
            ids[k] = 0;
        if (jh__code_prepare(&ctx->cfg.diag, &codes[k], NULL, NULL, why, sizeof why, &err)) {
            ok[nok] = &codes[k], at[nok++] = k;
        } else if (rc) {
            rc[k] = err;
        }
    }
    struct jh__entry *e[JH__ENTRY_GROUP];
    bool block = nok > 1 && jh__entries_new(&ctx->strings, ok, nok, e);
    for (size_t j = 0; j < nok; j++) {
        uint64_t *id = ids ? &ids[at[j]] : NULL;
        int err = block ? add_entry_locked(ctx, e[j], id) : add_locked(ctx, ok[j], id);
        *added += !err;
        if (rc)
            rc[at[j]] = err;
    }
    return k;
}

int jh_code_add_many(jh_ctx *ctx, const struct jh_code *codes, size_t n, uint64_t *ids,
                     int *rc)
{
    if (!ctx || (!codes && n) || n > INT_MAX)
        return -EINVAL;
    int added = 0;
    bool locked = false;
    for (size_t i = 0; i < n; i++) {
        if (locked && plain(&codes[i])) {   /* (stored: a group from here) */
            i += add_group_locked(ctx, &codes[i], n - i, ids ? &ids[i] : NULL,
                                  rc ? &rc[i] : NULL, &added) - 1;
            continue;
        }
        struct jh_code tmp;
        struct jh__buf cfi = { 0 };
        char why[320];
        int err;
        uint64_t *id = ids ? &ids[i] : NULL;
        if (id)
            *id = 0;                                /* never an id: refused */
        const struct jh_code *c = jh__code_prepare(&ctx->cfg.diag, &codes[i], &tmp, &cfi, why,
                                                   sizeof why, &err);
        if (c && !locked && !unkept(ctx, id)) {
            jh__ctx_lock(ctx);
            batch_hooks(ctx, true, "announcing code");
            locked = true;
        }
        if (c && locked)
            err = add_locked(ctx, c, id);
        if (cfi.p)                      /* (JH_UNWIND_EH_FRAME only) */
            jh__buf_free(&cfi);
        added += !err;
        if (rc)
            rc[i] = err;
    }
    if (locked) {
        batch_hooks(ctx, false, "announcing code");
        jh__ctx_unlock(ctx);
    }
    return added;
}

/* Was id handed out while no channel was live (so not stored)? */
static bool unstored(jh_ctx *ctx, uint64_t id)
{
    return id >= atomic_load(&ctx->unstored_from) && id < atomic_load(&ctx->next_id);
}

static bool live_unstored(jh_ctx *ctx, uint64_t id)
{
    return unstored(ctx, id) && !jh__idset_has(&ctx->gone, id);
}

int jh_code_remove(jh_ctx *ctx, uint64_t id)
{
    if (!ctx)
        return -EINVAL;
    struct jh__entry *e = NULL;
    if (atomic_load_explicit(&ctx->stored, memory_order_acquire)) {
        jh__ctx_lock(ctx);
        e = jh__entry_of(jh__reg_by_id(&ctx->reg, id));
        if (e) {
            EACH_LIVE_REVERSE(ctx, i, remove) {
                int cerr = ctx->chan[i].ops->remove(ctx->chan[i].state, e);
                if (cerr < 0)
                    jh__channel_failed(ctx, i, "removing code", cerr);
            }
            jh__reg_erase(&ctx->reg, &e->node);
        }
        jh__ctx_unlock(ctx);
    }
    /* An id that was stored is live exactly while the registry has it. Unstored ids are
     * marked when removed, so that removing one again is -ENOENT; a stored id in their
     * range (an add that raced with the last channel failing) is marked too. A mark that
     * cannot be made (-ENOMEM) only loses that check. */
    int err = e ? 0 : -ENOENT;
    if (unstored(ctx, id) && jh__idset_mark(&ctx->gone, id) == 1)
        err = 0;
    jh__entry_free(e);
    return err;
}

int jh_code_remove_range(jh_ctx *ctx, const void *start, size_t len)
{
    uintptr_t lo = (uintptr_t)start, last = lo + (len - 1);
    if (!ctx || !len || last < lo)
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->stored, memory_order_acquire))
        return 0;
    jh__ctx_lock(ctx);
    int n = 0;
    struct jh__node *node = jh__reg_reaching(&ctx->reg, lo);
    if (!node || node->start > last) {  /* nothing there (node: a munmap of V8's heap, ~750
                                           at start, each asked of four contexts) */
        jh__ctx_unlock(ctx);
        return 0;
    }
    batch_hooks(ctx, true, "removing code");
    while (node && node->start <= last && n < INT_MAX) {
        struct jh__node *next = jh__reg_next(&ctx->reg, node);
        struct jh__entry *e = jh__entry_of(node);
        EACH_LIVE_REVERSE(ctx, i, remove) {
            int cerr = ctx->chan[i].ops->remove(ctx->chan[i].state, e);
            if (cerr < 0)
                jh__channel_failed(ctx, i, "removing code", cerr);
        }
        jh__reg_erase(&ctx->reg, node);
        jh__entry_free(e);
        n++;
        node = next;
    }
    batch_hooks(ctx, false, "removing code");
    jh__ctx_unlock(ctx);
    return n;
}

int jh_code_move(jh_ctx *ctx, uint64_t id, const void *new_start)
{
    if (!ctx || !new_start)
        return -EINVAL;
    jh__ctx_lock(ctx);
    int err = 0;
    struct jh__entry *e = jh__entry_of(jh__reg_by_id(&ctx->reg, id));
    uintptr_t to = (uintptr_t)new_start, from = e ? e->node.start : 0;
    if (!e) {
        err = live_unstored(ctx, id) ? 0 : -ENOENT;  /* nothing stored: nothing to tell */
    } else if (to == from) {
        /* nothing moved */
    } else if (to + (e->node.size - 1) < to) {
        err = -EINVAL;
    } else if (jh__reg_overlaps(&ctx->reg, to, e->node.size, &e->node)) {
        err = JH_EOVERLAP;
    } else {
        jh__reg_rekey(&ctx->reg, &e->node, to);
        e->fn.start = to;
        e->fn.bid_hash = 0;         /* (its start is part of it) */
        EACH_LIVE(ctx, i, move) {
            int cerr = ctx->chan[i].ops->move(ctx->chan[i].state, e, from);
            if (cerr < 0)
                jh__channel_failed(ctx, i, "moving code", cerr);
        }
    }
    jh__ctx_unlock(ctx);
    return err;
}

int jh_code_patched(jh_ctx *ctx, const void *addr, size_t len)
{
    if (!ctx || !addr || !len || (uintptr_t)addr + (len - 1) < (uintptr_t)addr)
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->live, memory_order_relaxed))
        return 0;
    jh__ctx_lock(ctx);
    struct jh__entry *e = jh__entry_of(jh__reg_find(&ctx->reg, (uintptr_t)addr));
    int err = 0;
    if (!e || len > e->node.size - ((uintptr_t)addr - e->node.start)) {
        err = -ENOENT;
    } else {
        EACH_LIVE(ctx, i, patched) {
            int cerr = ctx->chan[i].ops->patched(ctx->chan[i].state, e, (uintptr_t)addr, len);
            if (cerr < 0)
                jh__channel_failed(ctx, i, "refreshing patched code", cerr);
        }
    }
    jh__ctx_unlock(ctx);
    return err;
}

int jh_flush(jh_ctx *ctx)
{
    if (!ctx)
        return -EINVAL;
    if (!atomic_load_explicit(&ctx->live, memory_order_relaxed))
        return 0;
    jh__ctx_lock(ctx);
    EACH_LIVE(ctx, i, flush) {
        int cerr = ctx->chan[i].ops->flush(ctx->chan[i].state);
        if (cerr < 0)
            jh__channel_failed(ctx, i, "flushing", cerr);
    }
    jh__ctx_unlock(ctx);
    return 0;
}
