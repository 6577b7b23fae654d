/*
 * gdb.c — the GDB/LLDB JIT interface, with in-memory ELF + DWARF images packed many
 * functions to an image, so debuggers stay fast with 100k functions.
 *
 *     $ JITHERALD=gdb gdb -q --args build/examples/minijit examples/minijit/calls.mini
 *     (gdb) break c                   # pending: c does not exist yet
 *     (gdb) run
 *     Breakpoint 1, c () at examples/minijit/calls.mini:6
 *     (gdb) bt
 *     #0  c () at examples/minijit/calls.mini:6
 *     #1  0x00007ffff78000a3 in b () at examples/minijit/calls.mini:12
 *     #2  0x00007ffff7800103 in a () at examples/minijit/calls.mini:17
 *     #3  0x00007ffff7800149 in main () at examples/minijit/calls.mini:22
 *     #4  0x000055555555c2e4 in mj_call (...) at examples/minijit/minijit.c:217
 *     ...
 *     (lldb) b c / run / bt / image lookup -a $pc          # the same through LLDB
 *
 * The protocol (GDB manual, "JIT Interface"): a list of {next, prev, symfile, size}
 * entries hangs off __jit_debug_descriptor; after each edit the JIT sets relevant_entry
 * and action_flag and calls __jit_debug_register_code, on which the debugger has a
 * breakpoint. The debugger reads only relevant_entry at that stop; on attach it walks the
 * whole list. So: the list is always complete and consistent (a debugger may stop us at
 * any instruction), an entry and its image stay unchanged until after their unregister
 * call, and one process-wide lock orders every edit (several contexts share the list).
 *
 * Why images are packed (docs/gdb.md has the measurements): every objfile makes each
 * later registration slower in GDB (breakpoint re-set and section sorting walk all of
 * them), so one image per function is quadratic — LLVM ORC's listener: 5,000 functions,
 * 5 s alone, 40 s under gdb. And every call of the hook while a debugger listens is a
 * ptrace stop costing ~0.3 ms here, whatever the image holds. The policy:
 *   - images are merged like an LSM tree: FANOUT images of one size class (or enough of
 *     them to fill an image) become one image of the next class; an image of `cap`
 *     functions (gdb_batch, default 1024) is full and only changes when its code is
 *     removed or moved. Live images stay below FANOUT per class + n/cap.
 *   - default, immediate: jh_code_add registers a one-function image before it returns,
 *     so a debugger attached now sees the function before it can run (pending
 *     breakpoints hit) and one attaching later finds it in the list. The merge registers
 *     the new image before unregistering the old ones: never a moment where a function is
 *     in no image. Cost: ~2 debugger stops per function while a debugger listens; a few
 *     microseconds of image building when none does.
 *   - deferred (gdb_batch | JH_GDB_DEFER, or JITHERALD_GDB_DEFER=1): new code is
 *     collected and registered as one image at jh_flush() or when `cap` functions are
 *     pending; the JIT calls jh_flush() before running new code. One stop per image: 100k
 *     functions under gdb in well under a second.
 *   - a removal rebuilds its image at once only when a debugger listens and the image is
 *     small; otherwise it waits (a GC sweep would rebuild a big image per removal) until a
 *     quarter of the image is dead, new code takes the addresses, or jh_flush().
 *
 * Attaching: gdb walks the list. LLDB 14 walks it too but then drops what it read (its
 * module list is reset at the end of the attach), so on our first call after a debugger
 * appeared (its breakpoint on the hook is visible to us) every image is announced again.
 *
 * Coexisting with another JIT in the process (LLVM exports __jit_debug_descriptor@@LLVM_14):
 * ours is a separate descriptor and hook, reached internally through hidden aliases so the
 * dynamic linker can never bind our list edits to someone else's list (whose lock we do
 * not hold). GDB reads a descriptor in every objfile, so it sees both. LLDB watches only
 * the first it finds: jh_open logs a warning naming the other library when it comes first.
 * Statically linked, LLVM's listener may resolve the symbols to ours and edit our list under
 * its own lock: we notice foreign entries and warn (docs/gdb.md).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "elf_image.h"
#include "internal.h"

/* ---- the interface itself (names, layout and version fixed by GDB) ---- */
enum { JIT_NOACTION = 0, JIT_REGISTER = 1, JIT_UNREGISTER = 2 };

struct jit_code_entry {
    struct jit_code_entry *next_entry, *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
};

struct jit_descriptor {
    uint32_t version;
    uint32_t action_flag;
    struct jit_code_entry *relevant_entry, *first_entry;
};

/* Version 1 statically: the debugger checks it before our code ever runs. */
JH_API struct jit_descriptor __jit_debug_descriptor = { 1, JIT_NOACTION, NULL, NULL };

/* The debugger's breakpoint lives here: never inlined, never folded into another empty
 * function (the asm with a memory clobber keeps a body and orders the stores before it). */
JH_API __attribute__((noinline, used)) void __jit_debug_register_code(void)
{
    __asm__ volatile("" ::: "memory");
}

extern struct jit_descriptor jh__gdb_descriptor
    __attribute__((alias("__jit_debug_descriptor"), visibility("hidden")));
extern void jh__gdb_register_code(void)
    __attribute__((alias("__jit_debug_register_code"), visibility("hidden")));

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- policy ---- */
#define FANOUT 16
#define NCLASS 4                /* < 16, < 256, < 4096, more: functions per image */
#define DEFAULT_CAP 1024
#define MAX_CAP 16384
#define LAZY_MIN 64             /* removals from images this big wait even under a debugger */

/* What the debugger sees of one image: its list entry and the ELF bytes. Allocated per
 * registration, freed only after the unregister call has returned. */
struct pub {
    struct jit_code_entry ce;
    struct jh__buf elf;
};

struct img {
    struct pub *pub;            /* NULL only transiently */
    struct jh__entry **fns;      /* sorted by start */
    size_t n;
    int cls;                    /* size class; NCLASS: full (n >= cap) */
    bool dirty;                 /* fns changed since pub was built (see img_changed) */
    size_t ndead;               /* functions removed since then */
    struct img *prev, *next;    /* in its class list */
};

struct gdb_state {
    jh_ctx *ctx;
    size_t cap;                 /* functions per full image */
    bool defer;
    struct jh__entry **pending;  /* deferred mode: added, not yet in any image */
    size_t npending, pending_cap;
    struct img *cls[NCLASS + 1];
    size_t cls_n[NCLASS + 1], cls_fns[NCLASS + 1];
    size_t ndirty;
    uintptr_t dead_lo, dead_hi; /* covers code removed from dirty images, not yet rebuilt */
};

static inline void compiler_barrier(void) { __asm__ volatile("" ::: "memory"); }

/* ---- list edits: list_lock held, each announced at once ---- */
static void list_add(struct jit_code_entry *ce)
{
    struct jit_descriptor *d = &jh__gdb_descriptor;
    ce->prev_entry = NULL;
    ce->next_entry = d->first_entry;
    compiler_barrier();         /* the entry is complete before anything points at it */
    if (ce->next_entry)
        ce->next_entry->prev_entry = ce;
    d->first_entry = ce;
    d->relevant_entry = ce;
    d->action_flag = JIT_REGISTER;
    jh__gdb_register_code();
}

static void list_remove(struct jit_code_entry *ce)
{
    struct jit_descriptor *d = &jh__gdb_descriptor;
    if (ce->prev_entry)
        ce->prev_entry->next_entry = ce->next_entry;
    else
        d->first_entry = ce->next_entry;
    if (ce->next_entry)
        ce->next_entry->prev_entry = ce->prev_entry;
    d->relevant_entry = ce;
    d->action_flag = JIT_UNREGISTER;
    jh__gdb_register_code();
}

/* Is a debugger listening? It has a breakpoint on the hook while the process runs (gdb
 * and lldb insert breakpoints on resume and remove them on stop), so our own code reads
 * the trap instruction there. One load; uprobes on the hook look the same (harmless). */
static bool hook_trapped(void)
{
    const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)&jh__gdb_register_code;
#if defined(__x86_64__) || defined(__i386__)
    return p[0] == 0xcc;                                        /* int3 */
#elif defined(__aarch64__)
    return p[0] == 0x00 && p[1] == 0x00 && p[2] == 0x20 && p[3] == 0xd4;   /* brk #0 */
#else
    return false;
#endif
}

static _Atomic bool listening;   /* what hook_trapped said last time; list_lock for writes */

/* A debugger attached since we last looked. gdb read the whole list on attach, but LLDB 14
 * loses what it read then (attaching resets its module list after its JIT loader ran), so
 * announce every image again: unregister + register, which leaves gdb's view unchanged.
 * Few images (packing), so a few dozen stops, once per attach. list_lock held. */
static void reannounce_all(void)
{
    struct jit_descriptor *d = &jh__gdb_descriptor;
    size_t n = 0;
    for (struct jit_code_entry *ce = d->first_entry; ce; ce = ce->next_entry)
        n++;
    struct jit_code_entry **all = n ? malloc(n * sizeof *all) : NULL;
    if (!all)
        return;
    n = 0;
    for (struct jit_code_entry *ce = d->first_entry; ce; ce = ce->next_entry)
        all[n++] = ce;
    for (size_t i = n; i-- > 0;) {      /* oldest first, so the list keeps its order */
        list_remove(all[i]);
        list_add(all[i]);
    }
    free(all);
}

/* list_lock held. */
static void check_debugger(void)
{
    bool now = hook_trapped();
    if (now && !atomic_load_explicit(&listening, memory_order_relaxed))
        reannounce_all();
    atomic_store_explicit(&listening, now, memory_order_relaxed);
}

/* Entries we linked, all contexts (list_lock). A list longer than that has another JIT's
 * entries in it: statically linked next to us, its listener resolved the descriptor to
 * ours and edits it under its own lock (docs/gdb.md). Checked every 256 edits; said once. */
static size_t our_entries;
static unsigned edits;
static _Atomic int foreign;     /* 0 no, 1 found, 2 reported */

static void check_foreign(void)
{
    if (++edits % 256 != 1 || atomic_load_explicit(&foreign, memory_order_relaxed))
        return;
    size_t n = 0;
    for (struct jit_code_entry *ce = jh__gdb_descriptor.first_entry; ce; ce = ce->next_entry)
        n++;
    if (n != our_entries)
        atomic_store_explicit(&foreign, 1, memory_order_relaxed);
}

static void report_foreign(jh_ctx *ctx)
{
    int one = 1;
    if (atomic_load_explicit(&foreign, memory_order_relaxed) == 1 &&
        atomic_compare_exchange_strong(&foreign, &one, 2))
        jh__log(ctx, JH_LOG_WARN, "gdb: another JIT adds entries to jitherald's "
                "__jit_debug_descriptor list (statically linked with us?) under its own lock: "
                "concurrent registrations can corrupt it; link libjitherald.so instead");
}

static void pub_free(struct pub *p)
{
    if (p) {
        jh__buf_free(&p->elf);
        free(p);
    }
}

static int pub_build(struct pub **out, struct jh__entry *const *fns, size_t n)
{
    struct pub *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    /* no program headers: neither debugger needs them (measured, see elf_image.h) */
    struct jh__elf_spec spec = { .fns = (const struct jh__entry *const *)fns, .nfns = n,
                                .flags = JH__ELF_NO_PHDRS };
    int err = jh__elf_image(&p->elf, &spec, NULL);
    if (err) {
        pub_free(p);
        return err;
    }
    p->ce.symfile_addr = (const char *)p->elf.p;
    p->ce.symfile_size = p->elf.len;
    *out = p;
    return 0;
}

/* Change what the debugger sees: register `add` first, then drop the others, so a
 * function moving between images is never in none of them. */
static void publish(struct pub *add, struct pub *const *drop, size_t ndrop)
{
    pthread_mutex_lock(&list_lock);
    check_debugger();
    if (add) {
        list_add(&add->ce);
        our_entries++;
    }
    for (size_t i = 0; i < ndrop; i++) {
        if (drop[i]) {
            list_remove(&drop[i]->ce);
            our_entries--;
        }
    }
    check_foreign();
    jh__gdb_descriptor.relevant_entry = NULL;
    jh__gdb_descriptor.action_flag = JIT_NOACTION;
    pthread_mutex_unlock(&list_lock);
    for (size_t i = 0; i < ndrop; i++)
        pub_free(drop[i]);
}

/* ---- images and their size classes ---- */
static int class_of(const struct gdb_state *st, size_t n)
{
    if (n >= st->cap)
        return NCLASS;
    int c = 0;
    for (size_t lim = FANOUT; n >= lim && c < NCLASS - 1; lim *= FANOUT)
        c++;
    return c;
}

/* A full image stays full until half of it is gone: otherwise one removal would drop it
 * into a class where it merges again at once, and a GC sweep would rebuild big images
 * over and over. */
static void class_link(struct gdb_state *st, struct img *im)
{
    int c = im->cls == NCLASS && im->n >= st->cap / 2 ? NCLASS : class_of(st, im->n);
    im->cls = c;
    im->prev = NULL;
    im->next = st->cls[c];
    if (im->next)
        im->next->prev = im;
    st->cls[c] = im;
    st->cls_n[c]++;
    st->cls_fns[c] += im->n;
}

static void class_unlink(struct gdb_state *st, struct img *im)
{
    int c = im->cls;
    if (im->prev)
        im->prev->next = im->next;
    else
        st->cls[c] = im->next;
    if (im->next)
        im->next->prev = im->prev;
    st->cls_n[c]--;
    st->cls_fns[c] -= im->n;
}

static void img_free(struct gdb_state *st, struct img *im)
{
    if (im->dirty)
        st->ndirty--;
    free(im->fns);
    free(im);
}

static int cmp_start(const void *a, const void *b)
{
    const struct jh__entry *x = *(struct jh__entry *const *)a, *y = *(struct jh__entry *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* A new image for fns[0..n) (taken over on success), registered before the images in
 * drop[] are unregistered, then classified. */
static int img_new(struct gdb_state *st, struct jh__entry **fns, size_t n,
                   struct pub *const *drop, size_t ndrop, struct img **out)
{
    struct img *im = calloc(1, sizeof *im);
    if (!im)
        return -ENOMEM;
    im->cls = -1;
    if (n > 1)
        qsort(fns, n, sizeof *fns, cmp_start);
    int err = pub_build(&im->pub, fns, n);
    if (err) {
        free(im);
        return err;
    }
    im->fns = fns;
    im->n = n;
    for (size_t i = 0; i < n; i++)
        fns[i]->chan[JH__CH_GDB] = im;
    publish(im->pub, drop, ndrop);
    class_link(st, im);
    if (out)
        *out = im;
    return 0;
}

/* Rebuild one image from its current functions and swap it in (or drop it when empty). */
static int img_rebuild(struct gdb_state *st, struct img *im)
{
    struct pub *old = im->pub, *p = NULL;
    if (im->n) {
        int err = pub_build(&p, im->fns, im->n);
        if (err)
            return err;
    }
    im->pub = p;
    publish(p, &old, 1);
    if (im->dirty) {
        im->dirty = false;
        st->ndirty--;
    }
    im->ndead = 0;
    if (!im->n) {
        class_unlink(st, im);
        img_free(st, im);
    }
    return 0;
}

/* Merge the images of class c into one when there are FANOUT of them or together they
 * fill an image; the result may complete the next class, so go on upwards. */
static int maybe_merge(struct gdb_state *st, int c)
{
    for (; c < NCLASS; c++) {
        if (st->cls_n[c] < 2 || (st->cls_n[c] < FANOUT && st->cls_fns[c] < st->cap))
            continue;
        size_t n = st->cls_fns[c], k = 0, nd = 0;
        struct jh__entry **fns = malloc(n * sizeof *fns);
        struct pub **drop = malloc(st->cls_n[c] * sizeof *drop);
        if (!fns || !drop) {
            free(fns);
            free(drop);
            return -ENOMEM;
        }
        for (struct img *im = st->cls[c]; im; im = im->next) {
            memcpy(fns + k, im->fns, im->n * sizeof *fns);
            k += im->n;
            drop[nd++] = im->pub;
        }
        /* On failure the old images simply stay as they are. */
        struct img *old = st->cls[c];
        st->cls[c] = NULL;
        st->cls_n[c] = st->cls_fns[c] = 0;
        int err = img_new(st, fns, n, drop, nd, NULL);
        free(drop);
        if (err) {
            free(fns);
            for (struct img *im = old, *next; im; im = next) {
                next = im->next;
                class_link(st, im);
            }
            return err;
        }
        for (struct img *im = old, *next; im; im = next) {
            next = im->next;
            img_free(st, im);
        }
    }
    return 0;
}

/* The image's function set changed (n was old_n): reclassify, then rebuild it now, or
 * mark it dirty and rebuild it later. Rebuilding a big image per removal made a GC sweep
 * cost 0.1-0.9 ms per removal without a debugger, and ~5 ms with gdb attached (it reads
 * the whole image again). So a removal waits (may_wait) unless a debugger listens and the
 * image is small; a waiting image is rebuilt once a quarter of it is dead, when new code
 * lands on the removed addresses (gdb_add), at jh_flush, or in a merge. Until then a
 * debugger may still name freed code, which nothing runs. [lo, hi): the removed code. */
static int img_changed(struct gdb_state *st, struct img *im, size_t old_n, bool may_wait,
                       uintptr_t lo, uintptr_t hi)
{
    size_t n = im->n;
    im->n = old_n;
    class_unlink(st, im);
    im->n = n;
    class_link(st, im);
    bool wait = st->defer || (may_wait && (old_n >= LAZY_MIN || !hook_trapped()));
    if (n && wait) {
        if (!im->dirty)
            st->ndirty++;
        im->dirty = true;
        im->ndead += old_n - n;
        if (hi > lo) {
            if (st->dead_hi <= st->dead_lo || lo < st->dead_lo)
                st->dead_lo = lo;
            if (hi > st->dead_hi)
                st->dead_hi = hi;
        }
        if (st->defer || im->ndead * 4 < n + im->ndead)
            return 0;
    }
    int c = im->cls;
    int err = img_rebuild(st, im);
    return err ? err : maybe_merge(st, c);
}

/* Rebuild every dirty image (and merge what became small). */
static int rebuild_dirty(struct gdb_state *st)
{
    int err;
    for (int c = 0; c <= NCLASS && st->ndirty; c++) {
        for (struct img *im = st->cls[c], *next; im && st->ndirty; im = next) {
            next = im->next;
            if (im->dirty && (err = img_rebuild(st, im)))
                return err;
        }
    }
    st->dead_lo = st->dead_hi = 0;
    for (int c = 0; c < NCLASS; c++)
        if ((err = maybe_merge(st, c)))
            return err;
    return 0;
}

/* Images still naming removed code must go before new code takes the addresses: two
 * images claiming one address confuse both debuggers. */
static int settle(struct gdb_state *st, uintptr_t lo, uintptr_t hi)
{
    if (!st->ndirty || st->defer)
        return 0;
    if (lo < st->dead_hi && st->dead_lo < hi)
        return rebuild_dirty(st);
    return 0;
}

/* Index of e in im->fns (sorted by start; `start` is where e was when it was sorted). */
static size_t img_find(const struct img *im, const struct jh__entry *e, uintptr_t start)
{
    size_t lo = 0, hi = im->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (im->fns[mid]->start < start && im->fns[mid] != e)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo < im->n && im->fns[lo] != e)   /* a moved e may compare out of place */
        lo++;
    return lo;
}

/* ---- channel hooks ---- */
static int gdb_flush(void *state)
{
    struct gdb_state *st = state;
    int err = 0;
    if (hook_trapped() != atomic_load_explicit(&listening, memory_order_relaxed)) {
        pthread_mutex_lock(&list_lock);
        check_debugger();
        pthread_mutex_unlock(&list_lock);
    }
    if (st->ndirty && (err = rebuild_dirty(st)))  /* stale images first: no overlaps */
        return err;
    if (st->npending) {
        struct jh__entry **fns = malloc(st->npending * sizeof *fns);
        if (!fns)
            return -ENOMEM;
        memcpy(fns, st->pending, st->npending * sizeof *fns);
        struct img *im;
        if ((err = img_new(st, fns, st->npending, NULL, 0, &im))) {
            free(fns);
            return err;
        }
        st->npending = 0;
        if ((err = maybe_merge(st, im->cls)))
            return err;
    }
    report_foreign(st->ctx);
    return 0;
}

static int gdb_add(void *state, struct jh__entry *e)
{
    struct gdb_state *st = state;
    e->chan[JH__CH_GDB] = NULL;
    if (st->defer) {
        if (st->npending == st->pending_cap) {
            size_t cap = st->pending_cap ? 2 * st->pending_cap : 64;
            struct jh__entry **p = realloc(st->pending, cap * sizeof *p);
            if (!p)
                return -ENOMEM;
            st->pending = p;
            st->pending_cap = cap;
        }
        st->pending[st->npending++] = e;
        if (hook_trapped() != atomic_load_explicit(&listening, memory_order_relaxed)) {
            pthread_mutex_lock(&list_lock);
            check_debugger();
            pthread_mutex_unlock(&list_lock);
        }
        return st->npending >= st->cap ? gdb_flush(st) : 0;
    }
    int err = settle(st, e->start, e->start + e->size);
    if (err)
        return err;
    struct jh__entry **fns = malloc(sizeof *fns);
    if (!fns)
        return -ENOMEM;
    fns[0] = e;
    err = img_new(st, fns, 1, NULL, 0, NULL);
    if (err) {
        free(fns);
        return err;
    }
    report_foreign(st->ctx);
    return maybe_merge(st, 0);
}

static int gdb_remove(void *state, struct jh__entry *e)
{
    struct gdb_state *st = state;
    struct img *im = e->chan[JH__CH_GDB];
    e->chan[JH__CH_GDB] = NULL;
    if (!im) {
        for (size_t i = st->npending; i-- > 0;) {
            if (st->pending[i] == e) {
                memmove(st->pending + i, st->pending + i + 1,
                        (st->npending - i - 1) * sizeof *st->pending);
                st->npending--;
                break;
            }
        }
        return 0;
    }
    size_t i = img_find(im, e, e->start);
    if (i == im->n)
        return -EFAULT;     /* bookkeeping lost: let the core switch the channel off */
    memmove(im->fns + i, im->fns + i + 1, (im->n - i - 1) * sizeof *im->fns);
    im->n--;
    return img_changed(st, im, im->n + 1, true, e->start, e->start + e->size);
}

static int gdb_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct gdb_state *st = state;
    struct img *im = e->chan[JH__CH_GDB];
    if (!im)
        return 0;           /* pending: its image is built from e->start at the flush */
    size_t i = img_find(im, e, old_start);
    if (i == im->n)
        return -EFAULT;
    if (st->defer || im->n >= LAZY_MIN) {
        /* A compacting GC moves many functions: rebuilding a big image for each (and, with
         * a debugger, making it read the image again) costs milliseconds per move. Leave
         * the old address to the lazy removal path and announce the code anew: a
         * one-function image now (or pending, deferred), merged later as usual. */
        memmove(im->fns + i, im->fns + i + 1, (im->n - i - 1) * sizeof *im->fns);
        im->n--;
        int err = img_changed(st, im, im->n + 1, true, old_start, old_start + e->size);
        return err ? err : gdb_add(st, e);
    }
    int err = settle(st, e->start, e->start + e->size);
    if (err)
        return err;
    /* keep fns sorted: slide e to its new place */
    while (i > 0 && im->fns[i - 1]->start > e->start) {
        im->fns[i] = im->fns[i - 1];
        im->fns[--i] = e;
    }
    while (i + 1 < im->n && im->fns[i + 1]->start < e->start) {
        im->fns[i] = im->fns[i + 1];
        im->fns[++i] = e;
    }
    /* now, even without a debugger: the code at its new address must be findable */
    return img_changed(st, im, im->n, false, 0, 0);
}

static void gdb_close(void *state)
{
    struct gdb_state *st = state;
    if (!st)
        return;
    for (int c = 0; c <= NCLASS; c++) {
        for (struct img *im = st->cls[c], *next; im; im = next) {
            next = im->next;
            for (size_t i = 0; i < im->n; i++)
                im->fns[i]->chan[JH__CH_GDB] = NULL;
            publish(NULL, &im->pub, 1);
            img_free(st, im);
        }
    }
    for (size_t i = 0; i < st->npending; i++)
        st->pending[i]->chan[JH__CH_GDB] = NULL;
    free(st->pending);
    free(st);
}

/* A fork taken while another thread edited the list (jh_close of another context runs
 * outside the fork handlers' locks) must not leave the child's lock held forever. */
static void child_unlock(void) { pthread_mutex_init(&list_lock, NULL); }
static void install_atfork(void) { pthread_atfork(NULL, NULL, child_unlock); }
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static size_t env_size(jh_ctx *ctx, const char *name, size_t dflt)
{
    const char *v = ctx->flags & JH_OPT_IGNORE_ENV ? NULL : getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    return *end || n > UINT32_MAX ? dflt : (size_t)n;
}

static int gdb_open(jh_ctx *ctx, void **state)
{
    struct gdb_state *st = calloc(1, sizeof *st);
    if (!st)
        return -ENOMEM;
    pthread_once(&atfork_once, install_atfork);
    st->ctx = ctx;
    st->cap = ctx->gdb_batch & ~(uint32_t)JH_GDB_DEFER;
    st->defer = ctx->gdb_batch & JH_GDB_DEFER;
    st->cap = env_size(ctx, "JITHERALD_GDB_BATCH", st->cap ? st->cap : DEFAULT_CAP);
    if (!st->cap)
        st->cap = DEFAULT_CAP;
    if (st->cap > MAX_CAP)      /* an image may hold up to 2 * cap functions, each maybe */
        st->cap = MAX_CAP;      /* its own .text section: stay below ELF's 65,280 */
    st->defer = env_size(ctx, "JITHERALD_GDB_DEFER", st->defer) != 0;

    /* Another JIT interface that the dynamic linker finds first is the one LLDB watches. */
    void *first = dlsym(RTLD_DEFAULT, "__jit_debug_descriptor");
    Dl_info other;
    if (first && first != (void *)&jh__gdb_descriptor && dladdr(first, &other))
        jh__log(ctx, JH_LOG_WARN, "gdb: %s also defines __jit_debug_descriptor and comes "
                "first: gdb sees both JITs, lldb only that one",
                other.dli_fname ? other.dli_fname : "another library");
    jh__log(ctx, JH_LOG_DEBUG, "gdb: %zu functions per image, %s", st->cap,
            st->defer ? "deferred to jh_flush" : "immediate");
    *state = st;
    return 0;
}

const struct jh__channel_ops jh__gdb_ops = {
    .name = "gdb", .bit = JH_GDB, .open = gdb_open, .add = gdb_add, .remove = gdb_remove,
    .move = gdb_move, .flush = gdb_flush, .close = gdb_close,
};
