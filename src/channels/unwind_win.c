/*
 * unwind_win.c — Windows x64: the system unwinder sees JIT code (channel JH_UNWIND).
 *
 *     C:\> set JITHERALD=unwind
 *     C:\> myvm.exe script.vm
 *   Without it, a C++ exception thrown by a runtime function that JIT code called is not
 *   dispatched past the JIT frames (or is caught with destructors skipped and callee-saved
 *   registers garbage), msvcrt's longjmp — which unwinds frame by frame with RtlUnwindEx,
 *   as MSVC's has for years — dies with STATUS_BAD_STACK or worse, and
 *   RtlCaptureStackBackTrace stops at the first JIT frame or walks garbage. With it, all
 *   three cross the JIT frames to main, and destructors between them run.
 *
 * Windows looks for a pc's unwind info in the loaded images' .pdata, then in the dynamic
 * function tables: a list, searched in order, where the first table whose range holds the
 * pc wins. Wine searches it linearly under a lock; one RtlAddFunctionTable per function
 * made a throw through three JIT frames cost 6 us with one function and 2,900 us with
 * 100,000. So jitherald installs one RtlInstallFunctionTableCallback per *region*: the
 * allocation the code lives in (VirtualQuery's AllocationBase and its extent — no other
 * engine's code can be inside it, so our range hides nobody's), or a 2 GiB window of a
 * larger one. The callback binary-searches jitherald's own sorted table of the region's
 * functions without a lock (unwind_index_win.c). Each function's UNWIND_INFO (encoded by
 * fmt/unwind_info.c from its frame-pointer or CFI description) sits in memory within
 * 4 GiB above the region's base, shared by functions with the same bytes
 * (unwind_near_win.c). A region goes when its last function does.
 *
 * Limits (docs/windows.md): code inside a loaded image gets the image's .pdata, not ours;
 * a function crossing the end of its allocation or of a 2 GiB window is not described; no
 * free address space within 4 GiB above a region leaves its functions undescribed; no
 * out-of-process callback DLL is given, so debuggers walking the stack from outside
 * (WinDbg, Visual Studio, WER's minidumps) do not see the unwind info; JH_UNWIND_NONE
 * registers nothing (the unwinder then takes the function for a leaf).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "channels/unwind_win.h"
#include "fmt/unwind_info.h"

JH__LOCK_DEFINE(, jh__wu_lock, "unwind")
struct jh__wu_state jh__wu = { .grace_ns = WU_GRACE_NS };

enum why { OK, IN_IMAGE, NOT_ALLOCATED, CROSSES, NO_ROOM, OVERLAP, INSTALL, NOMEM, NWHY };

static const char *const why_text[NWHY] = {
    [IN_IMAGE] = "is inside a loaded module, whose own .pdata Windows uses",
    [NOT_ALLOCATED] = "is not in memory the process allocated",
    [CROSSES] = "crosses the end of its allocation (or of a 2 GiB window of it)",
    [NO_ROOM] = "has no free address space within 4 GiB above its allocation for its "
                "unwind info",
    [OVERLAP] = "is in a range registered for other code",
    [INSTALL] = "could not get a function table (RtlInstallFunctionTableCallback failed)",
};

/* ---- regions (jh__wu_lock held) ------------------------------------------------------- */

static PRUNTIME_FUNCTION CALLBACK lookup(DWORD64 pc, PVOID region)
{
    return jh__wu_index_lookup(region, (uintptr_t)pc);
}

static DWORD64 table_id(const struct wu_region *r) { return (DWORD64)(uintptr_t)r | 3; }

/* The first region whose base is above addr. */
static size_t region_upper(uintptr_t addr)
{
    size_t lo = 0, hi = jh__wu.nregion;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (jh__wu.region[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static enum why region_make(uintptr_t addr, struct wu_region **out)
{
    MEMORY_BASIC_INFORMATION m;
    if (!VirtualQuery((void *)addr, &m, sizeof m) || m.State == MEM_FREE || !m.AllocationBase)
        return NOT_ALLOCATED;
    if (m.Type == MEM_IMAGE)
        return IN_IMAGE;
    uintptr_t abase = (uintptr_t)m.AllocationBase;
    uintptr_t lo = abase + (addr - abase) / WU_WINDOW * WU_WINDOW, hi = lo + WU_WINDOW;
    /* Up to the end of the allocation or of the window, walking from addr. */
    for (uintptr_t p = (uintptr_t)m.BaseAddress + m.RegionSize; p < hi; p += m.RegionSize) {
        if (!VirtualQuery((void *)p, &m, sizeof m) || m.State == MEM_FREE ||
            (uintptr_t)m.AllocationBase != abase) {
            hi = p;
            break;
        }
        p = (uintptr_t)m.BaseAddress;
    }
    if (hi < lo)
        hi = lo + WU_WINDOW;    /* wrapped at the top of the address space */
    size_t at = region_upper(addr);
    if ((at > 0 && jh__wu.region[at - 1]->end > lo) ||
        (at < jh__wu.nregion && jh__wu.region[at]->base < hi))
        return OVERLAP;         /* a region left over from memory since freed */
    struct wu_region *r = calloc(1, sizeof *r);
    if (!r || JH__VEC_RESERVE(jh__wu.region, jh__wu.regioncap, jh__wu.nregion + 1)) {
        free(r);
        return NOMEM;
    }
    r->base = lo;
    r->end = hi;
    /* The callback takes no lock: installing it with ours held cannot deadlock against a
     * dispatcher holding the system's (Wine calls callbacks under its own lock). */
    if (!RtlInstallFunctionTableCallback(table_id(r), lo, (DWORD)(hi - lo), lookup, r, NULL)) {
        free(r);
        return INSTALL;
    }
    r->installed = true;
    memmove(jh__wu.region + at + 1, jh__wu.region + at,
            (jh__wu.nregion - at) * sizeof *jh__wu.region);
    jh__wu.region[at] = r;
    jh__wu.nregion++;
    *out = r;
    return OK;
}

static void region_drop(struct wu_region *r)
{
    if (r->installed)
        RtlDeleteFunctionTable((PRUNTIME_FUNCTION)(uintptr_t)table_id(r));
    size_t at = region_upper(r->base);
    if (at > 0 && jh__wu.region[at - 1] == r) {
        memmove(jh__wu.region + at - 1, jh__wu.region + at,
                (jh__wu.nregion - at) * sizeof *jh__wu.region);
        jh__wu.nregion--;
    }
    jh__wu_retire_region(r);    /* a callback on real Windows may still be running */
}

static enum why region_for(uintptr_t start, uintptr_t end, struct wu_region **out)
{
    size_t at = region_upper(start);
    struct wu_region *r = at > 0 ? jh__wu.region[at - 1] : NULL;
    if (!r || start >= r->end) {
        enum why w = region_make(start, &r);
        if (w != OK)
            return w;
    }
    if (end > r->end) {
        if (!r->count)
            region_drop(r);
        return CROSSES;
    }
    *out = r;
    return OK;
}

/* ---- functions ------------------------------------------------------------------------- */

static enum why fn_add(struct wu_ctx *c, struct jh__entry *e, const uint8_t *info, size_t len)
{
    uintptr_t start = e->node.start, end = start + e->node.size;
    struct wu_region *r;
    enum why w = region_for(start, end, &r);
    if (w != OK)
        return w;
    struct wu_fn *fn = calloc(1, sizeof *fn);
    if (!fn)
        return NOMEM;
    uint32_t rva;
    int err = jh__wu_place(r->base, r->end, info, len, &rva, &fn->chunk);
    if (!err) {
        fn->rf.BeginAddress = (DWORD)(start - r->base);
        fn->rf.EndAddress = (DWORD)(end - r->base);
        fn->rf.UnwindData = rva;
        fn->region = r;
        err = jh__wu_index_insert(r, fn);
        if (err)
            jh__wu_chunk_put(fn->chunk);
    }
    if (err) {
        free(fn);
        if (!r->count)
            region_drop(r);
        return err == -ENOSPC ? NO_ROOM : NOMEM;
    }
    r->count++;
    fn->owner = c;
    fn->next = c->live;
    if (c->live)
        c->live->prev = fn;
    c->live = fn;
    jh__wu.live++;
    e->slot[c->env->slot] = fn;
    return OK;
}

static void fn_remove(struct wu_fn *fn)
{
    struct wu_ctx *c = fn->owner;
    if (fn->prev)
        fn->prev->next = fn->next;
    else
        c->live = fn->next;
    if (fn->next)
        fn->next->prev = fn->prev;
    jh__wu.live--;
    struct wu_region *r = fn->region;
    if (jh__wu_index_remove(r, fn) < 0)
        return;                 /* still in the table: it stays, and so does its region */
    jh__wu_retire_fn(fn);
    if (!--r->count)
        region_drop(r);
}

/* ---- the channel ----------------------------------------------------------------------- */

struct wu_ctx_said {
    struct wu_ctx c;
    bool said[NWHY];
    _Atomic unsigned said_cfi;  /* refused CFI: the first at WARN (jh__diag_once) */
};

static int unwind_open(const struct jh__chan_env *env, void **state)
{
    struct wu_ctx_said *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c.env = env;
    jh__lock(&jh__wu_lock);
    if (!jh__wu.max_addr) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        jh__wu.max_addr = (uintptr_t)si.lpMaximumApplicationAddress;
    }
    jh__unlock(&jh__wu_lock);
    *state = s;
    jh__diag(env->diag, JH_LOG_DEBUG, "unwind: Windows function-table callbacks, one per "
             "allocation of JIT code");
    return 0;
}

static int unwind_add(void *state, struct jh__entry *e)
{
    struct wu_ctx_said *s = state;
    struct jh__buf b = { 0 };
    struct jh__uwi_error bad = { 0 };
    int n = jh__uwi_encode(&b, &e->fn, &bad);
    if (n <= 0) {
        jh__buf_free(&b);
        if (n == -ENOTSUP)
            jh__diag_once(s->c.env->diag, &s->said_cfi, 0, JH_LOG_WARN, "unwind: %s: its CFI "
                          "row at +0x%llx (byte %zu of the CFI) has no Windows unwind code: %s; "
                          "no unwind info for it", e->fn.name, (unsigned long long)bad.pc,
                          bad.at, bad.why);
        return n == -ENOMEM ? n : 0;    /* one function undescribed, the channel goes on */
    }
    jh__lock(&jh__wu_lock);
    jh__wu_sweep();
    enum why w = fn_add(&s->c, e, b.p, b.len);
    bool first = w != OK && w != NOMEM && !s->said[w];
    if (first)
        s->said[w] = true;
    jh__unlock(&jh__wu_lock);
    jh__buf_free(&b);
    if (w == NOMEM)
        return -ENOMEM;
    if (first)
        jh__diag(s->c.env->diag, JH_LOG_WARN, "unwind: %s at %p %s: no unwind info for it "
                 "(said once)", e->fn.name, (void *)e->node.start, why_text[w]);
    return 0;
}

static int unwind_remove(void *state, struct jh__entry *e)
{
    struct wu_ctx_said *s = state;
    struct wu_fn *fn = e->slot[s->c.env->slot];
    if (!fn)
        return 0;
    e->slot[s->c.env->slot] = NULL;
    jh__lock(&jh__wu_lock);
    fn_remove(fn);
    jh__wu_sweep();
    jh__unlock(&jh__wu_lock);
    return 0;
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
    jh__lock(&jh__wu_lock);
    jh__wu_sweep();
    jh__unlock(&jh__wu_lock);
    return 0;
}

static void unwind_close(void *state)
{
    struct wu_ctx_said *s = state;
    if (!s)
        return;
    jh__lock(&jh__wu_lock);
    while (s->c.live)
        fn_remove(s->c.live);
    jh__wu_sweep();
    jh__unlock(&jh__wu_lock);
    free(s);
}

const struct jh__channel_ops jh__unwind_ops = {
    .name = "unwind", .bit = JH_UNWIND, .open = unwind_open, .add = unwind_add,
    .remove = unwind_remove, .move = unwind_move, .flush = unwind_flush,
    .close = unwind_close,
};
