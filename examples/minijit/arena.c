/*
 * arena.c — executable memory for minijit.
 *
 * What a profiler sees in /proc/PID/maps while minijit runs:
 *
 *     7f3a12400000-7f3a12401000 r-xp 00000000 00:00 0      <- fib, main, ... (several per page)
 *     7f3a12401000-7f3a12800000 rw-p 00000000 00:00 0      <- rest of the 4 MiB chunk
 *
 * Code is anonymous memory on purpose: perf only consults /tmp/perf-PID.map for samples in
 * anonymous executable mappings. Functions are packed at 16-byte alignment so that pages are
 * shared between functions (and between threads compiling concurrently), the case that
 * page-granular tools (elfmap, mprotect-based W^X) must get right.
 *
 * W^X: a page that has never held published code is written while it is RW and then turned
 * RX. A page that already holds published code may be executing on another thread right
 * now; dropping its PROT_EXEC for the copy would crash that thread, so for such a page the
 * copy is done under RWX and the page goes back to RX straight after. Both happen under
 * the arena lock, with the caller's announcement, so no tool ever copies a half-written page.
 */
#include "mj_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK_SIZE ((size_t)4 << 20)
#define ALIGN 16

struct chunk {
    struct chunk *next;
    uint8_t *base;
    size_t size, used;          /* bump pointer */
    uint8_t *exec;              /* per page: 1 once it holds published code */
};

struct hole {                   /* a freed range, reusable first fit */
    uint8_t *start;
    size_t size;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk *chunks;    /* newest first; bump allocation from the head */
static struct hole *holes;      /* sorted by address, coalesced */
static size_t nholes, capholes;
static size_t used_bytes;
static size_t page_size;

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static struct chunk *chunk_of(const uint8_t *p)
{
    for (struct chunk *c = chunks; c; c = c->next)
        if (p >= c->base && p < c->base + c->size)
            return c;
    return NULL;
}

static struct chunk *chunk_new(size_t min)
{
    size_t size = min > CHUNK_SIZE ? round_up(min, page_size) : CHUNK_SIZE;
    struct chunk *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->exec = calloc(size / page_size, 1);
    c->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!c->exec || c->base == MAP_FAILED) {
        free(c->exec);
        free(c);
        return NULL;
    }
    c->size = size;
    c->next = chunks;
    chunks = c;
    return c;
}

static int hole_insert(uint8_t *start, size_t size)
{
    size_t i = 0;
    while (i < nholes && holes[i].start < start)
        i++;
    bool merge_prev = i > 0 && holes[i - 1].start + holes[i - 1].size == start &&
                      chunk_of(holes[i - 1].start) == chunk_of(start);
    bool merge_next = i < nholes && start + size == holes[i].start &&
                      chunk_of(holes[i].start) == chunk_of(start);
    if (merge_prev && merge_next) {
        holes[i - 1].size += size + holes[i].size;
        memmove(&holes[i], &holes[i + 1], (nholes - i - 1) * sizeof *holes);
        nholes--;
        return 0;
    }
    if (merge_prev) {
        holes[i - 1].size += size;
        return 0;
    }
    if (merge_next) {
        holes[i].start = start;
        holes[i].size += size;
        return 0;
    }
    if (nholes == capholes) {
        size_t ncap = capholes ? capholes * 2 : 64;
        struct hole *n = realloc(holes, ncap * sizeof *holes);
        if (!n)
            return -ENOMEM;     /* the range is leaked, never reused: harmless */
        holes = n;
        capholes = ncap;
    }
    memmove(&holes[i + 1], &holes[i], (nholes - i) * sizeof *holes);
    holes[i] = (struct hole){ start, size };
    nholes++;
    return 0;
}

/* A freed range at the end of the bump area shrinks the bump pointer instead, so that
 * free-everything-then-recompile lands exactly where the first compile did. */
static void give_back(uint8_t *start, size_t size)
{
    struct chunk *c = chunk_of(start);
    if (c && c->base + c->used == start + size) {
        c->used -= size;
        for (size_t i = 0; i < nholes; i++) {
            if (holes[i].start + holes[i].size == c->base + c->used && chunk_of(holes[i].start) == c) {
                c->used -= holes[i].size;
                memmove(&holes[i], &holes[i + 1], (nholes - i - 1) * sizeof *holes);
                nholes--;
                break;
            }
        }
        return;
    }
    hole_insert(start, size);
}

static uint8_t *alloc_locked(size_t size)
{
    for (size_t i = 0; i < nholes; i++) {
        if (holes[i].size < size)
            continue;
        uint8_t *p = holes[i].start;
        holes[i].start += size;
        holes[i].size -= size;
        if (!holes[i].size) {
            memmove(&holes[i], &holes[i + 1], (nholes - i - 1) * sizeof *holes);
            nholes--;
        }
        return p;
    }
    struct chunk *c = chunks;
    if (!c || c->size - c->used < size) {
        struct chunk *old = c;
        if (!(c = chunk_new(size)))
            return NULL;
        if (old && old->size > old->used && old->size - old->used >= ALIGN) {
            uint8_t *tail = old->base + old->used;
            size_t n = old->size - old->used;
            old->used = old->size;
            hole_insert(tail, n);
        }
    }
    uint8_t *p = c->base + c->used;
    c->used += size;
    return p;
}

static int protect(struct chunk *c, uint8_t *p, size_t len, bool writing)
{
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page_size - 1);
    uintptr_t hi = round_up((uintptr_t)p + len, page_size);
    for (uintptr_t pg = lo; pg < hi; pg += page_size) {
        size_t idx = (pg - (uintptr_t)c->base) / page_size;
        int prot = writing ? PROT_READ | PROT_WRITE | (c->exec[idx] ? PROT_EXEC : 0)
                           : PROT_READ | PROT_EXEC;
        if (mprotect((void *)pg, page_size, prot) < 0)
            return -errno;
        if (!writing)
            c->exec[idx] = 1;
    }
    return 0;
}

void *mj__arena_publish(const uint8_t *bytes, size_t len, mj_publish_fn *fn, void *arg,
                        int *err)
{
    if (!len) {
        *err = -EINVAL;
        return NULL;
    }
    size_t size = round_up(len, ALIGN);
    pthread_mutex_lock(&lock);
    if (!page_size)
        page_size = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *p = alloc_locked(size);
    if (!p) {
        pthread_mutex_unlock(&lock);
        *err = -ENOMEM;
        return NULL;
    }
    struct chunk *c = chunk_of(p);
    int rc = protect(c, p, size, true);
    if (rc == 0) {
        memcpy(p, bytes, len);
        memset(p + len, 0xcc, size - len);      /* int3 between functions */
        rc = protect(c, p, size, false);
    }
    if (rc == 0 && fn)
        rc = fn(arg, p);
    if (rc) {
        give_back(p, size);
        pthread_mutex_unlock(&lock);
        *err = rc;
        return NULL;
    }
    used_bytes += size;
    pthread_mutex_unlock(&lock);
    return p;
}

void mj__arena_release(void *code, size_t len, void (*undo)(void *arg, void *code), void *arg)
{
    if (!code)
        return;
    size_t size = round_up(len, ALIGN);
    pthread_mutex_lock(&lock);
    if (undo)
        undo(arg, code);
    give_back(code, size);
    used_bytes -= size;
    pthread_mutex_unlock(&lock);
}

size_t mj_arena_used(void)
{
    pthread_mutex_lock(&lock);
    size_t n = used_bytes;
    pthread_mutex_unlock(&lock);
    return n;
}
