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
 * offline (tools/log*.c). The format is in docs/auditlog-format.md; in short, the file is a
 * sequence of frames `ce LEN32 <msgpack map of LEN bytes>`, which any msgpack tool reads.
 *
 * Why a MAP_SHARED file mapping: the bytes of every finished record are in the page cache
 * the moment the store retires, so they survive kill -9 and the segfault the log is meant
 * to explain, at the cost of a memcpy — write() per record would cost a system call
 * (~1 µs) where an event must cost well under 100 ns. Writers reserve their frame with one
 * compare-and-swap on the tail (no lock), fill it, and store the frame's first byte last:
 * a reader that finds 0x00 where 0xce should be knows the frame was cut (by a crash, or it
 * is still being written) and skips it by its length. The file grows by fallocate in
 * chunks, ahead of the writers (a helper thread, see ahead_main); the mapping reserves
 * `limit` bytes of address space up front so it never moves. When the limit is reached, one `limit` record says so
 * (space for it is held back) and later records are counted as dropped, never written.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "msgpack.h"

#define AL_FORMAT_VERSION 1
#define AL_FRAME_HDR 5              /* 0xce + big-endian u32 length of the map */
#define AL_RESERVE 512              /* held back for the `limit` and `close` records */
#define AL_CHUNK (1u << 20)         /* file growth step */
#define AL_MIN_LIMIT (64u << 10)

#if defined(JH__ARCH_X86_64)
#define AL_ARCH "x86_64"
#elif defined(JH__ARCH_ARM64)
#define AL_ARCH "aarch64"
#else
#define AL_ARCH "unknown"
#endif

struct al_state {
    /* Read by every record, written rarely. */
    jh_ctx *ctx;
    int fd;
    uint8_t *map;                   /* `limit` bytes of address space, MAP_SHARED on fd */
    uint64_t limit, data_limit;
    _Atomic uint64_t file_size;     /* bytes the file has been grown to */
    _Atomic int full;               /* the `limit` record has been written */
    _Atomic int stuck;              /* the file could not grow (disk full, quota, EFBIG) */
    _Atomic unsigned gen;           /* jh__fork_gen the file belongs to */
    _Atomic uint64_t ahead_mark;    /* a frame ending past this asks the helper for more */
    pthread_mutex_t grow_lock;      /* file_size changes; the helper's state below */
    pthread_cond_t ahead_cond;
    pthread_t ahead_thread;
    bool ahead_running, ahead_pending, ahead_stop;
    uint64_t ahead_populated;       /* the helper has populated the mapping up to here */
    char *path;
    struct jh__buf scratch;          /* code records, built under the context lock */
    _Atomic uint64_t dropped;
    /* Written by every record: alone on its cache line, so the CAS of one thread does not
     * evict the fields above from the others' caches. */
    _Alignas(64) _Atomic uint64_t tail;     /* next free byte */
    char pad[64 - sizeof(uint64_t)];
};

/* ---- reserving and committing frames ------------------------------------------------- */

/* Blocks are allocated here, a chunk at a time, not by the first store into each page: a
 * full disk or quota then fails this call, and logging stops with a count of what was
 * dropped, where a store into an unbacked page of a shared mapping would kill the VM with
 * SIGBUS. (It is also cheaper: measured 20% less kernel time per page than ftruncate on
 * ext4, which reserves blocks page by page on first write.) */
static int allocate(struct al_state *st, uint64_t from, uint64_t to)
{
    int rc = fallocate(st->fd, 0, (off_t)from, (off_t)(to - from));
    if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS))
        rc = ftruncate(st->fd, (off_t)to);
    return rc != 0 ? -errno : 0;
}

static uint64_t chunk_end(const struct al_state *st, uint64_t need)
{
    uint64_t to = (need + AL_CHUNK - 1) / AL_CHUNK * AL_CHUNK;
    return to > st->limit ? st->limit : to;
}

/* The file grows to `to`. grow_lock held. */
static void grown(struct al_state *st, uint64_t to)
{
    if (to > atomic_load_explicit(&st->file_size, memory_order_relaxed))
        atomic_store_explicit(&st->file_size, to, memory_order_release);
}

/* A writer ran past what was allocated (the helper is late or absent): grow it itself. */
static int grow(struct al_state *st, uint64_t need)
{
    int err = 0;
    pthread_mutex_lock(&st->grow_lock);
    uint64_t size = atomic_load_explicit(&st->file_size, memory_order_relaxed);
    if (need > size) {
        uint64_t to = chunk_end(st, need);
        err = allocate(st, size, to);
        if (err < 0) {
            if (!atomic_exchange(&st->stuck, 1))
                jh__log(st->ctx, JH_LOG_ERROR, "auditlog: %s cannot grow past %llu bytes: %s; "
                        "later records are dropped", st->path, (unsigned long long)size, strerror(-err));
        } else {
            grown(st, to);
        }
    }
    pthread_mutex_unlock(&st->grow_lock);
    return err;
}

/*
 * The helper thread keeps the file allocated and its pages mapped ahead of the tail, by as
 * much as has been written (64 KiB to AL_AHEAD, so a short log does not pay for megabytes
 * of pages). The first store into each new page of the file costs a page fault that
 * allocates a page-cache page (4-5 us per page where this was measured: more than the rest
 * of the record for every ~60 small events); MADV_POPULATE_WRITE does that work in this
 * thread, so the VM's threads find the pages mapped. Writers nudge it when they have used
 * half of what it populated; writers that outrun it grow the file themselves. Measured
 * (bench/auditlog, VM working between events): the VM thread's page faults drop from 21
 * to ~0 per 1000 events. JITHERALD_AUDITLOG_HELPER=0 (read at open) runs without it.
 */
#define AL_AHEAD (2 * (uint64_t)AL_CHUNK)
#define AL_AHEAD_MIN ((uint64_t)64 << 10)

static void *ahead_main(void *arg)
{
    struct al_state *st = arg;
    pthread_mutex_lock(&st->grow_lock);
    for (;;) {
        while (!st->ahead_stop && !st->ahead_pending)
            pthread_cond_wait(&st->ahead_cond, &st->grow_lock);
        if (st->ahead_stop)
            break;
        st->ahead_pending = false;
        if (atomic_load(&st->stuck))
            continue;
        uint64_t tail = atomic_load_explicit(&st->tail, memory_order_relaxed);
        uint64_t ahead = tail < AL_AHEAD_MIN ? AL_AHEAD_MIN : tail > AL_AHEAD ? AL_AHEAD : tail;
        uint64_t target = (tail + ahead + 4095) & ~(uint64_t)4095;
        if (target > st->limit)
            target = st->limit;
        uint64_t size = atomic_load_explicit(&st->file_size, memory_order_relaxed);
        uint64_t alloc_to = chunk_end(st, target);
        uint64_t from = tail & ~(uint64_t)4095;     /* never behind the writers */
        if (st->ahead_populated > from)
            from = st->ahead_populated;
        /* Unlocked while the kernel works: a writer that needs the space now grows the file
         * itself (allocating a range twice is harmless). */
        pthread_mutex_unlock(&st->grow_lock);
        int err = alloc_to > size ? allocate(st, size, alloc_to) : 0;
#ifdef MADV_POPULATE_WRITE
        if (!err && target > from)
            madvise(st->map + from, target - from, MADV_POPULATE_WRITE);
#endif
        pthread_mutex_lock(&st->grow_lock);
        if (err)
            continue;           /* the writers meet the error themselves; no more nudges */
        grown(st, alloc_to);
        st->ahead_populated = target;
        atomic_store_explicit(&st->ahead_mark, target < st->limit ? target - ahead / 2 : UINT64_MAX,
                              memory_order_relaxed);
    }
    pthread_mutex_unlock(&st->grow_lock);
    return NULL;
}

/* From the hot path, about once per chunk: never blocks (if the lock is busy the helper or
 * a writer is growing the file already; the next frame past the mark asks again). */
static void nudge(struct al_state *st)
{
    if (pthread_mutex_trylock(&st->grow_lock) != 0)
        return;
    if (st->ahead_running && !st->ahead_pending) {
        st->ahead_pending = true;
        atomic_store_explicit(&st->ahead_mark, UINT64_MAX, memory_order_relaxed);
        pthread_cond_signal(&st->ahead_cond);
    }
    pthread_mutex_unlock(&st->grow_lock);
}

static void ahead_start(struct al_state *st)
{
    sigset_t all, old;
    sigfillset(&all);
    /* The VM's signals are for the VM's threads. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    st->ahead_stop = st->ahead_pending = false;
    st->ahead_populated = 0;
    const char *env = getenv("JITHERALD_AUDITLOG_HELPER");    /* "0": no helper thread */
    st->ahead_running = !(env && !strcmp(env, "0")) &&
                        pthread_create(&st->ahead_thread, NULL, ahead_main, st) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (st->ahead_running) {
        pthread_setname_np(st->ahead_thread, "jh-auditlog");
        atomic_store(&st->ahead_mark, 0);   /* the first record asks for the first chunks */
    }
}

static void ahead_stop(struct al_state *st)
{
    if (!st->ahead_running)
        return;
    pthread_mutex_lock(&st->grow_lock);
    st->ahead_stop = true;
    pthread_cond_signal(&st->ahead_cond);
    pthread_mutex_unlock(&st->grow_lock);
    pthread_join(st->ahead_thread, NULL);
    st->ahead_running = false;
    atomic_store(&st->ahead_mark, UINT64_MAX);
}

/* A frame of len bytes (header included) below `cap`, or NULL. The caller fills bytes
 * [1, len) and then calls commit(). */
static uint8_t *reserve_below(struct al_state *st, size_t len, uint64_t cap)
{
    if (!st->map || atomic_load_explicit(&st->stuck, memory_order_relaxed))
        return NULL;
    uint64_t off = atomic_load_explicit(&st->tail, memory_order_relaxed);
    do {
        if (off > cap || len > cap - off)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&st->tail, &off, off + len,
                                                    memory_order_relaxed, memory_order_relaxed));
    if (off + len > atomic_load_explicit(&st->ahead_mark, memory_order_relaxed))
        nudge(st);
    if (off + len > atomic_load_explicit(&st->file_size, memory_order_acquire) &&
        grow(st, off + len) < 0)
        return NULL;            /* disk full: a zero-length hole the reader resyncs past */
    uint8_t *p = st->map + off;
    jh__mp_be32(p + 1, (uint32_t)(len - AL_FRAME_HDR));
    return p;
}

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
    if (len - AL_FRAME_HDR <= UINT32_MAX && !atomic_load_explicit(&st->full, memory_order_relaxed))
        p = reserve_below(st, len, st->data_limit);
    if (!p)
        drop(st, !atomic_load_explicit(&st->stuck, memory_order_relaxed));
    return p;
}

static void commit(struct al_state *st, uint8_t *p)
{
    (void)st;
    atomic_store_explicit((_Atomic uint8_t *)p, 0xce, memory_order_release);
}

/* Copy a record built in a jh_buf into a frame. */
static int put_buf(struct al_state *st, const struct jh__buf *b, uint64_t cap)
{
    if (b->err)
        return b->err;
    uint8_t *p = reserve_below(st, AL_FRAME_HDR + b->len, cap);
    if (!p)
        return -ENOSPC;
    memcpy(p + AL_FRAME_HDR, b->p, b->len);
    commit(st, p);
    return 0;
}

/* A record built under the lock, or counted as dropped. */
static void put_record(struct al_state *st, const struct jh__buf *b)
{
    int err = atomic_load(&st->full) ? -ENOSPC : put_buf(st, b, st->data_limit);
    if (err < 0)
        drop(st, err == -ENOSPC && !atomic_load(&st->stuck));
}

/* ---- common record fields --------------------------------------------------------------- */

static _Thread_local struct { unsigned gen; uint32_t tid; } tls_tid;

static uint32_t thread_id(void)
{
    /* gettid() is a system call: cache it, and forget it in a fork child. */
    unsigned gen = atomic_load_explicit(&jh__fork_gen, memory_order_relaxed) + 1;
    if (tls_tid.gen != gen) {
        tls_tid.tid = (uint32_t)syscall(SYS_gettid);
        tls_tid.gen = gen;
    }
    return tls_tid.tid;
}

#define K_TYPE "type"
#define K_TIME "time"
#define K_THREAD "thread"
/* The three fields every record starts with, as a jh_buf. */
static void rec_begin(struct jh__buf *b, size_t nfields, const char *type)
{
    b->len = 0;
    jh__mp_map(b, nfields);
    jh__mp_kstr(b, K_TYPE, type);
    jh__mp_kuint(b, K_TIME, jh__now_ns());
    jh__mp_kuint(b, K_THREAD, thread_id());
}

static void write_limit_record(struct al_state *st)
{
    struct jh__buf b = { 0 };
    rec_begin(&b, 5, "limit");
    jh__mp_kuint(&b, "limit", st->limit);
    jh__mp_kuint(&b, "tail", atomic_load(&st->tail));
    put_buf(st, &b, st->limit - AL_RESERVE / 2);
    jh__buf_free(&b);
    jh__log(st->ctx, JH_LOG_WARN, "auditlog: %s reached its limit of %llu bytes; "
            "later records are dropped", st->path, (unsigned long long)st->limit);
}

/* ---- the public calls: no context lock ------------------------------------------------ */

static void restart_after_fork(struct al_state *st);

static inline void check_fork(struct al_state *st)
{
    if (__builtin_expect(atomic_load_explicit(&st->gen, memory_order_relaxed) !=
                         atomic_load_explicit(&jh__fork_gen, memory_order_relaxed), 0)) {
        pthread_mutex_lock(&st->ctx->lock);
        restart_after_fork(st);
        pthread_mutex_unlock(&st->ctx->lock);
    }
}

/* The keys every VM-side record starts with: its map header, type, time and thread.
 * Returns where the record's own keys go. */
static uint8_t *put_head(uint8_t *frame, uint32_t nkeys, const char *type, size_t tlen,
                         uint64_t now, uint64_t tid)
{
    uint8_t *p = jh__mp_put_map(frame + AL_FRAME_HDR, nkeys);
    p = jh__mp_put_str(p, "type", 4);
    p = jh__mp_put_str(p, type, tlen);
    p = jh__mp_put_str(p, "time", 4);
    p = jh__mp_put_uint(p, now);
    p = jh__mp_put_str(p, "thread", 6);
    return jh__mp_put_uint(p, tid);
}

int jh__auditlog_memory(void *state, const void *addr, size_t size, const char *type_hint)
{
    struct al_state *st = state;
    if (!st)
        return 0;
    check_fork(st);
    size_t hlen = type_hint ? strlen(type_hint) : 0;
    uint64_t now = jh__now_ns();
    uint32_t tid = thread_id();
    size_t len = AL_FRAME_HDR + 1 + 5 + 7 + 5 + jh__mp_uint_size(now) + 7 + jh__mp_uint_size(tid)
               + 8 + jh__mp_uint_size((uintptr_t)addr) + 5 + (type_hint ? jh__mp_str_size(hlen) : 1)
               + 5 + jh__mp_bin_hsize(size) + size;
    if (size > UINT32_MAX) {
        atomic_fetch_add_explicit(&st->dropped, 1, memory_order_relaxed);
        return -EFBIG;
    }
    uint8_t *f = reserve(st, len);
    if (!f)
        return 0;               /* counted as dropped; the VM carries on */
    uint8_t *p = put_head(f, 6, "memory", 6, now, tid);
    p = jh__mp_put_str(p, "address", 7);
    p = jh__mp_put_uint(p, (uintptr_t)addr);
    p = jh__mp_put_str(p, "hint", 4);
    p = type_hint ? jh__mp_put_str(p, type_hint, hlen) : jh__mp_put_nil(p);
    p = jh__mp_put_str(p, "data", 4);
    p = jh__mp_put_bin_header(p, size);
    if (size)
        memcpy(p, addr, size);
    commit(st, f);
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

int jh__auditlog_event(void *state, const char *name, const struct jh_attr *attrs, size_t n)
{
    struct al_state *st = state;
    if (!st)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!attrs[i].key || (unsigned)attrs[i].kind > JH_ATTR_ADDR)
            return -EINVAL;
    check_fork(st);
    size_t nlen = strlen(name);
    uint64_t now = jh__now_ns();
    uint32_t tid = thread_id();
    size_t len = AL_FRAME_HDR + 1 + 5 + 6 + 5 + jh__mp_uint_size(now) + 7 + jh__mp_uint_size(tid)
               + 6 + jh__mp_str_size(nlen) + 6 + jh__mp_cont_hsize(n);
    for (size_t i = 0; i < n; i++)
        len += attr_size(&attrs[i]);
    uint8_t *f = reserve(st, len);
    if (!f)
        return 0;
    uint8_t *p = put_head(f, 5, "event", 5, now, tid);
    p = jh__mp_put_str(p, "event", 5);
    p = jh__mp_put_str(p, name, nlen);
    p = jh__mp_put_str(p, "attrs", 5);
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
    commit(st, f);
    return 0;
}

/* ---- code records: under the context lock ------------------------------------------- */

static const char *unwind_name(enum jh_unwind_kind k)
{
    return k == JH_UNWIND_FRAME_POINTER ? "frame_pointer" : k == JH_UNWIND_CFI ? "cfi" : "none";
}

static void put_code_record(struct al_state *st, struct jh__entry *e, const char *type)
{
    struct jh__buf *b = &st->scratch;
    size_t nf = 11 + (e->unwind == JH_UNWIND_FRAME_POINTER ? 2 : e->unwind == JH_UNWIND_CFI);
    rec_begin(b, nf, type);
    jh__mp_kuint(b, "id", e->id);
    jh__mp_kstr(b, "name", e->name);
    jh__mp_kuint(b, "start", e->start);
    jh__mp_kuint(b, "size", e->size);
    jh__mp_str(b, "files");
    jh__mp_array(b, e->nfiles);
    for (uint32_t i = 0; i < e->nfiles; i++)
        jh__mp_str(b, e->files[i]);
    jh__mp_str(b, "lines");
    jh__mp_array(b, e->nlines);
    for (uint32_t i = 0; i < e->nlines; i++) {
        const struct jh_line *l = &e->lines[i];
        jh__mp_array(b, 4);
        jh__mp_uint(b, l->offset);
        jh__mp_uint(b, l->line);
        jh__mp_uint(b, l->column);
        jh__mp_uint(b, l->file);
    }
    jh__mp_kstr(b, "unwind", unwind_name(e->unwind));
    if (e->unwind == JH_UNWIND_FRAME_POINTER) {
        jh__mp_kuint(b, "fp_push_end", e->fp_push_end);
        jh__mp_kuint(b, "fp_set_end", e->fp_set_end);
    } else if (e->unwind == JH_UNWIND_CFI) {
        jh__mp_str(b, "cfi");
        jh__mp_bin(b, e->cfi, e->cfi_len);
    }
    jh__mp_str(b, "code");
    jh__mp_bin(b, (const void *)e->start, e->size);
    put_record(st, b);
}

static int al_add(void *state, struct jh__entry *e)
{
    struct al_state *st = state;
    restart_after_fork(st);
    put_code_record(st, e, "code_add");
    return 0;                   /* never fail: jh_log_* may be running without the lock */
}

static int al_remove(void *state, struct jh__entry *e)
{
    struct al_state *st = state;
    restart_after_fork(st);
    struct jh__buf *b = &st->scratch;
    rec_begin(b, 6, "code_remove");
    jh__mp_kuint(b, "id", e->id);
    jh__mp_kuint(b, "start", e->start);
    jh__mp_kuint(b, "size", e->size);
    put_record(st, b);
    return 0;
}

static int al_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct al_state *st = state;
    restart_after_fork(st);
    struct jh__buf *b = &st->scratch;
    rec_begin(b, 7, "code_move");
    jh__mp_kuint(b, "id", e->id);
    jh__mp_kuint(b, "old_start", old_start);
    jh__mp_kuint(b, "start", e->start);
    jh__mp_kuint(b, "size", e->size);
    put_record(st, b);
    return 0;
}

static int al_patched(void *state, struct jh__entry *e, uintptr_t addr, size_t len)
{
    struct al_state *st = state;
    restart_after_fork(st);
    struct jh__buf *b = &st->scratch;
    rec_begin(b, 6, "code_patched");
    jh__mp_kuint(b, "id", e->id);
    jh__mp_kuint(b, "address", addr);
    jh__mp_str(b, "data");
    jh__mp_bin(b, (const void *)addr, len);
    put_record(st, b);
    return 0;
}

/* ---- the file -------------------------------------------------------------------------- */

static void put_header(struct al_state *st, pid_t parent)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    struct jh__buf *b = &st->scratch;
    rec_begin(b, 15 + (parent > 0), "header");
    jh__mp_kstr(b, "format", "jitherald-auditlog");
    jh__mp_kuint(b, "version", AL_FORMAT_VERSION);
    jh__mp_kstr(b, "library", JH_VERSION_STRING);
    jh__mp_kuint(b, "pid", (uint64_t)getpid());
    if (parent > 0)
        jh__mp_kuint(b, "parent_pid", (uint64_t)parent);
    jh__mp_kstr(b, "engine", st->ctx->engine ? st->ctx->engine : "jit");
    jh__mp_kstr(b, "exe", exe);
    jh__mp_kstr(b, "arch", AL_ARCH);
    jh__mp_kuint(b, "pointer_size", sizeof(void *));
    jh__mp_kstr(b, "byte_order", __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little" : "big");
    jh__mp_kstr(b, "clock", "CLOCK_MONOTONIC");
    jh__mp_kuint(b, "realtime", (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    jh__mp_kuint(b, "limit", st->limit);
    put_buf(st, b, st->data_limit);
}

static void unmap(struct al_state *st)
{
    ahead_stop(st);             /* before munmap: it may be populating the mapping */
    if (st->map)
        munmap(st->map, st->limit);
    if (st->fd >= 0)
        close(st->fd);
    st->map = NULL;
    st->fd = -1;
    free(st->path);
    st->path = NULL;
}

/* Create <dir>/<engine>-<pid>.jhlog and map it. Lock held (or in open). */
static int start_file(struct al_state *st, pid_t parent)
{
    const char *dir;
    int err = jh__ctx_dir(st->ctx, &dir);
    if (err < 0)
        return err;
    char engine[64];
    const char *en = st->ctx->engine ? st->ctx->engine : "jit";
    size_t k = 0;
    for (; en[k] && k < sizeof engine - 1; k++) {
        char c = en[k];
        engine[k] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' ? c : '_';
    }
    engine[k] = 0;
    size_t plen = strlen(dir) + strlen(engine) + 32;
    st->path = malloc(plen);
    if (!st->path)
        return -ENOMEM;
    snprintf(st->path, plen, "%s/%s-%d.jhlog", dir, engine, (int)getpid());
    st->fd = jh__open_private(st->path, O_RDWR | O_CREAT | O_TRUNC);
    if (st->fd < 0) {
        err = st->fd;
        st->fd = -1;
        jh__log(st->ctx, JH_LOG_ERROR, "auditlog: %s: %s", st->path, jh_strerror(err));
        unmap(st);
        return err;
    }
    void *m = mmap(NULL, st->limit, PROT_READ | PROT_WRITE, MAP_SHARED, st->fd, 0);
    if (m == MAP_FAILED) {
        err = -errno;
        unmap(st);
        return err;
    }
    st->map = m;
    atomic_store(&st->tail, 0);
    atomic_store(&st->file_size, 0);
    atomic_store(&st->dropped, 0);
    atomic_store(&st->full, 0);
    atomic_store(&st->stuck, 0);
    atomic_store(&st->ahead_mark, UINT64_MAX);
    /* Not in a fork child: after fork() in a threaded process only async-signal-safe calls
     * are strictly allowed, and pthread_create is not one (TSan refuses it outright). */
    if (parent == 0)
        ahead_start(st);
    put_header(st, parent);
    jh__log(st->ctx, JH_LOG_INFO, "auditlog: writing %s", st->path);
    return 0;
}

static void put_close_record(struct al_state *st)
{
    struct jh__buf *b = &st->scratch;
    rec_begin(b, 5, "close");
    jh__mp_kuint(b, "bytes", atomic_load(&st->tail));
    jh__mp_kuint(b, "dropped", atomic_load(&st->dropped));
    put_buf(st, b, st->limit);
}

/* Trim the file to what was written (the close record included): the zeros allocated
 * ahead only exist while the process runs (or after it crashed, where readers stop). */
static void finish_file(struct al_state *st)
{
    if (!st->map)
        return;
    uint64_t tail = atomic_load(&st->tail);
    if (tail < atomic_load(&st->file_size) && ftruncate(st->fd, (off_t)tail) != 0)
        jh__log(st->ctx, JH_LOG_WARN, "auditlog: trimming %s: %s", st->path, strerror(errno));
}

/* In a fork child: the inherited mapping is the parent's file (shared!); drop it without
 * writing, start <engine>-<childpid>.jhlog and record the code that is live. Lock held. */
static void restart_after_fork(struct al_state *st)
{
    unsigned gen = atomic_load(&jh__fork_gen);
    if (atomic_load_explicit(&st->gen, memory_order_relaxed) == gen)
        return;
    pid_t parent = getppid();
    /* Only the forking thread exists here: not the helper, nor any writer that may have
     * held grow_lock at the fork. */
    st->ahead_running = false;
    pthread_mutex_init(&st->grow_lock, NULL);
    pthread_cond_init(&st->ahead_cond, NULL);
    unmap(st);
    int err = start_file(st, parent);
    atomic_store(&st->gen, gen);
    if (err < 0) {
        jh__log(st->ctx, JH_LOG_ERROR, "auditlog: no log in fork child: %s", jh_strerror(err));
        return;                 /* records are dropped; stay registered (see al_add) */
    }
    for (struct jh__entry *e = jh__reg_ceil(&st->ctx->reg, 0); e; e = jh__reg_next(&st->ctx->reg, e))
        put_code_record(st, e, "code_add");
}

static int al_forked(void *state)
{
    restart_after_fork(state);
    return 0;
}

static void al_close(void *state)
{
    struct al_state *st = state;
    if (!st)
        return;
    if (atomic_load(&st->gen) == atomic_load(&jh__fork_gen)) {
        if (st->map)
            put_close_record(st);       /* stamped now, not after the helper's last chunk */
        ahead_stop(st);
        finish_file(st);
    } else {
        st->ahead_running = false;      /* a fork child that never logged: no helper here */
    }
    unmap(st);
    jh__buf_free(&st->scratch);
    pthread_cond_destroy(&st->ahead_cond);
    pthread_mutex_destroy(&st->grow_lock);
    free(st);
}

static int al_open(jh_ctx *ctx, void **state)
{
    struct al_state *st = aligned_alloc(64, sizeof *st);
    if (!st)
        return -ENOMEM;
    memset(st, 0, sizeof *st);
    st->ctx = ctx;
    st->fd = -1;
    st->limit = ctx->auditlog_limit < AL_MIN_LIMIT ? AL_MIN_LIMIT : ctx->auditlog_limit;
    if (st->limit > ((uint64_t)1 << 46))
        st->limit = (uint64_t)1 << 46;
    st->limit &= ~(uint64_t)4095;   /* whole pages: the helper populates from page starts */
    st->data_limit = st->limit - AL_RESERVE;
    pthread_mutex_init(&st->grow_lock, NULL);
    pthread_cond_init(&st->ahead_cond, NULL);
    atomic_store(&st->ahead_mark, UINT64_MAX);
    atomic_store(&st->gen, atomic_load(&jh__fork_gen));
    int err = start_file(st, 0);
    if (err < 0) {
        al_close(st);
        return err;
    }
    *state = st;
    return 0;
}

static int al_flush(void *state)
{
    (void)state;                /* nothing is buffered: every record is in the page cache */
    return 0;
}

const struct jh__channel_ops jh__auditlog_ops = {
    .name = "auditlog", .bit = JH_AUDITLOG, .open = al_open, .add = al_add,
    .remove = al_remove, .move = al_move, .patched = al_patched, .flush = al_flush,
    .forked = al_forked, .close = al_close,
};
