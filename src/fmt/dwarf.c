/*
 * dwarf.c — DWARF 4 .debug_info/.debug_abbrev/.debug_line/.debug_str/.debug_ranges for a
 * set of JIT functions. See dwarf.h for what is emitted and why DWARF 4.
 *
 * What a debugger does with it:
 *     (gdb) info line *0x7ffff7fc1012
 *     Line 4 of "fib.mini" starts at address 0x7ffff7fc100e <fib+14> and ends at ...
 *     (lldb) image lookup -v -a 0x7ffff7fc1012
 *           LineEntry: [0x00007ffff7fc100e-0x00007ffff7fc1016): fib.mini:4:9
 */
#include "fmt/dwarf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "fmt/func.h"
#include "fmt/symbol.h"

/* The few DWARF constants used (DWARF 4, sections 7.5 and 7.22). */
enum {
    DW_TAG_compile_unit = 0x11, DW_TAG_subprogram = 0x2e,
    DW_CHILDREN_no = 0, DW_CHILDREN_yes = 1,
    DW_AT_name = 0x03, DW_AT_stmt_list = 0x10, DW_AT_low_pc = 0x11, DW_AT_high_pc = 0x12,
    DW_AT_language = 0x13, DW_AT_comp_dir = 0x1b, DW_AT_producer = 0x25,
    DW_AT_decl_file = 0x3a, DW_AT_decl_line = 0x3b, DW_AT_external = 0x3f,
    DW_AT_frame_base = 0x40, DW_AT_ranges = 0x55,
    DW_FORM_addr = 0x01, DW_FORM_data2 = 0x05, DW_FORM_data8 = 0x07, DW_FORM_udata = 0x0f,
    DW_FORM_strp = 0x0e, DW_FORM_sec_offset = 0x17, DW_FORM_exprloc = 0x18,
    DW_FORM_flag_present = 0x19,
    DW_LANG_C99 = 0x0c,
    DW_OP_call_frame_cfa = 0x9c,
    DW_LNS_copy = 1, DW_LNS_advance_pc = 2, DW_LNS_advance_line = 3, DW_LNS_set_file = 4,
    DW_LNS_set_column = 5, DW_LNS_set_prologue_end = 10,
    DW_LNE_end_sequence = 1, DW_LNE_set_address = 2,
};

/* Inline fast paths for the many tiny writes (the shared jh_buf calls cost a function call
 * and a capacity check per byte, half the time of a one-function image). Same semantics:
 * after an allocation failure nothing more is written and b->err says so. */
static inline uint8_t *room(struct jh__buf *b, size_t n)
{
    if (b->err || b->cap - b->len < n) {
        if (jh__buf_reserve(b, n < 64 ? 64 : n))
            return NULL;
    }
    uint8_t *q = b->p + b->len;
    b->len += n;
    return q;
}

/* The same writes after jh__buf_reserve has made room for them (the line program's rows,
 * the subprograms: most of a unit's bytes): no check per write. */
static inline uint8_t *bump(struct jh__buf *b, size_t n)
{
    uint8_t *q = b->p + b->len;
    b->len += n;
    return q;
}

/* n is a constant at every call: one store, not a loop of shifts per byte */
static inline void le_at(uint8_t *q, uint64_t v, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);       /* its first n bytes: the low ones, little-endian */
#endif
    __builtin_memcpy(q, &v, n);
}

#define WRITERS(SFX, ROOM)                                                                  \
    static inline void w8##SFX(struct jh__buf *b, uint8_t v)                                \
    {                                                                                       \
        uint8_t *q = ROOM(b, 1);                                                            \
        if (q)                                                                              \
            q[0] = v;                                                                       \
    }                                                                                       \
    static inline void wle##SFX(struct jh__buf *b, uint64_t v, size_t n)                    \
    {                                                                                       \
        uint8_t *q = ROOM(b, n);                                                            \
        if (q)                                                                              \
            le_at(q, v, n);                                                                 \
    }                                                                                       \
    static inline void wuleb##SFX(struct jh__buf *b, uint64_t v)                            \
    {                                                                                       \
        uint8_t *q = ROOM(b, 10), *q0 = q;                                                  \
        if (!q)                                                                             \
            return;                                                                         \
        do {                                                                                \
            uint8_t c = v & 0x7f;                                                           \
            v >>= 7;                                                                        \
            *q++ = c | (v ? 0x80 : 0);                                                      \
        } while (v);                                                                        \
        b->len -= 10 - (size_t)(q - q0);                                                    \
    }                                                                                       \
    /* arithmetic shift of a negative value: gcc and clang define it (unused: one of the */ \
    /* pair may be, and clang says so of a static inline in a .c file) */                  \
    __attribute__((unused)) static inline void wsleb##SFX(struct jh__buf *b, int64_t v)     \
    {                                                                                       \
        uint8_t *q = ROOM(b, 10), *q0 = q;                                                  \
        if (!q)                                                                             \
            return;                                                                         \
        for (;;) {                                                                          \
            uint8_t c = v & 0x7f;                                                           \
            v >>= 7;                                                                        \
            if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {                       \
                *q++ = c;                                                                   \
                break;                                                                      \
            }                                                                               \
            *q++ = c | 0x80;                                                                \
        }                                                                                   \
        b->len -= 10 - (size_t)(q - q0);                                                    \
    }
WRITERS(, room)
WRITERS(_r, bump)

static inline void w16(struct jh__buf *b, uint16_t v) { wle(b, v, 2); }
static inline void w32(struct jh__buf *b, uint32_t v) { wle(b, v, 4); }
static inline void w64(struct jh__buf *b, uint64_t v) { wle(b, v, 8); }

/* Abbreviation codes: one shared table at offset 0 serves every unit (abbrev_tab). */
enum { AB_CU = 1, AB_CU_DIR = 2, AB_SUB_DECL = 3, AB_SUB = 4, AB_CU_NOLINE = 5 };

/* Line program parameters: gcc's choice, which keeps typical rows in one special opcode. */
#define LINE_BASE (-5)
#define LINE_RANGE 14
#define OPCODE_BASE 13

struct item {
    const char *file;           /* the unit this function belongs to */
    const struct jh__func *e;
};

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->file != y->file) {
        int c = strcmp(x->file, y->file);
        if (c)
            return c;
    }
    return x->e->start < y->e->start ? -1 : x->e->start > y->e->start;
}

static const char *unit_file(const struct jh__func *e)
{
    if (!e->nfiles)
        return NULL;
    uint32_t f = e->nlines ? e->lines[0].file : 0;
    return f < e->nfiles ? e->files[f] : NULL;
}

static const uint8_t abbrev_tab[] = {
    AB_CU, DW_TAG_compile_unit, DW_CHILDREN_yes,
        DW_AT_producer, DW_FORM_strp, DW_AT_language, DW_FORM_data2,
        DW_AT_name, DW_FORM_strp, DW_AT_stmt_list, DW_FORM_sec_offset,
        DW_AT_low_pc, DW_FORM_addr, DW_AT_ranges, DW_FORM_sec_offset, 0, 0,
    AB_CU_DIR, DW_TAG_compile_unit, DW_CHILDREN_yes,
        DW_AT_producer, DW_FORM_strp, DW_AT_language, DW_FORM_data2,
        DW_AT_name, DW_FORM_strp, DW_AT_comp_dir, DW_FORM_strp,
        DW_AT_stmt_list, DW_FORM_sec_offset,
        DW_AT_low_pc, DW_FORM_addr, DW_AT_ranges, DW_FORM_sec_offset, 0, 0,
    AB_SUB_DECL, DW_TAG_subprogram, DW_CHILDREN_no,
        DW_AT_name, DW_FORM_strp, DW_AT_external, DW_FORM_flag_present,
        DW_AT_decl_file, DW_FORM_udata, DW_AT_decl_line, DW_FORM_udata,
        DW_AT_low_pc, DW_FORM_addr, DW_AT_high_pc, DW_FORM_data8,
        DW_AT_frame_base, DW_FORM_exprloc, 0, 0,
    AB_SUB, DW_TAG_subprogram, DW_CHILDREN_no,
        DW_AT_name, DW_FORM_strp, DW_AT_external, DW_FORM_flag_present,
        DW_AT_low_pc, DW_FORM_addr, DW_AT_high_pc, DW_FORM_data8,
        DW_AT_frame_base, DW_FORM_exprloc, 0, 0,
    AB_CU_NOLINE, DW_TAG_compile_unit, DW_CHILDREN_yes,
        DW_AT_producer, DW_FORM_strp, DW_AT_language, DW_FORM_data2,
        DW_AT_name, DW_FORM_strp,
        DW_AT_low_pc, DW_FORM_addr, DW_AT_ranges, DW_FORM_sec_offset, 0, 0,
    0
};

/* s and its NUL, n = strlen(s), at the end of str: its offset. */
static uint32_t put_strn(struct jh__buf *str, const char *s, size_t n)
{
    uint32_t off = (uint32_t)str->len;
    uint8_t *q = room(str, n + 1);
    if (q)
        memcpy(q, s, n + 1);
    return off;
}

static uint32_t put_str(struct jh__buf *str, const char *s)
{
    return put_strn(str, s, strlen(s));
}

/* A length known only at the end, at offset at (written before: in bounds). */
static inline void set_u32(struct jh__buf *b, size_t at, uint32_t v)
{
    if (!b->err)
        le_at(b->p + at, v, 4);
}

/* A unit's file table: the distinct names its functions refer to, 1-based in DWARF 4.
 * A few names fit inline (a trace or a module names one or two files): no allocation. */
#define FTAB_SMALL 8
struct ftab {
    const char **v;             /* small, or the heap */
    size_t n, cap;
    const char *small[FTAB_SMALL];
};

static void ftab_init(struct ftab *t)
{
    t->v = t->small;
    t->n = 0;
    t->cap = FTAB_SMALL;
}

static void ftab_free(struct ftab *t)
{
    if (t->v != t->small)
        free(t->v);
}

static int ftab_index(struct ftab *t, const char *s, uint32_t *num)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i] == s || !strcmp(t->v[i], s)) {
            *num = (uint32_t)i + 1;
            return 0;
        }
    }
    if (t->n == t->cap) {
        size_t cap = 2 * t->cap;
        const char **v = malloc(cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        memcpy(v, t->v, t->n * sizeof *v);
        ftab_free(t);
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = s;
    *num = (uint32_t)t->n;
    return 0;
}

/* A row: the line moves by dl, the address by da, then the row is appended (a special
 * opcode when both fit one). */
static inline void line_row(struct jh__buf *b, int64_t dl, uint64_t da)
{
    uint64_t op = (uint64_t)(dl - LINE_BASE) + LINE_RANGE * da + OPCODE_BASE;
    if (dl >= LINE_BASE && dl < LINE_BASE + LINE_RANGE && da <= 255 && op <= 255) {
        w8_r(b, (uint8_t)op);
        return;
    }
    if (dl) {
        w8_r(b, DW_LNS_advance_line);
        wsleb_r(b, dl);
    }
    if (da) {
        w8_r(b, DW_LNS_advance_pc);
        wuleb_r(b, da);
    }
    w8_r(b, DW_LNS_copy);
}

/* One sequence for one function. map[] turns the entry's file index into the unit's.
 * prologue_end becomes a row of its own flagged so (the line covering that offset) unless
 * a row starts there already, which is then flagged. */
static void line_sequence(struct jh__buf *b, const struct jh__func *e, const uint32_t *map)
{
    /* at most 81 bytes a row, 14 at the end */
    if (!e->nlines || jh__buf_room(b, 32 + 96 * ((size_t)e->nlines + 1)))
        return;
    w8_r(b, 0);
    wuleb_r(b, 9);
    w8_r(b, DW_LNE_set_address);
    wle_r(b, e->start, 8);
    uint32_t file = 1, col = 0, off = 0;
    int64_t line = 1;
    bool pe = e->prologue_end != 0;
    for (uint32_t i = 0; i <= e->nlines; i++) {
        const struct jh_line *l = &e->lines[i < e->nlines ? i : e->nlines - 1];
        uint32_t at = i < e->nlines ? l->offset : (uint32_t)e->size;
        if (pe && e->prologue_end < at) {
            /* inside the previous row (or before the first: it gets the first's line) */
            if (i == 0) {
                uint32_t f = l->file < e->nfiles ? map[l->file] : 1;
                if (f != file) {
                    w8_r(b, DW_LNS_set_file);
                    wuleb_r(b, f);
                    file = f;
                }
            }
            w8_r(b, DW_LNS_set_prologue_end);
            line_row(b, i == 0 ? (int64_t)l->line - line : 0, e->prologue_end - off);
            if (i == 0)
                line = l->line;
            off = e->prologue_end;
            pe = false;
        }
        if (i == e->nlines)
            break;
        uint32_t f = l->file < e->nfiles ? map[l->file] : 1;
        if (f != file) {
            w8_r(b, DW_LNS_set_file);
            wuleb_r(b, f);
            file = f;
        }
        if (l->column != col) {
            w8_r(b, DW_LNS_set_column);
            wuleb_r(b, l->column);
            col = l->column;
        }
        if (pe && e->prologue_end == l->offset) {
            w8_r(b, DW_LNS_set_prologue_end);
            pe = false;
        }
        uint64_t da = l->offset > off ? l->offset - off : 0;
        line_row(b, (int64_t)l->line - line, da);
        line = l->line;
        off += (uint32_t)da;
    }
    if (e->size > off) {
        w8_r(b, DW_LNS_advance_pc);
        wuleb_r(b, e->size - off);
    }
    w8_r(b, 0);
    wuleb_r(b, 1);
    w8_r(b, DW_LNE_end_sequence);
}

/* The line program of one unit: items[0..n) share its file. */
static int line_unit(struct jh__buf *b, const struct item *items, size_t n, struct ftab *ft)
{
    static const uint8_t std_lengths[OPCODE_BASE - 1] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
    uint32_t num, map_small[FTAB_SMALL], *map = map_small;
    size_t map_cap = FTAB_SMALL;
    int err = 0;

    ft->n = 0;
    if ((err = ftab_index(ft, items[0].file, &num)))  /* the unit's own file is file 1 */
        return err;
    for (size_t i = 0; i < n; i++)
        for (uint32_t f = 0; f < items[i].e->nfiles; f++)
            if ((err = ftab_index(ft, items[i].e->files[f], &num)))
                return err;

    size_t start = b->len;
    w32(b, 0);                  /* unit_length, patched below */
    w16(b, 4);
    size_t hl = b->len;
    w32(b, 0);                  /* header_length, patched below */
    w8(b, 1);                   /* minimum_instruction_length */
    w8(b, 1);                   /* maximum_operations_per_instruction */
    w8(b, 1);                   /* default_is_stmt */
    w8(b, (uint8_t)LINE_BASE);
    w8(b, LINE_RANGE);
    w8(b, OPCODE_BASE);
    jh__buf_put(b, std_lengths, sizeof std_lengths);
    /* An absolute name goes in as directory + basename: with directory 0 (comp_dir) and an
     * absolute name, valgrind 3.19 prints ".//abs/path". Relative names stay on dir 0. */
    uint32_t dir_small[FTAB_SMALL] = { 0 };
    uint32_t *dir_of = ft->n <= FTAB_SMALL ? dir_small : calloc(ft->n, sizeof *dir_of);
    if (!dir_of)
        return -ENOMEM;
    uint32_t ndirs = 0;
    for (size_t i = 0; i < ft->n; i++) {
        const char *slash = ft->v[i][0] == '/' ? strrchr(ft->v[i], '/') : NULL;
        if (!slash || !slash[1])
            continue;
        size_t dlen = slash == ft->v[i] ? 1 : (size_t)(slash - ft->v[i]);
        for (size_t k = 0; k < i && !dir_of[i]; k++) {
            const char *o = ft->v[k], *os = dir_of[k] ? strrchr(o, '/') : NULL;
            size_t olen = !os ? 0 : os == o ? 1 : (size_t)(os - o);
            if (olen == dlen && !memcmp(o, ft->v[i], dlen))
                dir_of[i] = dir_of[k];
        }
        if (!dir_of[i]) {
            jh__buf_put(b, ft->v[i], dlen);
            w8(b, 0);
            dir_of[i] = ++ndirs;
        }
    }
    w8(b, 0);                   /* end of include_directories */
    for (size_t i = 0; i < ft->n; i++) {
        (void)put_str(b, dir_of[i] ? strrchr(ft->v[i], '/') + 1 : ft->v[i]);
        wuleb(b, dir_of[i]);
        wuleb(b, 0);
        wuleb(b, 0);
    }
    if (dir_of != dir_small)
        free(dir_of);
    w8(b, 0);
    set_u32(b, hl, (uint32_t)(b->len - hl - 4));

    for (size_t i = 0; i < n && !err; i++) {
        const struct jh__func *e = items[i].e;
        if (e->nfiles > map_cap) {
            uint32_t *m = realloc(map == map_small ? NULL : map, e->nfiles * sizeof *m);
            if (!m) {
                err = -ENOMEM;
                break;
            }
            map = m;
            map_cap = e->nfiles;
        }
        for (uint32_t f = 0; f < e->nfiles && !err; f++)
            err = ftab_index(ft, e->files[f], &map[f]);
        if (!err)
            line_sequence(b, e, map);
    }
    if (map != map_small)
        free(map);
    set_u32(b, start, (uint32_t)(b->len - start - 4));
    return err;
}

/* The unit's address ranges: functions that touch merged into one. */
static uint32_t unit_ranges(struct jh__dwarf *d, const struct item *items, size_t n)
{
    uint32_t ranges = (uint32_t)d->ranges.len;
    for (size_t i = 0; i < n;) {
        uint64_t lo = items[i].e->start, hi = lo + items[i].e->size;
        for (i++; i < n && items[i].e->start == hi; i++)
            hi += items[i].e->size;
        w64(&d->ranges, lo);
        w64(&d->ranges, hi);
    }
    w64(&d->ranges, 0);
    w64(&d->ranges, 0);
    return ranges;
}

static void info_unit(struct jh__dwarf *d, const struct item *items, size_t n,
                      const struct ftab *ft, uint32_t producer, int64_t comp_dir,
                      uint32_t stmt_list)
{
    struct jh__buf *b = &d->info;
    size_t start = b->len;
    uint32_t ranges = unit_ranges(d, items, n);

    w32(b, 0);                  /* unit_length, patched below */
    w16(b, 4);
    w32(b, 0);                  /* debug_abbrev_offset */
    w8(b, 8);
    wuleb(b, comp_dir >= 0 ? AB_CU_DIR : AB_CU);
    w32(b, producer);
    w16(b, DW_LANG_C99);
    w32(b, put_str(&d->str, items[0].file));
    if (comp_dir >= 0)
        w32(b, (uint32_t)comp_dir);
    w32(b, stmt_list);
    w64(b, 0);
    w32(b, ranges);
    if (jh__buf_room(b, 64 * n))        /* at most 61 bytes a subprogram */
        return;
    for (size_t i = 0; i < n; i++) {
        const struct jh__func *e = items[i].e;
        uint32_t decl_file = 0;
        if (e->nlines) {
            const char *f = e->files[e->lines[0].file];
            for (size_t k = 0; k < ft->n && !decl_file; k++)
                if (ft->v[k] == f || !strcmp(ft->v[k], f))
                    decl_file = (uint32_t)k + 1;
        }
        wuleb_r(b, decl_file ? AB_SUB_DECL : AB_SUB);
        wle_r(b, put_strn(&d->str, e->name, jh__func_name_len(e)), 4);
        if (decl_file) {
            wuleb_r(b, decl_file);
            wuleb_r(b, e->lines[0].line);
        }
        wle_r(b, e->start, 8);
        wle_r(b, e->size, 8);
        wuleb_r(b, 1);
        w8_r(b, DW_OP_call_frame_cfa);
    }
    w8(b, 0);                   /* end of the unit's children */
    set_u32(b, start, (uint32_t)(b->len - start - 4));
}

/* Functions with no source file whose name is not a symbol (V8's "JS:*f app.js:2:15"):
 * one unit without a line program, so that a debugger's backtrace shows the name (gdb
 * takes it from DWARF before the symbol table, which holds the sanitised symbol `break`
 * takes: fmt/symbol.h). */
static void noline_unit(struct jh__dwarf *d, const struct item *items, size_t n)
{
    struct jh__buf *b = &d->info;
    size_t start = b->len;
    uint32_t ranges = unit_ranges(d, items, n);
    w32(b, 0);                  /* unit_length, patched below */
    w16(b, 4);
    w32(b, 0);                  /* debug_abbrev_offset */
    w8(b, 8);
    wuleb(b, AB_CU_NOLINE);
    w32(b, d->producer);
    w16(b, DW_LANG_C99);
    w32(b, put_str(&d->str, "<jit code with no source file>"));
    w64(b, 0);
    w32(b, ranges);
    /* at most 41 bytes a subprogram (each uleb room for 10): node's 2,182 builtins are all
     * here, and a check per write was a quarter of their unit (issue 30) */
    if (jh__buf_room(b, 48 * n))
        return;
    for (size_t i = 0; i < n; i++) {
        const struct jh__func *e = items[i].e;
        wuleb_r(b, AB_SUB);
        wle_r(b, put_strn(&d->str, e->name, jh__func_name_len(e)), 4);
        wle_r(b, e->start, 8);
        wle_r(b, e->size, 8);
        wuleb_r(b, 1);
        w8_r(b, DW_OP_call_frame_cfa);
    }
    w8(b, 0);
    set_u32(b, start, (uint32_t)(b->len - start - 4));
}

/* Does a function with no file need a unit to be shown by its name? */
static bool needs_name(const struct jh__func *e)
{
    return !unit_file(e) && (e->symbol ? jh__func_symbol_differs(e) :
                             !jh__symbol_is_safe(e->name));
}

void jh__dwarf_free(struct jh__dwarf *d)
{
    d->kept = 0;
    jh__buf_free(&d->info);
    jh__buf_free(&d->abbrev);
    jh__buf_free(&d->line);
    jh__buf_free(&d->str);
    jh__buf_free(&d->ranges);
}

static int sections_ok(struct jh__dwarf *d)
{
    const struct jh__buf *all[] = { &d->info, &d->abbrev, &d->line, &d->str, &d->ranges };
    for (size_t k = 0; k < 5; k++)
        if (all[k]->err || all[k]->len > UINT32_MAX)
            return all[k]->err ? all[k]->err : -E2BIG;
    return 0;
}

/* Empty every section, keeping what was allocated for the next build to reuse. */
static void reset(struct jh__dwarf *d)
{
    struct jh__buf *all[] = { &d->info, &d->abbrev, &d->line, &d->str, &d->ranges };
    for (size_t k = 0; k < 5; k++) {
        all[k]->len = 0;
        all[k]->err = 0;
    }
}

int jh__dwarf_begin(struct jh__dwarf *d, const struct jh__dwarf_opts *o)
{
    const char *producer = o && o->producer ? o->producer : "jitherald";
    const char *comp_dir = o && o->comp_dir ? o->comp_dir : NULL;
    reset(d);
    /* the same strings as the build before (the gdb channel's every image): its
     * abbreviations and strings are still in the buffers */
    if (d->kept && !strcmp((const char *)d->str.p, producer) &&
        (comp_dir ? d->comp_dir >= 0 && !strcmp((const char *)d->str.p + d->comp_dir, comp_dir)
                  : d->comp_dir < 0)) {
        d->abbrev.len = sizeof abbrev_tab;
        d->str.len = d->kept;
        return 0;
    }
    d->kept = 0;
    jh__buf_put(&d->abbrev, abbrev_tab, sizeof abbrev_tab);
    d->producer = put_str(&d->str, producer);
    d->comp_dir = comp_dir ? (int64_t)put_str(&d->str, comp_dir) : -1;
    int err = sections_ok(d);
    if (err)
        jh__dwarf_free(d);
    else
        d->kept = d->str.len;
    return err;
}

/* One unit for items[0..n), which share its file, appended to every section. */
static int unit(struct jh__dwarf *d, const struct item *items, size_t n, struct ftab *ft)
{
    uint32_t stmt_list = (uint32_t)d->line.len;
    int err = line_unit(&d->line, items, n, ft);
    if (!err)
        info_unit(d, items, n, ft, d->producer, d->comp_dir, stmt_list);
    return err ? err : sections_ok(d);
}

static int add(struct jh__dwarf *d, const struct jh__func *f, bool named)
{
    struct item it = { unit_file(f), f };
    if (!it.file && !(named && needs_name(f)))
        return 0;
    size_t lens[5] = { d->info.len, d->abbrev.len, d->line.len, d->str.len, d->ranges.len };
    struct ftab ft;
    ftab_init(&ft);
    int err;
    if (it.file) {
        err = unit(d, &it, 1, &ft);
    } else {
        noline_unit(d, &it, 1);
        err = sections_ok(d);
    }
    ftab_free(&ft);
    if (err) {
        struct jh__buf *all[] = { &d->info, &d->abbrev, &d->line, &d->str, &d->ranges };
        for (size_t k = 0; k < 5; k++) {
            all[k]->err = 0;
            if (all[k]->len > lens[k])
                all[k]->len = lens[k];
        }
    }
    return err;
}

int jh__dwarf_add(struct jh__dwarf *d, const struct jh__func *f) { return add(d, f, false); }
int jh__dwarf_add_named(struct jh__dwarf *d, const struct jh__func *f) { return add(d, f, true); }

/* Images of a few functions (most: one per add) sort their items on the stack. */
#define ITEMS_SMALL 8

int jh__dwarf_build(struct jh__dwarf *d, const struct jh__func *const *fns, size_t n,
                    const struct jh__dwarf_opts *o)
{
    struct item small[ITEMS_SMALL], *items = small;
    struct ftab ft;
    size_t ni = 0;
    int err = 0;

    reset(d);
    ftab_init(&ft);
    if (n > ITEMS_SMALL) {
        items = malloc(n * sizeof *items);
        if (!items)
            return -ENOMEM;
    }
    size_t nnamed = 0;
    for (size_t i = 0; i < n; i++) {
        const char *f = unit_file(fns[i]);
        if (f)
            items[ni++] = (struct item){ f, fns[i] };
        else if (needs_name(fns[i]))
            items[n - ++nnamed] = (struct item){ NULL, fns[i] };   /* from the end */
    }
    if (ni == 0 && nnamed == 0)
        goto out;
    /* The named ones were put in from the end: back in the callers' order (by start, an
     * image's), so that the sort below finds them sorted. Reversed, they went through
     * qsort: half of a node builtins' image's DWARF (2,182 "Builtin:*" names, issue 30). */
    for (struct item *a = items + n - nnamed, *z = items + n - 1; a < z; a++, z--) {
        struct item t = *a;
        *a = *z;
        *z = t;
    }
    jh__sort(items, ni, sizeof *items, cmp_item);
    size_t up = 1;              /* (an image's come sorted: no call per pair to see it) */
    while (up < nnamed && items[n - nnamed + up - 1].e->start <= items[n - nnamed + up].e->start)
        up++;
    if (up < nnamed)            /* (nameless items: file NULL, cmp_item orders by start) */
        jh__sort(items + n - nnamed, nnamed, sizeof *items, cmp_item);

    if ((err = jh__dwarf_begin(d, o)))
        goto out;
    if (nnamed) {
        noline_unit(d, items + n - nnamed, nnamed);
        err = sections_ok(d);
    }
    for (size_t i = 0; i < ni && !err;) {
        size_t j = i + 1;
        while (j < ni && (items[j].file == items[i].file || !strcmp(items[j].file, items[i].file)))
            j++;
        err = unit(d, items + i, j - i, &ft);
        i = j;
    }
out:
    ftab_free(&ft);
    if (items != small)
        free(items);
    if (err)
        jh__dwarf_free(d);
    return err;
}
