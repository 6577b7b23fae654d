/*
 * auditlog_query.c — lookups in a parsed audit log (auditlog_read.h). Addresses are
 * reused as functions come and go, so "the function at addr" is always asked at a record:
 * the one alive then wins. With the sorted indexes built by jhr_al_parse a lookup is a
 * binary search and a short walk back (bounded by the largest size); without them (out
 * of memory) it scans.
 */
#include "lib/auditlog_read.h"

#include <string.h>

/* Better of two functions containing an address, seen from record `at`: one alive then
 * (added at or before `at`, not yet removed) beats one that is not; among equals, the
 * later add. */
static bool fn_better(const struct jhr_al_fn *fn, const struct jhr_al_fn *best, size_t at)
{
    if (!best)
        return true;
    bool a = fn->rm_rec > at, b = best->rm_rec > at;
    return a != b ? a : fn->rec > best->rec;
}

static bool fn_has(const struct jhr_al_fn *fn, uint64_t addr, size_t at)
{
    return fn->rec <= at && addr >= fn->cur_start && addr - fn->cur_start < fn->size;
}

const struct jhr_al_fn *jhr_al_fn_at(const struct jhr_al *lf, uint64_t addr, size_t at)
{
    const struct jhr_al_fn *best = NULL;
    if (!lf->fn_by_start) {
        for (size_t i = 0; i < lf->nfns; i++)
            if (fn_has(&lf->fns[i], addr, at) && fn_better(&lf->fns[i], best, at))
                best = &lf->fns[i];
        return best;
    }
    /* The last function starting at or below addr, then back while one could still reach. */
    size_t lo = 0, hi = lf->nfns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lf->fns[lf->fn_by_start[mid]].cur_start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        const struct jhr_al_fn *fn = &lf->fns[lf->fn_by_start[i]];
        if (addr - fn->cur_start >= lf->fn_maxsize)
            break;
        if (fn_has(fn, addr, at) && fn_better(fn, best, at))
            best = fn;
    }
    return best;
}

const struct jhr_al_fn *jhr_al_fn_named(const struct jhr_al *lf, const char *name)
{
    const struct jhr_al_fn *best = NULL;
    for (size_t i = 0; i < lf->nfns; i++)
        if (lf->fns[i].name && !strcmp(lf->fns[i].name, name) && (!best || best->removed || !lf->fns[i].removed))
            best = &lf->fns[i];
    return best;
}

static bool mem_has(const struct jhr_al_mem *m, uint64_t addr, uint64_t len, size_t at)
{
    return m->rec <= at && addr >= m->addr && addr - m->addr <= m->size && len <= m->size - (addr - m->addr);
}

const struct jhr_al_mem *jhr_al_mem_at(const struct jhr_al *lf, uint64_t addr, uint64_t len, size_t at)
{
    const struct jhr_al_mem *best = NULL;
    if (!lf->mem_by_addr) {
        for (size_t i = lf->nmems; i-- > 0;)
            if (mem_has(&lf->mems[i], addr, len, at))
                return &lf->mems[i];
        return NULL;
    }
    /* Sorted by (address, record): the last snapshot at or below addr, then back. Within one
     * address, the first hit walking back is the latest at or before `at`. */
    size_t lo = 0, hi = lf->nmems;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct jhr_al_mem *m = &lf->mems[lf->mem_by_addr[mid]];
        if (m->addr < addr || (m->addr == addr && m->rec <= at))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        const struct jhr_al_mem *m = &lf->mems[lf->mem_by_addr[i]];
        if (addr - m->addr > lf->mem_maxsize)
            break;
        if (mem_has(m, addr, len, at) && (!best || m->rec > best->rec)) {
            best = m;
            /* Skip the older snapshots of this same address: jump to its first one. */
            size_t a = 0, b = i;
            while (a < b) {
                size_t mid = a + (b - a) / 2;
                if (lf->mems[lf->mem_by_addr[mid]].addr < m->addr)
                    a = mid + 1;
                else
                    b = mid;
            }
            i = a;
        }
    }
    return best;
}

const uint8_t *jhr_al_fn_code(const struct jhr_al_fn *fn)
{
    return fn->patched ? fn->patched : fn->code;
}

const char *jhr_al_fn_line(const struct jhr_al_fn *fn, uint64_t off, uint32_t *line)
{
    const struct jhr_al_line *hit = NULL;
    for (uint32_t i = 0; i < fn->nlines && fn->lines[i].offset <= off; i++)
        hit = &fn->lines[i];
    if (!hit || hit->file >= fn->nfiles)
        return NULL;
    *line = hit->line;
    return fn->files[hit->file];
}

double jhr_al_secs(const struct jhr_al *lf, uint64_t t)
{
    return t >= lf->t0 ? (double)(t - lf->t0) / 1e9 : -(double)(lf->t0 - t) / 1e9;
}

uint64_t jhr_al_strip(const struct jhr_al *lf, uint64_t addr)
{
    return addr & (UINT64_C(1) << 55) ? addr | lf->pac_mask : addr & ~lf->pac_mask;
}

bool jhr_al_resolve(const struct jhr_al *lf, uint64_t addr, size_t at,
                    const struct jhr_al_mem **mem, const struct jhr_al_fn **fn)
{
    const struct jhr_al_mem *m = jhr_al_mem_at(lf, addr, 1, at);
    *mem = m && m->addr == addr ? m : NULL;
    *fn = *mem ? NULL : jhr_al_fn_at(lf, jhr_al_strip(lf, addr), at);
    return *mem || *fn;
}
