/*
 * jitdump.c — the jitdump record encoder (see jitdump.h for the format). Pure: a function
 * description in, bytes out. Three perf quirks live here and nowhere else:
 *   - DEBUG_INFO addresses are absolute (perf subtracts code_addr itself; the "+0x40" some
 *     JITs add dates from perf's old synthetic layout), and perf ends the line program at
 *     the last entry's address, so an entry is added at the end of the code: otherwise the
 *     last source line covers no bytes at all.
 *   - UNWINDING_INFO is encoded for perf's synthetic ELF (.text at 0x80, .eh_frame right
 *     after the code), not for the process.
 *   - perf widens the LOAD's mapping by the unwind data's size; when that would cover the
 *     next function, the unwind data is left out rather than let perf's mapping hide it.
 */
#include "fmt/jitdump.h"

#include <errno.h>
#include <string.h>

#include "fmt/cfi.h"

static void prefix(struct jh__buf *b, uint32_t id, uint64_t timestamp)
{
    jh__buf_u32(b, id);
    jh__buf_u32(b, 0);          /* total_size, set by finish() */
    jh__buf_u64(b, timestamp);
}

static void finish(struct jh__buf *b, size_t at, size_t extra)
{
    jh__buf_set_u32(b, at + 4, (uint32_t)(b->len - at + extra));
}

void jh__jd_header(struct jh__buf *b, const struct jh__arch *arch, uint32_t pid,
                   uint64_t timestamp)
{
    jh__buf_u32(b, JH__JD_MAGIC);
    jh__buf_u32(b, JH__JD_VERSION);
    jh__buf_u32(b, JH__JD_HEADER_SIZE);
    jh__buf_u32(b, (arch ? arch : JH__ARCH_HOST)->e_machine);
    jh__buf_u32(b, 0);
    jh__buf_u32(b, pid);
    jh__buf_u64(b, timestamp);
    jh__buf_u64(b, 0);
}

bool jh__jd_unwind_fits(uint64_t start, uint64_t code_size, uint64_t mapped_size,
                        uint64_t next_start)
{
    uint64_t reach = ((code_size + 7) & ~(uint64_t)7) + mapped_size;
    return !next_start || next_start <= start || next_start - start >= reach;
}

/* A row: address, line, column 0, the file's name with its NUL (nfile bytes). */
static void debug_row(struct jh__buf *b, uint64_t addr, uint32_t line, const char *file,
                      size_t nfile)
{
    if (jh__buf_room(b, 16 + nfile))
        return;
    uint8_t *q = b->p + b->len;
    jh__le64(q, addr);
    jh__le32(q + 8, line);
    jh__le32(q + 12, 0);
    memcpy(q + 16, file, nfile);
    b->len += 16 + nfile;
}

static void debug_info(struct jh__buf *b, const struct jh__func *f, uint64_t ts)
{
    size_t at = b->len;
    prefix(b, JH__JD_CODE_DEBUG_INFO, ts);
    jh__buf_u64(b, f->start);
    jh__buf_u64(b, (uint64_t)f->nlines + 1);
    /* each row's file name measured once for a run of rows in the same file (one file
     * for most functions): a row is one reservation and four stores */
    uint32_t last = UINT32_MAX;
    const char *file = "?";
    size_t nfile = 2;
    for (uint32_t i = 0; i <= f->nlines; i++) {
        const struct jh_line *l = &f->lines[i < f->nlines ? i : f->nlines - 1];
        if (l->file != last || i == 0) {
            last = l->file;
            file = jh__func_file(f, l);
            if (!file[0])
                file = "?";
            nfile = strlen(file) + 1;
        }
        debug_row(b, f->start + (i < f->nlines ? l->offset : f->size), l->line, file, nfile);
    }
    finish(b, at, 0);
}

/* 1 written, 0 left out, negative: the CFI encoder refused (nothing written). */
static int unwinding_info(struct jh__buf *b, const struct jh__func *f,
                          const struct jh__arch *arch, uint64_t ts, uint64_t next_start)
{
    if (f->unwind == JH_UNWIND_NONE)
        return 0;
    size_t at = b->len;
    prefix(b, JH__JD_CODE_UNWINDING_INFO, ts);
    jh__buf_zeros(b, 24);
    size_t data = b->len, hdr = 0;
    int n = jh__cfi_perf_unwinding(b, f, JH__JD_PERF_TEXT_OFFSET, arch, &hdr);
    if (n <= 0) {
        if (!b->err)
            b->len = at;
        return n;
    }
    uint64_t usize = b->len - data, mapped = (usize + 7) & ~(uint64_t)7;
    if (!jh__jd_unwind_fits(f->start, f->size, mapped, next_start)) {
        b->len = at;
        return 0;
    }
    jh__buf_set_u64(b, at + 16, usize);
    jh__buf_set_u64(b, at + 24, hdr);
    jh__buf_set_u64(b, at + 32, mapped);
    finish(b, at, 0);
    return 1;
}

int jh__jd_function(struct jh__buf *b, const struct jh__func *f, const struct jh__arch *arch,
                    uint32_t pid, uint32_t tid, uint64_t timestamp, uint64_t index,
                    uint64_t next_start, struct jh__jd_unit *u)
{
    memset(u, 0, sizeof *u);
    size_t base = b->len;
    if (f->nlines) {
        u->stamp_at[u->nstamps++] = b->len - base;
        debug_info(b, f, timestamp);
    }
    size_t uat = b->len;
    int r = unwinding_info(b, f, arch, timestamp, next_start);
    if (r > 0) {
        u->stamp_at[u->nstamps++] = uat - base;
        u->unwinding = true;
    } else if (r < 0) {
        u->unwind_err = r;
    }
    size_t at = b->len;
    u->stamp_at[u->nstamps++] = at - base;
    prefix(b, JH__JD_CODE_LOAD, timestamp);
    jh__buf_u32(b, pid);
    jh__buf_u32(b, tid);
    jh__buf_u64(b, f->start);
    jh__buf_u64(b, f->start);
    jh__buf_u64(b, f->size);
    u->index_at = b->len - base;
    jh__buf_u64(b, index);
    jh__buf_str(b, f->name[0] ? f->name : "?");   /* perf's ELF symbol needs a name */
    finish(b, at, f->size);
    if (b->err)
        return b->err;
    if (b->len - at + f->size > UINT32_MAX) {
        b->len = base;
        return -EFBIG;          /* total_size is 32 bits: a 4 GiB function cannot be told */
    }
    /* Offsets are kept relative to the unit's start; make them absolute for restamp. */
    for (int i = 0; i < u->nstamps; i++)
        u->stamp_at[i] += base;
    u->index_at += base;
    return 0;
}

void jh__jd_restamp(struct jh__buf *b, const struct jh__jd_unit *u, uint64_t timestamp,
                    uint64_t index)
{
    for (int i = 0; i < u->nstamps; i++)
        jh__buf_set_u64(b, u->stamp_at[i] + 8, timestamp);
    jh__buf_set_u64(b, u->index_at, index);
}

void jh__jd_move(struct jh__buf *b, uint32_t pid, uint32_t tid, uint64_t old_addr,
                 uint64_t new_addr, uint64_t code_size, uint64_t index, uint64_t timestamp)
{
    size_t at = b->len;
    prefix(b, JH__JD_CODE_MOVE, timestamp);
    jh__buf_u32(b, pid);
    jh__buf_u32(b, tid);
    jh__buf_u64(b, new_addr);
    jh__buf_u64(b, old_addr);
    jh__buf_u64(b, new_addr);
    jh__buf_u64(b, code_size);
    jh__buf_u64(b, index);
    finish(b, at, 0);
}

void jh__jd_close(struct jh__buf *b, uint64_t timestamp)
{
    size_t at = b->len;
    prefix(b, JH__JD_CODE_CLOSE, timestamp);
    finish(b, at, 0);
}
