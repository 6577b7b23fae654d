/*
 * unwind_shadow.c — would our FDE for some code shadow unwind information the process
 * already has? An unwinder finds one FDE per pc: ours over a JIT's own registration would
 * hide it (and its personality: a Lua error thrown through a LuaJIT trace then skips
 * LuaJIT's trace exit), ours over a loaded object's own .eh_frame would hide the
 * compiler's. So each unwinder fed is asked, at both ends of the code, before registering.
 *
 * One function: its unwinders' _Unwind_Find_FDE, twice each. A batch (jh_code_add_many:
 * node's 2,182 builtins, in node's own text, at start) asks the same question for every
 * function, and each call was ~900 instructions of libgcc (its registered objects, then
 * _dl_find_object and a binary search of the object's .eh_frame_hdr table): 3.7 M of a
 * node start (issue 30). libgcc's answer for a pc is its registered objects' FDE, else the
 * FDE the loaded object's .eh_frame_hdr table gives; for a batch's pcs inside a loaded
 * object this file reads that same table itself, once per object, walking it in step with
 * the sorted pcs, exactly as libgcc's find_fde_tail does:
 *   - where the table has an FDE over the pc, libgcc is asked as before (its registered
 *     objects come first: one of ours there, a dead run's, is not foreign);
 *   - where it has none, the answer is what the registered objects hold there, and the
 *     registrations over a loaded object's own text are ours (a JIT registers over the
 *     memory it mapped for its code, never over a file's text: LuaJIT, V8's own
 *     --perf-prof-unwinding-info goes to the jitdump, not to libgcc), and ours are not
 *     foreign in grouped mode, the only one that batches (unwind.c: hold).
 * Anything the table walk does not read exactly as libgcc does (no _dl_find_object, a
 * table encoded other than sorted datarel sdata4, a 64-bit FDE, a CIE fmt/eh_frame.c does
 * not read, a pc outside every loaded object) is asked of libgcc, pc by pc. LLVM's
 * libunwind, when fed, is always asked pc by pc (it does not batch: per_function()).
 */
#include <dlfcn.h>
#include <string.h>

#include "channels/unwind.h"
#include "fmt/eh_frame.h"

/* Is there unwind information for pc that is not ours: a JIT's own __register_frame (LuaJIT
 * registers one FDE, with its personality, over each machine-code area), a loaded object?
 * In grouped mode an FDE of our own runs (a dead one, where code comes back) is ours; in
 * per-function mode an FDE of ours there belongs to another context's live code, and is
 * left alone just the same. */
static bool foreign_fde(const void *(*find)(void *, void *), uintptr_t pc)
{
    void *bases[3];             /* struct dwarf_eh_bases: tbase, dbase, func */
    const void *fde = find((void *)pc, bases);
    return fde && !(grouped() && jh__uw_run_holds(pc, fde));
}

static bool pc_shadowed(uintptr_t pc)
{
    return (jh__uw.find_fde_gcc && foreign_fde(jh__uw.find_fde_gcc, pc)) ||
           (jh__uw.find_fde_llvm && foreign_fde(jh__uw.find_fde_llvm, pc));
}

bool jh__uw_shadows(const struct uw_fn *u)
{
    return pc_shadowed(u->start) || pc_shadowed(u->end - 1);
}

#ifdef DLFO_STRUCT_HAS_EH_DBASE         /* glibc 2.35+: _dl_find_object */
/* A loaded object's .eh_frame_hdr search table, as libgcc reads it. */
struct obj_table {
    uintptr_t lo, hi;           /* the object's mapping: [lo, hi) */
    uintptr_t base;             /* the header's address: the table's datarel base */
    const int32_t *tab;         /* (initial_loc, fde) pairs, sorted */
    size_t n, at;               /* entries; the walk's position */
    bool usable;                /* read as libgcc reads it: else ask libgcc */
    const uint8_t *cie;         /* the last CIE read, and its FDEs' encoding */
    uint8_t fde_enc;
    uintptr_t gap_lo, gap_hi;   /* a stretch the table covers with no FDE, found last */
};

#define PE_udata4  0x03
#define PE_sdata4  0x0b
#define PE_datarel 0x30

/* Bytes of a value in this encoding's format; 0 for one not read here. */
static size_t enc_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case 0x00: return sizeof(uintptr_t);
    case 0x02: case 0x0a: return 2;
    case 0x03: case 0x0b: return 4;
    case 0x04: case 0x0c: return 8;
    default: return 0;
    }
}

static uint64_t enc_read(const uint8_t *p, uint8_t enc)
{
    switch (enc & 0x0f) {
    case 0x02: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 0x0a: { int16_t v; memcpy(&v, p, 2); return (uint64_t)(int64_t)v; }
    case 0x03: { uint32_t v; memcpy(&v, p, 4); return v; }
    case 0x0b: { int32_t v; memcpy(&v, p, 4); return (uint64_t)(int64_t)v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* The object around pc into *t; false when there is none. */
static bool table_of(uintptr_t pc, struct obj_table *t)
{
    struct dl_find_object o;
    memset(t, 0, sizeof *t);
    if (_dl_find_object((void *)pc, &o) != 0)
        return false;
    t->lo = (uintptr_t)o.dlfo_map_start;
    t->hi = (uintptr_t)o.dlfo_map_end;
    const uint8_t *h = o.dlfo_eh_frame;
    size_t skip = h ? enc_size(h[1]) : 0;
    if (!h || h[0] != 1 || (h[1] & 0x70) == 0x50 || !skip || h[2] != PE_udata4 ||
        h[3] != (PE_datarel | PE_sdata4))
        return true;            /* libgcc would search otherwise (or find nothing) */
    uint32_t n;
    memcpy(&n, h + 4 + skip, 4);
    t->base = (uintptr_t)h;
    t->tab = (const int32_t *)(const void *)(h + 8 + skip);
    t->n = n;
    t->usable = n > 0;
    return true;
}

/* Does t's table hold an FDE over pc (libgcc's find_fde_tail: the last entry starting at
 * or below pc, then its FDE's range)? 1 yes, 0 no, -1 not read here. pcs ascending make
 * the walk's search start where the last one ended. */
static int table_covers(struct obj_table *t, uintptr_t pc)
{
    size_t lo = t->at, hi = t->n;
    if (lo && pc < t->base + (uintptr_t)(intptr_t)t->tab[2 * lo])
        lo = 0;                 /* (not ascending after all) */
    if (pc < t->base + (uintptr_t)(intptr_t)t->tab[2 * lo]) {
        t->gap_lo = t->lo, t->gap_hi = t->base + (uintptr_t)(intptr_t)t->tab[0];
        return 0;
    }
    /* galloping from where the last pc was: the next is near (node's builtins lie in a
     * stretch of its text with no FDE at all: one step) */
    for (size_t step = 1; lo + step < hi; step *= 2) {
        if (pc < t->base + (uintptr_t)(intptr_t)t->tab[2 * (lo + step)]) {
            hi = lo + step;
            break;
        }
        lo += step;
    }
    while (hi - lo > 1) {       /* tab[lo] <= pc < tab[hi] (hi == n: none above) */
        size_t mid = lo + (hi - lo) / 2;
        if (pc < t->base + (uintptr_t)(intptr_t)t->tab[2 * mid])
            hi = mid;
        else
            lo = mid;
    }
    t->at = lo;
    uintptr_t begin = t->base + (uintptr_t)(intptr_t)t->tab[2 * lo];
    const uint8_t *f = (const uint8_t *)(t->base + (uintptr_t)(intptr_t)t->tab[2 * lo + 1]);
    uint32_t len = rd32(f);
    if (len == 0xffffffffu || len < 8)
        return -1;
    const uint8_t *cie = f + 4 - rd32(f + 4);
    if (cie != t->cie) {
        struct jh__eh_cie c;
        uint32_t clen = rd32(cie);
        if (clen == 0xffffffffu ||
            jh__eh_cie(cie, 4 + (size_t)clen, (uintptr_t)cie, 0, &c, NULL, 0))
            return -1;
        t->cie = cie, t->fde_enc = c.fde_enc;
    }
    size_t sz = enc_size(t->fde_enc);
    if (!sz || 8 + 2 * sz > 4 + (size_t)len)
        return -1;
    uintptr_t range = (uintptr_t)enc_read(f + 8 + sz, t->fde_enc);
    if (pc < begin + range)
        return 1;
    /* up to the next entry's start every pc finds this same FDE, which ends below it */
    t->gap_lo = begin + range;
    t->gap_hi = hi < t->n ? t->base + (uintptr_t)(intptr_t)t->tab[2 * hi] : t->hi;
    return 0;
}

/* pc_shadowed(pc), t kept on the object around pc. */
static bool walk_shadowed(struct obj_table *t, bool *have, uintptr_t pc)
{
    if (!jh__uw.find_fde_gcc || jh__uw.find_fde_llvm)
        return pc_shadowed(pc);
    if (!*have || pc < t->lo || pc >= t->hi)
        *have = table_of(pc, t);
    else if (pc >= t->gap_lo && pc < t->gap_hi)
        return false;           /* (table_covers would say 0: node's builtins, all but one) */
    int in = *have && t->usable ? table_covers(t, pc) : -1;
    return in ? pc_shadowed(pc) : false;
}

void jh__uw_shadows_many(struct uw_fn *const *u, size_t n, bool *shadowed)
{
    struct obj_table t;
    bool have = false;
    for (size_t i = 0; i < n; i++)
        shadowed[i] = walk_shadowed(&t, &have, u[i]->start) ||
                      walk_shadowed(&t, &have, u[i]->end - 1);
}
#else
void jh__uw_shadows_many(struct uw_fn *const *u, size_t n, bool *shadowed)
{
    for (size_t i = 0; i < n; i++)
        shadowed[i] = jh__uw_shadows(u[i]);
}
#endif
