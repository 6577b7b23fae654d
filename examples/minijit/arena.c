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
 * copy is done under RWX and the page goes back to RX straight after. A program is published
 * as one batch (each touched page opened once, closed with one mprotect per contiguous run),
 * under the arena lock and together with the caller's announcements, so no tool ever copies
 * a half-written page.
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
    uint8_t *state;             /* per page: PAGE_* */
};

enum {
    PAGE_FRESH = 0,             /* RW since the mmap, never executable */
    PAGE_EXEC = 1,              /* RX: holds published code */
    PAGE_OPEN = 2               /* writable while a batch is being copied */
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
static int keep_rwx;            /* mj_set_code_rwx: published pages stay RWX */

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
    c->state = calloc(size / page_size, 1);
    c->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!c->state || c->base == MAP_FAILED) {
        if (c->base != MAP_FAILED)
            munmap(c->base, size);
        free(c->state);
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

/* Pages touched by the batch being published, to be made RX again at the end. */
struct opened {
    uintptr_t *pages;
    size_t n, cap;
};

static int open_pages(struct chunk *c, uint8_t *p, size_t len, struct opened *o)
{
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page_size - 1);
    uintptr_t hi = round_up((uintptr_t)p + len, page_size);
    for (uintptr_t pg = lo; pg < hi; pg += page_size) {
        uint8_t *st = &c->state[(pg - (uintptr_t)c->base) / page_size];
        if (*st == PAGE_OPEN)
            continue;
        if (o->n == o->cap) {
            size_t cap = o->cap ? o->cap * 2 : 16;
            uintptr_t *n = realloc(o->pages, cap * sizeof *n);
            if (!n)
                return -ENOMEM;
            o->pages = n;
            o->cap = cap;
        }
        /* A fresh page is still RW from the mmap: no syscall. */
        if (*st == PAGE_EXEC &&
            mprotect((void *)pg, page_size, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
            return -errno;
        o->pages[o->n++] = pg;
        *st = PAGE_OPEN;
    }
    return 0;
}

static int cmp_page(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Everything opened goes to RX (RWX with mj_set_code_rwx), in as few mprotect calls as
 * contiguous runs allow. */
static int close_pages(struct opened *o)
{
    int rc = 0, prot = PROT_READ | PROT_EXEC | (keep_rwx ? PROT_WRITE : 0);
    qsort(o->pages, o->n, sizeof *o->pages, cmp_page);
    for (size_t i = 0, j; i < o->n; i = j) {
        for (j = i + 1; j < o->n && o->pages[j] == o->pages[j - 1] + page_size; j++)
            ;
        if (mprotect((void *)o->pages[i], (j - i) * page_size, prot) < 0 && !rc)
            rc = -errno;
        for (size_t k = i; k < j; k++) {
            struct chunk *c = chunk_of((uint8_t *)o->pages[k]);
            c->state[(o->pages[k] - (uintptr_t)c->base) / page_size] = PAGE_EXEC;
        }
    }
    free(o->pages);
    *o = (struct opened){ 0 };
    return rc;
}

int mj__arena_publish(size_t n, const uint8_t *const *bytes, const size_t *lens, void **out,
                      mj_publish_fn *fn, void *arg)
{
    struct opened o = { 0 };
    size_t got = 0, i;
    int rc = 0;

    for (i = 0; i < n; i++) {
        out[i] = NULL;
        if (!lens[i])
            return -EINVAL;
    }
    pthread_mutex_lock(&lock);
    if (!page_size)
        page_size = (size_t)sysconf(_SC_PAGESIZE);
    for (; got < n && rc == 0; got++) {
        if (!(out[got] = alloc_locked(round_up(lens[got], ALIGN)))) {
            rc = -ENOMEM;
            break;
        }
        rc = open_pages(chunk_of(out[got]), out[got], round_up(lens[got], ALIGN), &o);
    }
    for (i = 0; rc == 0 && i < n; i++) {
        memcpy(out[i], bytes[i], lens[i]);
        memset((uint8_t *)out[i] + lens[i], 0xcc, round_up(lens[i], ALIGN) - lens[i]); /* int3 */
    }
    int rc2 = close_pages(&o);
    if (!rc)
        rc = rc2;
    /* Announce only once every byte of the batch is in place and executable. */
    size_t keep = 0;
    for (; rc == 0 && keep < n; keep++)
        if (fn && (rc = fn(arg, keep, out[keep])) != 0)
            break;
    if (rc == 0)
        keep = n;
    /* Undo in reverse, so the bump pointer retracts over what this batch took. */
    for (i = got; i-- > keep;) {
        if (out[i])
            give_back(out[i], round_up(lens[i], ALIGN));
        out[i] = NULL;
    }
    for (i = 0; i < keep; i++)
        used_bytes += round_up(lens[i], ALIGN);
    pthread_mutex_unlock(&lock);
    return rc;
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

void mj_set_code_rwx(int on)
{
    pthread_mutex_lock(&lock);
    keep_rwx = on != 0;
    pthread_mutex_unlock(&lock);
}
