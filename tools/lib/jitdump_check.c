/*
 * jitdump_check.c — see jitdump_check.h. The checker walks the records once, keeping the
 * pending DEBUG_INFO and UNWINDING_INFO (they belong to the next LOAD) and, per
 * code_index, where that code is now (a set that grows with the file).
 */
#include "lib/jitdump_check.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>

#include "base/vec.h"
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

/* The walk: what is pending for the next LOAD, and what has been seen. */
struct check {
    struct jhr_jd *r;
    FILE *out, *warn;
    bool verbose;
    struct jhr_jd_stats st;
    struct loads seen;
    struct jhr_jd_rec dbg, unw;
    bool have_dbg, have_unw, closed;
};

static int header(struct check *k)
{
    struct jhr_jd *r = k->r;
    if (k->out)
        fprintf(k->out, "jitdump %s-endian, version %" PRIu32 ", header %" PRIu32 " bytes, "
                "elf_mach %" PRIu32 "%s, pid %" PRIu32 ", timestamp %" PRIu64 ", flags 0x%"
                PRIx64 "\n", r->swap ? "other" : "host", r->hdr.version, r->hdr.total_size,
                r->hdr.elf_mach, r->hdr.elf_mach == JH__JD_EM_X86_64 ? " (x86-64)" :
                r->hdr.elf_mach == JH__JD_EM_AARCH64 ? " (aarch64)" : "", r->hdr.pid,
                r->hdr.timestamp, r->hdr.flags);
    if (r->hdr.version != JH__JD_VERSION)
        return jhr_jd_fail(r, 4, "version %" PRIu32 ": perf 6.1 reads version 1 only",
                           r->hdr.version);
    if (r->hdr.flags & ~JH__JD_FLAG_ARCH_TIMESTAMP)
        return jhr_jd_fail(r, 32, "unknown flag bits 0x%" PRIx64 ": perf rejects the whole file",
                           r->hdr.flags & ~JH__JD_FLAG_ARCH_TIMESTAMP);
    if (k->warn && (r->hdr.flags & JH__JD_FLAG_ARCH_TIMESTAMP))
        fprintf(k->warn, "warning: timestamps are TSC ticks (flag 1): perf needs its TSC "
                "conversion for them\n");
    return 0;
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
    if (k->have_unw)
        return jhr_jd_fail(r, rec->off, "DEBUG_INFO after UNWINDING_INFO at 0x%zx: write both "
                           "right before their LOAD", k->unw.off);
    size_t pos = 0;
    uint64_t prev = 0;
    for (uint64_t i = 0; i < rec->u.debug.nr_entry; i++) {
        struct jhr_jd_line l;
        if (jhr_jd_debug_entry(r, rec, &pos, &l))
            return jhr_jd_fail(r, rec->off, "DEBUG_INFO entry %" PRIu64 " runs past the record "
                               "or has no NUL-terminated file name", i);
        if (i && l.addr < prev)
            return jhr_jd_fail(r, rec->off, "DEBUG_INFO entry %" PRIu64 " address 0x%" PRIx64
                               " goes backwards (perf's line program cannot)", i, l.addr);
        if (l.name_len == 0)
            return jhr_jd_fail(r, rec->off, "DEBUG_INFO entry %" PRIu64 " has an empty file "
                               "name", i);
        prev = l.addr;
        if (k->out && k->verbose) {
            fprintf(k->out, "      0x%" PRIx64 " (+0x%" PRIx64 ") ", l.addr,
                    l.addr - rec->u.debug.code_addr);
            print_name(k->out, l.name, l.name_len);
            fprintf(k->out, ":%" PRId32 "\n", l.lineno);
        }
    }
    k->dbg = *rec;
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
    if (u->mapped_size < u->unwinding_size)
        return jhr_jd_fail(r, rec->off, "mapped_size %" PRIu64 " is smaller than unwinding_size %"
                           PRIu64, u->mapped_size, u->unwinding_size);
    k->unw = *rec;
    k->have_unw = true;
    return 0;
}

/* The DEBUG_INFO and UNWINDING_INFO before a LOAD, against the LOAD's code. */
static int load_extras(struct check *k, const struct jhr_jd_rec *rec)
{
    struct jhr_jd *r = k->r;
    const __typeof__(rec->u.load) *l = &rec->u.load;
    if (k->have_dbg) {
        const struct jhr_jd_rec *dbg = &k->dbg;
        if (dbg->u.debug.code_addr != l->code_addr)
            return jhr_jd_fail(r, dbg->off, "DEBUG_INFO for code 0x%" PRIx64 " precedes the LOAD "
                               "of 0x%" PRIx64 " at 0x%zx", dbg->u.debug.code_addr,
                               l->code_addr, rec->off);
        size_t pos = 0;
        for (uint64_t i = 0; i < dbg->u.debug.nr_entry; i++) {
            struct jhr_jd_line ln;
            jhr_jd_debug_entry(r, dbg, &pos, &ln);      /* checked in debug_info */
            if (ln.addr < l->code_addr || ln.addr - l->code_addr > l->code_size)
                return jhr_jd_fail(r, dbg->off, "DEBUG_INFO entry %" PRIu64 " at 0x%" PRIx64
                                   " is outside the code 0x%" PRIx64 "..0x%" PRIx64 " (relative "
                                   "or offset addresses? perf wants absolute ones)", i, ln.addr,
                                   l->code_addr, l->code_addr + l->code_size);
        }
    }
    if (k->have_unw) {
        const __typeof__(k->unw.u.unwind) *u = &k->unw.u.unwind;
        uint64_t us = u->unwinding_size, hs = u->eh_frame_hdr_size;
        uint64_t eh_addr = (JH__JD_PERF_TEXT_OFFSET + l->code_size + 7) & ~7ull;
        char uerr[200];
        if (jhr_eh_frame_check(u->data, (size_t)(us - hs), u->data + (us - hs), (size_t)hs,
                               eh_addr, JH__JD_PERF_TEXT_OFFSET, l->code_size,
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
        return jhr_jd_fail(r, rec->off, "LOAD #%" PRIu64 " total_size %" PRIu32 " is not 56 + "
                           "name %zu + 1 + code %" PRIu64 ": bytes between name and code",
                           l->code_index, rec->total_size, l->name_len, l->code_size);
    if (k->warn && l->vma != l->code_addr)
        fprintf(k->warn, "warning: offset 0x%zx: LOAD vma 0x%" PRIx64 " != code_addr 0x%" PRIx64
                " (perf uses code_addr)\n", rec->off, l->vma, l->code_addr);
    if (k->warn && l->pid != r->hdr.pid)
        fprintf(k->warn, "warning: offset 0x%zx: LOAD pid %" PRIu32 " differs from the header's %"
                PRIu32 "\n", rec->off, l->pid, r->hdr.pid);
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
        if (k->warn)
            fprintf(k->warn, "warning: offset 0x%zx: unknown record id %" PRIu32 " (perf skips "
                    "it)\n", rec->off, rec->id);
        return 0;
    }
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
        if (k->warn && rec.timestamp < last_ts)
            fprintf(k->warn, "warning: offset 0x%zx: timestamp goes backwards\n", rec.off);
        last_ts = rec.timestamp;
        if (k->closed && k->warn)
            fprintf(k->warn, "warning: offset 0x%zx: %s after CLOSE\n", rec.off,
                    rec_name(rec.id));
        if ((rc = record(k, &rec)))
            return rc;
    }
    if (rc < 0)
        return rc;
    if (k->have_dbg || k->have_unw)
        return jhr_jd_fail(k->r, k->have_dbg ? k->dbg.off : k->unw.off, "%s at the end of the "
                           "file with no LOAD after it", k->have_dbg ? "DEBUG_INFO" :
                           "UNWINDING_INFO");
    if (!k->closed && k->warn)
        fprintf(k->warn, "warning: no CLOSE record (the process is still running, or did not "
                "call jh_close)\n");
    return 0;
}

int jhr_jd_check(struct jhr_jd *r, const uint8_t *data, size_t len, FILE *out, bool verbose,
                 FILE *warn, struct jhr_jd_stats *stats)
{
    struct check k = { .r = r, .out = out, .warn = warn, .verbose = verbose };
    int rc = jhr_jd_open(r, data, len);
    if (!rc)
        rc = header(&k);
    if (!rc)
        rc = walk(&k);
    free(k.seen.v);
    jhr_itab_free(&k.seen.idx);
    if (stats)
        *stats = k.st;
    return rc;
}
