/*
 * symtab.c — see symtab.h. Functions are kept in load order until jhr_syms_finish sorts
 * them by start (then load order), so that an address reused by a later function finds
 * the later one; a MOVE in a jitdump adds the function again at its new address, with its
 * lines shifted.
 */
#include "lib/symtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jitherald.h"
#include "base/vec.h"
#include "lib/hash.h"
#include "lib/jitdump_read.h"
#include "lib/perfmap_read.h"

static uint64_t str_hash(const void *ctx, size_t i)
{
    const char *str = ((const struct jhr_syms *)ctx)->strs[i];
    return jhr_hash_str(str, strlen(str));
}

static bool str_is(const void *ctx, size_t i, const void *key)
{
    return !strcmp(((const struct jhr_syms *)ctx)->strs[i], key);
}

/* The index of the string p[0..n) in s->strs, added if new; -ENOMEM. */
static int intern(struct jhr_syms *s, const char *p, size_t n)
{
    if (n > 1 << 20)
        n = 1 << 20;
    if (jhr_itab_grow(&s->strtab, str_hash, s))
        return -ENOMEM;
    /* Names are stored NUL-terminated: an embedded NUL or newline would end the line. */
    char tmp[256];
    char *c = n < sizeof tmp ? tmp : malloc(n + 1);
    if (!c)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        c[i] = p[i] == 0 || p[i] == '\n' || p[i] == '\r' ? '?' : p[i];
    c[n] = 0;
    uint64_t h = jhr_hash_str(c, n);
    size_t found = jhr_itab_find(&s->strtab, h, str_is, s, c);
    if (found) {
        if (c != tmp)
            free(c);
        return (int)found - 1;
    }
    if (JH__VEC_RESERVE(s->strs, s->capstrs, s->nstrs + 1))
        goto nomem;
    char *dup = c == tmp ? strdup(c) : c;
    if (!dup)
        goto nomem;
    s->strs[s->nstrs] = dup;
    jhr_itab_put(&s->strtab, h, s->nstrs);
    return (int)s->nstrs++;
nomem:
    if (c != tmp)
        free(c);
    return -ENOMEM;
}

void jhr_syms_free(struct jhr_syms *s)
{
    for (size_t i = 0; i < s->nstrs; i++)
        free(s->strs[i]);
    free(s->strs);
    jhr_itab_free(&s->strtab);
    free(s->fns);
    free(s->lines);
    memset(s, 0, sizeof *s);
}

int jhr_syms_add(struct jhr_syms *s, uint64_t start, uint64_t size, const char *name,
                  size_t name_len)
{
    if (!size || start + size < start || s->nfns >= INT32_MAX)
        return -EINVAL;
    int nm = intern(s, name, name_len);
    if (nm < 0)
        return nm;
    if (JH__VEC_RESERVE(s->fns, s->capfns, s->nfns + 1))
        return -ENOMEM;
    s->fns[s->nfns] = (struct jhr_sym_fn){ .start = start, .end = start + size, .name = (uint32_t)nm,
        .line0 = (uint32_t)s->nlines, .seq = (uint32_t)s->nfns };
    s->finished = false;
    return (int)s->nfns++;
}

int jhr_syms_add_line(struct jhr_syms *s, int fn, uint64_t addr, uint32_t line,
                       const char *file, size_t file_len)
{
    if (fn < 0 || (size_t)fn != s->nfns - 1 || s->nlines >= UINT32_MAX)
        return -EINVAL;            /* rows are added right after their function */
    int f = intern(s, file, file_len);
    if (f < 0)
        return f;
    if (JH__VEC_RESERVE(s->lines, s->caplines, s->nlines + 1))
        return -ENOMEM;
    s->lines[s->nlines++] = (struct jhr_sym_line){ addr, line, (uint32_t)f };
    s->fns[fn].nlines++;
    return 0;
}

int jhr_syms_load_perfmap(struct jhr_syms *s, const uint8_t *data, size_t len)
{
    size_t off = 0, lineno = 0, good = 0, bad = 0;
    struct jhr_pm_line l;
    char err[128];
    int r;
    while ((r = jhr_pm_next(data, len, &off, &lineno, &l, err, sizeof err)) != 0) {
        if (r < 0) {
            bad++;
            continue;
        }
        /* short names are padded with spaces for perf (fmt/perfmap.h): not part of them */
        while (l.name_len > 1 && l.name[l.name_len - 1] == ' ')
            l.name_len--;
        int rc = jhr_syms_add(s, l.start, l.size, l.name, l.name_len);
        if (rc == -ENOMEM)
            return rc;
        good += rc >= 0;
    }
    return good || !bad ? 0 : JH_EFORMAT;
}

/* The latest function loaded at each start address, for MOVE records: an open-addressing
 * table of fns indexes (+1), at most half full. Scanning back through every function for
 * each MOVE made a jitdump of a compacting JIT (n loads, n moves) quadratic. */
struct by_start { size_t *slot, cap, n; };

static size_t *by_start_slot(struct by_start *t, const struct jhr_syms *s, uint64_t start)
{
    size_t k = (size_t)(jhr_hash_u64(start) >> 16) & (t->cap - 1);
    while (t->slot[k] && s->fns[t->slot[k] - 1].start != start)
        k = (k + 1) & (t->cap - 1);
    return &t->slot[k];
}

static int by_start_put(struct by_start *t, const struct jhr_syms *s, size_t fn)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024, *old = t->slot, ocap = t->cap;
        if (!(t->slot = calloc(cap, sizeof *t->slot))) {
            t->slot = old;
            return -ENOMEM;
        }
        t->cap = cap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i])
                *by_start_slot(t, s, s->fns[old[i] - 1].start) = old[i];
        free(old);
    }
    size_t *sl = by_start_slot(t, s, s->fns[fn].start);
    t->n += !*sl;
    *sl = fn + 1;
    return 0;
}

int jhr_syms_load_jitdump(struct jhr_syms *s, const uint8_t *data, size_t len)
{
    struct jhr_jd r;
    if (jhr_jd_open(&r, data, len) < 0)
        return JH_EFORMAT;
    struct by_start idx = { 0 };
    int err = 0;
    for (size_t i = 0; i < s->nfns && !err; i++)    /* loaded before (another file) */
        err = by_start_put(&idx, s, i);
    struct jhr_jd_rec rec, dbg = { 0 };
    bool have_dbg = false;
    int rc;
    while (!err && (rc = jhr_jd_next(&r, &rec)) > 0) {
        if (rec.id == JH__JD_CODE_DEBUG_INFO) {
            dbg = rec;              /* applies to the next LOAD */
            have_dbg = true;
        } else if (rec.id == JH__JD_CODE_LOAD) {
            int fn = jhr_syms_add(s, rec.u.load.code_addr, rec.u.load.code_size,
                                   rec.u.load.name, rec.u.load.name_len);
            if (fn == -ENOMEM || (fn >= 0 && by_start_put(&idx, s, (size_t)fn) < 0)) {
                err = -ENOMEM;
                break;
            }
            if (fn >= 0 && have_dbg && dbg.u.debug.code_addr == rec.u.load.code_addr) {
                size_t pos = 0;
                struct jhr_jd_line l;
                for (uint64_t i = 0; i < dbg.u.debug.nr_entry; i++) {
                    if (jhr_jd_debug_entry(&r, &dbg, &pos, &l))
                        break;
                    if (l.addr < s->fns[fn].start || l.addr >= s->fns[fn].end || l.lineno < 0)
                        continue;
                    int e = jhr_syms_add_line(s, fn, l.addr, (uint32_t)l.lineno, l.name, l.name_len);
                    if (e == -ENOMEM) {
                        err = e;
                        break;
                    }
                }
            }
            have_dbg = false;
        } else if (rec.id == JH__JD_CODE_MOVE) {
            /* The code now lives at new_code_addr: same name and lines, shifted. */
            size_t at = idx.cap ? *by_start_slot(&idx, s, rec.u.move.old_code_addr) : 0;
            if (!at)
                continue;
            struct jhr_sym_fn o = s->fns[at - 1];
            const char *name = s->strs[o.name];
            int fn = jhr_syms_add(s, rec.u.move.new_code_addr, o.end - o.start, name, strlen(name));
            if (fn == -ENOMEM || (fn >= 0 && by_start_put(&idx, s, (size_t)fn) < 0)) {
                err = -ENOMEM;
                break;
            }
            for (uint32_t k = 0; fn >= 0 && k < o.nlines && !err; k++) {
                struct jhr_sym_line l = s->lines[o.line0 + k];
                const char *file = s->strs[l.file];
                err = jhr_syms_add_line(s, fn, l.addr - o.start + rec.u.move.new_code_addr,
                                         l.line, file, strlen(file)) == -ENOMEM ? -ENOMEM : 0;
            }
        }
        if (err)
            break;
    }
    free(idx.slot);
    return err;
}

static int cmp_fn(const void *a, const void *b)
{
    const struct jhr_sym_fn *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_line(const void *a, const void *b)
{
    const struct jhr_sym_line *x = a, *y = b;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

int jhr_syms_finish(struct jhr_syms *s)
{
    for (size_t i = 0; i < s->nfns; i++)
        if (s->fns[i].nlines > 1)
            qsort(s->lines + s->fns[i].line0, s->fns[i].nlines, sizeof *s->lines, cmp_line);
    if (s->nfns > 1)
        qsort(s->fns, s->nfns, sizeof *s->fns, cmp_fn);
    s->finished = true;
    return 0;
}

const struct jhr_sym_fn *jhr_syms_find(const struct jhr_syms *s, uint64_t addr)
{
    size_t a = 0, b = s->nfns;
    while (a < b) {             /* first fn with start > addr */
        size_t m = a + (b - a) / 2;
        if (s->fns[m].start <= addr)
            a = m + 1;
        else
            b = m;
    }
    /* Overlaps (reused addresses): the latest load containing addr wins. Look back a
     * bounded distance: functions before that start too early to be long enough. */
    const struct jhr_sym_fn *best = NULL;
    for (size_t i = a, n = 0; i-- > 0 && n < 64; n++)
        if (addr < s->fns[i].end && (!best || s->fns[i].seq > best->seq))
            best = &s->fns[i];
    return best;
}

const struct jhr_sym_line *jhr_syms_line_at(const struct jhr_syms *s,
                                            const struct jhr_sym_fn *f, uint64_t addr)
{
    if (!f->nlines)
        return NULL;            /* and s->lines may be NULL: no pointer arithmetic on it */
    const struct jhr_sym_line *l = s->lines + f->line0;
    size_t a = 0, b = f->nlines;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (l[m].addr <= addr)
            a = m + 1;
        else
            b = m;
    }
    return a ? &l[a - 1] : &l[0];
}

