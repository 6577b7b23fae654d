/*
 * announce.c — see preload.h. One function the VM just described, told to every context in
 * the VM's own thread, before the VM's write returns (and so before the code runs):
 *
 *   1. said again (a map line and a jitdump LOAD for the same code, a file read again):
 *      nothing to do, not even a read; with lines or CFI, the new description replaces
 *      the old;
 *   2. readable: every page of the range (the VM may describe code it already freed, or
 *      a range far past its stub): one process_vm_readv per 1024 pages, never a fault;
 *      code inside a loaded object's text (V8's builtins) needs none;
 *   3. old code in the range (the VM reused the addresses, and perf maps have no
 *      removal): removed, in O(k log n) (jh_code_remove_range);
 *   4. no CFI: the frame its first bytes prove (tools/lib/prologue.h), or, where they prove
 *      none, CFI that ends unwinding there: a frame described wrongly sends gdb's `bt`
 *      and every unwinder into garbage, one described as the last ends the backtrace;
 *   5. the contexts (preload.c): the tools' and the record's (gdb, unwind, auditlog), JIT
 *      code at once, debuggers told before jh_code_add returns, so a stop in it names it,
 *      code the process already has a file for (V8's builtins in node's own text, 2,200
 *      listed at start: unwinding through them needs our description) in batches (below:
 *      one at a time under gdb, node took 2.7 s to start instead of 0.9 s); elfmap's
 *      inside the guard's swap window (guard.c: the VM's page calls on those pages wait,
 *      or the swap is skipped; never for code in a loaded object's text, which is that
 *      object's file already).
 * While this runs the thread is inside jitherald (hear.c) and its protection keys let it
 * read every page (node tags wasm code with a key of its own).
 */
#include "preload.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "base/clock.h"
#include "lib/prologue.h"
#include "lib/symbol.h"

/* Functions held for one batch, at most: gdb's full image (gdb_batch, 1024 by default),
 * which the gdb channel makes of a jh_code_add_many, so that each builtin is encoded into an
 * image once. At 256 every four images merged into a full one, encoding each builtin
 * twice: half of the gdb channel's cost at node's start (issue 30). A debugger that
 * listens reads one image per 1024 builtins. */
#define PENDING_MAX 1024

/* The range every announcement so far spans, and the 64 KiB chunks it ever touched (a set
 * that only grows: open addressing, chunk + 1 per slot, written under jhp_lock, read by any
 * thread): a munmap or madvise elsewhere (V8's heap: ~750 at node's start, between code
 * scattered over the address space, so the span alone rejects none) costs no lookup in
 * the contexts. Past half the set, or for a range of more than CHUNK_ASK chunks, the
 * contexts are asked. */
static _Atomic uint64_t code_lo = UINT64_MAX, code_hi;
#define CHUNK_SHIFT 16
#define CHUNKS 8192
#define CHUNK_ASK 64
static _Atomic uint64_t chunk_set[CHUNKS];
static size_t nchunks;
static atomic_bool chunks_full;

static unsigned chunk_slot(uint64_t c) { return (unsigned)((c * 0x9E3779B97F4A7C15ull) >> 51); }

static bool chunk_has(uint64_t c)
{
    for (unsigned k = chunk_slot(c);; k = (k + 1) % CHUNKS) {
        uint64_t v = atomic_load_explicit(&chunk_set[k], memory_order_acquire);
        if (v == c + 1)
            return true;
        if (!v)
            return false;
    }
}

static void chunk_add(uint64_t c)
{
    for (unsigned k = chunk_slot(c);; k = (k + 1) % CHUNKS) {
        uint64_t v = atomic_load_explicit(&chunk_set[k], memory_order_relaxed);
        if (v == c + 1)
            return;
        if (!v) {
            atomic_store_explicit(&chunk_set[k], c + 1, memory_order_release);
            if (++nchunks >= CHUNKS / 2)
                atomic_store(&chunks_full, true);
            return;
        }
    }
}

bool jhp_maybe_code(uint64_t start, uint64_t len)
{
    if (start >= atomic_load_explicit(&code_hi, memory_order_acquire) ||
        start + len <= atomic_load_explicit(&code_lo, memory_order_acquire))
        return false;
    uint64_t c0 = start >> CHUNK_SHIFT, c1 = (start + len - 1) >> CHUNK_SHIFT;
    if (atomic_load_explicit(&chunks_full, memory_order_acquire) || c1 - c0 >= CHUNK_ASK)
        return true;
    for (uint64_t c = c0; c <= c1; c++)
        if (chunk_has(c))
            return true;
    return false;
}

static void spans(uint64_t start, uint64_t size)
{
    /* the chunk added last (+ 1; the set only grows): node's builtins come ~30 to a chunk,
     * in address order, and each looked its chunk up in the set again (issue 30) */
    static uint64_t last_added;
    uint64_t c0 = start >> CHUNK_SHIFT, c1 = (start + size - 1) >> CHUNK_SHIFT;
    if (c1 - c0 >= CHUNK_ASK)
        atomic_store(&chunks_full, true);   /* (a function of 4 MiB: the contexts say) */
    if (c0 == c1 && c0 + 1 == last_added)
        c0++;                               /* (in the set already) */
    for (uint64_t c = c0; c <= c1 && !atomic_load(&chunks_full); c++)
        chunk_add(c), last_added = c + 1;
    if (start < atomic_load(&code_lo))
        atomic_store(&code_lo, start);
    if (start + size > atomic_load(&code_hi))
        atomic_store(&code_hi, start + size);
}

/* Bucket b covers [lo(b), lo(b + 1)): below 8 ns one per value, then 8 per octave. */
static uint64_t bucket_lo(unsigned b)
{
    if (b < 8)
        return b;
    unsigned oct = b / 8, k = b % 8;
    return (uint64_t)(8 + k) << (oct - 1);
}

void jhp_hist_add(struct jhp_hist *h, uint64_t ns)
{
    unsigned b;
    if (ns < 8) {
        b = (unsigned)ns;
    } else {
        unsigned msb = 63 - (unsigned)__builtin_clzll(ns);     /* >= 3 */
        b = (msb - 2) * 8 + (unsigned)((ns >> (msb - 3)) & 7);
    }
    unsigned last = sizeof h->bucket / sizeof h->bucket[0] - 1;
    h->bucket[b < last ? b : last]++;
    h->n++;
    h->sum += ns;
    if (ns > h->max)
        h->max = ns;
}

uint64_t jhp_hist_pct(const struct jhp_hist *h, unsigned pct)
{
    uint64_t want = (h->n * pct + 99) / 100, seen = 0;
    unsigned nb = sizeof h->bucket / sizeof h->bucket[0];
    for (unsigned b = 0; b < nb; b++) {
        seen += h->bucket[b];
        if (want && seen >= want) {
            uint64_t top = b + 1 < nb ? bucket_lo(b + 1) : h->max;
            return top < h->max ? top : h->max;
        }
    }
    return 0;
}

/* The file the dynamic loader mapped (the executable, a library) that a is in: true, and
 * its bounds in *lo, *hi. _dl_find_object is lock-free (glibc 2.35), for unwinders; where
 * it is missing, every code counts as JIT code (none held). One lookup per announcement
 * (issue 30: two, 9,000 at node's start). */
static bool object_of(uint64_t a, uint64_t *lo, uint64_t *hi)
{
#ifdef DLFO_STRUCT_HAS_EH_DBASE
    struct dl_find_object r;
    if (_dl_find_object((void *)(uintptr_t)a, &r) != 0)
        return false;
    *lo = (uint64_t)(uintptr_t)r.dlfo_map_start, *hi = (uint64_t)(uintptr_t)r.dlfo_map_end;
    return true;
#else
    (void)a, (void)lo, (void)hi;
    return false;
#endif
}

/* The executable segments loaded objects map from their files, as found so far (under
 * jhp_lock): the object's bounds (_dl_find_object's) and the segment's file-backed part. */
#define TEXTS 64
static struct { uint64_t obj_lo, obj_hi, lo, hi; } texts[TEXTS];
static unsigned ntexts;

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const uint64_t *want = arg;      /* { address, object's start, object's end } */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_filesz;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || want[0] < lo || want[0] >= hi)
            continue;
        unsigned k = ntexts < TEXTS ? ntexts++ : (unsigned)(want[0] >> 12) % TEXTS;
        texts[k].obj_lo = want[1], texts[k].obj_hi = want[2];
        texts[k].lo = lo, texts[k].hi = hi;
        return 1;
    }
    return 0;
}

/* Is [start, start + size), in the loaded object at [olo, ohi) (object_of), inside an
 * executable segment that the object maps from its file (V8's builtins, embedded in node's
 * text)? Those pages are the object's file, readable as long as the object is loaded (no
 * process_vm_readv to learn it), and elfmap can never map its image there: learning so
 * cost it a look at the process's mappings per function (2,400 at node's start). */
static bool in_file_text(uint64_t start, uint64_t size, uint64_t olo, uint64_t ohi)
{
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < ntexts; i++)
            if (texts[i].obj_lo == olo && texts[i].obj_hi == ohi && start >= texts[i].lo &&
                start < texts[i].hi)
                return start + size <= texts[i].hi;
        uint64_t want[3] = { start, olo, ohi };
        if (pass || !dl_iterate_phdr(find_text, want))
            return false;
    }
    return false;
}

/* c's frame from its bytes, for code described without CFI: the frame-pointer prologues
 * real VMs emit (prologue.h), and where none is proven, the return address undefined, so
 * that unwinders end there (gdb: the last frame of `bt`; libgcc: end of stack) instead of
 * taking whatever sits at [rsp] for it. cfi: room for the instructions, alive as long as
 * c. JITHERALD_RUN_FP=0: nothing said (the tools' own heuristics). */
static void frame_of(struct jh_code *c, uint8_t cfi[JHR_PROLOGUE_CFI_MAX])
{
    if (!jhp_cfg.guess_fp)
        return;
    if (jhr_prologue_describe(c, cfi) == JHR_FRAME_NONE)
        jhp_st.no_frame++;
    else
        jhp_st.fp_frames++;
}

/* c into ctx, over the code it replaces (that code is gone: the VM reused the addresses),
 * and without its CFI if the library refuses that (then with the frame its bytes prove,
 * described in cfi). */
static int add_to(jh_ctx *ctx, struct jh_code *c, unsigned *replaced,
                  uint8_t cfi[JHR_PROLOGUE_CFI_MAX])
{
    int n = jh_code_remove_range(ctx, c->start, c->size);
    if (replaced && n > 0)
        *replaced += (unsigned)n;
    int rc = jh_code_add(ctx, c, NULL);
    if (rc == -EINVAL && c->unwind == JH_UNWIND_EH_FRAME) {
        /* unwind rules the library does not take (it reads and translates every record
         * and instruction): the name and the lines are worth more than the CFI */
        jhp_st.with_cfi--, jhp_st.cfi_refused++;
        c->unwind = JH_UNWIND_NONE;
        c->eh_frame = NULL, c->eh_frame_len = 0, c->eh_frame_addr = 0;
        frame_of(c, cfi);
        rc = jh_code_add(ctx, c, NULL);
    }
    return rc;
}

/* The pages elfmap may touch for code at [start, end): its image window (3 MiB at most,
 * elfmap.h) around it, and old code in the way. */
static void swap_window(jh_ctx *ctx, uint64_t start, uint64_t end, uint64_t *lo, uint64_t *hi)
{
    const void *s;
    size_t sz;
    if (jh_lookup(ctx, (const void *)(uintptr_t)start, NULL, &s, &sz, NULL, 0) == 0)
        start = (uint64_t)(uintptr_t)s;
    if (jh_lookup(ctx, (const void *)(uintptr_t)(end - 1), NULL, &s, &sz, NULL, 0) == 0)
        end = (uint64_t)(uintptr_t)s + sz;
    const uint64_t margin = 3u << 20;
    *lo = start > margin ? start - margin : 0;
    *hi = end + margin > end ? end + margin : UINT64_MAX;
}

/*
 * Which file announced the code at a start address, for the last announcements (direct
 * mapped: a collision only costs the shortcut below). node and Erlang describe each
 * function in both files, one after the other, and Erlang spells the names differently
 * ("$global::apply_fun_shared" in its map, "global::apply_fun_shared" in its jitdump):
 * the second description of exactly the same range, from the other file, adding no line
 * and no CFI, is the same function said again, not new code over old.
 */
#define SAID 4096
static struct { uint64_t start, size; int from; } said[SAID];

static unsigned said_slot(uint64_t start) { return (unsigned)((start >> 4) % SAID); }

/* What jhp_tools was ever given spans [given_lo, given_hi) (under jhp_lock): code outside
 * cannot be said again there, and needs no lookup to know it (node's 2,200 builtins lie
 * in its text, below or above its JIT code, each above the last batch). */
static uint64_t given_lo = UINT64_MAX, given_hi;

static void given_span(uint64_t start, uint64_t size)
{
    given_lo = start < given_lo ? start : given_lo;
    given_hi = start + size > given_hi ? start + size : given_hi;
}

/* One name in both spellings: Erlang's map puts a '$' before the name its jitdump gives
 * ("$init:bs2as/1", "init:bs2as/1"). Without this, a map line heard after the said slot
 * of its jitdump record was taken (Erlang allocates modules 64 KiB apart: functions at the
 * same offset share a slot, and its map lags its jitdump by hundreds of functions) was new
 * code over old: 620 of its 16,575 functions lost the jitdump's description for the map's,
 * each costing gdb the rebuild of a full image. */
static bool same_name(const char *a, const char *b)
{
    return !strcmp(a, b) || (*a == '$' && !strcmp(a + 1, b)) || (*b == '$' && !strcmp(a, b + 1));
}

/* Is ctx's code at f's place the same function, said again? */
static bool same(jh_ctx *ctx, const struct jhp_fn *f, const char *name)
{
    char old[1024];
    const void *s;
    size_t sz;
    if (f->nlines || f->eh_frame_len || !ctx ||
        jh_lookup(ctx, (const void *)(uintptr_t)f->start, NULL, &s, &sz, old, sizeof old) ||
        (uint64_t)(uintptr_t)s != f->start || sz != f->size)
        return false;
    unsigned k = said_slot(f->start);
    return same_name(old, name) || (said[k].start == f->start && said[k].size == f->size &&
                                  said[k].from && said[k].from != f->from);
}

/*
 * Code in a loaded object's text (V8's builtins: node lists 2,200 at start, one map line
 * and one jitdump record each, in address order) is held and handed to the tools' context
 * in batches (jh_code_add_many: one lock, one unwind run and one gdb image per batch
 * instead of a run rebuilt and an image built per function), at the latest before anything else is announced (JIT code that calls it,
 * a move), when a batch is full, and at exit. What a tool sees of it is the same, a few
 * records later. The builtins are listed before they first run (Isolate::Init lists them
 * in V8FileLogger::LateSetup; Builtins_JSEntry, the way into JS, first runs later, in
 * node's bootstrapper), and V8 lists the snapshot's two JS functions right after them,
 * which hands the last batch over: under gdb, at JSEntry's first stop, nothing is held
 * (docs/run.md, "Overhead"). A VM that ran such code without listing anything after it
 * would have it named from the next record on (gdb already was, in batches, before).
 * The VM never unmaps a loaded object's text (ld.so does at dlclose, with calls no
 * preload hears): a held function cannot be forgotten before its batch goes.
 */
/* Parallel arrays, so that the descriptions themselves are the array jh_code_add_many takes:
 * a copy of them per batch (208 KB more of static memory, faulted in at node's start) bought
 * nothing, as the names are in held_names either way. */
static struct jh_code held[PENDING_MAX];    /* name and symbol in held_names, cfi in held_cfi */
static uint8_t held_cfi[PENDING_MAX][JHR_PROLOGUE_CFI_MAX];    /* frame_of's */
static int held_from[PENDING_MAX];
static char held_names[PENDING_MAX * 96];
static size_t nheld, held_used;

/* The held functions, into the tools' context (the only one that takes them). */
static void add_held(void)
{
    static int rc[PENDING_MAX];
    if (!nheld)
        return;
    size_t n = nheld;
    const struct jh_code *codes = held;
    nheld = held_used = 0;
    jhp_inside++;
    uint64_t lo = given_lo, hi = given_hi;     /* what jhp_tools held before this batch */
    unsigned replaced = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = (uint64_t)(uintptr_t)codes[i].start;
        given_span(at, codes[i].size);
        if (at >= hi || at + codes[i].size <= lo)
            continue;                   /* nothing there to replace (given_span) */
        int m = jh_code_remove_range(jhp_tools, codes[i].start, codes[i].size);
        replaced += m > 0 ? (unsigned)m : 0;    /* code it replaces: gone (as add_to) */
    }
    jh_code_add_many(jhp_tools, codes, n, NULL, rc);
    jhp_inside--;
    jhp_st.replaced += replaced;
    jhp_st.batches++;
    for (size_t i = 0; i < n; i++) {
        if (rc[i] < 0)
            jhp_st.failed++;
        else
            jhp_st.announced++;
    }
}

/* f (in a loaded object's text, described by name alone) held for the next batch: true;
 * false when it cannot be (it goes the usual way). */
static bool hold(const struct jhp_fn *f, const char *name, size_t name_len)
{
    if (!jhp_tools)
        return false;
    size_t room = name_len + 1 + JHR_SYMBOL_MAX(name_len);
    if (nheld == PENDING_MAX || held_used + room > sizeof held_names)
        add_held();
    const struct jh_code *last = nheld ? &held[nheld - 1] : NULL;
    if (last && f->start < (uint64_t)(uintptr_t)last->start + last->size)
        add_held();     /* below or over the last one: the batch stays sorted, apart */
    struct jh_code *h = &held[nheld];
    char *nm = held_names + held_used;
    memcpy(nm, name, name_len + 1);
    /* the symbol derived once here, not once per context it goes to (tools/lib/symbol.h) */
    size_t sym_len;
    const char *sym = jhr_symbol_n(nm + name_len + 1, name, &sym_len);   /* (room: above) */
    *h = (struct jh_code){ .sz = sizeof *h, .name = nm, .symbol = sym,
                           .start = (const void *)(uintptr_t)f->start, .size = f->size };
    held_from[nheld] = f->from;
    frame_of(h, held_cfi[nheld]);
    held_used += name_len + 1 + (sym ? sym_len + 1 : 0);
    nheld++;
    spans(f->start, f->size);
    unsigned k = said_slot(f->start);
    said[k].start = f->start, said[k].size = f->size, said[k].from = f->from;
    return true;
}

/* f is the last held function said again (by the other file, or by name: its first n
 * bytes, which hold no NUL). Asked before the name is copied out: the jitdump's repeat of
 * each of node's 2,182 builtins needs no copy. */
static bool held_again(const struct jhp_fn *f, size_t n)
{
    const struct jh_code *last = nheld ? &held[nheld - 1] : NULL;
    return last && !f->nlines && !f->eh_frame_len && (uint64_t)(uintptr_t)last->start == f->start &&
           last->size == f->size &&
           (held_from[nheld - 1] != f->from ||
            (!strncmp(last->name, f->name, n) && !last->name[n]));
}

void jhp_flush_all(void)
{
    add_held();
}

void jhp_announce(const struct jhp_fn *f)
{
    jhp_st.records++;
    if (!f->name_len || !f->size || f->start + f->size < f->start || !f->start) {
        jhp_st.malformed++;
        return;
    }
    if (!jhp_open())
        return;
    char name[1024];
    size_t n = f->name_len < sizeof name - 1 ? f->name_len : sizeof name - 1;
    if (held_again(f, n)) {
        /* (the last held function, in a loaded object's text: it still is, nothing unmaps
         * one before its batch goes; no lookup, no key opened) */
        jhp_st.same++;
        return;
    }
    memcpy(name, f->name, n);
    name[n] = 0;                /* a name is any bytes but NUL: V8 and Erlang write some */
    uint32_t keys = jhp_pkeys_open();
    uint64_t olo = 0, ohi = 0;
    bool loaded = object_of(f->start, &olo, &ohi);
    jh_ctx *tools = jhp_tools;
    jh_ctx *first = tools ? tools : jhp_elf;
    bool file_text = loaded && in_file_text(f->start, f->size, olo, ohi);
    bool holdable = file_text && tools && !jhp_cfg.library_rule && !f->nlines &&
                    !f->eh_frame_len;
    if (!holdable)
        add_held();     /* what is held goes first: the code described next may call it */
    if ((first != tools || (f->start < given_hi && f->start + f->size > given_lo)) &&
               same(first, f, name)) {
        jhp_st.same++;          /* said again: nothing new (its bytes not read again) */
    } else if (!file_text && !jhp_readable(f->start, f->size)) {
        jhp_st.unreadable++;    /* freed before it was described, or never there */
    } else if (holdable && hold(f, name, n)) {
        jhp_st.file_text += jhp_elf != NULL;    /* elfmap cannot map over a file's own text */
    } else {
        const void *at = (const void *)(uintptr_t)f->start;
        struct jh_code c = { .sz = sizeof c, .name = name, .start = at, .size = f->size };
        uint8_t cfi[JHR_PROLOGUE_CFI_MAX];
        if (f->nlines) {
            c.lines = f->lines, c.nlines = f->nlines;
            c.files = f->files, c.nfiles = f->nfiles;
        }
        if (f->eh_frame_len) {
            c.unwind = JH_UNWIND_EH_FRAME;
            c.eh_frame = f->eh_frame, c.eh_frame_len = f->eh_frame_len;
            c.eh_frame_addr = (uintptr_t)f->eh_frame_addr;
            jhp_st.with_cfi++;
        } else {
            frame_of(&c, cfi);
        }
        spans(f->start, f->size);
        unsigned replaced = 0;
        int rc = 0;
        bool guarded = jhp_cfg.library_rule && atomic_load(&jhp_guard_on);
        uint64_t lo = 0, hi = 0;
        if (tools)
            given_span(f->start, f->size);
        if (tools) {
            if (guarded)
                swap_window(tools, f->start, f->start + f->size, &lo, &hi);
            bool in = !guarded || jhp_swap_begin(lo, hi);
            rc = add_to(tools, &c, &replaced, cfi);
            if (guarded && in)
                jhp_swap_end();
        }
        if (jhp_elf && rc >= 0 && file_text) {
            jhp_st.file_text++;     /* elfmap cannot map over a file's own text */
        } else if (jhp_elf && rc >= 0 && jhp_keyed(f->start, f->start + f->size)) {
            if (!jhp_st.keyed++)
                jhp_warn("elfmap: code at %#llx tagged with a protection key left as it is "
                         "(its image's pages would carry key 0: the VM's protection would go)",
                         (unsigned long long)f->start);
        } else if (jhp_elf && rc >= 0) {
            swap_window(jhp_elf, f->start, f->start + f->size, &lo, &hi);
            if (jhp_swap_begin(lo, hi)) {
                int erc = add_to(jhp_elf, &c, tools ? NULL : &replaced, cfi);
                jhp_swap_end();
                if (!tools)
                    rc = erc;
            } else {
                jhp_st.no_swap++;
            }
        }
        jhp_st.replaced += replaced;
        if (rc < 0) {
            jhp_st.failed++;
        } else {
            unsigned k = said_slot(f->start);
            said[k].start = f->start, said[k].size = f->size, said[k].from = f->from;
            jhp_st.announced++;
            jhp_st.with_lines += f->nlines != 0;
        }
    }
    jhp_pkeys_close(keys);
}

/* The function ctx has at old, moved to new (over what was there); 0 or < 0. */
static int move_in(jh_ctx *ctx, uint64_t old, uint64_t new, uint64_t size)
{
    uint64_t id;
    const void *s;
    if (!ctx || jh_lookup(ctx, (const void *)(uintptr_t)old, &id, &s, NULL, NULL, 0) != 0 ||
        (uint64_t)(uintptr_t)s != old)
        return -ENOENT;
    int n = jh_code_remove_range(ctx, (const void *)(uintptr_t)new, size);
    if (ctx == jhp_tools && n > 0)
        jhp_st.replaced += (unsigned)n;
    /* (a range overlapping the function itself is its own: moved within its old place) */
    int rc = jh_code_move(ctx, id, (const void *)(uintptr_t)new);
    return rc;
}

void jhp_announce_move(uint64_t old, uint64_t new, uint64_t size)
{
    jhp_st.records++;
    add_held();
    if (!size || new + size < new || !jhp_open())
        return;
    uint32_t keys = jhp_pkeys_open();
    if (jhp_readable(new, size)) {
        spans(new, size);
        jh_ctx *tools = jhp_tools;
        int rc = move_in(tools, old, new, size);
        if (jhp_elf) {
            uint64_t lo, hi;
            swap_window(jhp_elf, new < old ? new : old, (new > old ? new : old) + size, &lo, &hi);
            if (jhp_swap_begin(lo, hi)) {
                int erc = move_in(jhp_elf, old, new, size);
                rc = tools ? rc : erc;
                jhp_swap_end();
            } else {
                jhp_st.no_swap++;
            }
        }
        if (rc == 0)
            jhp_st.moved++;
    }
    jhp_pkeys_close(keys);
}

void jhp_forget(uint64_t start, uint64_t len)
{
    if (!len || !jhp_maybe_code(start, len))
        return;
    JHP_KEEP_ERRNO;
    jhp_inside++;
    const void *at = (const void *)(uintptr_t)start;
    int n = 0;
    if (jhp_tools)
        n = jh_code_remove_range(jhp_tools, at, len);
    if (jhp_elf) {
        int k = jh_code_remove_range(jhp_elf, at, len);
        n = jhp_tools ? n : k;
    }
    if (n > 0)
        __atomic_fetch_add(&jhp_st.forgotten, (uint64_t)n, __ATOMIC_RELAXED);
    jhp_inside--;
}
