/*
 * unwind.c — the process's own unwinder sees JIT code (channel JH_UNWIND).
 *
 *     $ JITHERALD=unwind ./myvm script
 *   Without it, a C++ exception thrown by a runtime function that JIT code called ends in
 *   "terminate called after throwing an instance of 'vm_error'", and backtrace() stops at
 *   the first JIT frame. With it the exception crosses the JIT frames to the C++ catch
 *   above them, and backtrace(), _Unwind_Backtrace, libunwind's unw_backtrace and
 *   sanitizer reports walk through to main:
 *       ./myvm(rt_throw+0x2c) [0x55e0c2a1b3cc]
 *       [0x7f8e4c001047]               <- JIT frames (jh_lookup() names them)
 *       [0x7f8e4c00101b]
 *       ./myvm(main+0x9e) [0x55e0c2a1b0fe]
 *
 * Who is fed what (decided once per process, see detect()):
 *   - libgcc up to GCC 12 keeps registered objects in a list sorted by lowest pc and, for
 *     a pc, searches only the first object whose lowest pc is <= pc. One registration per
 *     function makes every frame's lookup walk the whole list (measured: 0.7 us per
 *     backtrace with 1 function, 1,400 us with 50,000), and an object whose range
 *     interleaves another's hides the other. So functions are grouped into runs covering
 *     disjoint address ranges, each one sorted .eh_frame (libgcc binary-searches inside
 *     an object). Code landing in a gap becomes a run of one, merged with neighbours no
 *     bigger than it — a binary counter, O(log n) copies per function while code grows
 *     upwards — and the smallest neighbours are merged whenever there are more than
 *     max_runs runs. Code landing inside a run's range rebuilds that run. A rebuilt run is
 *     registered *before* the old one is deregistered: the list tolerates the overlap
 *     (both describe the live functions alike), so no live function is ever without FDE.
 *     libgcc sorts an object at the first lookup that reaches it (init_object, under its
 *     global lock): a run rebuilt many times between two unwinds is sorted once.
 *   - libgcc 13+ finds objects in a b-tree keyed by pc range: one registration per
 *     function is already logarithmic there, and its b-tree refuses the overlapping
 *     ranges grouping needs. Told apart at run time: register two runs for one range and
 *     deregister the second; the list gives back the second object, the b-tree (which
 *     refused the duplicate key) the first.
 *   - LLVM libunwind (__unw_add_dynamic_fde present): one FDE per call, no CIE; fed as
 *     well as libgcc when a process holds both. Its FDE cache is an array searched
 *     linearly: per-function FDEs do not scale there (docs/unwind.md).
 *   - nongnu libunwind (if the program links it: _U_dyn_register present) never sees the
 *     above, walks its own list of unw_dyn_info_t for every frame, lock-free, and takes the
 *     first range that matches: the same disjoint runs go there too, as REMOTE_TABLE (a
 *     sorted table of int32 offsets from the run's address, so the run is allocated within
 *     2 GiB of its code). Its DYNAMIC format only names procedures on x86-64.
 * Removed functions stay in their run, marked dead, until half of the run is dead, code is
 * added over them, or jh_flush(): bulk removal stays linear. An unwinder consults a dead
 * FDE only for a pc inside the dead code.
 * Deregistering does not wait for a thread that already holds an FDE pointer: old runs are
 * freed after GRACE_NS, or at once when libgcc never looked at them (its object's pc_begin
 * still (void *)-1) and libunwind was not fed.
 * State is process-wide, not per context: runs of two JIT engines must not interleave.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfi.h"
#include "internal.h"
#include "unwind_channel.h"

#define GRACE_NS 2000000000ull
/* libunwind readers walk its list without a lock: an entry superseded by a new one at the
 * head stays linked this long, for walks that started before the new one was there. */
#define DYN_DELAY_NS 20000000ull
#define SPAN_MAX ((uintptr_t)1 << 30)   /* keeps a run's table offsets in int32 */

/* nongnu libunwind's unw_dyn_info_t (libunwind-dynamic.h, stable since 2002), declared here
 * so that the library neither needs libunwind to build nor links it. */
struct uw_dyn_info {
    struct uw_dyn_info *next, *prev;
    uintptr_t start_ip, end_ip, gp;
    int32_t format, pad;
    uintptr_t load_offset;
    struct { uintptr_t name_ptr, segbase, table_len, table_data; } rti;
};
#define UW_INFO_FORMAT_REMOTE_TABLE 2

struct uw_seg;
struct uw_ctx;

/* Memory near JIT code for runs libunwind reads (see img_alloc): mmap'd, carved in order,
 * unmapped when every run carved from it is freed. */
struct uw_chunk {
    uint8_t *base;
    size_t size, used, refs;
};
#define CHUNK_SIZE ((size_t)4 << 20)
#define NCHUNK 8

/* One function with an FDE. */
struct uw_fn {
    uintptr_t start, end;
    uint8_t *run;               /* CIE + FDE + terminator from the CFI encoder; NULL once dead */
    uint32_t run_len, fde_off, fde_len;
    bool dead;
    struct uw_seg *seg;         /* NULL when runs are not grouped */
    struct uw_ctx *owner;
    struct uw_fn *prev, *next;  /* owner's live functions */
};

/* One registered run: what libgcc and libunwind read. */
struct uw_img {
    uint8_t *buf;
    size_t len, maplen;         /* maplen != 0: buf was mmap'd near the code */
    struct uw_chunk *chunk;     /* or buf was carved from this chunk */
    void *ob[8];                /* libgcc's struct object (7 words in GCC 12), ours to keep */
    struct uw_dyn_info di;
    int32_t *table;             /* libunwind: (start - buf, fde - buf) pairs */
    bool gcc, dyn;
};

struct uw_seg {
    uintptr_t lo, hi;           /* lowest start, highest end, dead functions included */
    struct uw_fn **fn;          /* sorted by start */
    size_t n, ndead;
    struct uw_img *img;
};

struct uw_ctx {
    jh_ctx *ctx;
    struct uw_fn *live;
};

struct uw_retired {
    uint64_t when;
    void *p;
    bool img;
};

/* A FIFO of retired things, oldest first. */
struct uw_queue {
    struct uw_retired *a;
    size_t head, len, cap;
};

static struct {
    pthread_mutex_t lock;
    bool detected;
    int forced, mode;           /* mode: libgcc's side, JH__UW_NONE/LIST/PERFN */
    bool llvm, dyn;             /* LLVM libunwind and nongnu libunwind fed too */
    void (*reg_info)(const void *, void *);
    void *(*dereg_info)(const void *);
    void (*reg_frame)(void *);
    void (*dereg_frame)(void *);
    void (*llvm_add)(uintptr_t);
    void (*llvm_remove)(uintptr_t);
    void (*dyn_register)(struct uw_dyn_info *);
    void (*dyn_cancel)(struct uw_dyn_info *);
    struct uw_seg **seg;
    size_t nseg, segcap;
    struct uw_queue retired;    /* freed GRACE_NS after retirement */
    struct uw_queue uncancel;   /* libunwind entries to unlink DYN_DELAY_NS after release */
    uint8_t cie[64];
    size_t cie_len;
    size_t max_fdes, max_runs;
    size_t live, dead, far;
    struct uw_chunk *chunk[NCHUNK];     /* open for carving */
    uint64_t copied, rebuilds;
    size_t page;
} U = { .lock = PTHREAD_MUTEX_INITIALIZER, .max_fdes = 8192, .max_runs = 64 };

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static bool grouped(void) { return U.mode == JH__UW_LIST || U.dyn; }
static bool per_function(void) { return U.mode == JH__UW_PERFN || U.llvm; }

/* ---- freeing what an unwinder may still be reading ----------------------------------- */
static void img_free(struct uw_img *im)
{
    if (!im)
        return;
    if (im->chunk) {
        struct uw_chunk *c = im->chunk;
        bool open = false;
        for (int i = 0; i < NCHUNK; i++)
            open |= U.chunk[i] == c;
        if (--c->refs == 0 && !open) {
            munmap(c->base, c->size);
            free(c);
        }
    } else if (im->maplen)
        munmap(im->buf, im->maplen);
    else
        free(im->buf);
    free(im->table);
    free(im);
}

static bool queue_push(struct uw_queue *q, void *p, bool img)
{
    if (q->len == q->cap) {
        if (q->head) {
            memmove(q->a, q->a + q->head, (q->len - q->head) * sizeof *q->a);
            q->len -= q->head;
            q->head = 0;
        }
        if (q->len == q->cap) {
            size_t cap = q->cap ? 2 * q->cap : 64;
            struct uw_retired *r = realloc(q->a, cap * sizeof *r);
            if (!r)
                return false;
            q->a = r;
            q->cap = cap;
        }
    }
    q->a[q->len++] = (struct uw_retired){ jh__now_ns(), p, img };
    return true;
}

/* The oldest entry if it is at least age old, else NULL. */
static struct uw_retired *queue_old(struct uw_queue *q, uint64_t now, uint64_t age)
{
    if (q->head == q->len || q->a[q->head].when > now || now - q->a[q->head].when < age)
        return NULL;            /* (pushed after now was read: young, not 2^64 ns old) */
    struct uw_retired *r = &q->a[q->head++];
    if (q->head == q->len)
        q->head = q->len = 0;   /* r stays readable until the next push */
    return r;
}

static void retire(void *p, bool img)
{
    if (!queue_push(&U.retired, p, img))
        return;                 /* cannot wait for the grace period: leak rather than crash */
}

static void dyn_unlink(struct uw_img *im);

static void sweep(void)
{
    uint64_t now = jh__now_ns();
    struct uw_retired *r;
    while ((r = queue_old(&U.uncancel, now, DYN_DELAY_NS)))
        dyn_unlink(r->p);
    while ((r = queue_old(&U.retired, now, GRACE_NS))) {
        if (r->img)
            img_free(r->p);
        else
            free(r->p);
    }
}

/* ---- which unwinder, and how to reach it --------------------------------------------- */
static uint8_t probe_code[64] __attribute__((aligned(16)));
static uint64_t probe_run[2][32];
static void *probe_ob[2][8];

/* 1 if libgcc keeps objects in a list (GCC <= 12), 0 for the b-tree (GCC 13+), < 0 if the
 * probe could not run. */
static int probe_list(void)
{
    struct jh__cfi_func f = { .start = (uintptr_t)probe_code, .size = 16,
                             .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                             .fp_set_end = 4 };
    struct jh__cfi_opts o = { .ptr = JH__CFI_ABS };
    struct jh__buf b = { 0 };
    int n = jh__cfi_eh_frame(&b, &o, &f, 1, NULL);
    if (n != 1 || b.len > sizeof probe_run[0]) {
        jh__buf_free(&b);
        return -EPROTO;
    }
    memcpy(probe_run[0], b.p, b.len);
    memcpy(probe_run[1], b.p, b.len);
    jh__buf_free(&b);
    U.reg_info(probe_run[0], probe_ob[0]);
    U.reg_info(probe_run[1], probe_ob[1]);
    void *got = U.dereg_info(probe_run[1]);
    if (got == probe_ob[1]) {
        U.dereg_info(probe_run[0]);
        return 1;
    }
    return 0;                   /* the b-tree refused run 1 and has just dropped run 0 */
}

static void atfork_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    U.lock = m;
}

/*
 * Which unwinders to feed. A process may hold both libgcc_s (libstdc++'s exceptions,
 * glibc's backtrace) and LLVM's libunwind (a library built with clang/libc++): each only
 * sees what is registered with it, so both are fed. libgcc is looked up in libgcc_s.so.1
 * itself, never through RTLD_DEFAULT alone when LLVM's libunwind is loaded, because LLVM
 * exports look-alike __register_frame* entry points with other semantics.
 */
static void detect(void)
{
    U.page = (size_t)sysconf(_SC_PAGESIZE);
    pthread_atfork(NULL, NULL, atfork_child);
    *(void **)&U.dyn_register = dlsym(RTLD_DEFAULT, "_U_dyn_register");
    *(void **)&U.dyn_cancel = dlsym(RTLD_DEFAULT, "_U_dyn_cancel");
    U.dyn = U.dyn_register && U.dyn_cancel;

    *(void **)&U.llvm_add = dlsym(RTLD_DEFAULT, "__unw_add_dynamic_fde");
    *(void **)&U.llvm_remove = dlsym(RTLD_DEFAULT, "__unw_remove_dynamic_fde");
    U.llvm = U.llvm_add && U.llvm_remove && (!U.forced || U.forced == JH__UW_LLVM);
    if (U.forced == JH__UW_LLVM)
        return;
    /* A C program may not have libgcc_s loaded yet: glibc's backtrace() dlopens the same
     * file when first called, so registering there is registering with it. */
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h && !U.llvm)
        h = dlopen("libgcc_s.so.1", RTLD_NOW);
    if (!h && U.llvm)
        return;
    if (!h)
        h = RTLD_DEFAULT;       /* no libgcc_s: maybe a static libgcc_eh the program exports */
    *(void **)&U.reg_info = dlsym(h, "__register_frame_info");
    *(void **)&U.dereg_info = dlsym(h, "__deregister_frame_info");
    *(void **)&U.reg_frame = dlsym(h, "__register_frame");
    *(void **)&U.dereg_frame = dlsym(h, "__deregister_frame");
    if (!U.reg_info || !U.dereg_info || !U.reg_frame || !U.dereg_frame)
        return;
    int list = probe_list();
    if (list < 0)
        return;
    if (U.forced == JH__UW_PERFN)
        U.mode = JH__UW_PERFN;
    else if (U.forced == JH__UW_LIST)
        U.mode = list ? JH__UW_LIST : JH__UW_NONE;
    else
        U.mode = list ? JH__UW_LIST : JH__UW_PERFN;
}

/* ---- runs ----------------------------------------------------------------------------- */
static bool fits(uintptr_t base, uintptr_t lo, uintptr_t hi, size_t len)
{
    int64_t a = (int64_t)(lo - base), b = (int64_t)(hi - base);
    return a >= INT32_MIN && a <= INT32_MAX && b >= INT32_MIN && b <= INT32_MAX &&
           len < INT32_MAX;
}

/* Anonymous memory of len bytes within 2 GiB of [lo, hi), or MAP_FAILED. */
static void *map_near(size_t len, uintptr_t lo, uintptr_t hi)
{
    uintptr_t gap = (uintptr_t)1 << 20, pm = ~(uintptr_t)(U.page - 1);
    uintptr_t hints[5] = { 0, 0, (hi + gap + U.page - 1) & pm, 0, (hi + (gap << 8)) & pm };
    if (lo > len + gap)
        hints[1] = (lo - len - gap) & pm;
    if (lo > len + (gap << 8))
        hints[3] = (lo - len - (gap << 8)) & pm;
    for (int i = 0; i < 5; i++) {
        if (i && !hints[i])
            continue;           /* hint 0: wherever the kernel puts mmaps, often near */
        void *q = mmap((void *)hints[i], len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
            continue;
        if (fits((uintptr_t)q, lo, hi, len))
            return q;
        munmap(q, len);
    }
    return MAP_FAILED;
}

/* Carve len bytes near [lo, hi) from an open chunk, opening one if needed. */
static uint8_t *chunk_alloc(struct uw_img *im, size_t len, uintptr_t lo, uintptr_t hi)
{
    len = (len + 15) & ~(size_t)15;
    if (len > CHUNK_SIZE / 4)
        return NULL;
    int slot = -1;
    for (int i = 0; i < NCHUNK; i++) {
        struct uw_chunk *c = U.chunk[i];
        if (!c) {
            slot = slot < 0 ? i : slot;
            continue;
        }
        if (c->size - c->used >= len && fits((uintptr_t)c->base, lo, hi, c->size)) {
            im->chunk = c;
            c->refs++;
            c->used += len;
            return c->base + c->used - len;
        }
        if (slot < 0 || (U.chunk[slot] && U.chunk[slot]->used < c->used))
            slot = i;           /* replace the fullest one if none is free */
    }
    struct uw_chunk *c = calloc(1, sizeof *c);
    void *q = c ? map_near(CHUNK_SIZE, lo, hi) : MAP_FAILED;
    if (q == MAP_FAILED) {
        free(c);
        return NULL;
    }
    c->base = q;
    c->size = CHUNK_SIZE;
    struct uw_chunk *old = U.chunk[slot];
    U.chunk[slot] = c;
    if (old && !old->refs) {
        munmap(old->base, old->size);
        free(old);
    }
    im->chunk = c;
    c->refs = 1;
    c->used = len;
    return c->base;
}

/*
 * libunwind reads 32-bit offsets from the run's address to its code and FDEs, so a run it
 * is given must lie within 2 GiB of its code: malloc's heap is usually next to the
 * program, terabytes away from mmap'd JIT code. Small runs are carved from chunks mapped
 * near the code (an mmap per run cost 30-50 us per jh_code_add), big ones get their own.
 */
static uint8_t *img_alloc(struct uw_img *im, size_t len, uintptr_t lo, uintptr_t hi,
                          bool *near)
{
    *near = false;
    if (!U.dyn)
        return malloc(len);
    uint8_t *p = chunk_alloc(im, len, lo, hi);
    if (p) {
        *near = true;
        return p;
    }
    size_t ml = (len + U.page - 1) & ~(U.page - 1);
    void *q = map_near(ml, lo, hi);
    if (q != MAP_FAILED) {
        im->maplen = ml;
        *near = true;
        return q;
    }
    U.far++;
    return malloc(len);
}

/* Build (not register) the run for fn[0..n), sorted by start. */
static struct uw_img *img_build(struct uw_fn **fn, size_t n, uintptr_t lo, uintptr_t hi)
{
    struct uw_img *im = calloc(1, sizeof *im);
    if (!im)
        return NULL;
    size_t len = U.cie_len + 4;
    for (size_t i = 0; i < n; i++)
        len += fn[i]->fde_len;
    bool near;
    im->buf = img_alloc(im, len, lo, hi, &near);
    if (!im->buf) {
        free(im);
        return NULL;
    }
    im->len = len;
    if (U.dyn && near && !(im->table = malloc(n * 2 * sizeof *im->table))) {
        img_free(im);
        return NULL;
    }
    uintptr_t base = (uintptr_t)im->buf;
    memcpy(im->buf, U.cie, U.cie_len);
    size_t at = U.cie_len;
    for (size_t i = 0; i < n; i++) {
        memcpy(im->buf + at, fn[i]->run + fn[i]->fde_off, fn[i]->fde_len);
        wr32(im->buf + at + 4, (uint32_t)(at + 4));     /* CIE pointer: back to offset 0 */
        if (im->table) {
            im->table[2 * i] = (int32_t)(int64_t)(fn[i]->start - base);
            im->table[2 * i + 1] = (int32_t)at;
        }
        at += fn[i]->fde_len;
    }
    wr32(im->buf + at, 0);
    if (im->table) {
        im->di.start_ip = lo;
        im->di.end_ip = hi;
        im->di.format = UW_INFO_FORMAT_REMOTE_TABLE;
        im->di.rti.name_ptr = (uintptr_t)"jitherald";
        im->di.rti.segbase = base;
        im->di.rti.table_len = n;       /* in words: one 8-byte entry each */
        im->di.rti.table_data = (uintptr_t)im->table;
    }
    U.copied += n;
    U.rebuilds++;
    return im;
}

static void img_register(struct uw_img *im)
{
    if (U.mode == JH__UW_LIST) {
        U.reg_info(im->buf, im->ob);
        im->gcc = true;
    }
    if (im->table) {
        U.dyn_register(&im->di);
        im->dyn = true;
    }
}

static void img_release(struct uw_img *im)
{
    if (!im)
        return;
    bool seen = false;
    if (im->gcc) {
        void *ob = U.dereg_info(im->buf);
        seen = ob != (void *)im->ob || im->ob[0] != (void *)-1;
    }
    if (im->dyn && queue_push(&U.uncancel, im, true))
        return;                 /* unlinked and retired by sweep() */
    if (im->dyn)
        dyn_unlink(im);
    else if (seen)
        retire(im, true);
    else
        img_free(im);
}

/*
 * libunwind's readers walk its list without its lock, first range match wins. A walk that
 * began before the replacing entry was put at the head would miss the range if the old
 * entry went at once, hence the DYN_DELAY_NS in the list. And _U_dyn_cancel clears next
 * after unlinking: a reader standing on the entry would stop there and miss every entry
 * after it (seen: JIT frames without proc info under churn), so next is pointed back into
 * the list; the entry itself lives on for the grace period.
 */
static void dyn_unlink(struct uw_img *im)
{
    struct uw_dyn_info *next = im->di.next;
    U.dyn_cancel(&im->di);
    __atomic_store_n(&im->di.next, next, __ATOMIC_RELEASE);
    retire(im, true);
}

/* ---- grouping ------------------------------------------------------------------------- */
static size_t seg_upper(uintptr_t addr)         /* first run ending after addr */
{
    size_t lo = 0, hi = U.nseg;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (U.seg[m]->hi <= addr)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

static void seg_free(struct uw_seg *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->fn[i]->dead) {
            free(s->fn[i]->run);
            free(s->fn[i]);
        }
    free(s->fn);
    free(s);
}

/*
 * Replace runs [i0, i1) by one run holding their live functions plus add (if not NULL),
 * registered before the old ones go. i0 == i1 inserts a new run at i0.
 */
static int seg_rebuild(size_t i0, size_t i1, struct uw_fn *add)
{
    size_t n = add ? 1 : 0;
    for (size_t i = i0; i < i1; i++)
        n += U.seg[i]->n - U.seg[i]->ndead;
    struct uw_seg *s = NULL;
    if (n) {
        if (i0 == i1 && U.nseg == U.segcap) {
            size_t cap = U.segcap ? 2 * U.segcap : 16;
            struct uw_seg **a = realloc(U.seg, cap * sizeof *a);
            if (!a)
                return -ENOMEM;
            U.seg = a;
            U.segcap = cap;
        }
        if (!(s = calloc(1, sizeof *s)) || !(s->fn = malloc(n * sizeof *s->fn))) {
            free(s);
            return -ENOMEM;
        }
        size_t k = 0;
        for (size_t i = i0; i < i1; i++) {
            struct uw_seg *o = U.seg[i];
            for (size_t j = 0; j < o->n; j++) {
                struct uw_fn *f = o->fn[j];
                if (f->dead)
                    continue;
                if (add && add->start < f->start) {
                    s->fn[k++] = add;
                    add = NULL;
                }
                s->fn[k++] = f;
            }
        }
        if (add)
            s->fn[k++] = add;
        s->n = n;
        s->lo = s->fn[0]->start;
        for (size_t i = 0; i < n; i++)
            if (s->fn[i]->end > s->hi)
                s->hi = s->fn[i]->end;
        if (!(s->img = img_build(s->fn, n, s->lo, s->hi))) {
            free(s->fn);
            free(s);
            return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
            s->fn[i]->seg = s;
        img_register(s->img);
    }
    for (size_t i = i0; i < i1; i++) {
        img_release(U.seg[i]->img);
        U.dead -= U.seg[i]->ndead;
        seg_free(U.seg[i]);
    }
    size_t keep = s ? 1 : 0;
    memmove(U.seg + i0 + keep, U.seg + i1, (U.nseg - i1) * sizeof *U.seg);
    U.nseg = U.nseg - (i1 - i0) + keep;
    if (s)
        U.seg[i0] = s;
    return 0;
}

/*
 * Merging a and b (a below b) makes one run cover the gap between them, and code added in
 * that gap later rebuilds the whole run. Merges therefore prefer runs that are densely
 * adjacent (a gap of at most a few functions), which is where a bump allocator puts the
 * next function anyway.
 */
static bool dense(const struct uw_seg *a, const struct uw_seg *b)
{
    uintptr_t gap = b->lo > a->hi ? b->lo - a->hi : 0;
    uintptr_t mean = ((a->hi - a->lo) + (b->hi - b->lo)) / (a->n + b->n);
    return gap <= 256 || gap <= 4 * mean;
}

static bool can_merge(const struct uw_seg *a, const struct uw_seg *b)
{
    if (b->hi - a->lo > SPAN_MAX || !dense(a, b))
        return false;
    /* The binary counter leaves fewer than 2n/cap full runs: with the cap at least
     * 4n/max_runs they stay under half the budget, and merges by count stay rare. */
    size_t cap = (U.live + U.dead) / U.max_runs * 4;
    if (cap < U.max_fdes)
        cap = U.max_fdes;
    return a->n + b->n <= cap;
}

/* Run i is new or grew: merge it with neighbours no bigger than it (a binary counter).
 * Past max_runs runs (what every libgcc lookup walks), merge the smallest neighbours,
 * densely adjacent ones first, down to half the budget so that this stays rare. */
static int seg_settle(size_t i)
{
    int err = 0;
    while (!err && i < U.nseg) {
        struct uw_seg *x = U.seg[i];
        struct uw_seg *l = i ? U.seg[i - 1] : NULL, *r = i + 1 < U.nseg ? U.seg[i + 1] : NULL;
        bool ml = l && l->n <= x->n && can_merge(l, x);
        bool mr = r && r->n <= x->n && can_merge(x, r);
        if (ml && mr)
            ml = l->n <= r->n, mr = !ml;
        if (ml)
            err = seg_rebuild(i - 1, i + 1, NULL), i--;
        else if (mr)
            err = seg_rebuild(i, i + 2, NULL);
        else
            break;
    }
    if (U.nseg <= U.max_runs)
        return err;
    while (!err && U.nseg > U.max_runs / 2 + 1) {
        size_t best = U.nseg, bestn = SIZE_MAX;
        for (int pass = 0; pass < 2 && best == U.nseg; pass++)
            for (size_t j = 0; j + 1 < U.nseg; j++) {
                struct uw_seg *a = U.seg[j], *b = U.seg[j + 1];
                size_t m = a->n + b->n;
                if (m < bestn && b->hi - a->lo <= SPAN_MAX && (pass || dense(a, b)))
                    best = j, bestn = m;
            }
        if (best == U.nseg)
            break;
        err = seg_rebuild(best, best + 2, NULL);
    }
    return err;
}

/* Index of the first function of s starting at or after addr. */
static size_t fn_lower(const struct uw_seg *s, uintptr_t addr)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (s->fn[m]->start < addr)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Functions of runs [i0, i1) overlapping [start, end): bit 0 a dead one, bit 1 a live one.
 * Functions in a run never overlap each other, so this looks at a handful. */
static int overlapping(size_t i0, size_t i1, uintptr_t start, uintptr_t end)
{
    int found = 0;
    for (size_t i = i0; i < i1; i++) {
        const struct uw_seg *s = U.seg[i];
        for (size_t j = fn_lower(s, end); j-- > 0 && s->fn[j]->end > start;)
            found |= s->fn[j]->dead ? 1 : 2;
    }
    return found;
}

static int group_add(struct uw_fn *u)
{
    size_t i0 = seg_upper(u->start), i1 = i0;
    while (i1 < U.nseg && U.seg[i1]->lo < u->end)
        i1++;
    /* Live code of another context there: one context's registry cannot refuse it, and
     * overlapping FDEs would break libgcc's binary search for both. */
    if (i1 > i0 && overlapping(i0, i1, u->start, u->end) & 2)
        return JH_EOVERLAP;
    /* The same function again where it was removed (a recompile landing on the same
     * addresses, a code cache reloaded): the run still holds its FDE, byte for byte. */
    if (i1 == i0 + 1) {
        struct uw_seg *s = U.seg[i0];
        size_t j = fn_lower(s, u->start);
        struct uw_fn *d = j < s->n ? s->fn[j] : NULL;
        if (d && d->dead && d->run && d->start == u->start && d->end == u->end &&
            d->fde_len == u->fde_len &&
            !memcmp(d->run + d->fde_off, u->run + u->fde_off, u->fde_len)) {
            s->fn[j] = u;
            u->seg = s;
            s->ndead--;
            U.dead--;
            free(d->run);
            free(d);
            return 0;
        }
    }
    /* Anywhere else inside a run's range, even in a gap between its functions, the run is
     * rebuilt: a run of one there would hide the functions above it from libgcc. */
    int err = seg_rebuild(i0, i1, u);
    if (!err)
        seg_settle(i0);         /* u is registered either way: merging is only thrift */
    return err;
}

/* Code without unwind info replaces whatever dead FDEs described its range. */
static int group_clear(uintptr_t start, uintptr_t end)
{
    size_t i0 = seg_upper(start), i1 = i0;
    while (i1 < U.nseg && U.seg[i1]->lo < end)
        i1++;
    int err = 0;
    for (size_t i = i1; !err && i-- > i0;)
        if (overlapping(i, i + 1, start, end) & 1)
            err = seg_rebuild(i, i + 1, NULL);
    return err;
}

static int group_remove(struct uw_fn *u)
{
    struct uw_seg *s = u->seg;
    size_t i = seg_upper(u->start);
    if (i >= U.nseg || U.seg[i] != s)
        return -EPROTO;         /* our own bookkeeping is broken: stop the channel */
    u->dead = true;
    s->ndead++;
    U.dead++;
    if (2 * s->ndead > s->n)
        return seg_rebuild(i, i + 1, NULL);
    return 0;
}

/* ---- one function --------------------------------------------------------------------- */
static int fn_encode(struct uw_fn *u, const struct jh__entry *e)
{
    struct jh__cfi_func f;
    jh__cfi_func_from_entry(&f, e);
    struct jh__cfi_opts o = { .ptr = JH__CFI_ABS };
    struct jh__cfi_index idx;
    struct jh__buf b = { 0 };
    int n = jh__cfi_eh_frame(&b, &o, &f, 1, &idx);
    if (n <= 0) {
        jh__buf_free(&b);
        return n;
    }
    size_t cie_len = 4 + (size_t)rd32(b.p);
    u->run = b.p;
    u->run_len = (uint32_t)b.len;
    u->fde_off = (uint32_t)idx.off;
    u->fde_len = 4 + rd32(b.p + idx.off);
    if (cie_len > sizeof U.cie || u->fde_off + (size_t)u->fde_len > b.len) {
        free(u->run);
        return -EPROTO;
    }
    if (!U.cie_len) {
        memcpy(U.cie, b.p, cie_len);
        U.cie_len = cie_len;
    } else if (cie_len != U.cie_len || memcmp(U.cie, b.p, cie_len)) {
        free(u->run);
        return -EPROTO;         /* runs share one CIE: the encoder changed under us */
    }
    return 1;
}

static void fn_unregister(struct uw_fn *u)
{
    if (U.mode == JH__UW_PERFN)
        U.dereg_frame(u->run);
    if (U.llvm)
        U.llvm_remove((uintptr_t)(u->run + u->fde_off));
}

static int fn_register(struct uw_fn *u)
{
    if (U.mode == JH__UW_PERFN)
        U.reg_frame(u->run);
    if (U.llvm)
        U.llvm_add((uintptr_t)(u->run + u->fde_off));
    int err = grouped() ? group_add(u) : 0;
    if (err)
        fn_unregister(u);
    return err;
}

static int fn_remove(struct uw_fn *u)
{
    struct uw_ctx *c = u->owner;
    if (u->prev)
        u->prev->next = u->next;
    else
        c->live = u->next;
    if (u->next)
        u->next->prev = u->prev;
    U.live--;
    if (per_function()) {
        fn_unregister(u);
        retire(u->run, false);
        u->run = NULL;
    }
    if (!u->seg) {
        free(u->run);
        free(u);
        return 0;
    }
    return group_remove(u);     /* a dead function keeps its FDE bytes: see group_add() */
}

/* ---- the channel ---------------------------------------------------------------------- */
static const char *mode_name(int m)
{
    static const char *const names[] = { "no libgcc", "libgcc (grouped runs)",
                                         "libgcc b-tree (one run per function)" };
    return m >= 0 && m <= JH__UW_PERFN ? names[m] : "?";
}

static int unwind_open(jh_ctx *ctx, void **state)
{
    pthread_mutex_lock(&U.lock);
    if (!U.detected) {
        detect();
        U.detected = true;
    } else if (!U.dyn && !U.nseg && !U.live) {
        /* libunwind may have been loaded since the first context opened */
        *(void **)&U.dyn_register = dlsym(RTLD_DEFAULT, "_U_dyn_register");
        *(void **)&U.dyn_cancel = dlsym(RTLD_DEFAULT, "_U_dyn_cancel");
        U.dyn = U.dyn_register && U.dyn_cancel;
    }
    int mode = U.mode;
    bool dyn = U.dyn, llvm = U.llvm;
    pthread_mutex_unlock(&U.lock);
    if (mode == JH__UW_NONE && !dyn && !llvm) {
        jh__log(ctx, JH_LOG_WARN, "unwind: no unwinder to register with (neither libgcc's "
                "__register_frame_info nor LLVM's __unw_add_dynamic_fde)");
        return -ENOSYS;
    }
    struct uw_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->ctx = ctx;
    *state = c;
    jh__log(ctx, JH_LOG_DEBUG, "unwind: %s%s%s", mode_name(mode),
            llvm ? ", LLVM libunwind (one FDE per call)" : "",
            dyn ? ", nongnu libunwind's _U_dyn_register" : "");
    return 0;
}

static int unwind_add(void *state, struct jh__entry *e)
{
    struct uw_ctx *c = state;
    struct uw_fn *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->start = e->start;
    u->end = e->start + e->size;
    pthread_mutex_lock(&U.lock);
    int n = fn_encode(u, e);
    int err = n < 0 ? n : 0;
    size_t far = U.far;
    if (n == 0 && grouped())
        err = group_clear(u->start, u->end);
    if (n == 1 && !(err = fn_register(u))) {
        u->owner = c;
        u->next = c->live;
        if (c->live)
            c->live->prev = u;
        c->live = u;
        U.live++;
        e->chan[JH__CH_UNWIND] = u;
        u = NULL;
    }
    if (u && n == 1)
        free(u->run);
    sweep();
    bool now_far = U.far != far && far == 0;
    pthread_mutex_unlock(&U.lock);
    free(u);
    if (now_far)
        jh__log(c->ctx, JH_LOG_WARN, "unwind: could not place unwind tables within 2 GiB of "
                "code at %p: libunwind will not see it", (void *)e->start);
    if (err == -EINVAL) {       /* one bad CFI description: skip it, keep the channel */
        jh__log(c->ctx, JH_LOG_WARN, "unwind: %s: CFI rejected by the encoder, no unwind "
                "info registered for it", e->name);
        err = 0;
    } else if (err == JH_EOVERLAP) {
        jh__log(c->ctx, JH_LOG_WARN, "unwind: %s at %p overlaps live code of another "
                "context: no unwind info registered for it", e->name, (void *)e->start);
        err = 0;
    }
    return err;
}

static int unwind_remove(void *state, struct jh__entry *e)
{
    (void)state;
    struct uw_fn *u = e->chan[JH__CH_UNWIND];
    if (!u)
        return 0;
    e->chan[JH__CH_UNWIND] = NULL;
    pthread_mutex_lock(&U.lock);
    int err = fn_remove(u);
    sweep();
    pthread_mutex_unlock(&U.lock);
    return err;
}

static int unwind_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    (void)old_start;
    int err = unwind_remove(state, e);
    return err ? err : unwind_add(state, e);
}

static int unwind_flush(void *state)
{
    (void)state;
    int err = 0;
    pthread_mutex_lock(&U.lock);
    for (size_t i = U.nseg; !err && i-- > 0;)
        if (U.seg[i]->ndead)
            err = seg_rebuild(i, i + 1, NULL);
    sweep();
    pthread_mutex_unlock(&U.lock);
    return err;
}

static void unwind_close(void *state)
{
    struct uw_ctx *c = state;
    if (!c)
        return;
    pthread_mutex_lock(&U.lock);
    while (c->live)
        fn_remove(c->live);
    sweep();
    pthread_mutex_unlock(&U.lock);
    free(c);
}

const struct jh__channel_ops jh__unwind_ops = {
    .name = "unwind", .bit = JH_UNWIND, .open = unwind_open, .add = unwind_add,
    .remove = unwind_remove, .move = unwind_move, .flush = unwind_flush,
    .close = unwind_close,
};

/* ---- for tests and benchmarks --------------------------------------------------------- */
void jh__unwind_get_stats(struct jh__unwind_stats *st)
{
    pthread_mutex_lock(&U.lock);
    memset(st, 0, sizeof *st);
    st->mode = U.mode == JH__UW_NONE && U.llvm ? JH__UW_LLVM : U.mode;
    st->llvm = U.llvm;
    st->libunwind = U.dyn;
    st->segments = U.nseg;
    for (size_t i = 0; i < U.nseg; i++)
        if (U.seg[i]->n > st->largest)
            st->largest = U.seg[i]->n;
    st->live = U.live;
    st->dead = U.dead;
    st->fdes_copied = U.copied;
    st->rebuilds = U.rebuilds;
    st->retired = U.retired.len - U.retired.head + U.uncancel.len - U.uncancel.head;
    pthread_mutex_unlock(&U.lock);
}

int jh__unwind_force_mode(int mode)
{
    pthread_mutex_lock(&U.lock);
    int err = U.detected ? -EBUSY : 0;
    if (!err)
        U.forced = mode;
    pthread_mutex_unlock(&U.lock);
    return err;
}

void jh__unwind_tune(size_t max_fdes, size_t max_runs)
{
    pthread_mutex_lock(&U.lock);
    if (max_fdes)
        U.max_fdes = max_fdes;
    if (max_runs)
        U.max_runs = max_runs;
    pthread_mutex_unlock(&U.lock);
}
