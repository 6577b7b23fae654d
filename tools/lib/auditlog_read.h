/*
 * auditlog_read.h — reading an audit log (fmt/auditlog.h, docs/auditlog-format.md) into a
 * model: the records in order, the functions with their lifetimes, moves and patches, the
 * memory snapshots, and indexes so that "what was at this address at that moment" stays
 * logarithmic in logs of millions of records. `jitherald log` presents the model; the unit
 * test of the auditlog channel and the fuzz target read through exactly this code.
 *
 *     struct jhr_al lf;
 *     char err[256];
 *     if (jhr_al_open(&lf, "minijit-4242.jhlog", err, sizeof err) < 0) { puts(err); ... }
 *     const struct jhr_al_fn *fn = jhr_al_fn_at(&lf, addr, SIZE_MAX);
 *     jhr_al_free(&lf);
 *
 * A log may be damaged in ways the format expects (a crash with frames reserved but never
 * finished, the file ending inside the zeros grown ahead of the writers, something
 * overwriting part of it): damage is counted and skipped, never fatal, and no input can
 * make the reader crash or loop.
 */
#ifndef JHR_AUDITLOG_READ_H
#define JHR_AUDITLOG_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmt/auditlog.h"
#include "lib/itab.h"
#include "lib/msgpack_read.h"

/* One row of a function's line table (the record's [offset, line, column, file]). */
struct jhr_al_line { uint32_t offset, line, column, file; };

/* One code_add, with what happened to it later. */
struct jhr_al_fn {
    uint64_t id;
    char *name;
    uint64_t start, size;           /* start as added (moves are in `moves`) */
    uint64_t cur_start;             /* after the last move */
    uint64_t t_add, t_remove;       /* t_remove 0 while live at the end of the log */
    bool removed;
    const uint8_t *code;            /* size bytes (as added): inside the log, or inside the
                                       file code_file names; NULL when that file was not
                                       found or is not the one the log names */
    char *code_file;                /* recorded by reference (code_file): the file, */
    const uint8_t *code_id;         /* its build-id (inside the log), */
    uint32_t code_idlen;
    uint64_t code_offset;           /* the code's offset in it */
    uint8_t *patched;               /* a private copy once patched, else NULL */
    char **files;
    uint32_t nfiles, nlines;
    struct jhr_al_line *lines;
    const char *unwind;             /* one of the JH__AL_UNWIND_* strings */
    uint32_t fp_push_end, fp_set_end;
    const uint8_t *cfi;
    uint32_t cfi_len;
    char *symbol;                   /* NULL: the name serves */
    uint32_t prologue_end;          /* 0: not given */
    uint32_t cfa_offset;            /* frameless */
    uint32_t ncfa_steps, nsaved_regs, nepilogues;
    struct jh_cfa_step *cfa_steps;
    struct jh_saved_reg *saved_regs;
    struct jh_epilogue *epilogues;  /* frame_pointer */
    uint32_t nra_signed, ra_key;    /* arm64 PAC-RET: the signed ranges and their key */
    struct jh_range *ra_signed;
    uint64_t personality, lsda;     /* 0: none */
    uint32_t nmoves, npatches;
    size_t rec;                     /* index of its code_add record */
    size_t rm_rec;                  /* index of its code_remove record, SIZE_MAX if none */
};

struct jhr_al_mem {
    uint64_t addr, time;
    uint32_t size;
    const uint8_t *data;
    char *hint;                     /* NULL without a type hint */
    size_t rec;
};

/* The record kinds of fmt/auditlog.h, in its order, then the ones this reader does not
 * know. */
enum jhr_al_kind {
#define JHR_AL_KIND(e, s) JHR_AL_##e,
    JH__AL_RECORDS(JHR_AL_KIND)
#undef JHR_AL_KIND
    JHR_AL_UNKNOWN
};

struct jhr_al_rec {
    enum jhr_al_kind kind;
    uint64_t off, time;
    uint32_t thread;
    struct jhr_mp map;
    ptrdiff_t ref;                  /* index into fns (code_*) or mems (memory), else -1 */
};

/* A log read into memory. */
struct jhr_al {
    const uint8_t *data;
    size_t size;
    void *owned;                    /* mapping or buffer to release */
    size_t owned_size;
    bool mapped;
    /* header */
    uint64_t version, pid, parent_pid, t0, realtime, limit;
    uint64_t pac_mask;              /* arm64 PAC: the signature's bits in a code address */
    char *engine, *exe, *arch;
    /* what the reader met */
    size_t cut;                     /* frames begun but never completed (crash) */
    size_t bad;                     /* complete frames that do not decode (skipped) */
    size_t resyncs;                 /* times garbage or a hole was skipped by scanning */
    size_t resync_steps;            /* values decoded while scanning: linear in the bytes */
    bool closed, limit_hit;
    uint64_t dropped;               /* from the close record */
    struct jhr_al_rec *recs;
    size_t nrecs;
    struct jhr_al_fn *fns;
    size_t nfns;
    struct jhr_al_mem *mems;
    size_t nmems;
    /* indexes, so that lookups stay logarithmic in logs of millions of records */
    struct jhr_itab ids;            /* fns by id */
    size_t *fn_by_start, *mem_by_addr;  /* indexes sorted by address (then record) */
    uint64_t fn_maxsize, mem_maxsize;
    /* the files code_add records refer to (auditlog_files.c), read by jhr_al_open */
    struct jhr_al_cfile *cfiles;
    size_t ncfiles;
};

/* One file that code_add records name (code_file, code_build_id), as the reader found it. */
struct jhr_al_cfile {
    char *path;                     /* as the log names it */
    const uint8_t *id;              /* the build-id the log wants (inside the log) */
    uint32_t idlen;
    char *read;                     /* the file whose bytes were used; NULL: none */
    char *why;                      /* when none: why each candidate was not used */
    void *map;
    size_t map_len;
    size_t nfns, nread;             /* functions naming it, and read from it */
};

/* Parse a log held in memory (not copied: data must outlive lf). 0, or -1 with a message
 * in err when it is not an audit log at all; damage inside is counted, not fatal. */
int jhr_al_parse(struct jhr_al *lf, const uint8_t *data, size_t size, char *err, size_t errlen);
/* Map the file at path (a regular file: see lib/files.h) and parse it, then read the code
 * recorded by reference from the files it names (jhr_al_read_code_files). */
int jhr_al_open(struct jhr_al *lf, const char *path, char *err, size_t errlen);

/* ---- code recorded by reference (auditlog_files.c) --------------------------------- */
/* For every function recorded by reference, its bytes from the file the log names when
 * that file holds the build-id the log gives, else from `debuginfod-find executable ID`
 * (with DEBUGINFOD_URLS), and only from an executable segment of it; fn->code stays NULL
 * where none is found, and lf->cfiles says why. Then the patches recorded for them. */
void jhr_al_read_code_files(struct jhr_al *lf);
/* The code_file record of fn, or NULL (fn's bytes are in the log). */
const struct jhr_al_cfile *jhr_al_fn_cfile(const struct jhr_al *lf, const struct jhr_al_fn *fn);
void jhr_al_cfiles_free(struct jhr_al *lf);
/* Apply the patch record m to fn (its code must be known). */
void jhr_al_patch(struct jhr_al_fn *fn, const struct jhr_mp *m);
void jhr_al_free(struct jhr_al *lf);

/* "code_add"..., "unknown". */
const char *jhr_al_kind_name(enum jhr_al_kind k);

/* ---- queries (auditlog_query.c) ------------------------------------------------------- */
/* The function whose code contained addr at record index `at` (SIZE_MAX: at the end), or
 * NULL. Prefers a live one. */
const struct jhr_al_fn *jhr_al_fn_at(const struct jhr_al *lf, uint64_t addr, size_t at);
/* addr without a pointer-authentication signature (the log's pac_mask cleared; a kernel
 * address, bit 55 set, gets them set): what to look up for an address read from memory.
 * addr itself where the log has no mask. */
uint64_t jhr_al_strip(const struct jhr_al *lf, uint64_t addr);
const struct jhr_al_fn *jhr_al_fn_named(const struct jhr_al *lf, const char *name);
/* The latest snapshot at or before record `at` that contains [addr, addr+len). */
const struct jhr_al_mem *jhr_al_mem_at(const struct jhr_al *lf, uint64_t addr, uint64_t len,
                                       size_t at);
/* What an address (an event's attribute) refers to at record `at`: the snapshot that
 * starts there (*mem), else the function whose code holds it (*fn). false: neither. */
bool jhr_al_resolve(const struct jhr_al *lf, uint64_t addr, size_t at,
                    const struct jhr_al_mem **mem, const struct jhr_al_fn **fn);
/* The code bytes of fn as they stand at the end of the log. */
const uint8_t *jhr_al_fn_code(const struct jhr_al_fn *fn);
/* file:line for an offset into fn's code; NULL when the function has no line table. */
const char *jhr_al_fn_line(const struct jhr_al_fn *fn, uint64_t off, uint32_t *line);
/* Seconds since the header, for display. */
double jhr_al_secs(const struct jhr_al *lf, uint64_t t);

#endif
