/*
 * jitdump_read.h — a bounds-checked reader for jitdump files (the format perf inject --jit
 * reads; see fmt/jitdump.h), for `jitherald inspect/check`, the callgrind rewriter's symbol
 * table and the fuzz target. It reads from a buffer the caller owns (a whole file read into
 * memory), never trusts a length, never allocates, and never reads outside [data,
 * data+len): every pointer it returns points into that buffer.
 *
 *     struct jhr_jd r;
 *     if (jhr_jd_open(&r, data, len) < 0) { puts(r.err); ... }
 *     struct jhr_jd_rec rec;
 *     int rc;
 *     while ((rc = jhr_jd_next(&r, &rec)) > 0)
 *         if (rec.id == JH__JD_CODE_LOAD) printf("%s\n", rec.u.load.name);
 *     if (rc < 0) puts(r.err);               // "offset 0x1234: ..." of the first problem
 *
 * Files in the other byte order (magic 0x4454694A) are read too: every field comes back in
 * host order. jhr_jd_next only checks what is needed to decode a record safely; the
 * cross-record rules perf relies on (DEBUG_INFO followed by its LOAD, unique code_index,
 * unwind tables that match the code...) are checked by jhr_jd_check (jitdump_check.h).
 */
#ifndef JHR_JITDUMP_READ_H
#define JHR_JITDUMP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jitherald.h"
#include "fmt/jitdump.h"

struct jhr_jd {
    const uint8_t *data;
    size_t len;
    size_t off;                 /* of the next record */
    size_t unwritten;           /* bytes at the end from a total_size of 0: not written yet */
    bool swap;                  /* file is in the other byte order */
    struct {
        uint32_t magic, version, total_size, elf_mach, pad1, pid;
        uint64_t timestamp, flags;
    } hdr;
    char err[256];              /* the first problem, with its file offset */
};

struct jhr_jd_rec {
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
            const uint8_t *entries;     /* walk with jhr_jd_debug_entry */
            size_t entries_len;
        } debug;
        struct {
            uint64_t unwinding_size, eh_frame_hdr_size, mapped_size;
            const uint8_t *data;        /* unwinding_size bytes: .eh_frame, .eh_frame_hdr */
            size_t data_len;            /* bytes in the record after the fixed part */
        } unwind;
    } u;
};

struct jhr_jd_line {
    uint64_t addr;
    int32_t lineno, discrim;
    const char *name;
    size_t name_len;
};

/* Does the buffer start with a jitdump magic (either byte order)? */
bool jhr_jd_is_jitdump(const uint8_t *data, size_t len);

/* Parse the header. 0, or JH_EFORMAT with r->err set. */
int jhr_jd_open(struct jhr_jd *r, const uint8_t *data, size_t len);

/* Next record: 1 and *rec filled; 0 at the end of the file; JH_EFORMAT with r->err set on a
 * truncated or malformed record (r->off stays at it). */
int jhr_jd_next(struct jhr_jd *r, struct jhr_jd_rec *rec);

/* The next entry of a DEBUG_INFO record, walking from *pos (start with 0; call it
 * rec->u.debug.nr_entry times). 0 and *out filled, or JH_EFORMAT if the entry runs past
 * the record or its name is not NUL-terminated. */
int jhr_jd_debug_entry(const struct jhr_jd *r, const struct jhr_jd_rec *rec, size_t *pos,
                       struct jhr_jd_line *out);

/* The fixed part of a DEBUG_INFO entry at p (16 bytes the caller checked are there): addr,
 * lineno, discrim; out->name and name_len are left alone. For walks that cannot trust the
 * names' terminators (jitdump_lines.h). */
void jhr_jd_debug_fixed(const struct jhr_jd *r, const uint8_t *p, struct jhr_jd_line *out);

/* Do line entries from lo to hi, for the code [a, a + s), follow the old convention of
 * V8 and LLVM 14 (addresses 0x40 past where they belong)? Current perf reads them as they
 * are: every row 0x40 bytes late. Judged on the table's range: it starts at a + 0x40 or
 * runs past the code, and moved back by 0x40 it fits. */
bool jhr_jd_line_skew(uint64_t lo, uint64_t hi, uint64_t a, uint64_t s);

/* Set r->err to "offset 0x<off>: " and the message; returns JH_EFORMAT. */
__attribute__((format(printf, 3, 4)))
int jhr_jd_fail(struct jhr_jd *r, size_t off, const char *fmt, ...);

#endif
