/*
 * auditlog_ring.c — the audit log's frames: reserved with one compare-and-swap on the tail
 * of a MAP_SHARED file mapping (no lock), filled by the writer, committed by storing the
 * frame's first byte last. The mapping reserves `limit` bytes of address space up front so
 * it never moves; the file grows by fallocate in chunks, prepared ahead of the writers by
 * the writers (prepare_ahead). Also the file's life: created, mapped, trimmed, closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "channels/auditlog.h"
#include "fmt/msgpack.h"

/* Blocks are allocated here, a chunk at a time, not by the first store into each page: a
 * full disk or quota then fails this call, and logging stops with a count of what was
 * dropped, where a store into an unbacked page of a shared mapping would kill the VM with
 * SIGBUS. (It is also cheaper: measured 20% less kernel time per page than ftruncate on
 * ext4, which reserves blocks page by page on first write.) */
static int allocate(struct al_state *st, uint64_t from, uint64_t to)
{
    /* the program may have closed our descriptor: the file again, never one of its own */
    int fd = jh__kfd_get(&st->fd, st->path, O_RDWR);
    if (fd < 0)
        return fd;
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);      /* a file-size limit: EFBIG, not SIGXFSZ */
    int rc = fallocate(fd, 0, (off_t)from, (off_t)(to - from));
    if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS))
        rc = ftruncate(fd, (off_t)to);
    int err = rc != 0 ? -errno : 0;
    jh__fsize_guard_end(&g, err);
    return err;
}

static uint64_t chunk_end(const struct al_state *st, uint64_t need)
{
    uint64_t to = (need + AL_CHUNK - 1) / AL_CHUNK * AL_CHUNK;
    return to > st->limit ? st->limit : to;
}

/*
 * grow_lock taken by a VM thread (prepare_ahead blocks every signal): non-zero while the
 * thread holds it or waits for it. A signal handler of the VM (its profiler, its crash
 * handler) that interrupts the thread there and logs must not wait for the lock: the thread
 * would wait on itself, for good. Its record keeps to the file as it is
 * (jh__al_reserve_below), or is dropped and counted. A count: the handler's own lock and
 * unlock leave it as they found it. (volatile: a signal handler reads it)
 */
static _Thread_local volatile sig_atomic_t grow_held;

void jh__al_grow_lock(struct al_state *st)
{
    grow_held++;
    jh__lock(&st->grow_lock);
}

void jh__al_grow_unlock(struct al_state *st)
{
    jh__unlock(&st->grow_lock);
    grow_held--;
}

bool jh__al_grow_held(void) { return grow_held != 0; }

/* The file grows to `to`. grow_lock held. */
static void grown(struct al_state *st, uint64_t to)
{
    if (to > atomic_load_explicit(&st->file_size, memory_order_relaxed))
        atomic_store_explicit(&st->file_size, to, memory_order_release);
}

/* The calls made under grow_lock (open, fallocate, pwritev, a diagnostic's write) are
 * cancellation points: a VM thread cancelled there (pthread_cancel) would die holding the
 * lock, and every later writer past zero_from, and fork, would wait for it for good. The
 * cancellation is acted on at the thread's next cancellation point instead. */
static int no_cancel(void)
{
    int old = PTHREAD_CANCEL_ENABLE;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    return old;
}

static void cancel_back(int old)
{
    int was;
    pthread_setcancelstate(old, &was);
}

/* A writer ran past what was allocated (no preparation, or another writer's is under way): grow it. */
static int grow(struct al_state *st, uint64_t need)
{
    int err = 0;
    int cs = no_cancel();
    jh__al_grow_lock(st);
    uint64_t size = atomic_load_explicit(&st->file_size, memory_order_relaxed);
    if (need > size) {
        uint64_t to = chunk_end(st, need);
        err = allocate(st, size, to);
        if (err < 0) {
            if (!atomic_exchange(&st->stuck, 1))
                jh__diag(st->env->diag, JH_LOG_ERROR, "auditlog: %s cannot grow past %llu bytes: %s; "
                        "later records are dropped", st->path, (unsigned long long)size, strerror(-err));
        } else {
            grown(st, to);
        }
    }
    jh__al_grow_unlock(st);
    cancel_back(cs);
    return err;
}

/*
 * The file is kept allocated and its pages mapped a stretch ahead of the tail, by the
 * writer whose frame passes ahead_mark: about a quarter of what has been written, 64 to
 * 256 KiB, prepared when half of it is used (a short log does not pay for pages it never
 * writes, every page prepared past the last record is trimmed again at close, and one
 * writer's preparation, ~1 us a page, stays a short pause). The first store into each new
 * page of the file costs a page fault that allocates a page-cache page (4-5 us per page
 * where this was measured: more than the rest of the record for every ~60 small events);
 * zeros written by pwritev and MADV_POPULATE_WRITE do that work for many pages at once.
 *
 * It was a helper thread until issue 30's tenth round. A second thread in the VM's process
 * makes each TLB flush of the VM's an interrupt to the CPU that thread last ran on: LuaJIT,
 * single-threaded, mprotects its code twice a trace, and on an idle machine those
 * interrupts were 9% of its samples with the helper (smp_call_function_many_cond), 3.4 us
 * a trace; on a busy one the VM's exit waited for the helper to be scheduled (node, both
 * cores busy, 21 rounds: 1.18x its plain wall time with every channel, 1.04x without the
 * helper). JITHERALD_AUDITLOG_HELPER=0 (read at open) prepares nothing: each page is then
 * faulted in by its first store.
 */
#define AL_AHEAD_MAX ((uint64_t)256 << 10)
#define AL_AHEAD_MIN ((uint64_t)64 << 10)

/*
 * Zeros written into the file ahead of the writers, before the pages are populated: ext4
 * turns each page of a fallocated (unwritten) extent into a written one in the page fault,
 * a journal handle per page, where write(2) does it for many pages at once. Measured here
 * (3 MiB, /tmp on ext4): fallocate + MADV_POPULATE_WRITE 7.7-8 us per page, fallocate +
 * pwrite of zeros + MADV_POPULATE_WRITE 0.9-1.0 us. The file keeps its fallocate (a full
 * disk stays an error, never a SIGBUS). A zero must never land on a byte a writer has
 * reserved: under grow_lock the preparer announces zero_from (0 first: whatever it is about
 * to read of the tail), reads the tail, zeros only whole pages past it, and clears
 * zero_from after the write; a writer whose frame ends past zero_from (a seq_cst load
 * after its seq_cst reservation) takes the lock once before its stores. Either the
 * preparer saw the reservation, or the writer sees zero_from and waits out the write.
 */
static int zero_ahead(struct al_state *st, uint64_t to)
{
    int err = 0;
    atomic_store(&st->zero_from, 0);
    uint64_t tail = atomic_load(&st->tail);
    uint64_t at = (tail + 4095) & ~(uint64_t)4095;
    if (at < st->zeroed)
        at = st->zeroed;
    if (at < to) {
        atomic_store(&st->zero_from, at);
        int fd = jh__kfd_get(&st->fd, st->path, O_RDWR);
        /* short of to: the populate does the rest the slow way */
        err = fd < 0 ? fd : jh__pwrite_zeros(fd, at, to, &at);
        st->zeroed = at;
    }
    atomic_store(&st->zero_from, UINT64_MAX);
    return err;
}

/*
 * The writer's preparation (its frame passed ahead_mark): never waits (if the lock is busy
 * another writer prepares or grows the file already; the next frame past the mark asks
 * again). Every signal is blocked while this thread holds grow_lock here: a handler that
 * logs could otherwise meet zero_from set by its own thread and wait for the lock it holds.
 * The file-size guard goes around that block: under a file-size limit our fallocate or
 * pwritev raises SIGXFSZ, which the block only holds pending, and the guard takes it back
 * after the mask is restored instead of letting it kill the VM.
 */
static void prepare_ahead(struct al_state *st)
{
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int cs = no_cancel();
    grow_held++;
    uint64_t from = 0, target = 0;
    int err = 0;
    if (jh__trylock(&st->grow_lock)) {
        atomic_store_explicit(&st->ahead_mark, UINT64_MAX, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&st->tail, memory_order_relaxed);
        uint64_t ahead = tail / 4 < AL_AHEAD_MIN ? AL_AHEAD_MIN
                       : tail / 4 > AL_AHEAD_MAX ? AL_AHEAD_MAX : tail / 4;
        target = (tail + ahead + 4095) & ~(uint64_t)4095;
        if (target > st->limit)
            target = st->limit;
        from = tail & ~(uint64_t)4095;      /* never behind the writers */
        if (st->ahead_populated > from)
            from = st->ahead_populated;
        uint64_t alloc_to = chunk_end(st, target);
        /* an error: the writers meet it themselves (grow), and no more is prepared */
        uint64_t size = atomic_load_explicit(&st->file_size, memory_order_relaxed);
        if (alloc_to > size)
            err = allocate(st, size, alloc_to);
        if (!err) {
            grown(st, alloc_to);
            if (from < target)
                err = zero_ahead(st, target);
            st->ahead_populated = target > st->ahead_populated ? target : st->ahead_populated;
            atomic_store_explicit(&st->ahead_mark, target < st->limit ? target - ahead / 2 : UINT64_MAX,
                                  memory_order_relaxed);
        } else {
            from = target;
        }
        jh__unlock(&st->grow_lock);
    }
    grow_held--;
    cancel_back(cs);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    jh__fsize_guard_end(&g, err);
#ifdef MADV_POPULATE_WRITE
    /* outside the lock: a writer past file_size grows meanwhile; a second populate of the
     * same pages by another writer finds them mapped */
    if (from < target)
        madvise(st->map + from, target - from, MADV_POPULATE_WRITE);
#endif
}

void jh__al_ring_init(struct al_state *st)
{
    st->fd = JH__KFD_NONE;
    atomic_store(&st->zero_from, UINT64_MAX);
}

uint8_t *jh__al_reserve_below(struct al_state *st, size_t len, uint64_t cap)
{
    if (!st->map || atomic_load_explicit(&st->stuck, memory_order_relaxed))
        return NULL;
    /* A signal handler on a thread that holds grow_lock: no growth, which waits for it.
     * (The zero_from wait below cannot hang it: a thread that sets zero_from has every
     * signal blocked; while this thread waits for the lock or tries it, another thread
     * holds it and lets it go.) */
    if (grow_held) {
        uint64_t size = atomic_load_explicit(&st->file_size, memory_order_acquire);
        if (cap > size)
            cap = size;
    }
    uint64_t off = atomic_load_explicit(&st->tail, memory_order_relaxed);
    do {
        if (off > cap || len > cap - off)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&st->tail, &off, off + len,
                                                    memory_order_seq_cst, memory_order_relaxed));
    if (off + len > atomic_load(&st->zero_from)) {
        jh__al_grow_lock(st);           /* the preparer's zeros are written: see zero_ahead */
        jh__al_grow_unlock(st);
    }
    if (off + len > atomic_load_explicit(&st->ahead_mark, memory_order_relaxed))
        prepare_ahead(st);
    if (off + len > atomic_load_explicit(&st->file_size, memory_order_acquire) &&
        grow(st, off + len) < 0)
        return NULL;            /* disk full: a zero-length hole the reader resyncs past */
    uint8_t *p = st->map + off;
    jh__mp_be32(p + 1, (uint32_t)(len - JH__AL_FRAME_HDR));
    return p;
}

/* Copy a record built in a jh_buf into a frame. */
int jh__al_put_buf(struct al_state *st, const struct jh__buf *b, uint64_t cap)
{
    if (b->err)
        return b->err;
    uint8_t *p = jh__al_reserve_below(st, JH__AL_FRAME_HDR + b->len, cap);
    if (!p)
        return -ENOSPC;
    memcpy(p + JH__AL_FRAME_HDR, b->p, b->len);
    jh__al_commit(p);
    return 0;
}

int jh__al_file_open(struct al_state *st)
{
    const char *path = st->path;
    int fd = jh__kfd_keep(&st->fd, jh__open_private(path, O_RDWR | O_CREAT, JH__OPEN_TRUNCATE));
    if (fd < 0) {
        jh__diag(st->env->diag, JH_LOG_ERROR, "auditlog: %s: %s%s", path, jh__file_error(fd),
                 jh__diag_file_fix(fd, 1));
        jh__al_file_close(st);
        return fd;
    }
    void *m = mmap(NULL, st->limit, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        int err = -errno;
        jh__al_file_close(st);
        return err;
    }
    /* No read-around on a fault: the first store into the file (the header) would
     * otherwise read up to read_ahead_kb of it (8 MiB on some disks: all that is allocated)
     * into the page cache on the VM's thread, zero-filled page by page. Pages ahead are
     * prepared by prepare_ahead, or faulted in one at a time. */
    madvise(m, st->limit, MADV_RANDOM);
    st->map = m;
    atomic_store(&st->tail, 0);
    atomic_store(&st->file_size, 0);
    atomic_store(&st->dropped, 0);
    atomic_store(&st->full, 0);
    atomic_store(&st->stuck, 0);
    atomic_store(&st->zero_from, UINT64_MAX);
    st->zeroed = st->ahead_populated = 0;
    /* the first record prepares the first stretch */
    atomic_store(&st->ahead_mark, st->ahead ? 0 : UINT64_MAX);
    return 0;
}

/* Unmapped first, as on Windows: the truncation then has no mapping of the file to
 * unmap its pages from, and the process's other threads take one TLB shootdown (the
 * munmap's), not two. */
void jh__al_file_trim(struct al_state *st)
{
    if (!st->map)
        return;
    uint64_t tail = atomic_load(&st->tail);
    munmap(st->map, st->limit);
    st->map = NULL;
    if (tail >= atomic_load(&st->file_size))
        return;
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);
    int fd = jh__kfd_get(&st->fd, st->path, O_RDWR);
    int err = fd < 0 ? fd : ftruncate(fd, (off_t)tail) != 0 ? -errno : 0;
    jh__fsize_guard_end(&g, err);
    if (err)
        jh__diag(st->env->diag, JH_LOG_WARN, "auditlog: trimming %s: %s", st->path,
                 jh__file_error(err));
}

void jh__al_file_close(struct al_state *st)
{
    if (st->map)
        munmap(st->map, st->limit);
    jh__kfd_close(&st->fd);
    st->map = NULL;
    st->path[0] = 0;
}
