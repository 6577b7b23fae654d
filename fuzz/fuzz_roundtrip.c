/*
 * fuzz_roundtrip.c — differential: what the library's encoders write, the reader library
 * must read back as it was meant. The input describes up to 8 functions (names and file
 * names of any bytes but NUL, line tables, frame-pointer or raw CFI unwind rules, code
 * bytes) and then moves, patches and removals. Each is encoded with the library's own
 * encoders — perf-map lines (fmt/perfmap.c), jitdump records (fmt/jitdump.c), audit-log
 * records (fmt/auditlog.c), .eh_frame for perf's layout (fmt/cfi.c) — and decoded with
 * tools/lib (perfmap_read, jitdump_read + jitdump_check, auditlog_read, eh_frame, symtab).
 * Every field must come back: addresses, sizes, names (with control characters as the
 * format replaces them), lines and files, unwind rules, the code bytes (patched, for the
 * audit log), ids, moves. A mismatch aborts with the field that differs.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/auditlog.h"
#include "fmt/cfi.h"
#include "fmt/jitdump.h"
#include "fmt/msgpack.h"
#include "fmt/perfmap.h"
#include "lib/auditlog_read.h"
#include "lib/eh_frame.h"
#include "lib/jitdump_check.h"
#include "lib/perfmap_read.h"
#include "lib/symtab.h"

#define MAXF 8
#define SLOT 1024

struct fn {
    struct jh__func f;
    char name[48];
    char filebuf[3][24];
    const char *files[3];
    struct jh_line lines[8];
    uint8_t cfi[40];
    uint64_t id, cur;           /* cur: the address after the moves */
    uint8_t bytes[SLOT];        /* the code as it stands after the patches */
    uint32_t nmoves, npatches;
    bool removed;
};

/* Code slots: each function starts in its own slot; moves go to slots above them. */
static uint8_t arena[2 * MAXF * SLOT + 64] __attribute__((aligned(64)));

struct rd { const uint8_t *p, *end; };
static uint64_t take(struct rd *r, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)(r->p < r->end ? *r->p++ : 0) << (8 * i);
    return v;
}

#define MISMATCH(...) do { fprintf(stderr, "roundtrip: " __VA_ARGS__); fputc('\n', stderr); \
                           abort(); } while (0)

static void text(struct rd *r, char *out, size_t max)
{
    size_t n = take(r, 1) % max;
    for (size_t i = 0; i < n; i++) {
        out[i] = (char)take(r, 1);
        if (!out[i])
            out[i] = 'x';
    }
    out[n] = 0;
}

/* As the perf map shows a name: control characters '?', an empty name "?", padded with
 * spaces to 3 bytes (perf skips shorter ones: fmt/perfmap.h). */
static bool same_in_map(const char *shown, size_t n, const char *raw)
{
    size_t len = strlen(raw), want = len ? len : 1;
    if (want < 3)
        want = 3;
    if (n != want || (!len && shown[0] != '?'))
        return false;
    for (size_t i = len ? len : 1; i < n; i++)
        if (shown[i] != ' ')
            return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (shown[i] != (c < 0x20 || c == 0x7f ? '?' : raw[i]))
            return false;
    }
    return true;
}

/* As the audit-log reader shows a name: control characters '?'. */
static bool same_shown(const char *shown, size_t n, const char *raw)
{
    if (n != strlen(raw))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (shown[i] != (c < 0x20 || c == 0x7f ? '?' : raw[i]))
            return false;
    }
    return true;
}

/* As the symbol table stores a name: NUL, CR and LF '?' (one name per callgrind line). */
static bool same_interned(const char *stored, const char *raw)
{
    if (strlen(stored) != strlen(raw))
        return false;
    for (size_t i = 0; raw[i]; i++)
        if (stored[i] != (raw[i] == '\n' || raw[i] == '\r' ? '?' : raw[i]))
            return false;
    return true;
}

static int describe(struct rd *r, struct fn *fs)
{
    int nf = 1 + (int)(take(r, 1) % MAXF);
    for (int i = 0; i < nf; i++) {
        struct fn *x = &fs[i];
        memset(x, 0, sizeof *x);
        uint64_t size = 1 + take(r, 2) % (SLOT - 8);
        uint64_t start = (uintptr_t)arena + (uint64_t)i * SLOT + take(r, 1) % 8;
        text(r, x->name, sizeof x->name);
        uint32_t nfiles = (uint32_t)(take(r, 1) % 4), nlines = 0;
        for (uint32_t k = 0; k < nfiles; k++) {
            text(r, x->filebuf[k], sizeof x->filebuf[k]);
            x->files[k] = x->filebuf[k];
        }
        if (nfiles) {
            nlines = (uint32_t)(take(r, 1) % 9);
            uint32_t off = 0;
            for (uint32_t k = 0; k < nlines; k++) {
                off += (uint32_t)(take(r, 1) % 64);
                if (off >= size)
                    off = (uint32_t)size - 1;
                x->lines[k] = (struct jh_line){ off, (uint32_t)take(r, 2), (uint32_t)take(r, 1),
                                                (uint32_t)(take(r, 1) % nfiles) };
            }
        }
        x->f = (struct jh__func){ .start = start, .size = size, .name = x->name,
                                  .files = x->files, .nfiles = nfiles, .lines = x->lines,
                                  .nlines = nlines };
        switch (take(r, 1) % 3) {
        case 1: {
            uint32_t push = 1 + (uint32_t)(take(r, 1) % size);
            uint32_t set = push + (uint32_t)(take(r, 1) % (size - push + 1));
            x->f.unwind = JH_UNWIND_FRAME_POINTER;
            x->f.fp_push_end = push;
            x->f.fp_set_end = set;
            break;
        }
        case 2: {
            size_t len = 1 + take(r, 1) % sizeof x->cfi;
            for (size_t k = 0; k < len; k++)
                x->cfi[k] = (uint8_t)take(r, 1);
            if (jh__cfi_validate(x->cfi, len, size) == 0) {
                x->f.unwind = JH_UNWIND_CFI;
                x->f.cfi = x->cfi;
                x->f.cfi_len = len;
            }
            break;
        }
        }
        for (uint64_t k = 0; k < size; k++)
            arena[start - (uintptr_t)arena + k] = (uint8_t)take(r, 1);
        memcpy(x->bytes, (const void *)(uintptr_t)start, size);
        x->id = 100 + (uint64_t)i * 7;
        x->cur = start;
    }
    return nf;
}

static void frame(struct jh__buf *out, const struct jh__buf *map)
{
    jh__buf_u8(out, JH__AL_FRAME_MARK);
    uint8_t be[4];
    jh__mp_be32(be, (uint32_t)map->len);
    jh__buf_put(out, be, 4);
    jh__buf_put(out, map->p, map->len);
}

/* ---- perf map ------------------------------------------------------------------------ */
static void check_perfmap(const struct fn *fs, int nf)
{
    struct jh__buf b = { 0 };
    char line[JH__PERFMAP_NAME_MAX + 64];
    for (int i = 0; i < nf; i++)
        jh__buf_put(&b, line, jh__perfmap_line(line, sizeof line, fs[i].f.start, fs[i].f.size,
                                               fs[i].name));
    size_t off = 0, lineno = 0;
    struct jhr_pm_line l;
    char err[256];
    for (int i = 0; i < nf; i++) {
        if (jhr_pm_next(b.p, b.len, &off, &lineno, &l, err, sizeof err) != 1)
            MISMATCH("perf map line %d unread: %s", i, err);
        if (l.start != fs[i].f.start || l.size != fs[i].f.size)
            MISMATCH("perf map line %d: range", i);
        if (!same_in_map(l.name, l.name_len, fs[i].name))
            MISMATCH("perf map line %d: name", i);
    }
    if (jhr_pm_next(b.p, b.len, &off, &lineno, &l, err, sizeof err) != 0)
        MISMATCH("perf map: a line too many");
    size_t n;
    if (jhr_pm_check(b.p, b.len, NULL, NULL, true, err, sizeof err, &n) != 0 || n != (size_t)nf)
        MISMATCH("perf map refused by the checker: %s", err);
    struct jhr_syms s = { 0 };
    if (jhr_syms_load_perfmap(&s, b.p, b.len) != 0 || jhr_syms_finish(&s) != 0)
        MISMATCH("perf map: symbol table");
    for (int i = 0; i < nf; i++) {
        const struct jhr_sym_fn *f = jhr_syms_find(&s, fs[i].f.start);
        if (!f || f->start != fs[i].f.start || f->end != fs[i].f.start + fs[i].f.size)
            MISMATCH("perf map: symbol table lookup %d", i);
    }
    jhr_syms_free(&s);
    jh__buf_free(&b);
}

/* ---- jitdump ------------------------------------------------------------------------- */
static void check_debug(const struct jhr_jd *r, const struct jhr_jd_rec *rec, const struct fn *x)
{
    if (rec->u.debug.code_addr != x->f.start || rec->u.debug.nr_entry != x->f.nlines + 1u)
        MISMATCH("jitdump DEBUG_INFO of %s: header", x->name);
    size_t pos = 0;
    struct jhr_jd_line l;
    for (uint32_t k = 0; k <= x->f.nlines; k++) {
        const struct jh_line *want = &x->lines[k < x->f.nlines ? k : x->f.nlines - 1];
        if (jhr_jd_debug_entry(r, rec, &pos, &l) != 0)
            MISMATCH("jitdump DEBUG_INFO entry %u unread", k);
        uint64_t addr = x->f.start + (k < x->f.nlines ? want->offset : x->f.size);
        const char *file = x->files[want->file][0] ? x->files[want->file] : "?";
        if (l.addr != addr || (uint32_t)l.lineno != want->line || l.name_len != strlen(file) ||
            memcmp(l.name, file, l.name_len))
            MISMATCH("jitdump DEBUG_INFO entry %u of %s", k, x->name);
    }
}

static void check_jitdump(const struct fn *fs, int nf, const struct fn *moved[], int nmoved,
                          const uint64_t (*moves)[2])
{
    struct jh__buf b = { 0 };
    jh__jd_header(&b, &jh__arch_x86_64, 4242, 1000);
    bool unwinding[MAXF];
    for (int i = 0; i < nf; i++) {
        struct jh__jd_unit u;
        /* added in address order, so no function above is live yet: next_start 0 */
        if (jh__jd_function(&b, &fs[i].f, &jh__arch_x86_64, 4242, 4243, 1000 + (uint64_t)i,
                            fs[i].id, 0, &u) != 0)
            MISMATCH("jitdump: encoder refused %s", fs[i].name);
        if (u.unwind_err)
            MISMATCH("jitdump: the CFI encoder refused what validated (%s)", fs[i].name);
        unwinding[i] = u.unwinding;
        jh__buf_put(&b, (const void *)(uintptr_t)fs[i].f.start, fs[i].f.size);
    }
    for (int k = 0; k < nmoved; k++)
        jh__jd_move(&b, 4242, 4243, moves[k][0], moves[k][1], moved[k]->f.size, moved[k]->id,
                    2000 + (uint64_t)k);
    jh__jd_close(&b, 3000);

    struct jhr_jd r;
    struct jhr_jd_stats st;
    if (jhr_jd_check(&r, b.p, b.len, NULL, false, NULL, &st) != 0)
        MISMATCH("jitdump refused by the checker: %s", r.err);
    if (st.loads != (size_t)nf || st.moves != (size_t)nmoved || st.closes != 1)
        MISMATCH("jitdump: record counts");
    if (jhr_jd_open(&r, b.p, b.len) != 0)
        MISMATCH("jitdump header: %s", r.err);
    struct jhr_jd_rec rec;
    int i = 0, k = 0, rc;
    bool saw_debug = false, saw_unwind = false;
    while ((rc = jhr_jd_next(&r, &rec)) > 0) {
        if (rec.id == JH__JD_CODE_DEBUG_INFO) {
            if (i >= nf)
                MISMATCH("jitdump: DEBUG_INFO past the loads");
            check_debug(&r, &rec, &fs[i]);
            saw_debug = true;
        } else if (rec.id == JH__JD_CODE_UNWINDING_INFO) {
            saw_unwind = true;
        } else if (rec.id == JH__JD_CODE_LOAD) {
            const struct fn *x = &fs[i];
            if (rec.u.load.code_addr != x->f.start || rec.u.load.code_size != x->f.size ||
                rec.u.load.code_index != x->id || rec.u.load.pid != 4242 || rec.u.load.tid != 4243)
                MISMATCH("jitdump LOAD %d: fields", i);
            const char *want = x->name[0] ? x->name : "?";
            if (rec.u.load.name_len != strlen(want) ||
                memcmp(rec.u.load.name, want, rec.u.load.name_len))
                MISMATCH("jitdump LOAD %d: name", i);
            if (memcmp(rec.u.load.code, (const void *)(uintptr_t)x->f.start, x->f.size))
                MISMATCH("jitdump LOAD %d: code bytes", i);
            if (saw_debug != (x->f.nlines > 0) || saw_unwind != unwinding[i] ||
                unwinding[i] != (x->f.unwind != JH_UNWIND_NONE))
                MISMATCH("jitdump LOAD %d: DEBUG_INFO/UNWINDING_INFO before it", i);
            saw_debug = saw_unwind = false;
            i++;
        } else if (rec.id == JH__JD_CODE_MOVE) {
            if (k >= nmoved || rec.u.move.old_code_addr != moves[k][0] ||
                rec.u.move.new_code_addr != moves[k][1] || rec.u.move.code_index != moved[k]->id ||
                rec.u.move.code_size != moved[k]->f.size)
                MISMATCH("jitdump MOVE %d", k);
            k++;
        }
    }
    if (rc < 0 || i != nf || k != nmoved)
        MISMATCH("jitdump: read %d loads, %d moves (%s)", i, k, rc < 0 ? r.err : "");

    /* the symbol table `jitherald callgrind` builds from it: every function found where it
     * ended up, with the line in effect at each row's address */
    struct jhr_syms s = { 0 };
    if (jhr_syms_load_jitdump(&s, b.p, b.len) != 0 || jhr_syms_finish(&s) != 0)
        MISMATCH("jitdump: symbol table");
    for (i = 0; i < nf; i++) {
        const struct fn *x = &fs[i];
        const struct jhr_sym_fn *f = jhr_syms_find(&s, x->cur);
        if (!f || f->start != x->cur || f->end != x->cur + x->f.size)
            MISMATCH("symbol table: %s not found at 0x%llx", x->name, (unsigned long long)x->cur);
        for (uint32_t n = 0; n < x->f.nlines; n++) {
            const struct jhr_sym_line *l = jhr_syms_line_at(&s, f, x->cur + x->lines[n].offset);
            /* several rows may share an offset: any of them is the line in effect */
            bool ok = false;
            for (uint32_t m = 0; l && m < x->f.nlines; m++) {
                const char *file = x->files[x->lines[m].file];
                ok |= x->lines[m].offset == x->lines[n].offset && x->lines[m].line == l->line &&
                      same_interned(s.strs[l->file], file[0] ? file : "?");
            }
            if (!ok)
                MISMATCH("symbol table: line at %s+%u", x->name, x->lines[n].offset);
        }
    }
    jhr_syms_free(&s);
    jh__buf_free(&b);
}

/* ---- .eh_frame for perf --------------------------------------------------------------- */
static void check_unwind(const struct fn *x)
{
    if (x->f.unwind == JH_UNWIND_NONE)
        return;
    struct jh__buf b = { 0 };
    size_t hdr = 0;
    if (jh__cfi_perf_unwinding(&b, &x->f, JH__JD_PERF_TEXT_OFFSET, &jh__arch_x86_64, &hdr) != 1)
        MISMATCH("cfi: encoder refused %s", x->name);
    char *printed = NULL;
    size_t plen = 0;
    FILE *out = open_memstream(&printed, &plen);
    char err[256];
    uint64_t text = JH__JD_PERF_TEXT_OFFSET, eh = (text + x->f.size + 7) & ~(uint64_t)7;
    if (!out || jhr_eh_frame_check(b.p, b.len - hdr, b.p + b.len - hdr, hdr, eh, text,
                                   x->f.size, &jh__arch_x86_64, out, err, sizeof err) != 0)
        MISMATCH("cfi: the CLI refuses the library's .eh_frame for %s: %s", x->name, err);
    fclose(out);
    char want[64];
    snprintf(want, sizeof want, "pc 0x%llx..0x%llx", (unsigned long long)text,
             (unsigned long long)(text + x->f.size));
    if (!strstr(printed, want))
        MISMATCH("cfi: FDE range of %s: want %s in\n%s", x->name, want, printed);
    free(printed);
    jh__buf_free(&b);
}

/* ---- audit log ----------------------------------------------------------------------- */
static void check_auditlog(struct fn *fs, int nf, struct rd *r)
{
    struct jh__buf log = { 0 }, m = { 0 };
    jh__al_head(&m, 5, "header", 1000, 4243);
    jh__mp_kstr(&m, JH__AL_K_FORMAT, JH__AL_FORMAT);
    jh__mp_kuint(&m, JH__AL_K_VERSION, JH__AL_VERSION);
    frame(&log, &m);
    /* some by reference (code_file): the parser keeps where, and reads no file */
    bool by_ref[MAXF] = { false };
    uint8_t ids[MAXF][JH__AL_BUILD_ID_MAX];
    uint32_t idlens[MAXF];
    uint64_t offs[MAXF];
    char paths[MAXF][64];
    for (int i = 0; i < nf; i++) {
        snprintf(paths[i], sizeof paths[i], "/f/%s", fs[i].name);
        m.len = 0;
        by_ref[i] = take(r, 1) % 4 == 0;
        idlens[i] = 1 + (uint32_t)(take(r, 1) % JH__AL_BUILD_ID_MAX);
        for (uint32_t k = 0; k < idlens[i]; k++)
            ids[i][k] = (uint8_t)take(r, 1);
        offs[i] = take(r, 8);
        struct jh__al_ref ref = { .path = paths[i], .build_id = ids[i], .build_id_len = idlens[i],
                                  .offset = offs[i] };
        jh__al_code_add(&m, 1001 + (uint64_t)i, 4243, fs[i].id, &fs[i].f, by_ref[i] ? &ref : NULL);
        frame(&log, &m);
    }
    /* then moves, patches and removals, as the input says */
    int nops = (int)(take(r, 1) % 12);
    uint64_t t = 2000;
    for (int k = 0; k < nops; k++) {
        struct fn *x = &fs[take(r, 1) % (uint64_t)nf];
        if (x->removed)
            continue;
        m.len = 0;
        switch (take(r, 1) % 3) {
        case 0: {                       /* to a fresh slot above every function */
            uint64_t to = (uintptr_t)arena + (uint64_t)(MAXF + (x - fs)) * SLOT + take(r, 1) % 8;
            jh__al_code_move(&m, t++, 4243, x->id, x->cur, to, x->f.size);
            x->cur = to;
            x->nmoves++;
            break;
        }
        case 1: {
            uint64_t at = take(r, 2) % x->f.size, len = 1 + take(r, 1) % (x->f.size - at);
            uint8_t patch[256];
            for (uint64_t j = 0; j < len; j++)
                patch[j] = (uint8_t)take(r, 1);
            jh__al_code_patched(&m, t++, 4243, x->id, x->cur + at, patch, (size_t)len);
            memcpy(x->bytes + at, patch, (size_t)len);
            x->npatches++;
            break;
        }
        case 2:
            jh__al_code_remove(&m, t++, 4243, x->id, x->cur, x->f.size);
            x->removed = true;
            break;
        }
        frame(&log, &m);
    }
    m.len = 0;
    jh__al_head(&m, 3, "close", t, 4243);
    frame(&log, &m);
    if (log.err)
        abort();

    struct jhr_al lf;
    char err[256];
    if (jhr_al_parse(&lf, log.p, log.len, err, sizeof err) != 0)
        MISMATCH("audit log refused: %s", err);
    if (lf.bad || lf.cut || lf.resyncs || !lf.closed || lf.nfns != (size_t)nf)
        MISMATCH("audit log: %zu bad, %zu cut, %zu resyncs, %zu functions", lf.bad, lf.cut,
                 lf.resyncs, lf.nfns);
    for (int i = 0; i < nf; i++) {
        const struct fn *x = &fs[i];
        const struct jhr_al_fn *g = &lf.fns[i];
        if (g->id != x->id || g->start != x->f.start || g->size != x->f.size ||
            g->cur_start != x->cur || g->removed != x->removed || g->nmoves != x->nmoves ||
            g->npatches != x->npatches)
            MISMATCH("audit log %s: fields", x->name);
        if (!same_shown(g->name, strlen(g->name), x->name))
            MISMATCH("audit log %s: name", x->name);
        if (by_ref[i] && (g->code || jhr_al_fn_code(g) || !g->code_file ||
                          !same_shown(g->code_file, strlen(g->code_file), paths[i]) ||
                          g->code_idlen != idlens[i] || memcmp(g->code_id, ids[i], idlens[i]) ||
                          g->code_offset != offs[i]))
            MISMATCH("audit log %s: code by reference", x->name);
        if (!by_ref[i] && (g->code_file || memcmp(jhr_al_fn_code(g), x->bytes, x->f.size)))
            MISMATCH("audit log %s: code bytes after the patches", x->name);
        if (g->nfiles != x->f.nfiles || g->nlines != x->f.nlines)
            MISMATCH("audit log %s: %u files, %u lines", x->name, g->nfiles, g->nlines);
        for (uint32_t k = 0; k < g->nfiles; k++)
            if (!same_shown(g->files[k], strlen(g->files[k]), x->files[k]))
                MISMATCH("audit log %s: file %u", x->name, k);
        for (uint32_t k = 0; k < g->nlines; k++)
            if (g->lines[k].offset != x->lines[k].offset || g->lines[k].line != x->lines[k].line ||
                g->lines[k].column != x->lines[k].column || g->lines[k].file != x->lines[k].file)
                MISMATCH("audit log %s: line row %u", x->name, k);
        const char *uw = x->f.unwind == JH_UNWIND_FRAME_POINTER ? JH__AL_UNWIND_FRAME_POINTER :
                         x->f.unwind == JH_UNWIND_CFI ? JH__AL_UNWIND_CFI : JH__AL_UNWIND_NONE;
        if (strcmp(g->unwind, uw) ||
            (x->f.unwind == JH_UNWIND_FRAME_POINTER &&
             (g->fp_push_end != x->f.fp_push_end || g->fp_set_end != x->f.fp_set_end)) ||
            (x->f.unwind == JH_UNWIND_CFI &&
             (g->cfi_len != x->f.cfi_len || memcmp(g->cfi, x->f.cfi, x->f.cfi_len))))
            MISMATCH("audit log %s: unwind rules", x->name);
        if (!x->removed && jhr_al_fn_at(&lf, x->cur, SIZE_MAX) != g)
            MISMATCH("audit log %s: not found at its address", x->name);
    }
    jhr_al_free(&lf);
    jh__buf_free(&log);
    jh__buf_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd r = { data, data + size };
    static struct fn fs[MAXF];
    int nf = describe(&r, fs);
    check_perfmap(fs, nf);
    for (int i = 0; i < nf; i++)
        check_unwind(&fs[i]);
    check_auditlog(fs, nf, &r);
    /* the jitdump gets the same moves the audit log had (a move record per move) */
    const struct fn *moved[MAXF];
    uint64_t moves[MAXF][2];
    int nmoved = 0;
    for (int i = 0; i < nf; i++)
        if (fs[i].nmoves) {
            moved[nmoved] = &fs[i];
            moves[nmoved][0] = fs[i].f.start;
            moves[nmoved][1] = fs[i].cur;
            nmoved++;
        }
    check_jitdump(fs, nf, moved, nmoved, (const uint64_t (*)[2])moves);
    return 0;
}
