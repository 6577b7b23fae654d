/*
 * auditlog_ring.c — the audit log's frames: reserved with one compare-and-swap on the tail
 * of a MAP_SHARED file mapping (no lock), filled by the writer, committed by storing the
 * frame's first byte last. The mapping reserves `limit` bytes of address space up front so
 * it never moves; the file grows by fallocate in chunks, ahead of the writers (a helper
 * thread, see ahead_main). Also the file's life: created, mapped, trimmed, closed.
 */
#include <errno.h>
#include <fcntl.h>
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
 * grow_lock taken by a VM thread (the helper blocks every signal): non-zero while the
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

/* A writer ran past what was allocated (the helper is late or absent): grow it itself. */
static int grow(struct al_state *st, uint64_t need)
{
    int err = 0;
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
    return err;
}

/*
 * The helper thread keeps the file allocated and its pages mapped ahead of the tail, by as
 * much as a quarter of what has been written (64 KiB to AL_AHEAD, so a short log does not
 * pay for megabytes of pages: every page populated past the last record is work for
 * nothing, and trimmed again at close; ahead by all that was written, node's 2.2 MB log
 * at start had 4.2 MB populated, 4 ms of this thread's CPU, issue 30). The first store
 * into each new page of the file costs a page fault that allocates a page-cache page (4-5
 * us per page where this was measured: more than the rest of the record for every ~60
 * small events); MADV_POPULATE_WRITE does that work in this
 * thread, so the VM's threads find the pages mapped. Writers nudge it when they have used
 * half of what it populated; writers that outrun it grow the file themselves. Measured
 * (bench/auditlog, VM working between events): the VM thread's page faults drop from 21
 * to ~0 per 1000 events. JITHERALD_AUDITLOG_HELPER=0 (read at open) runs without it.
 */
#define AL_AHEAD (2 * (uint64_t)AL_CHUNK)
#define AL_AHEAD_MIN ((uint64_t)64 << 10)
#define AL_PIECE ((uint64_t)256 << 10)

/*
 * Zeros written into the file ahead of the writers, before the pages are populated: ext4
 * turns each page of a fallocated (unwritten) extent into a written one in the page fault,
 * a journal handle per page, where write(2) does it for many pages at once. Measured here
 * (3 MiB, /tmp on ext4): fallocate + MADV_POPULATE_WRITE 7.7-8 us per page, fallocate +
 * pwrite of zeros + MADV_POPULATE_WRITE 0.9-1.0 us. The file keeps its fallocate (a full
 * disk stays an error, never a SIGBUS). A zero must never land on a byte a writer has
 * reserved: under grow_lock the helper announces zero_from (0 first: whatever it is about
 * to read of the tail), reads the tail, zeros only whole pages past it, and clears
 * zero_from after the write; a writer whose frame ends past zero_from (a seq_cst load
 * after its seq_cst reservation) takes the lock once before its stores. Either the helper
 * saw the reservation, or the writer sees zero_from and waits out the write. Returns where
 * the zeros end (at most to).
 */
static uint64_t zero_ahead(struct al_state *st, uint64_t to)
{
    atomic_store(&st->zero_from, 0);
    uint64_t tail = atomic_load(&st->tail);
    uint64_t at = (tail + 4095) & ~(uint64_t)4095;
    if (at < st->zeroed)
        at = st->zeroed;
    if (at < to) {
        atomic_store(&st->zero_from, at);
        int fd = jh__kfd_get(&st->fd, st->path, O_RDWR);
        if (fd >= 0)            /* short of to: the populate does the rest the slow way */
            jh__pwrite_zeros(fd, at, to, &at);
        st->zeroed = at;
    }
    atomic_store(&st->zero_from, UINT64_MAX);
    return at;
}

static void *ahead_main(void *arg)
{
    struct al_state *st = arg;
    pthread_setname_np(pthread_self(), "jh-auditlog");     /* its own: a prctl, not a file */
    jh__lock(&st->grow_lock);
    st->ahead_started = true;
    pthread_cond_broadcast(&st->ahead_cond);
    for (;;) {
        while (!st->ahead_stop && !st->ahead_pending)
            pthread_cond_wait(&st->ahead_cond, &st->grow_lock.m);
        if (st->ahead_stop)
            break;
        st->ahead_pending = false;
        if (atomic_load(&st->stuck))
            continue;
        uint64_t tail = atomic_load_explicit(&st->tail, memory_order_relaxed);
        uint64_t ahead = tail / 4 < AL_AHEAD_MIN ? AL_AHEAD_MIN : tail / 4 > AL_AHEAD ? AL_AHEAD
                                                                                 : tail / 4;
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
        jh__unlock(&st->grow_lock);
        int err = alloc_to > size ? allocate(st, size, alloc_to) : 0;
        uint64_t done = from > target ? from : target;
#ifdef MADV_POPULATE_WRITE
        /* A piece at a time, its zeros then its pages: close (ahead_stop) waits for one
         * piece, not for all a round prepares (up to AL_AHEAD), and a writer that reaches
         * zero_from waits for the zeros of one piece. */
        for (done = from; !err && done < target;) {
            uint64_t end = target - done > AL_PIECE ? done + AL_PIECE : target;
            jh__lock(&st->grow_lock);
            bool stop = st->ahead_stop;
            if (!stop)
                zero_ahead(st, end);
            jh__unlock(&st->grow_lock);
            if (stop)
                break;
            madvise(st->map + done, end - done, MADV_POPULATE_WRITE);
            done = end;
        }
#endif
        jh__lock(&st->grow_lock);
        if (err)
            continue;           /* the writers meet the error themselves; no more nudges */
        grown(st, alloc_to);
        if (done < target)
            continue;           /* stopped: the loop's test ends it */
        st->ahead_populated = target;
        atomic_store_explicit(&st->ahead_mark, target < st->limit ? target - ahead / 2 : UINT64_MAX,
                              memory_order_relaxed);
    }
    jh__unlock(&st->grow_lock);
    return NULL;
}

/* From the hot path, about once per chunk: never blocks (if the lock is busy the helper or
 * a writer is growing the file already; the next frame past the mark asks again). */
static void nudge(struct al_state *st)
{
    grow_held++;
    if (jh__trylock(&st->grow_lock)) {
        if (st->ahead_running && !st->ahead_pending) {
            st->ahead_pending = true;
            atomic_store_explicit(&st->ahead_mark, UINT64_MAX, memory_order_relaxed);
            pthread_cond_signal(&st->ahead_cond);
        }
        jh__unlock(&st->grow_lock);
    }
    grow_held--;
}

/*
 * A sanitizer's runtime in the process, built into this library or into the program
 * (weak: each is NULL without it). Their thread start-up allocates from an allocator that
 * some (GCC 12's ASan) do not hold across fork.
 */
extern void __asan_init(void) __attribute__((weak));
extern void __tsan_init(void) __attribute__((weak));
extern void __msan_init(void) __attribute__((weak));
extern void __hwasan_init(void) __attribute__((weak));

static bool sanitizer_runtime(void)
{
    return __asan_init || __tsan_init || __msan_init || __hwasan_init;
}

static void ahead_start(struct al_state *st)
{
    sigset_t all, old;
    sigfillset(&all);
    /* The VM's signals are for the VM's threads. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    st->ahead_stop = st->ahead_pending = st->ahead_started = false;
    st->ahead_populated = 0;
    st->ahead_running = st->helper && pthread_create(&st->ahead_thread, NULL, ahead_main, st) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (st->ahead_running) {
        /* Under a sanitizer, back only once the thread runs: its start-up allocates
         * (pthread_getattr_np), and a fork while it holds an allocator lock that the
         * runtime does not take across fork (GCC 12's ASan) leaves the child's allocator
         * locked for good: a fork child hung in malloc under `make asan` on a loaded
         * machine. glibc's own start-up is fork-safe (fork holds malloc's locks), and the
         * wait is for the scheduler to run a new thread: 0.1-10 ms of the VM's start at
         * node's log open, where V8 has just started its workers on a busy machine. A
         * nudge before the thread waits is not lost: it sees ahead_pending. */
        if (sanitizer_runtime()) {
            jh__lock(&st->grow_lock);
            while (!st->ahead_started)
                pthread_cond_wait(&st->ahead_cond, &st->grow_lock.m);
            jh__unlock(&st->grow_lock);
        }
        atomic_store(&st->ahead_mark, 0);   /* the first record asks for the first chunks */
    }
}

void jh__al_helper_stop(struct al_state *st)
{
    if (!st->ahead_running)
        return;
    jh__lock(&st->grow_lock);
    st->ahead_stop = true;
    pthread_cond_signal(&st->ahead_cond);
    jh__unlock(&st->grow_lock);
    pthread_join(st->ahead_thread, NULL);
    st->ahead_running = false;
    atomic_store(&st->ahead_mark, UINT64_MAX);
}

void jh__al_ring_init(struct al_state *st)
{
    st->fd = JH__KFD_NONE;
    atomic_store(&st->zero_from, UINT64_MAX);
    pthread_cond_init(&st->ahead_cond, NULL);
}
void jh__al_ring_fini(struct al_state *st) { pthread_cond_destroy(&st->ahead_cond); }

/* In the child the helper thread does not exist: whatever it was doing is over. */
void jh__al_ring_child(struct al_state *st)
{
    st->ahead_running = false;
    pthread_cond_init(&st->ahead_cond, NULL);
}

uint8_t *jh__al_reserve_below(struct al_state *st, size_t len, uint64_t cap)
{
    if (!st->map || atomic_load_explicit(&st->stuck, memory_order_relaxed))
        return NULL;
    /* A signal handler on a thread that holds grow_lock: no growth, which waits for it.
     * (The zero_from wait below cannot hang it: while this thread holds the lock the
     * helper's zero_from is unset; while it waits for it or tries it, another thread
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
        jh__al_grow_lock(st);           /* the helper's zeros are written: see zero_ahead */
        jh__al_grow_unlock(st);
    }
    if (off + len > atomic_load_explicit(&st->ahead_mark, memory_order_relaxed))
        nudge(st);
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

int jh__al_file_open(struct al_state *st, const char *path, bool start_helper)
{
    st->path = strdup(path);
    if (!st->path)
        return -ENOMEM;
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
     * into the page cache on the VM's thread, zero-filled page by page, before the helper
     * has written a zero. The helper prepares pages ahead itself. */
    madvise(m, st->limit, MADV_RANDOM);
    st->map = m;
    atomic_store(&st->tail, 0);
    atomic_store(&st->file_size, 0);
    atomic_store(&st->dropped, 0);
    atomic_store(&st->full, 0);
    atomic_store(&st->stuck, 0);
    atomic_store(&st->ahead_mark, UINT64_MAX);
    atomic_store(&st->zero_from, UINT64_MAX);
    st->zeroed = 0;
    if (start_helper)
        ahead_start(st);
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
    jh__al_helper_stop(st);     /* before munmap: it may be populating the mapping */
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
    jh__al_helper_stop(st);     /* before munmap: it may be populating the mapping */
    if (st->map)
        munmap(st->map, st->limit);
    jh__kfd_close(&st->fd);
    st->map = NULL;
    free(st->path);
    st->path = NULL;
}
