/*
 * log.h — reading an audit log (docs/auditlog-format.md) for `jitherald log`.
 *
 * log_read.c is plain C with no library behind it: a bounded msgpack decoder (every length
 * is checked against the bytes that are left, nothing recurses) and the model built from
 * the records (functions with their lifetimes, memory snapshots, events). The other
 * tools/log_*.c files present that model: text (log.c), DWARF struct decoding (log_dwarf.c),
 * disassembly (log_disasm.c), perf files (log_export.c), HTML (log_report.c).
 */
#ifndef JH_TOOLS_LOG_H
#define JH_TOOLS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- msgpack values ------------------------------------------------------------------ */
enum mpv_type { MPV_NIL, MPV_BOOL, MPV_UINT, MPV_INT, MPV_DOUBLE, MPV_STR, MPV_BIN,
                MPV_ARRAY, MPV_MAP, MPV_EXT };

/* One decoded value. Scalars are in v; str/bin/ext bytes at p (n bytes); for array/map,
 * p is the first element and n the number of elements (pairs for a map); end is where the
 * whole value (with its elements) ends, so containers can be walked and skipped. */
struct mpv {
    enum mpv_type t;
    union { uint64_t u; int64_t i; double d; bool b; } v;
    const uint8_t *p, *end;
    uint32_t n;
    int8_t ext;
};

/* Decode the value at [p, end). 0 or -1 (malformed or cut short). */
int mp_decode(const uint8_t *p, const uint8_t *end, struct mpv *out);
/* In a map: the value of key, 0 if found, -1 otherwise. */
int mp_get(const struct mpv *map, const char *key, struct mpv *out);
/* Helpers for typical fields: return false when missing or of another type. */
bool mp_get_u64(const struct mpv *map, const char *key, uint64_t *out);
bool mp_get_str(const struct mpv *map, const char *key, const char **s, uint32_t *n);
bool mp_str_eq(const struct mpv *v, const char *s);
/* Iterate over an array or map: *it starts at v->p; each call decodes the next element. */
int mp_next(const struct mpv *container, const uint8_t **it, struct mpv *out);

/* ---- the model ----------------------------------------------------------------------- */
struct log_line { uint32_t offset, line, column, file; };

/* One code_add, with what happened to it later. */
struct log_fn {
    uint64_t id;
    char *name;
    uint64_t start, size;           /* start as added (moves are in `moves`) */
    uint64_t cur_start;             /* after the last move */
    uint64_t t_add, t_remove;       /* t_remove 0 while live at the end of the log */
    bool removed;
    const uint8_t *code;            /* size bytes inside the log (as added) */
    uint8_t *patched;               /* a private copy once patched, else NULL */
    char **files;
    uint32_t nfiles, nlines;
    struct log_line *lines;
    const char *unwind;             /* "frame_pointer", "cfi", "none" */
    uint32_t fp_push_end, fp_set_end;
    const uint8_t *cfi;
    uint32_t cfi_len;
    uint32_t nmoves, npatches;
    size_t rec;                     /* index of its code_add record */
    size_t rm_rec;                  /* index of its code_remove record, SIZE_MAX if none */
};

struct log_mem {
    uint64_t addr, time;
    uint32_t size;
    const uint8_t *data;
    char *hint;                     /* NULL without a type hint */
    size_t rec;
};

enum log_rec_kind { LR_HEADER, LR_MEMORY, LR_EVENT, LR_CODE_ADD, LR_CODE_REMOVE, LR_CODE_MOVE,
                    LR_CODE_PATCHED, LR_LIMIT, LR_CLOSE, LR_UNKNOWN };

struct log_rec {
    enum log_rec_kind kind;
    uint64_t off, time;
    uint32_t thread;
    struct mpv map;
    ptrdiff_t ref;                  /* index into fns (code_*) or mems (memory), else -1 */
};

struct log_file {
    const uint8_t *data;
    size_t size;
    void *owned;                    /* mapping or buffer to release */
    size_t owned_size;
    bool mapped;
    /* header */
    uint64_t version, pid, parent_pid, t0, realtime, limit;
    char *engine, *exe, *arch;
    /* what the reader met */
    size_t cut;                     /* frames begun but never completed (crash) */
    size_t bad;                     /* complete frames that do not decode (skipped) */
    size_t resyncs;                 /* times garbage or a hole was skipped by scanning */
    bool closed, limit_hit;
    uint64_t dropped;               /* from the close record */
    struct log_rec *recs;
    size_t nrecs;
    struct log_fn *fns;
    size_t nfns;
    struct log_mem *mems;
    size_t nmems;
    /* indexes, so that lookups stay logarithmic in logs of millions of records */
    size_t *id_hash;                /* open addressing: fns index + 1, 0 empty */
    size_t id_hash_cap;
    size_t *fn_by_start, *mem_by_addr;  /* indexes sorted by address (then record) */
    uint64_t fn_maxsize, mem_maxsize;
};

/* Parse a log held in memory (not copied: data must outlive lf). 0, or -1 with a message
 * in err when it is not an audit log at all; damage inside is counted, not fatal. */
int log_parse(struct log_file *lf, const uint8_t *data, size_t size, char *err, size_t errlen);
int log_open(struct log_file *lf, const char *path, char *err, size_t errlen);
void log_free(struct log_file *lf);

const char *log_kind_name(enum log_rec_kind k);
/* The function whose code contained addr at record index `at` (SIZE_MAX: at the end), or
 * NULL. Prefers a live one. */
const struct log_fn *log_fn_at(const struct log_file *lf, uint64_t addr, size_t at);
const struct log_fn *log_fn_named(const struct log_file *lf, const char *name);
/* The latest snapshot at or before record `at` that contains [addr, addr+len). */
const struct log_mem *log_mem_at(const struct log_file *lf, uint64_t addr, uint64_t len, size_t at);
/* The code bytes of fn as they stand at the end of the log. */
const uint8_t *log_fn_code(const struct log_fn *fn);
/* file:line for an offset into fn's code; NULL when the function has no line table. */
const char *log_fn_line(const struct log_fn *fn, uint64_t off, uint32_t *line);
/* Seconds since the header, for display. */
double log_secs(const struct log_file *lf, uint64_t t);
/* Print a value in a JSON-like form (for events and unknown records). */
void mp_print(FILE *f, const struct mpv *v, int depth);
/* Bytes from the log for a terminal: control characters become '?'. */
void text_safe(FILE *f, const void *p, size_t n);
/* Escape a string for HTML. */
void html_escape(FILE *f, const char *s, size_t n);

/* ---- presenters ---------------------------------------------------------------------- */
/* log_dwarf.c: decode the memory snapshot m as C type `type` (hint when NULL) using the
 * DWARF of vm, following pointers into other memory logged up to record `at`. */
struct dwarf_types;
struct dwarf_types *dwarf_open(const char *vm, char *err, size_t errlen);
void dwarf_close(struct dwarf_types *dt);
/* text or html. 0, or -1 when the type is unknown (message printed to f). */
int dwarf_print(struct dwarf_types *dt, const struct log_file *lf, const struct log_mem *m,
                size_t at, FILE *f, bool html);

/* log_disasm.c; log_source: show source text beside file:line (default true) */
extern bool log_source;
int disasm_print(const struct log_file *lf, const struct log_fn *fn, FILE *f, bool html);

/* log_export.c */
int export_perfmap(const struct log_file *lf, FILE *f);
int export_jitdump(const struct log_file *lf, FILE *f);

/* log_report.c */
int report_html(const struct log_file *lf, struct dwarf_types *dt, FILE *f);

#endif
