/*
 * channel.h — the contract between the core and the channels, and everything a channel
 * may know of its context. Data flows one way: the core validates and copies a JIT's
 * description into an entry, keeps it in the registry, and hands the entry to each live
 * channel's hooks; a channel turns it into files or debugger/unwinder registrations
 * through the pure encoders of src/fmt/. A channel keeps no pointer to the context: what it
 * needs (the registry, read-only; diagnostics; the directory; its own options) is in the
 * jh__chan_env it was opened with.
 *
 * Hooks run with the context's lock held, so the hooks of one context never run
 * concurrently, and the registry view is stable inside them. A hook returning a negative
 * errno makes the core report the channel once, switch it off and close it; the JIT's
 * call still succeeds. The exceptions are log_memory/log_event, which run without the lock
 * (the audit log's lock-free hot path): for a channel that has them, the core keeps the
 * state alive until jh_close, so a racing call never touches freed memory.
 */
#ifndef JH__CHANNELS_CHANNEL_H
#define JH__CHANNELS_CHANNEL_H

#include <errno.h>     /* hooks speak negative errnos */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/chanlist.h"
#include "base/compat.h"
#include "base/diag.h"
#include "base/files.h"
#include "base/registry.h"
#include "fmt/build_id.h"
#include "fmt/cfi.h"
#include "fmt/func.h"
#include "jitherald.h"

/* Channel slots (JH__CH_AUDITLOG ... JH__NCHAN), in the order the core calls them on add
 * (reverse on remove): base/chanlist.h, the one list. */

/* One piece of live code: the core's copy of the description, its registry node and one
 * slot per channel for the channel's own bookkeeping (NULL until the channel sets it). */
struct jh__entry {
    struct jh__func fn;
    struct jh__node node;       /* node.start/size mirror fn.start/size; node.id the id */
    void *slot[JH__NCHAN];
    struct jh__entry_block *block;  /* the block it shares with others of its batch, freed
                                       with the last of them (core/describe.c), or NULL */
};

/* jh__bid_func_hash(&e->fn), hashed once for every channel whose images carry a build-id
 * (gdb, elfmap: ~1,000 instructions a LuaJIT trace each) and kept in e->fn.bid_hash, which
 * jh__bid_func then uses. Under the context lock, as every hook. */
static inline uint64_t jh__entry_bid(struct jh__entry *e)
{
    if (!e->fn.bid_hash)
        e->fn.bid_hash = jh__bid_func_hash(&e->fn);
    return e->fn.bid_hash;
}

/* e's FDE instructions encoded once (jh__cfi_memo) for every channel that writes e's
 * .eh_frame after this (gdb, unwind, jitdump, elfmap: four encodings of each LuaJIT trace);
 * called from the channels' one-function paths (a batch's functions go through the
 * encoders' own reuse of the FDE before: cfi_reuse.c). Without them (no memory) every
 * encoder encodes as before. Under the context lock, as every hook. */
static inline void jh__entry_insns(struct jh__entry *e)
{
    if (!e->fn.insns && e->fn.unwind != JH_UNWIND_NONE)
        (void)jh__cfi_memo(&e->fn);
}

static inline struct jh__entry *jh__entry_of(const struct jh__node *n)
{
    return n ? JH__CONTAINER_OF(n, struct jh__entry, node) : NULL;
}

/* Options of the channels that have any, filled in by the core (core/config.c) from
 * jh_options and the environment. */
struct jh__gdb_opts {
    uint32_t batch;             /* functions per full image */
    bool defer;                 /* register new code at jh_flush (JH_GDB_DEFER) */
};
struct jh__elfmap_opts {
    bool code_bti;              /* JH_OPT_CODE_BTI: the JIT's code pages are PROT_BTI */
    bool code_rwx;              /* JH_OPT_CODE_RWX: RWX code pages may be mapped over */
    bool freeze;                /* JITHERALD_ELFMAP_FREEZE: no image file changes once
                                   written (a change is a new generation) */
};
struct jh__auditlog_opts {
    uint64_t limit;             /* bytes */
    bool ahead;                 /* writers prepare the file ahead of the tail */
    bool refs;                  /* code in a loaded object's file recorded by reference
                                   (JITHERALD_AUDITLOG_REFS, auditlog_ref.c) */
};

/* What a channel is given at open and keeps for its whole life. */
struct jh__chan_env {
    const char *engine;                 /* the JIT's name, "jit" if none */
    const struct jh__diag *diag;
    const struct jh__registry *reg;     /* read-only; stable inside hooks */
    struct jh__dir *dir;                /* the context's directory: jh__chan_dir() */
    const void *opts;                   /* this channel's options (above), or NULL */
    int slot;                           /* this channel's index in jh__entry.slot */
};

/* The context's directory for files, created and checked on first use (refusals are
 * reported once). Only from hooks. */
static inline int jh__chan_dir(const struct jh__chan_env *env, const char **dir)
{
    return jh__dir_get(env->dir, env->diag, dir);
}

/* The registry, read-only, in address order. */
static inline struct jh__entry *jh__view_ceil(const struct jh__chan_env *env, uintptr_t addr)
{
    return jh__entry_of(jh__reg_ceil(env->reg, addr));
}
static inline struct jh__entry *jh__view_next(const struct jh__chan_env *env,
                                              const struct jh__entry *e)
{
    return jh__entry_of(jh__reg_next(env->reg, &e->node));
}
static inline struct jh__entry *jh__view_floor(const struct jh__chan_env *env, uintptr_t addr)
{
    return jh__entry_of(jh__reg_floor(env->reg, addr));
}
static inline struct jh__entry *jh__view_find(const struct jh__chan_env *env, uintptr_t addr)
{
    return jh__entry_of(jh__reg_find(env->reg, addr));
}

struct jh__channel_ops {
    const char *name;           /* as in $JITHERALD */
    unsigned bit;               /* JH_PERFMAP ... */
    /* Keeps nothing in the entries' slot[] (jh__chan_env.slot): closing it walks no entry
     * to clear its slot (~100 instructions an entry: node's audit log at exit). */
    bool slotless;
    /* NULL: the channel is not built for this platform, having no consumer there (on
     * Windows: channels/absent_win.c); the core never opens it, jh_channels() never shows
     * it, and asking for it by name is reported. */
    int  (*open)(const struct jh__chan_env *env, void **state);
    int  (*add)(void *state, struct jh__entry *e);
    int  (*remove)(void *state, struct jh__entry *e);
    int  (*move)(void *state, struct jh__entry *e, uintptr_t old_start);  /* e is at the new place */
    int  (*patched)(void *state, struct jh__entry *e, uintptr_t addr, size_t len);
    int  (*flush)(void *state);
    /* Around the removals of one jh_code_remove_range or the adds of one jh_code_add_many
     * (begin true, then false): what a channel would redo per function may wait for the
     * end, where it is settled once (a JIT flushing all its code removes thousands of
     * functions in one call; `jitherald run` adds V8's builtins 1,024 at a time). Every
     * function is the channel's by the end. NULL: nothing. */
    int  (*batch)(void *state, bool begin);
    /* In a fork child, at the first call: restart per-process state (files named by pid,
     * the code that is live announced again). NULL: nothing to do. */
    int  (*forked)(void *state);
    /* A channel with lock-free entry points (log_memory, log_event), in a fork child whose
     * first call is one of them: restart what they need, as `forked` would, in a way that
     * is async-signal-safe (the call may come from a signal handler that interrupted
     * malloc, stdio or the loader): system calls and memory the state already holds, no
     * allocation, no thread. `forked` is then not called for this generation. The lock is
     * held. NULL: `forked` is called there. */
    int  (*forked_lockfree)(void *state);
    /* Around fork() (from the one atfork handler, core/fork.c): take the channel's own
     * locks, and release them on both sides. NULL: it has none. */
    void (*fork_prepare)(void *state);
    void (*fork_release)(void *state, bool child);
    /* Switched off in a running process (jh_channels_set), before close: give back what
     * close would leave for the tools after the process (elfmap: its pages become
     * anonymous memory again, same bytes and protections). NULL: close is enough. */
    void (*off)(void *state);
    /* Around chan_on's rundown (running true, then false): the adds between come from
     * jh_channels_set (`jitherald attach`'s thread), not from the JIT's jh_code_add, so
     * not under the JIT's code lock (elfmap then leaves RWX code alone). NULL: no matter. */
    void (*rundown)(void *state, bool running);
    void (*close)(void *state);
    /* Without the context lock, from jh_log_memory / jh_log_event. */
    int  (*log_memory)(void *state, const void *addr, size_t size, const char *hint);
    int  (*log_event)(void *state, const char *name, const struct jh_attr *attrs, size_t n);
};

#define JH__CH_OPS(U, l, w, r) extern const struct jh__channel_ops jh__##l##_ops;
JH__CHANNELS(JH__CH_OPS)
#undef JH__CH_OPS

#endif
