/*
 * jitdump_read.h — a bounds-checked reader for jitdump files (the format perf inject --jit
 * reads; see src/jitdump_format.h), for `jitherald inspect/check`, the callgrind rewriter,
 * the audit log's converter and the fuzz target. It reads from a buffer the caller owns
 * (a whole file read into memory), never trusts a length, never allocates, and never reads
 * outside [data, data+len): every pointer it returns points into that buffer.
 *
 *     struct jh_jdr r;
 *     if (jh_jdr_open(&r, data, len) < 0) { puts(r.err); ... }
 *     struct jh_jdr_rec rec;
 *     int rc;
 *     while ((rc = jh_jdr_next(&r, &rec)) > 0)
 *         if (rec.id == JH__JD_CODE_LOAD) printf("%s\n", rec.u.load.name);
 *     if (rc < 0) puts(r.err);               // "offset 0x1234: ..." of the first problem
 *
 * Files in the other byte order (magic 0x4454694A) are read too: every field comes back in
 * host order. jh_jdr_next only checks what is needed to decode a record safely; the
 * cross-record rules perf relies on (DEBUG_INFO followed by its LOAD, unique code_index,
 * unwind tables that match the code...) are checked by jh_jdr_check.
 */
#ifndef JH_JITDUMP_READ_H
#define JH_JITDUMP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jitherald.h"
#include "fmt/jitdump.h"

struct jh_jdr {
    const uint8_t *data;
    size_t len;
    size_t off;                 /* of the next record */
    bool swap;                  /* file is in the other byte order */
    struct {
        uint32_t magic, version, total_size, elf_mach, pad1, pid;
        uint64_t timestamp, flags;
    } hdr;
    char err[256];              /* the first problem, with its file offset */
};

struct jh_jdr_rec {
    uint32_t id, total_size;
    uint64_t timestamp;
    size_t off;                 /* of the record in the file */
    const uint8_t *body;        /* after the 16-byte prefix */
    size_t body_len;
    union {
        struct {
            uint32_t pid, tid;
            uint64_t vma, code_addr, code_size, code_index;
            const char *name;   /* NUL-terminated inside the record */
            size_t name_len;
            const uint8_t *code;        /* code_size bytes */
        } load;
        struct {
            uint32_t pid, tid;
            uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
        } move;
        struct {
            uint64_t code_addr, nr_entry;
            const uint8_t *entries;     /* walk with jh_jdr_debug_entry */
            size_t entries_len;
        } debug;
        struct {
            uint64_t unwinding_size, eh_frame_hdr_size, mapped_size;
            const uint8_t *data;        /* unwinding_size bytes: .eh_frame, .eh_frame_hdr */
            size_t data_len;            /* bytes in the record after the fixed part */
        } unwind;
    } u;
};

struct jh_jdr_line {
    uint64_t addr;
    int32_t lineno, discrim;
    const char *name;
    size_t name_len;
};

/* Parse the header. 0, or JH_EFORMAT with r->err set. */
int jh_jdr_open(struct jh_jdr *r, const uint8_t *data, size_t len);

/* Next record: 1 and *rec filled; 0 at the end of the file; JH_EFORMAT with r->err set on a
 * truncated or malformed record (r->off stays at it). */
int jh_jdr_next(struct jh_jdr *r, struct jh_jdr_rec *rec);

/* The next entry of a DEBUG_INFO record, walking from *pos (start with 0; call it
 * rec->u.debug.nr_entry times). 0 and *out filled, or JH_EFORMAT if the entry runs past
 * the record or its name is not NUL-terminated. */
int jh_jdr_debug_entry(const struct jh_jdr *r, const struct jh_jdr_rec *rec, size_t *pos,
                       struct jh_jdr_line *out);

/*
 * Validate the whole file against what perf inject --jit needs. Prints a line per record
 * to out when out is not NULL (the `inspect` view; verbose adds line tables and unwind
 * rules). Returns 0 if perf will accept everything, JH_EFORMAT at the first problem (the
 * message, with offset and record, is in r->err; out stops there). Warnings that do not
 * stop perf (no CLOSE record yet, an unknown record id) go to warn when not NULL.
 */
struct jh_jdr_stats { size_t records, loads, moves, debug, unwind, closes, unknown; };
int jh_jdr_check(struct jh_jdr *r, const uint8_t *data, size_t len, FILE *out, bool verbose,
                 FILE *warn, struct jh_jdr_stats *stats);

/* Decode an .eh_frame run in perf's synthetic layout (text at text_addr, size code_size,
 * .eh_frame at eh_addr) and its .eh_frame_hdr; checks every length, pointer and range.
 * 0 or JH_EFORMAT with a message in err[errlen]. Prints the CIE/FDE rules to out if set. */
int jh_jdr_check_unwind(const uint8_t *eh, size_t eh_len, const uint8_t *hdr, size_t hdr_len,
                        uint64_t eh_addr, uint64_t text_addr, uint64_t code_size, FILE *out,
                        char *err, size_t errlen);

/* Read a whole file into memory (malloc'd; free it). 0 or negative errno. */
int jh_read_file(const char *path, uint8_t **data, size_t *len);

#endif
