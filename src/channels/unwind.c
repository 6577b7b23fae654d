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
 * This file handles one function at a time and the channel's hooks; unwind.h lists the
 * other parts.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "channels/unwind.h"
#include "fmt/cfi.h"

JH__LOCK_DEFINE(, jh__uw_lock, "unwind")
#define SHADOWED 1              /* unwind_add: left to the unwind info already there */
struct jh__uw_state jh__uw = { .max_fdes = 8192, .max_runs = 64, .grace_ns = GRACE_NS,
                               .dyn_delay_ns = DYN_DELAY_NS };

/* ---- one function --------------------------------------------------------------------- */
/* The index of this CIE in jh__uw.cies, added if new: one per personality, a few at most. */
static int cie_index(const uint8_t *cie, size_t len, uint32_t *k)
{
    if (len > sizeof jh__uw.cies[0].b)
        return -EPROTO;
    for (size_t i = 0; i < jh__uw.ncies; i++)
        if (jh__uw.cies[i].len == len && !memcmp(jh__uw.cies[i].b, cie, len)) {
            *k = (uint32_t)i;
            return 0;
        }
    if (jh__uw.ncies == jh__uw.ciecap) {
        size_t cap = jh__uw.ciecap ? 2 * jh__uw.ciecap : 4;
        struct uw_cie *c = realloc(jh__uw.cies, cap * sizeof *c);
        if (!c)
            return -ENOMEM;
        jh__uw.cies = c;
        jh__uw.ciecap = cap;
    }
    memcpy(jh__uw.cies[jh__uw.ncies].b, cie, len);
    jh__uw.cies[jh__uw.ncies].len = (uint32_t)len;
    *k = (uint32_t)jh__uw.ncies++;
    return 0;
}

/* The function's own run: its CIE (the one run of one function has one), its FDE and the
 * terminator, absolute pointers, personality and LSDA included. */
static int encode(struct uw_fn *u, const struct jh__func *f)
{
    struct jh__cfi_opts o = { .arch = JH__ARCH_HOST, .ptr = JH__CFI_ABS, .personality = true };
    struct jh__cfi_index idx;
    struct jh__buf b = { 0 };
    int n = jh__cfi_eh_frame(&b, &o, f, 1, &idx);
    if (n <= 0) {
        jh__buf_free(&b);
        return n;
    }
    u->run = b.p;
    u->run_len = (uint32_t)b.len;
    u->fde_off = (uint32_t)idx.off;
    u->fde_len = 4 + rd32(b.p + idx.off);
    /* The CIE this FDE points back to (the run's only one). */
    size_t cie_off = idx.off + 4 - (size_t)rd32(b.p + idx.off + 4);
    int err = u->fde_off + (size_t)u->fde_len > b.len || cie_off >= idx.off ? -EPROTO :
              cie_index(b.p + cie_off, 4 + (size_t)rd32(b.p + cie_off), &u->cie);
    if (err) {
        free(u->run);
        return err;
    }
    return 1;
}

/*
 * Runs already encoded, by frame shape: a function described like one of them gets a copy
 * of its run with its own pc_begin and pc_range (absolute, at the FDE's bytes 8 and 16:
 * put_fde), the same bytes the encoder would write. node's 2,200 builtins come in a few
 * shapes (the preload's push rbp; mov rbp, rsp: JH_UNWIND_FRAME_POINTER), and encoding
 * each was 1,500 instructions. Kept: JH_UNWIND_CFI (its ra_signed ranges are not read then)
 * and FRAME_POINTER without epilogues or signed ranges, matched by every field the encoder
 * reads but start and size; the encoder's only use of the size for them is a bound (no
 * advance past the end, the frame set up inside the code), which a larger size than one
 * already encoded passes too.
 */
static struct uw_memo {
    int kind;
    uint8_t key[64];            /* the CFI bytes, or fp_push_end and fp_set_end */
    size_t key_len;
    uint64_t personality, lsda, min_size;
    uint32_t ra_key, cie, run_len, fde_off, fde_len;
    uint8_t *run;               /* a copy of the run last encoded for this shape */
} memo[64];

/* f's shape as a memo key (*key: f's own CFI bytes, or buf): false for a description the
 * memo does not keep. */
static bool memo_key(const struct jh__func *f, uint8_t buf[8], const uint8_t **key, size_t *len)
{
    if (f->unwind == JH_UNWIND_CFI && f->cfi_len <= 64) {
        *key = f->cfi_len ? f->cfi : buf;     /* (never NULL for memcmp) */
        *len = f->cfi_len;
        return true;
    }
    if (f->unwind == JH_UNWIND_FRAME_POINTER && !f->nepilogues && !f->nra_signed) {
        memcpy(buf, &f->fp_push_end, 4);
        memcpy(buf + 4, &f->fp_set_end, 4);
        *key = buf;
        *len = 8;
        return true;
    }
    return false;
}

/* Was the run in slot m encoded for f's shape (whatever f's size)? */
static bool memo_same(const struct uw_memo *m, const struct jh__func *f, const uint8_t *key,
                      size_t len)
{
    return m->run && m->kind == (int)f->unwind && m->key_len == len &&
           m->personality == f->personality && m->lsda == f->lsda && m->ra_key == f->ra_key &&
           !memcmp(m->key, key, len);
}

/* f's slot in memo: the one holding its shape, else a free one, else the first of the four
 * its hash (FNV-1a of what the run depends on but start and size) picks; NULL for a
 * description the memo does not keep. *same: the slot holds f's shape. */
#define MEMO_WAYS 4
static struct uw_memo *memo_last;   /* the slot last found: a batch's functions run in shapes */

static struct uw_memo *memo_slot(const struct jh__func *f, uint8_t buf[8], const uint8_t **kp,
                                 size_t *len, bool *same)
{
    *same = false;
    if (!memo_key(f, buf, kp, len))
        return NULL;
    const uint8_t *key = *kp;
    if (memo_last && memo_same(memo_last, f, key, *len)) {
        *same = true;
        return memo_last;
    }
    uint64_t h = 14695981039346656037u ^ f->personality ^ (f->lsda << 1) ^ f->ra_key ^
                 (uint64_t)f->unwind << 40;
    for (size_t i = 0; i < *len; i++)
        h = (h ^ key[i]) * 1099511628211u;
    size_t at = (size_t)(h ^ h >> 32) % (sizeof memo / sizeof memo[0]) & ~(size_t)(MEMO_WAYS - 1);
    struct uw_memo *free_one = NULL;
    for (size_t i = at; i < at + MEMO_WAYS; i++) {
        if (memo_same(&memo[i], f, key, *len)) {
            *same = true;
            return memo_last = &memo[i];
        }
        if (!memo[i].run && !free_one)
            free_one = &memo[i];
    }
    return free_one ? free_one : &memo[at];
}

/* n more bytes at the end of b: where they go, or NULL (-ENOMEM). */
static uint8_t *take(struct jh__buf *b, size_t n)
{
    if (jh__buf_room(b, n))
        return NULL;
    b->len += n;
    return b->p + b->len - n;
}

/* f encoded into u, from the memo when it can be. fdes NULL: u->run is f's own run
 * (malloc'd). Else f's FDE alone is appended to fdes, u->fde_off its offset there and
 * u->run NULL: a batch's functions then take one allocation together (add_held). */
static int fn_encode(struct uw_fn *u, const struct jh__func *f, struct jh__buf *fdes)
{
    if (f->unwind == JH_UNWIND_NONE)    /* no FDE: what the encoder says for it, sooner */
        return f->size && f->start + (f->size - 1) >= f->start ? 0 : -EINVAL;
    bool same;
    uint8_t buf[8];
    const uint8_t *key = NULL;
    size_t key_len = 0;
    struct uw_memo *m = memo_slot(f, buf, &key, &key_len, &same);
    if (same && f->size >= m->min_size && f->start + (f->size - 1) >= f->start) {
        uint8_t *run = fdes ? take(fdes, m->fde_len) : malloc(m->run_len);
        if (!run)
            return -ENOMEM;
        if (fdes)
            memcpy(run, m->run + m->fde_off, m->fde_len);
        else
            memcpy(run, m->run, m->run_len);
        u->fde_off = fdes ? (uint32_t)(run - fdes->p) : m->fde_off;
        uint64_t begin = f->start, range = f->size;
        uint8_t *fde = fdes ? run : run + m->fde_off;
        memcpy(fde + 8, &begin, 8);
        memcpy(fde + 16, &range, 8);
        u->run = fdes ? NULL : run, u->run_len = fdes ? 0 : m->run_len;
        u->fde_len = m->fde_len, u->cie = m->cie;
        jh__uw.reused++;
        return 1;
    }
    int n = encode(u, f);
    if (n == 1 && m && same) {
        m->min_size = f->size;      /* the same bytes, valid down to this size too */
    } else if (n == 1 && m) {
        uint8_t *run = realloc(m->run, u->run_len);
        if (run) {                  /* (no memo: nothing lost but time) */
            memcpy(run, u->run, u->run_len);
            memcpy(m->key, key, key_len);
            m->run = run, m->kind = (int)f->unwind, m->key_len = key_len;
            m->personality = f->personality, m->lsda = f->lsda;
            m->min_size = f->size, m->ra_key = f->ra_key, m->cie = u->cie;
            m->run_len = u->run_len, m->fde_off = u->fde_off, m->fde_len = u->fde_len;
        }
    }
    if (n == 1 && fdes) {
        uint8_t *to = take(fdes, u->fde_len);
        if (to)
            memcpy(to, u->run + u->fde_off, u->fde_len);
        free(u->run);
        u->run = NULL, u->run_len = 0;
        u->fde_off = to ? (uint32_t)(to - fdes->p) : 0;
        if (!to)
            return -ENOMEM;
    }
    return n;
}

int jh__uw_fn_encode(struct uw_fn *u, const struct jh__func *f)
{
    return fn_encode(u, f, NULL);
}

void jh__uw_fn_free(struct uw_fn *u)
{
    if (!u->block) {
        free(u->run);
        free(u);
    } else if (!--u->block->refs) {
        free(u->block->bytes);
        free(u->block);
    }
}

static void fn_unregister(struct uw_fn *u)
{
    if (jh__uw.mode == JH__UW_PERFN)
        jh__uw.dereg_frame(u->run);
    if (jh__uw.llvm)
        jh__uw.llvm_remove((uintptr_t)(u->run + u->fde_off));
}

static int fn_register(struct uw_fn *u, const struct uw_host *h)
{
    if (jh__uw.mode == JH__UW_PERFN)
        jh__uw.reg_frame(u->run);
    if (jh__uw.llvm)
        jh__uw.llvm_add((uintptr_t)(u->run + u->fde_off));
    int err = grouped() ? jh__uw_group_add(u, h) : 0;
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
    jh__uw.live--;
    if (per_function() && !u->block) {     /* (a block's: grouped only, add_held) */
        fn_unregister(u);
        jh__uw_retire(u->run, false);
        u->run = NULL;
    }
    if (!u->seg) {
        jh__uw_fn_free(u);
        return 0;
    }
    return jh__uw_group_remove(u);  /* a dead function keeps its FDE bytes: see group_add */
}

/* ---- the channel ---------------------------------------------------------------------- */
static int unwind_open(const struct jh__chan_env *env, void **state)
{
    jh__lock(&jh__uw_lock);
    if (!jh__uw.detected) {
        jh__uw_detect();
        jh__uw.detected = true;
    } else if (!jh__uw.dyn && !jh__uw.nseg && !jh__uw.live) {
        /* libunwind may have been loaded since the first context opened */
        *(void **)&jh__uw.dyn_register = dlsym(RTLD_DEFAULT, "_U_dyn_register");
        *(void **)&jh__uw.dyn_cancel = dlsym(RTLD_DEFAULT, "_U_dyn_cancel");
        jh__uw.dyn = jh__uw.dyn_register && jh__uw.dyn_cancel;
    }
    int mode = jh__uw.mode;
    bool dyn = jh__uw.dyn, llvm = jh__uw.llvm;
    jh__unlock(&jh__uw_lock);
    if (mode == JH__UW_NONE && !dyn && !llvm) {
        jh__diag(env->diag, JH_LOG_WARN, "unwind: no unwinder to register with (neither libgcc's "
                "__register_frame_info nor LLVM's __unw_add_dynamic_fde)");
        return -ENOSYS;
    }
    struct uw_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->env = env;
    *state = c;
    jh__diag(env->diag, JH_LOG_DEBUG, "unwind: %s%s%s", jh__uw_mode_name(mode),
            llvm ? ", LLVM libunwind (one FDE per call)" : "",
            dyn ? ", nongnu libunwind's _U_dyn_register" : "");
    return 0;
}

/* In a batch, grouped runs only (one FDE per call gains nothing): e waits for its end. */
static bool hold(struct uw_ctx *c, struct jh__entry *e)
{
    if (!c->batching || !grouped() || per_function())
        return false;
    if (c->nheld == c->capheld) {
        size_t cap = c->capheld ? 2 * c->capheld : 256;
        struct jh__entry **a = realloc(c->held, cap * sizeof *a);
        if (!a)
            return false;       /* added now instead */
        c->held = a, c->capheld = cap;
    }
    c->held[c->nheld++] = e;
    return true;
}

static int add_one(struct uw_ctx *c, struct jh__entry *e);

static int unwind_add(void *state, struct jh__entry *e)
{
    struct uw_ctx *c = state;
    return hold(c, e) ? 0 : add_one(c, e);
}

/* u (encoded, one FDE, registered with no unwinder yet) is e's: live from now on. */
static void own(struct uw_ctx *c, struct uw_fn *u, struct jh__entry *e)
{
    u->owner = c;
    u->next = c->live;
    if (c->live)
        c->live->prev = u;
    c->live = u;
    jh__uw.live++;
    e->slot[c->env->slot] = u;
}

/*
 * The batch's end: its functions that need nothing special (one FDE, not inside a region
 * the JIT described itself, not described by the process's own unwind info) become one run
 * where they lie apart from every run (V8's builtins, in node's text); the rest, or all of
 * them when their range meets a run, go one at a time, as unwind_add would have. The same
 * FDEs either way, in fewer, larger runs.
 */
static int add_held(struct uw_ctx *c)
{
    size_t n = c->nheld, k = 0;
    struct uw_fn **fn = n ? malloc(n * sizeof *fn) : NULL;
    size_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    struct uw_fn *tmp = n ? realloc(c->tmp, n * sizeof *tmp) : NULL;
    int err = 0;
    if (tmp)
        c->tmp = tmp;
    if (fn && idx && tmp) {
        jh__lock(&jh__uw_lock);
        /* each FDE into c->fdes, then the functions and their FDEs into one block */
        c->fdes.len = 0;
        c->fdes.err = 0;
        for (size_t i = 0; i < n; i++) {
            const struct jh__entry *e = c->held[i];
            struct uw_fn *u = &tmp[k];
            struct uw_host host;
            *u = (struct uw_fn){ .start = e->node.start, .end = e->node.start + e->node.size };
            if (fn_encode(u, &e->fn, &c->fdes) == 1 && !jh__uw_host_of(u, e->fn.personality, &host))
                idx[k++] = i;
        }
        size_t head = (sizeof(struct uw_block) + _Alignof(struct uw_fn) - 1) /
                      _Alignof(struct uw_fn) * _Alignof(struct uw_fn);
        struct uw_block *blk = k ? malloc(head + k * sizeof *tmp) : NULL;
        if (blk) {
            struct uw_fn *us = (struct uw_fn *)(void *)((char *)blk + head);
            uint8_t *bytes = c->fdes.p;         /* taken over: the next batch starts anew */
            uint8_t *fit = realloc(bytes, c->fdes.len);
            if (fit)
                bytes = fit;                    /* (what it grew beyond them given back) */
            c->fdes = (struct jh__buf){ 0 };
            blk->bytes = bytes;
            blk->refs = k;
            for (size_t j = 0; j < k; j++) {
                us[j] = tmp[j];
                us[j].run = bytes;
                us[j].block = blk;
                fn[j] = &us[j];
            }
        } else {
            k = 0;              /* one at a time below (or nothing to group) */
        }
        /* left to the unwind info already there: one at a time below, which says so (all
         * of them when there is no memory to ask) */
        bool *shadowed = k ? malloc(k * sizeof *shadowed) : NULL;
        size_t kept = 0;
        if (shadowed)
            jh__uw_shadows_many(fn, k, shadowed);
        for (size_t j = 0; j < k; j++) {
            if (shadowed && !shadowed[j])
                idx[kept] = idx[j], fn[kept++] = fn[j];
            else
                jh__uw_fn_free(fn[j]);
        }
        free(shadowed);
        k = kept;
        int rc = jh__uw_group_add_many(fn, k);
        for (size_t j = 0; j < k; j++) {
            if (rc == 0) {
                own(c, fn[j], c->held[idx[j]]);
                c->held[idx[j]] = NULL;
            } else {                    /* one at a time after all, below */
                jh__uw_fn_free(fn[j]);
            }
        }
        err = rc < 0 ? rc : 0;
        jh__uw_sweep();
        jh__unlock(&jh__uw_lock);
    }
    free(fn);
    free(idx);
    for (size_t i = 0; !err && i < n; i++)
        if (c->held[i])
            err = add_one(c, c->held[i]);
    c->nheld = 0;
    return err;
}

static int unwind_batch(void *state, bool begin)
{
    struct uw_ctx *c = state;
    c->batching = begin;
    return begin ? 0 : add_held(c);
}

static int add_one(struct uw_ctx *c, struct jh__entry *e)
{
    struct uw_fn *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->start = e->node.start;
    u->end = e->node.start + e->node.size;
    jh__entry_insns(e);         /* (encoded once for every channel) */
    jh__lock(&jh__uw_lock);
    int n = jh__uw_fn_encode(u, &e->fn);
    int err = n < 0 ? n : 0;
    size_t far = jh__uw.far;
    struct uw_host host;
    int hosted = n == 1 ? jh__uw_host_of(u, e->fn.personality, &host) : 0;
    if (hosted < 0 || (n == 1 && !hosted && jh__uw_shadows(u))) {
        jh__uw.shadowed++;
        err = SHADOWED;
    }
    if (n == 0 && grouped())
        err = jh__uw_group_clear(u->start, u->end);
    if (n == 1 && !err && !(err = fn_register(u, hosted ? &host : NULL))) {
        jh__uw.hosted += hosted;
        own(c, u, e);
        u = NULL;
    }
    bool tell_host = hosted > 0 && !u && !c->told_host;
    if (u && n == 1)
        free(u->run);
    jh__uw_sweep();
    bool now_far = jh__uw.far != far && far == 0;
    jh__unlock(&jh__uw_lock);
    free(u);
    if (tell_host) {            /* said outside the lock, as every diagnostic here */
        jh__diag(c->env->diag, JH_LOG_INFO, "unwind: %s at %p is inside a region with the JIT's "
                 "own unwind information and the same personality: described by jitherald, "
                 "the rest of the region left to the JIT's (docs/unwind.md)", e->fn.name,
                 (void *)e->node.start);
        c->told_host = true;
    }
    if (err == SHADOWED) {
        if (!c->told_shadow)
            jh__diag(c->env->diag, JH_LOG_INFO, "unwind: %s at %p already has unwind "
                     "information in this process (the JIT's own registration?): left to it, "
                     "as for all such code (docs/unwind.md)", e->fn.name, (void *)e->node.start);
        c->told_shadow = true;
        err = 0;
    }
    if (now_far)
        jh__diag(c->env->diag, JH_LOG_WARN, "unwind: could not place unwind tables within 2 GiB of "
                "code at %p: libunwind will not see it", (void *)e->node.start);
    if (err == -EINVAL) {       /* one bad CFI description: skip it, keep the channel */
        jh__diag_once(c->env->diag, &c->said, 0, JH_LOG_WARN, "unwind: %s: CFI rejected by the "
                      "encoder, no unwind info registered for it (exceptions and backtraces "
                      "stop at it); check its jh_code.cfi", e->fn.name);
        err = 0;
    } else if (err == JH_EOVERLAP) {
        jh__diag_once(c->env->diag, &c->said, 1, JH_LOG_WARN, "unwind: %s at %p overlaps live "
                      "code of another context: no unwind info registered for it; remove the "
                      "old code (jh_code_remove) before reusing its memory", e->fn.name,
                      (void *)e->node.start);
        err = 0;
    }
    return err;
}

static int unwind_remove(void *state, struct jh__entry *e)
{
    struct uw_ctx *c = state;
    struct uw_fn *u = e->slot[c->env->slot];
    if (!u)
        return 0;
    e->slot[c->env->slot] = NULL;
    jh__lock(&jh__uw_lock);
    int err = fn_remove(u);
    jh__uw_sweep();
    jh__unlock(&jh__uw_lock);
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
    jh__lock(&jh__uw_lock);
    for (size_t i = jh__uw.nseg; !err && i-- > 0;)
        if (jh__uw.seg[i]->ndead)
            err = jh__uw_seg_rebuild(i, i + 1, NULL, NULL);
    jh__uw_sweep();
    jh__unlock(&jh__uw_lock);
    return err;
}

static void unwind_close(void *state)
{
    struct uw_ctx *c = state;
    if (!c)
        return;
    jh__lock(&jh__uw_lock);
    while (c->live)
        fn_remove(c->live);
    jh__uw_sweep();
    jh__unlock(&jh__uw_lock);
    free(c->held);
    free(c->tmp);
    jh__buf_free(&c->fdes);
    free(c);
}

const struct jh__channel_ops jh__unwind_ops = {
    .name = "unwind", .bit = JH_UNWIND, .open = unwind_open, .add = unwind_add,
    .remove = unwind_remove, .move = unwind_move, .flush = unwind_flush,
    .batch = unwind_batch, .close = unwind_close,
};

