/*
 * auditlog.c — the audit log: an always-on flight recorder of what the JIT did.
 *
 *     $ JITHERALD=auditlog ./build/examples/minijit --log-structs examples/minijit/fib.mini
 *     $ jitherald log /tmp/jitherald-0/minijit-15291.jhlog events
 *          3    0.000382  15291  event        compile name="fib" code=0x7f50faa00000[fib+0x0]
 *                         size=160 line=5 function=0x55c33b8008c0[struct mj_function, 72 B logged]
 *     $ jitherald log minijit-15291.jhlog show 0x55c33b8008c0 --vm ./build/examples/minijit
 *     struct mj_function {
 *       nparams = 1
 *       code = 0x7f50faa00000 -> fib+0x0
 *       code_size = 160 ...
 *     $ jitherald log minijit-15291.jhlog show fib        # capstone, with fib.mini lines
 *     $ jitherald log minijit-15291.jhlog report -o report.html
 *
 * The VM side records raw facts and nothing else (RaptorJIT's lj_auditlog.c design): code
 * loads with their bytes, snapshots of VM memory, events. Everything is interpreted
 * offline (`jitherald log`). The format is fmt/auditlog.h and docs/auditlog-format.md: a
 * sequence of frames `ce LEN32 <msgpack map of LEN bytes>`, which any msgpack tool reads.
 *
 * Why a MAP_SHARED file mapping: the bytes of every finished record are in the page cache
 * the moment the store retires, so they survive kill -9 and the segfault the log is meant
 * to explain, at the cost of a memcpy — write() per record would cost a system call
 * (~1 µs) where an event must cost well under 100 ns. Writers reserve their frame with one
 * compare-and-swap on the tail (no lock), fill it, and store the frame's first byte last:
 * a reader that finds 0x00 where 0xce should be knows the frame was cut (by a crash, or it
 * is still being written) and skips it by its length. The file grows by fallocate in
 * chunks, prepared ahead of the writers by the writers (auditlog_ring.c); the mapping reserves
 * `limit` bytes of address space up front so it never moves. When the limit is reached, one `limit` record says so
 * (space for it is held back) and later records are counted as dropped, never written.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/os.h"
#include "channels/auditlog.h"
#include "fmt/arch.h"
#include "fmt/msgpack.h"

static void write_limit_record(struct al_state *st);

/* A record that was not written is counted; the first one lost to the limit says so. */
static void drop(struct al_state *st, bool at_limit)
{
    atomic_fetch_add_explicit(&st->dropped, 1, memory_order_relaxed);
    if (at_limit && st->map && !atomic_exchange(&st->full, 1))
        write_limit_record(st);
}

/* Once the limit is hit the log ends there: a smaller record that would still fit is
 * dropped too, so nothing follows the `limit` record but `close`. */
static uint8_t *reserve(struct al_state *st, size_t len)
{
    uint8_t *p = NULL;
    if (len - JH__AL_FRAME_HDR <= UINT32_MAX &&
        !atomic_load_explicit(&st->full, memory_order_relaxed))
        p = jh__al_reserve_below(st, len, st->data_limit);
    /* not the limit's fault: the file cannot grow, or a signal handler's record found its
     * thread holding grow_lock (auditlog_ring.c) */
    if (!p)
        drop(st, !atomic_load_explicit(&st->stuck, memory_order_relaxed) && !jh__al_grow_held());
    return p;
}

/* A frame for a record's map of n bytes, its length in place; NULL: dropped (counted). */
static uint8_t *frame(struct al_state *st, size_t n)
{
    if (n > UINT32_MAX) {           /* no frame can say it: never the limit's fault */
        drop(st, false);
        return NULL;
    }
    return reserve(st, JH__AL_FRAME_HDR + n);
}

/* The record ends at end: committed if it is the n bytes its size said. A record that is
 * not (a bug in fmt/auditlog.c) stays cut, which readers skip by its length. */
static void done(struct al_state *st, uint8_t *f, const uint8_t *end, size_t n)
{
    if (end == f + JH__AL_FRAME_HDR + n) {
        jh__al_commit(f);
        return;
    }
    drop(st, false);
    jh__diag(st->env->diag, JH_LOG_ERROR, "auditlog: a record of %zu bytes was sized %zu "
             "(a bug): left cut", (size_t)(end - f) - JH__AL_FRAME_HDR, n);
}

/* Written in place, as the VM's records are: the first record lost to the limit may be a
 * signal handler's (jh_log_*), where an allocation could wait on malloc's lock for ever. */
static void write_limit_record(struct al_state *st)
{
    uint64_t now = jh__now_ns(), tail = atomic_load(&st->tail);
    uint32_t tid = jh__thread_id();
    const size_t kl = sizeof JH__AL_K_LIMIT - 1, kt = sizeof JH__AL_K_TAIL - 1;
    size_t n = jh__al_head_size(5, 5, now, tid) + jh__mp_str_size(kl) +
               jh__mp_uint_size(st->limit) + jh__mp_str_size(kt) + jh__mp_uint_size(tail);
    uint8_t *f = jh__al_reserve_below(st, JH__AL_FRAME_HDR + n, st->limit - AL_RESERVE / 2);
    if (f) {
        uint8_t *p = jh__al_put_head(f + JH__AL_FRAME_HDR, 5, "limit", 5, now, tid);
        p = jh__mp_put_str(p, JH__AL_K_LIMIT, kl);
        p = jh__mp_put_uint(p, st->limit);
        p = jh__mp_put_str(p, JH__AL_K_TAIL, kt);
        p = jh__mp_put_uint(p, tail);
        done(st, f, p, n);
    }
    jh__diag(st->env->diag, JH_LOG_WARN, "auditlog: %s reached its limit of %llu bytes; "
             "later records are dropped", st->path, (unsigned long long)st->limit);
}

/* ---- the VM's records: no context lock ------------------------------------------------ */

static int al_log_memory(void *state, const void *addr, size_t size, const char *type_hint)
{
    struct al_state *st = state;
    size_t hlen = type_hint ? strlen(type_hint) : 0;
    uint64_t now = jh__now_ns();
    uint32_t tid = jh__thread_id();
    size_t len = JH__AL_FRAME_HDR + jh__al_head_size(6, 6, now, tid)
               + 8 + jh__mp_uint_size((uintptr_t)addr) + 5 + (type_hint ? jh__mp_str_size(hlen) : 1)
               + 5 + jh__mp_bin_hsize(size) + size;
    if (size > UINT32_MAX) {
        atomic_fetch_add_explicit(&st->dropped, 1, memory_order_relaxed);
        return -EFBIG;
    }
    uint8_t *f = reserve(st, len);
    if (!f)
        return 0;               /* counted as dropped; the VM carries on */
    uint8_t *p = jh__al_put_head(f + JH__AL_FRAME_HDR, 6, "memory", 6, now, tid);
    p = jh__mp_put_str(p, JH__AL_K_ADDRESS, 7);
    p = jh__mp_put_uint(p, (uintptr_t)addr);
    p = jh__mp_put_str(p, JH__AL_K_HINT, 4);
    p = type_hint ? jh__mp_put_str(p, type_hint, hlen) : jh__mp_put_nil(p);
    p = jh__mp_put_str(p, JH__AL_K_DATA, 4);
    p = jh__mp_put_bin_header(p, size);
    if (size)
        memcpy(p, addr, size);
    jh__al_commit(f);
    return 0;
}

static size_t attr_size(const struct jh_attr *a)
{
    size_t n = jh__mp_str_size(strlen(a->key));
    switch (a->kind) {
    case JH_ATTR_INT: return n + jh__mp_int_size(a->v.i);
    case JH_ATTR_UINT: return n + jh__mp_uint_size(a->v.u);
    case JH_ATTR_DOUBLE: return n + JH__MP_DOUBLE_SIZE;
    case JH_ATTR_ADDR: return n + JH__MP_ADDR_SIZE;
    case JH_ATTR_STR: return n + (a->v.s ? jh__mp_str_size(strlen(a->v.s)) : 1);
    }
    return 0;
}

static int al_log_event(void *state, const char *name, const struct jh_attr *attrs, size_t n)
{
    struct al_state *st = state;
    size_t nlen = strlen(name);
    uint64_t now = jh__now_ns();
    uint32_t tid = jh__thread_id();
    size_t len = JH__AL_FRAME_HDR + jh__al_head_size(5, 5, now, tid)
               + 6 + jh__mp_str_size(nlen) + 6 + jh__mp_cont_hsize(n);
    for (size_t i = 0; i < n; i++)
        len += attr_size(&attrs[i]);
    uint8_t *f = reserve(st, len);
    if (!f)
        return 0;
    uint8_t *p = jh__al_put_head(f + JH__AL_FRAME_HDR, 5, "event", 5, now, tid);
    p = jh__mp_put_str(p, JH__AL_K_EVENT, 5);
    p = jh__mp_put_str(p, name, nlen);
    p = jh__mp_put_str(p, JH__AL_K_ATTRS, 5);
    p = jh__mp_put_map(p, n);
    for (size_t i = 0; i < n; i++) {
        const struct jh_attr *a = &attrs[i];
        p = jh__mp_put_str(p, a->key, strlen(a->key));
        switch (a->kind) {
        case JH_ATTR_INT: p = jh__mp_put_int(p, a->v.i); break;
        case JH_ATTR_UINT: p = jh__mp_put_uint(p, a->v.u); break;
        case JH_ATTR_DOUBLE: p = jh__mp_put_double(p, a->v.d); break;
        case JH_ATTR_ADDR: p = jh__mp_put_addr(p, a->v.u); break;
        case JH_ATTR_STR:
            p = a->v.s ? jh__mp_put_str(p, a->v.s, strlen(a->v.s)) : jh__mp_put_nil(p);
            break;
        }
    }
    jh__al_commit(f);
    return 0;
}

/* ---- code records: under the context lock ------------------------------------------- */

/* Each encoded straight into its frame: sized, reserved, written. */
static void add_sized(struct al_state *st, const struct jh__entry *e, const struct jh__al_ref *r)
{
    uint64_t now = jh__now_ns();
    uint32_t tid = jh__thread_id();
    size_t n = jh__al_code_add_size(now, tid, e->node.id, &e->fn, r);
    uint8_t *f = frame(st, n);
    if (f)
        done(st, f, jh__al_put_code_add(f + JH__AL_FRAME_HDR, now, tid, e->node.id, &e->fn, r), n);
}

/* A small record (node's builtins by reference: ~150 bytes) is encoded on the stack first
 * and copied into its frame: sizing it beforehand was a second pass over it (~200
 * instructions a builtin, issue 30). The same bytes either way. Not inlined: its buffer
 * stays off the stack of a fork child's restart in a signal handler, which takes
 * add_sized. */
static JH__NOINLINE bool add_small(struct al_state *st, const struct jh__entry *e,
                                   const struct jh__al_ref *r)
{
    uint8_t small[2048];
    if (jh__al_code_add_bound(&e->fn, r) > sizeof small)
        return false;
    size_t n = (size_t)(jh__al_put_code_add(small, jh__now_ns(), jh__thread_id(), e->node.id,
                                            &e->fn, r) - small);
    uint8_t *f = frame(st, n);
    if (f) {
        memcpy(f + JH__AL_FRAME_HDR, small, n);
        done(st, f, f + JH__AL_FRAME_HDR + n, n);
    }
    return true;
}

static int al_add(void *state, struct jh__entry *e)
{
    struct al_state *st = state;
    struct jh__al_ref ref;
    const struct jh__al_ref *r =
        st->refs && jh__al_code_ref(st, e->fn.start, e->fn.size, &ref) ? &ref : NULL;
    if (!add_small(st, e, r))
        add_sized(st, e, r);
    return 0;
}

static int al_remove(void *state, struct jh__entry *e)
{
    struct al_state *st = state;
    uint64_t now = jh__now_ns();
    uint32_t tid = jh__thread_id();
    const struct jh__node *x = &e->node;
    size_t n = jh__al_code_remove_size(now, tid, x->id, x->start, x->size);
    uint8_t *f = frame(st, n);
    if (f)
        done(st, f, jh__al_put_code_remove(f + JH__AL_FRAME_HDR, now, tid, x->id, x->start,
                                           x->size), n);
    return 0;
}

static int al_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct al_state *st = state;
    uint64_t now = jh__now_ns();
    uint32_t tid = jh__thread_id();
    const struct jh__node *x = &e->node;
    size_t n = jh__al_code_move_size(now, tid, x->id, old_start, x->start, x->size);
    uint8_t *f = frame(st, n);
    if (f)
        done(st, f, jh__al_put_code_move(f + JH__AL_FRAME_HDR, now, tid, x->id, old_start,
                                         x->start, x->size), n);
    return 0;
}

static int al_patched(void *state, struct jh__entry *e, uintptr_t addr, size_t len)
{
    struct al_state *st = state;
    uint64_t now = jh__now_ns();
    uint32_t tid = jh__thread_id();
    size_t n = jh__al_code_patched_size(now, tid, e->node.id, addr, len);
    uint8_t *f = frame(st, n);
    if (f)
        done(st, f, jh__al_put_code_patched(f + JH__AL_FRAME_HDR, now, tid, e->node.id, addr,
                                            (const void *)addr, len), n);
    return 0;
}

/* ---- the file -------------------------------------------------------------------------- */

/* The header and close records, built here under the lock (rare: one of each a file). */
static struct jh__buf *scratch(struct al_state *st)
{
    st->scratch.len = 0;
    st->scratch.err = 0;
    return &st->scratch;
}

static void put_header(struct al_state *st, pid_t parent)
{
    struct jh__buf *b = scratch(st);
    uint64_t pac_mask = jh__arch_host_pac_mask();
    jh__al_head(b, 15 + (parent > 0) + (pac_mask != 0), "header", jh__now_ns(), jh__thread_id());
    jh__mp_kstr(b, JH__AL_K_FORMAT, JH__AL_FORMAT);
    jh__mp_kuint(b, JH__AL_K_VERSION, JH__AL_VERSION);
    jh__mp_kstr(b, JH__AL_K_LIBRARY, JH_VERSION_STRING);
    jh__mp_kuint(b, JH__AL_K_PID, (uint64_t)getpid());
    if (parent > 0)
        jh__mp_kuint(b, JH__AL_K_PARENT_PID, (uint64_t)parent);
    jh__mp_kstr(b, JH__AL_K_ENGINE, st->env->engine);
    jh__mp_kstr(b, JH__AL_K_EXE, st->exe);
    jh__mp_kstr(b, JH__AL_K_ARCH, JH__ARCH_HOST->log_name);
    if (pac_mask)
        jh__mp_kuint(b, JH__AL_K_PAC_MASK, pac_mask);
    jh__mp_kuint(b, JH__AL_K_POINTER_SIZE, sizeof(void *));
    jh__mp_kstr(b, JH__AL_K_BYTE_ORDER,
                __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little" : "big");
    jh__mp_kstr(b, JH__AL_K_CLOCK, JH__CLOCK_NAME);
    jh__mp_kuint(b, JH__AL_K_REALTIME, jh__realtime_ns());
    jh__mp_kuint(b, JH__AL_K_LIMIT, st->limit);
    jh__al_put_buf(st, b, st->data_limit);
}

/* Every log of this process gets its own file: the first one of an engine name
 * <engine>-<pid>.jhlog, later ones with the same name (another context) <engine>-<pid>-<n>.jhlog.
 * Two contexts writing through two mappings of one file would truncate each other's pages
 * (a SIGBUS in the JIT). Counted per engine name and per process (a fork child starts
 * again at the plain name). */
struct engine_seq {
    struct engine_seq *next;
    unsigned n;
    char name[64];
};
static struct { unsigned gen; struct engine_seq *list; } seq;
JH__LOCK_DEFINE(static, seq_lock, "auditlog names")

static unsigned next_seq(const char *engine, bool no_alloc)
{
    jh__lock(&seq_lock);
    if (seq.gen != jh__fork_generation()) {
        seq.gen = jh__fork_generation();
        for (struct engine_seq *e = seq.list; e; e = e->next)
            e->n = 0;
    }
    struct engine_seq *e = seq.list;
    while (e && strcmp(e->name, engine))
        e = e->next;
    if (!e && !no_alloc && (e = calloc(1, sizeof *e))) {
        snprintf(e->name, sizeof e->name, "%s", engine);
        e->next = seq.list;
        seq.list = e;
    }
    unsigned n = e ? e->n++ : 0;
    jh__unlock(&seq_lock);
    return n;
}

/* Append s to the path being built at *n (false when it does not fit). No stdio and no
 * PATH_MAX buffer on the stack: a fork child's restart may run in a signal handler, on an
 * alternate stack of a few KiB (test_auditlog_signal measures it). */
static bool path_cat(char *path, size_t *n, const char *s)
{
    size_t k = strlen(s);
    if (k >= JH__AL_PATH_MAX - *n)
        return false;
    memcpy(path + *n, s, k + 1);
    *n += k;
    return true;
}

static bool path_num(char *path, size_t *n, unsigned long v)
{
    char d[24], *q = d + sizeof d;
    *--q = 0;
    do
        *--q = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    return path_cat(path, n, q);
}

/* Create the log and map it, header first. Lock held (or in open). With in_handler, only
 * what a signal handler may do (al_forked_lockfree): no allocation, no stdio. */
static int start_file(struct al_state *st, pid_t parent, bool in_handler)
{
    const char *dir;
    int err = jh__chan_dir(st->env, &dir);
    if (err < 0)
        return err;
    char engine[64];
    size_t k = 0;
    for (const char *en = st->env->engine; en[k] && k < sizeof engine - 1; k++) {
        char c = en[k];
        engine[k] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' ? c : '_';
    }
    engine[k] = 0;
    unsigned n = next_seq(engine, in_handler);
    char *path = st->path;      /* built in place: no second PATH_MAX on the stack */
    size_t len = 0;
    path[0] = 0;
    if (!path_cat(path, &len, dir) || !path_cat(path, &len, "/") ||
        !path_cat(path, &len, engine) || !path_cat(path, &len, "-") ||
        !path_num(path, &len, (unsigned long)getpid()) ||
        (n && (!path_cat(path, &len, "-") || !path_num(path, &len, n))) ||
        !path_cat(path, &len, ".jhlog")) {
        path[0] = 0;
        return -ENAMETOOLONG;
    }
    if ((err = jh__al_file_open(st)) < 0)
        return err;
    put_header(st, parent);
    jh__diag(st->env->diag, JH_LOG_INFO, "auditlog: writing %s", st->path);
    return 0;
}

static void put_close_record(struct al_state *st)
{
    struct jh__buf *b = scratch(st);
    jh__al_head(b, 5, "close", jh__now_ns(), jh__thread_id());
    jh__mp_kuint(b, JH__AL_K_BYTES, atomic_load(&st->tail));
    jh__mp_kuint(b, JH__AL_K_DROPPED, atomic_load(&st->dropped));
    jh__al_put_buf(st, b, st->limit);
}

/* In a fork child, first call (the core calls it under the lock): the inherited mapping is
 * the parent's file (shared!); drop it without writing, start <engine>-<childpid>.jhlog and
 * record the code that is live. in_handler: the first call is a jh_log_*, perhaps a signal
 * handler's that interrupted malloc or the loader: system calls and memory the state holds
 * only (the path in st, the header in the scratch buffer's room kept at open, code bytes
 * copied rather than looked up in the loaded objects by reference). */
static int restart(struct al_state *st, bool in_handler)
{
    pid_t parent = jh__parent_pid();
    jh__al_file_close(st);
    atomic_store(&st->gen, jh__fork_generation());
    int err = start_file(st, parent, in_handler);
    if (err < 0) {
        jh__diag(st->env->diag, JH_LOG_ERROR, "auditlog: no log in fork child: %s",
                 jh__file_error(err));
        return 0;               /* records are dropped; the lock-free entry points stay safe */
    }
    /* Code the JIT freed before telling us (jh_code_remove may come after the unmap) has
     * no bytes to log any more. In a handler, no reference (its lookup may allocate) and
     * no record built on the stack first. */
    for (struct jh__entry *e = jh__view_ceil(st->env, 0); e; e = jh__view_next(st->env, e)) {
        if (!jh__mem_readable((const void *)e->node.start, e->node.size))
            continue;
        if (in_handler)
            add_sized(st, e, NULL);
        else
            al_add(st, e);
    }
    return 0;
}

static int al_forked(void *state) { return restart(state, false); }
static int al_forked_lockfree(void *state) { return restart(state, true); }

static void al_fork_prepare(void *state)
{
    struct al_state *st = state;
    jh__al_grow_lock(st);       /* a signal handler in fork's window keeps off it */
}

static void al_fork_release(void *state, bool child)
{
    struct al_state *st = state;
    (void)child;
    jh__al_grow_unlock(st);
}

static void al_close(void *state)
{
    struct al_state *st = state;
    if (atomic_load(&st->gen) == jh__fork_generation() && st->map) {
        /* nothing more prepared for the close record: the trim takes it back at once */
        atomic_store(&st->ahead_mark, UINT64_MAX);
        put_close_record(st);
        jh__al_file_trim(st);
    }
    jh__al_file_close(st);
    jh__buf_free(&st->scratch);
    free(st->exe);
    jh__al_refs_free(st);
    jh__lock_fini(&st->grow_lock);
    jh__aligned_free(st);
}

static int al_open(const struct jh__chan_env *env, void **state)
{
    const struct jh__auditlog_opts *o = env->opts;
    struct al_state *st = jh__aligned_alloc(64, sizeof *st);
    if (!st)
        return -ENOMEM;
    memset(st, 0, sizeof *st);
    st->env = env;
    st->ahead = o->ahead;
    st->refs = o->refs;
    st->limit = o->limit < AL_MIN_LIMIT ? AL_MIN_LIMIT : o->limit;
    if (st->limit > ((uint64_t)1 << 46))
        st->limit = (uint64_t)1 << 46;
    st->limit &= ~(uint64_t)4095;   /* whole pages: prepare_ahead populates from page starts */
    st->data_limit = st->limit - AL_RESERVE;
    jh__lock_init(&st->grow_lock, "auditlog grow");
    jh__al_ring_init(st);
    atomic_store(&st->ahead_mark, UINT64_MAX);
    atomic_store(&st->gen, jh__fork_generation());
    /* every header names the executable; a fork child's (perhaps in a signal handler)
     * cannot read the link then with no PATH_MAX buffer on its stack, nor allocate */
    char exe[PATH_MAX];
    jh__exe_path(exe, sizeof exe);
    if (!(st->exe = strdup(exe))) {
        al_close(st);
        return -ENOMEM;
    }
    int err = start_file(st, 0, false);
    if (err < 0) {
        al_close(st);
        return err;
    }
    /* room for a fork child's header (its parent's pid more), which a signal handler may
     * write (al_forked_lockfree): no allocation there */
    if (jh__buf_reserve(&st->scratch, 64) < 0) {
        al_close(st);
        return -ENOMEM;
    }
    *state = st;
    return 0;
}

const struct jh__channel_ops jh__auditlog_ops = {
    .name = "auditlog", .bit = JH_AUDITLOG, .slotless = true, .open = al_open, .add = al_add,
    .remove = al_remove, .move = al_move, .patched = al_patched, .forked = al_forked,
    .forked_lockfree = al_forked_lockfree,
    .fork_prepare = al_fork_prepare, .fork_release = al_fork_release, .close = al_close,
    .log_memory = al_log_memory, .log_event = al_log_event,
};
