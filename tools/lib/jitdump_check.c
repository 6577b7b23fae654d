/*
 * jitdump_check.c — see jitdump_check.h. The checker walks the records once, keeping the
 * pending DEBUG_INFO and UNWINDING_INFO (they belong to the next LOAD) and, per
 * code_index, where that code is now (a set that grows with the file). Quirks are counted
 * as they are met and reported once per kind at the end, with the first one's offset and
 * details: a V8 dump has 2,000 records with empty unwinding info, not 2,000 warnings.
 *
 * What perf 6.1 does with each (tools/perf/util/jitdump.c, genelf.c, genelf_debug.c, and
 * the ELF files `perf inject --jit` wrote from real producers' dumps): it takes the LOAD's
 * code from the end of the record and the name from its start; it applies whatever
 * DEBUG_INFO and UNWINDING_INFO came last to the next LOAD; it turns a line entry at
 * address A into a row at A - code_addr + 0x80 in the function's ELF, whatever A is; it
 * maps only mapped_size bytes of unwinding data after the code.
 */
#include "lib/jitdump_check.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "fmt/arch.h"
#include "lib/eh_frame.h"
#include "lib/hash.h"
#include "lib/itab.h"
#include "lib/text.h"

/* code_index -> where that code is now, for every LOAD seen so far. */
struct loads {
    struct slot { uint64_t key, addr, size; } *v;
    size_t n, cap;
    struct jhr_itab idx;
};

static uint64_t load_hash(const void *ctx, size_t i)
{
    return jhr_hash_u64(((const struct loads *)ctx)->v[i].key);
}

static bool load_is(const void *ctx, size_t i, const void *key)
{
    return ((const struct loads *)ctx)->v[i].key == *(const uint64_t *)key;
}

static struct slot *set_find(struct loads *s, uint64_t key)
{
    size_t i = jhr_itab_find(&s->idx, jhr_hash_u64(key), load_is, s, &key);
    return i ? &s->v[i - 1] : NULL;
}

static int set_add(struct loads *s, uint64_t key, uint64_t addr, uint64_t size)
{
    if (JH__VEC_RESERVE(s->v, s->cap, s->n + 1) || jhr_itab_grow(&s->idx, load_hash, s))
        return -ENOMEM;
    s->v[s->n] = (struct slot){ key, addr, size };
    jhr_itab_put(&s->idx, jhr_hash_u64(key), s->n++);
    return 0;
}

static const char *rec_name(uint32_t id)
{
    static const char *const n[] = { "LOAD", "MOVE", "DEBUG_INFO", "CLOSE", "UNWINDING_INFO" };
    return id < JH__JD_CODE_MAX ? n[id] : "UNKNOWN";
}

static void print_name(FILE *out, const char *s, size_t n)
{
    jhr_text_safe(out, s, n < 200 ? n : 200);
    if (n > 200)
        fputs("...", out);
}

/* The quirks: short name, reported without --strict, what it is and whom it hurts. The
 * first occurrence's details are formatted into the walk's note; this text follows. */
static const struct { const char *name; bool warns; const char *effect; } quirk[] = {
    [JHR_JDQ_VERSION0] = { "version-0", false, "perf reads versions up to 1; the "
                           "specification says 1" },
    [JHR_JDQ_TSC] = { "tsc-timestamps", true, "perf needs its TSC conversion for them" },
    [JHR_JDQ_TS_BACK] = { "timestamp-backwards", true, "perf inject orders the code's "
                          "mmap events by these timestamps" },
    [JHR_JDQ_UNKNOWN] = { "unknown-record", true, "perf skips it" },
    [JHR_JDQ_AFTER_CLOSE] = { "after-close", true, "perf reads them all the same" },
    [JHR_JDQ_NO_CLOSE] = { "no-close", true, "the process is still running, or exited "
                           "without closing the dump" },
    [JHR_JDQ_PID] = { "load-pid", true, "perf files the code under the LOAD's pid" },
    [JHR_JDQ_VMA] = { "load-vma", true, "perf uses code_addr; the specification wants vma "
                      "= code_addr (LLVM writes 0)" },
    [JHR_JDQ_LOAD_GAP] = { "load-gap", false, "perf takes the code from the end of the "
                           "record and ignores them" },
    [JHR_JDQ_DEBUG_PAD] = { "debug-padding", false, "perf reads nr_entry entries and ignores "
                            "the rest" },
    [JHR_JDQ_LINE_SKEW] = { "line-skew-0x40", true, "an old-perf convention (V8, LLVM): perf "
                            "since 5.8 puts every line 0x40 bytes late, shows the first 0x40 "
                            "bytes as ??:0, and lines past the end on nothing" },
    [JHR_JDQ_LINE_BEFORE] = { "line-before-code", false, "the row still covers the "
                              "function's start in perf's line table (Erlang starts each "
                              "table in the CodeInfoPrologue)" },
    [JHR_JDQ_LINE_OUTSIDE] = { "line-outside-code", true, "perf puts those rows outside the "
                               "function, or wraps them around: those lines show nowhere, "
                               "or on other code" },
    [JHR_JDQ_LINE_BACK] = { "line-backwards", true, "perf writes the rows out of order; "
                            "line lookups in the function go wrong (one node 20 dump out of "
                            "a dozen had such a table)" },
    [JHR_JDQ_LINE_EMPTY_FILE] = { "line-empty-file", true, "perf defines a file with no name "
                                  "in the line table (Erlang ends every table with one, line "
                                  "0); readelf -wL stops decoding there" },
    [JHR_JDQ_LINE_GARBAGE] = { "line-garbage", true, "the entries after it are misaligned "
                               "(a V8 bug): perf builds a garbage line table for the "
                               "function" },
    [JHR_JDQ_UNWIND_EMPTY] = { "unwind-empty", true, "nothing to unwind with (V8 writes one "
                               "for most functions): perf --call-graph dwarf stops there" },
    [JHR_JDQ_UNWIND_UNMAPPED] = { "unwind-unmapped", true, "perf maps only mapped_size bytes "
                                  "after the code: its DWARF unwinder cannot read the rest" },
    [JHR_JDQ_UNWIND_PAD] = { "unwind-padding", false, "perf ignores them" },
    [JHR_JDQ_CUT] = { "truncated", true, "perf reads them and stops there (the writer "
                      "stopped mid-record: V8 buffers its jitdump, so a node run ended by exit "
                      "or Ctrl-C leaves it so)" },
};

const char *jhr_jd_quirk_name(enum jhr_jd_quirk q)
{
    return q < JHR_JDQ_COUNT ? quirk[q].name : "?";
}

bool jhr_jd_quirk_warns(enum jhr_jd_quirk q) { return q < JHR_JDQ_COUNT && quirk[q].warns; }

/* The walk: what is pending for the next LOAD, and what has been seen. */
struct check {
    struct jhr_jd *r;
    FILE *out, *warn;
    bool verbose, strict;
    struct jhr_jd_stats st;
    struct loads seen;
    struct jhr_jd_rec dbg, unw;
    bool have_dbg, have_unw, closed;
    uint64_t dbg_decoded;       /* entries of the pending DEBUG_INFO that could be read */
    struct { size_t off; char what[200]; } first[JHR_JDQ_COUNT];
};

/* Count quirk q at offset off; the details of the first one are kept. */
__attribute__((format(printf, 4, 5)))
static void note(struct check *k, enum jhr_jd_quirk q, size_t off, const char *fmt, ...)
{
    if (k->st.quirks[q]++)
        return;
    k->first[q].off = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->first[q].what, sizeof k->first[q].what, fmt, ap);
    va_end(ap);
}

static int report(struct check *k)
{
    size_t n = 0;
    for (int q = 0; q < JHR_JDQ_COUNT; q++) {
        size_t c = k->st.quirks[q];
        if (!c || (!k->strict && !quirk[q].warns))
            continue;
        n++;
        if (!k->warn)
            continue;
        fprintf(k->warn, "%s: ", k->strict ? "strict" : "warning");
        if (q != JHR_JDQ_NO_CLOSE)
            fprintf(k->warn, "offset 0x%zx: ", k->first[q].off);
        fprintf(k->warn, "%s: %s", k->first[q].what, quirk[q].effect);
        if (c > 1)
            fprintf(k->warn, " [%zu records]", c);
        fprintf(k->warn, " (%s)\n", quirk[q].name);
    }
    if (!k->strict || !n)
        return 0;
    snprintf(k->r->err, sizeof k->r->err, "%zu kind%s of quirk the jitdump specification does "
             "not allow (--strict)", n, n > 1 ? "s" : "");
    return JH_EFORMAT;
}

static int header(struct check *k)
{
    struct jhr_jd *r = k->r;
    const struct jh__arch *a = jh__arch_by_machine(r->hdr.elf_mach);
    if (k->out)
        fprintf(k->out, "jitdump %s-endian, version %" PRIu32 ", header %" PRIu32 " bytes, "
                "elf_mach %" PRIu32 "%s%s%s, pid %" PRIu32 ", timestamp %" PRIu64 ", flags 0x%"
                PRIx64 "\n", r->swap ? "other" : "host", r->hdr.version, r->hdr.total_size,
                r->hdr.elf_mach, a ? " (" : "", a ? a->name : "", a ? ")" : "", r->hdr.pid,
                r->hdr.timestamp, r->hdr.flags);
    if (r->hdr.version > JH__JD_VERSION)
        return jhr_jd_fail(r, 4, "version %" PRIu32 ": perf 6.1 reads version 1 only",
                           r->hdr.version);
    if (r->hdr.version == 0)
        note(k, JHR_JDQ_VERSION0, 4, "header version 0");
    if (r->hdr.flags & ~JH__JD_FLAG_ARCH_TIMESTAMP)
        return jhr_jd_fail(r, 32, "unknown flag bits 0x%" PRIx64 ": perf rejects the whole file",
                           r->hdr.flags & ~JH__JD_FLAG_ARCH_TIMESTAMP);
    if (r->hdr.flags & JH__JD_FLAG_ARCH_TIMESTAMP)
        note(k, JHR_JDQ_TSC, 32, "timestamps are TSC ticks (flag 1)");
    return 0;
}

static bool has_ctrl(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return true;
    return false;
}

static int debug_info(struct check *k, const struct jhr_jd_rec *rec)
{
    struct jhr_jd *r = k->r;
    k->st.debug++;
    if (k->out)
        fprintf(k->out, " code 0x%" PRIx64 ", %" PRIu64 " entries\n", rec->u.debug.code_addr,
                rec->u.debug.nr_entry);
    if (k->have_dbg)
        return jhr_jd_fail(r, rec->off, "second DEBUG_INFO before the LOAD the one at 0x%zx "
                           "belongs to (perf keeps only the last)", k->dbg.off);
    /* Decode what can be decoded: a V8 file name with garbage bytes misaligns the entries
     * after it, and their walk may run out of the record; load_extras judges. */
    size_t pos = 0;
    uint64_t i = 0;
    for (; i < rec->u.debug.nr_entry; i++) {
        struct jhr_jd_line l;
        if (jhr_jd_debug_entry(r, rec, &pos, &l))
            break;
        k->st.lines++;
        if (k->out && k->verbose) {
            fprintf(k->out, "      0x%" PRIx64 " (%s0x%" PRIx64 ") ", l.addr,
                    l.addr < rec->u.debug.code_addr ? "-" : "+",
                    l.addr < rec->u.debug.code_addr ? rec->u.debug.code_addr - l.addr :
                    l.addr - rec->u.debug.code_addr);
            print_name(k->out, l.name, l.name_len);
            fprintf(k->out, ":%" PRId32 "\n", l.lineno);
        }
    }
    if (i == rec->u.debug.nr_entry && pos < rec->u.debug.entries_len)
        note(k, JHR_JDQ_DEBUG_PAD, rec->off, "DEBUG_INFO has %zu bytes after its last entry",
             rec->u.debug.entries_len - pos);
    k->dbg = *rec;
    k->dbg_decoded = i;
    k->have_dbg = true;
    return 0;
}

static int unwinding_info(struct check *k, const struct jhr_jd_rec *rec)
{
    struct jhr_jd *r = k->r;
    const __typeof__(rec->u.unwind) *u = &rec->u.unwind;
    k->st.unwind++;
    if (k->out)
        fprintf(k->out, " %" PRIu64 " bytes (.eh_frame_hdr %" PRIu64 "), mapped %" PRIu64 "\n",
                u->unwinding_size, u->eh_frame_hdr_size, u->mapped_size);
    if (k->have_unw)
        return jhr_jd_fail(r, rec->off, "second UNWINDING_INFO before the LOAD the one at 0x%zx "
                           "belongs to", k->unw.off);
    if (u->eh_frame_hdr_size < 12)
        return jhr_jd_fail(r, rec->off, "eh_frame_hdr_size %" PRIu64 ": a .eh_frame_hdr has at "
                           "least 12 bytes (perf finds it at the end of the data)",
                           u->eh_frame_hdr_size);
    if (u->data_len > u->unwinding_size)
        note(k, JHR_JDQ_UNWIND_PAD, rec->off, "UNWINDING_INFO has %" PRIu64 " bytes after its "
             "%" PRIu64 " bytes of data", u->data_len - u->unwinding_size, u->unwinding_size);
    if (u->unwinding_size == u->eh_frame_hdr_size)
        note(k, JHR_JDQ_UNWIND_EMPTY, rec->off, "UNWINDING_INFO with no .eh_frame, only a "
             "%" PRIu64 "-byte .eh_frame_hdr, mapped_size %" PRIu64, u->eh_frame_hdr_size,
             u->mapped_size);
    else if (u->mapped_size < u->unwinding_size)
        note(k, JHR_JDQ_UNWIND_UNMAPPED, rec->off, "mapped_size %" PRIu64 " is smaller than "
             "unwinding_size %" PRIu64, u->mapped_size, u->unwinding_size);
    k->unw = *rec;
    k->have_unw = true;
    return 0;
}

/* The pending DEBUG_INFO's entries against the LOAD's code [a, a + s]. */
static int lines_vs_code(struct check *k, const struct jhr_jd_rec *load)
{
    struct jhr_jd *r = k->r;
    const struct jhr_jd_rec *dbg = &k->dbg;
    uint64_t a = load->u.load.code_addr, s = load->u.load.code_size;
    if (dbg->u.debug.code_addr != a)
        return jhr_jd_fail(r, dbg->off, "DEBUG_INFO for code 0x%" PRIx64 " precedes the LOAD "
                           "of 0x%" PRIx64 " at 0x%zx", dbg->u.debug.code_addr, a, load->off);
    size_t pos = 0, inside = 0, before = 0, empty = 0, named = 0;
    uint64_t lo = UINT64_MAX, hi = 0, prev = 0, out_i = 0, out_addr = 0, back_i = 0;
    bool out = false, back = false;
    struct jhr_jd_line l;
    for (uint64_t i = 0; i < k->dbg_decoded; i++) {
        jhr_jd_debug_entry(r, dbg, &pos, &l);   /* decoded once already */
        if (has_ctrl(l.name, l.name_len)) {
            note(k, JHR_JDQ_LINE_GARBAGE, dbg->off, "DEBUG_INFO entry %" PRIu64 " has a file "
                 "name with control bytes", i);
            return 0;       /* what follows is noise: nothing more to judge */
        }
        if (!l.name_len) {
            if (!empty++)
                note(k, JHR_JDQ_LINE_EMPTY_FILE, dbg->off, "DEBUG_INFO entry %" PRIu64 " (line %"
                     PRId32 ") has an empty file name", i, l.lineno);
            continue;
        }
        if (named++ && l.addr < prev && !back)
            back = true, back_i = i;
        prev = l.addr;
        lo = l.addr < lo ? l.addr : lo;
        hi = l.addr > hi ? l.addr : hi;
        if (l.addr >= a && l.addr - a <= s)
            inside++;
        else if (l.addr < a && a - l.addr <= JH__JD_PERF_TEXT_OFFSET && !inside)
            before++;           /* a row at (A - a + 0x80) >= 0 in perf's ELF: it holds */
        else if (!out)
            out = true, out_i = i, out_addr = l.addr;
    }
    /* Past the record, perf reads whatever follows its copy: only a table already known
     * to be noise (misaligned, as V8 writes some) is let through. */
    if (k->dbg_decoded < dbg->u.debug.nr_entry && !back && !out)
        return jhr_jd_fail(r, dbg->off, "DEBUG_INFO entry %" PRIu64 " runs past the record or "
                           "has no NUL-terminated file name", k->dbg_decoded);
    if (!named)
        return 0;
    if (back)
        note(k, JHR_JDQ_LINE_BACK, dbg->off, "DEBUG_INFO entry %" PRIu64 " goes backwards",
             back_i);
    if (jhr_jd_line_skew(lo, hi, a, s)) {
        note(k, JHR_JDQ_LINE_SKEW, dbg->off, "DEBUG_INFO entries from code+0x%" PRIx64 " to "
             "code+0x%" PRIx64 " for %" PRIu64 " bytes of code", lo - a, hi - a, s);
        return 0;
    }
    if (out)
        note(k, JHR_JDQ_LINE_OUTSIDE, dbg->off, "DEBUG_INFO entry %" PRIu64 " at 0x%" PRIx64 " is "
             "outside the code 0x%" PRIx64 "..0x%" PRIx64 " (relative or offset addresses? perf "
             "wants absolute ones)", out_i, out_addr, a, a + s);
    if (before)
        note(k, JHR_JDQ_LINE_BEFORE, dbg->off, "DEBUG_INFO starts %" PRIu64 " bytes before "
             "the code", a - lo);
    return 0;
}

/* The DEBUG_INFO and UNWINDING_INFO before a LOAD, against the LOAD's code. */
static int load_extras(struct check *k, const struct jhr_jd_rec *rec)
{
    struct jhr_jd *r = k->r;
    const __typeof__(rec->u.load) *l = &rec->u.load;
    int rc;
    if (k->have_dbg && (rc = lines_vs_code(k, rec)))
        return rc;
    if (k->have_unw && k->unw.u.unwind.unwinding_size > k->unw.u.unwind.eh_frame_hdr_size) {
        const __typeof__(k->unw.u.unwind) *u = &k->unw.u.unwind;
        uint64_t us = u->unwinding_size, hs = u->eh_frame_hdr_size;
        uint64_t eh_addr = (JH__JD_PERF_TEXT_OFFSET + l->code_size + 7) & ~7ull;
        char uerr[200];
        if (jhr_eh_frame_check(u->data, (size_t)(us - hs), u->data + (us - hs), (size_t)hs,
                               eh_addr, JH__JD_PERF_TEXT_OFFSET, l->code_size,
                               jh__arch_by_machine(r->hdr.elf_mach),
                               k->out && k->verbose ? k->out : NULL, uerr, sizeof uerr))
            return jhr_jd_fail(r, k->unw.off, "UNWINDING_INFO for the LOAD at 0x%zx: %s",
                               rec->off, uerr);
    }
    k->have_dbg = k->have_unw = false;
    return 0;
}

static int load(struct check *k, const struct jhr_jd_rec *rec)
{
    struct jhr_jd *r = k->r;
    const __typeof__(rec->u.load) *l = &rec->u.load;
    k->st.loads++;
    if (k->out) {
        fprintf(k->out, " #%" PRIu64 " 0x%" PRIx64 "+0x%" PRIx64 " pid %" PRIu32 " tid %" PRIu32
                " ", l->code_index, l->code_addr, l->code_size, l->pid, l->tid);
        print_name(k->out, l->name, l->name_len);
        fputc('\n', k->out);
    }
    if (l->name_len == 0)
        return jhr_jd_fail(r, rec->off, "LOAD #%" PRIu64 " has an empty name", l->code_index);
    if (l->code_size == 0)
        return jhr_jd_fail(r, rec->off, "LOAD #%" PRIu64 " has code_size 0", l->code_index);
    if (l->code_addr + l->code_size < l->code_addr)
        return jhr_jd_fail(r, rec->off, "LOAD #%" PRIu64 " wraps around the address space",
                           l->code_index);
    if (JH__JD_LOAD_FIXED + l->name_len + 1 + l->code_size != rec->total_size)
        note(k, JHR_JDQ_LOAD_GAP, rec->off, "LOAD #%" PRIu64 " total_size %" PRIu32 " is not 56 "
             "+ name %zu + 1 + code %" PRIu64 ": bytes between name and code", l->code_index,
             rec->total_size, l->name_len, l->code_size);
    if (l->vma != l->code_addr)
        note(k, JHR_JDQ_VMA, rec->off, "LOAD vma 0x%" PRIx64 " != code_addr 0x%" PRIx64, l->vma,
             l->code_addr);
    if (l->pid != r->hdr.pid)
        note(k, JHR_JDQ_PID, rec->off, "LOAD pid %" PRIu32 " differs from the header's %" PRIu32,
             l->pid, r->hdr.pid);
    /* A LOAD again under its index refreshes that function's code (a patch): perf inject
     * rewrites the same jitted-*.so, which is what keeps the function one row in perf
     * report. Under the index of code elsewhere, it would rename or hide that code. */
    struct slot *again = set_find(&k->seen, l->code_index);
    if (again && (again->addr != l->code_addr || again->size != l->code_size))
        return jhr_jd_fail(r, rec->off, "LOAD reuses code_index %" PRIu64 " at 0x%" PRIx64 "+0x%"
                           PRIx64 ", but that index is code at 0x%" PRIx64 "+0x%" PRIx64
                           ": perf would overwrite jitted-%" PRIu32 "-%" PRIu64 ".so",
                           l->code_index, l->code_addr, l->code_size, again->addr, again->size,
                           l->pid, l->code_index);
    if (!again && set_add(&k->seen, l->code_index, l->code_addr, l->code_size))
        return jhr_jd_fail(r, rec->off, "out of memory");
    return load_extras(k, rec);
}

static int move(struct check *k, const struct jhr_jd_rec *rec)
{
    struct jhr_jd *r = k->r;
    const __typeof__(rec->u.move) *m = &rec->u.move;
    k->st.moves++;
    if (k->out)
        fprintf(k->out, " #%" PRIu64 " 0x%" PRIx64 " -> 0x%" PRIx64 " size 0x%" PRIx64 "\n",
                m->code_index, m->old_code_addr, m->new_code_addr, m->code_size);
    if (k->have_dbg || k->have_unw)
        return jhr_jd_fail(r, rec->off, "MOVE between a %s and its LOAD", k->have_dbg ?
                           "DEBUG_INFO" : "UNWINDING_INFO");
    struct slot *s = set_find(&k->seen, m->code_index);
    if (!s)
        return jhr_jd_fail(r, rec->off, "MOVE of code_index %" PRIu64 ", which no earlier LOAD "
                           "has", m->code_index);
    if (s->size != m->code_size || s->addr != m->old_code_addr)
        return jhr_jd_fail(r, rec->off, "MOVE of #%" PRIu64 " says 0x%" PRIx64 "+0x%" PRIx64
                           ", but it is at 0x%" PRIx64 "+0x%" PRIx64, m->code_index,
                           m->old_code_addr, m->code_size, s->addr, s->size);
    s->addr = m->new_code_addr;
    return 0;
}

static int record(struct check *k, const struct jhr_jd_rec *rec)
{
    switch (rec->id) {
    case JH__JD_CODE_DEBUG_INFO: return debug_info(k, rec);
    case JH__JD_CODE_UNWINDING_INFO: return unwinding_info(k, rec);
    case JH__JD_CODE_LOAD: return load(k, rec);
    case JH__JD_CODE_MOVE: return move(k, rec);
    case JH__JD_CODE_CLOSE:
        k->st.closes++;
        if (k->out)
            fputc('\n', k->out);
        if (k->have_dbg || k->have_unw)
            return jhr_jd_fail(k->r, rec->off, "CLOSE between a %s and its LOAD", k->have_dbg ?
                               "DEBUG_INFO" : "UNWINDING_INFO");
        k->closed = true;
        return 0;
    default:
        k->st.unknown++;
        if (k->out)
            fprintf(k->out, " id %" PRIu32 ", %" PRIu32 " bytes\n", rec->id, rec->total_size);
        note(k, JHR_JDQ_UNKNOWN, rec->off, "unknown record id %" PRIu32, rec->id);
        return 0;
    }
}

static uint32_t rd32(const struct jhr_jd *r, const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return r->swap ? __builtin_bswap32(v) : v;
}

/* jhr_jd_next refused the record at r->off: is it the last one, cut short by a writer
 * that stopped (its prefix cut, or a known record whose size runs past the end), rather
 * than a malformed one? A LOAD whose fixed part is there must also have room for its code
 * and a name, so a garbage size is not taken for a cut (r->err then says so). Sets *what
 * to describe the cut. */
static bool cut_short(struct jhr_jd *r, char *what, size_t len)
{
    size_t left = r->len - r->off;
    const uint8_t *p = r->data + r->off;
    if (left < JH__JD_PREFIX_SIZE) {
        snprintf(what, len, "the file ends %zu bytes into a record's 16-byte prefix", left);
        return true;
    }
    uint32_t id = rd32(r, p), size = rd32(r, p + 4);
    if (id >= JH__JD_CODE_MAX || size <= left || size > (1u << 30))
        return false;
    if (id == JH__JD_CODE_LOAD && left >= JH__JD_LOAD_FIXED) {
        uint64_t code_size;
        memcpy(&code_size, p + 40, 8);
        if (r->swap)
            code_size = __builtin_bswap64(code_size);
        if (code_size > size || size - code_size < JH__JD_LOAD_FIXED + 2) {
            jhr_jd_fail(r, r->off, "LOAD of %" PRIu32 " bytes has code_size "
                        "%" PRIu64 ", which leaves no room for a name, and runs past the end "
                        "of the file: malformed", size, code_size);
            return false;
        }
    }
    snprintf(what, len, "the last record, a %s of %" PRIu32 " bytes, is cut after %zu",
             rec_name(id), size, left);
    return true;
}

/* The file ends inside a record (cut_short): what came before is usable, except a
 * DEBUG_INFO or UNWINDING_INFO waiting for the LOAD that was cut. */
static void cut(struct check *k, const char *what)
{
    size_t usable = k->st.records - k->have_dbg - k->have_unw;
    note(k, JHR_JDQ_CUT, k->r->off, "%s: %zu record%s (%zu LOAD)%s usable%s", what, usable,
         usable == 1 ? "" : "s", k->st.loads, usable == 1 ? " is" : " are",
         k->have_dbg || k->have_unw ? ", not the DEBUG_INFO or UNWINDING_INFO before it, whose "
         "LOAD is cut" : "");
    k->have_dbg = k->have_unw = false;
    k->closed = true;           /* not a file without CLOSE: a file cut short */
}

static int walk(struct check *k)
{
    struct jhr_jd_rec rec;
    uint64_t last_ts = 0;
    int rc;
    while ((rc = jhr_jd_next(k->r, &rec)) > 0) {
        k->st.records++;
        if (k->out)
            fprintf(k->out, "0x%08zx %-14s ts %" PRIu64, rec.off, rec_name(rec.id),
                    rec.timestamp);
        if (rec.timestamp < last_ts)
            note(k, JHR_JDQ_TS_BACK, rec.off, "timestamp goes backwards");
        last_ts = rec.timestamp;
        if (k->closed)
            note(k, JHR_JDQ_AFTER_CLOSE, rec.off, "%s after CLOSE", rec_name(rec.id));
        if ((rc = record(k, &rec)))
            return rc;
    }
    char what[160];
    if (rc < 0 && !cut_short(k->r, what, sizeof what))
        return rc;
    if (rc < 0)
        cut(k, what);
    if (k->have_dbg || k->have_unw)
        return jhr_jd_fail(k->r, k->have_dbg ? k->dbg.off : k->unw.off, "%s at the end of the "
                           "file with no LOAD after it", k->have_dbg ? "DEBUG_INFO" :
                           "UNWINDING_INFO");
    if (!k->closed && k->r->unwritten)
        note(k, JHR_JDQ_NO_CLOSE, k->r->off, "no CLOSE record (%zu bytes not written yet "
             "at offset 0x%zx)", k->r->unwritten, k->r->off);
    else if (!k->closed)
        note(k, JHR_JDQ_NO_CLOSE, k->r->len, "no CLOSE record");
    return 0;
}

int jhr_jd_check(struct jhr_jd *r, const uint8_t *data, size_t len, FILE *out, unsigned flags,
                 FILE *warn, struct jhr_jd_stats *stats)
{
    struct check *k = calloc(1, sizeof *k);
    if (!k) {
        memset(r, 0, sizeof *r);
        return jhr_jd_fail(r, 0, "out of memory");
    }
    *k = (struct check){ .r = r, .out = out, .warn = warn, .verbose = flags & JHR_JD_VERBOSE,
                         .strict = flags & JHR_JD_STRICT };
    int rc = jhr_jd_open(r, data, len);
    if (!rc)
        rc = header(k);
    if (!rc)
        rc = walk(k);
    if (!rc)
        rc = report(k);
    free(k->seen.v);
    jhr_itab_free(&k->seen.idx);
    if (stats)
        *stats = k->st;
    free(k);
    return rc;
}
