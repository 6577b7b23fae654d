/*
 * log_export.c — perf's inputs regenerated from an audit log, after the fact:
 *
 *     $ jitherald log minijit-4242.jhlog to-perfmap > /tmp/perf-4242.map
 *     $ perf report -i perf.data            # names JIT samples though no map was written live
 *
 *     $ jitherald log minijit-4242.jhlog to-jitdump -o ~/.debug/jit/.../jit-4242.dump
 *     $ perf inject --jit -i perf.data -o perf.jit.data
 *
 * perf reads the perf map lazily at report time, so a run recorded with only the audit log
 * can still be profiled: write the map under the pid the log names. perf inject only reads
 * a jitdump the process mapped while perf recorded (it finds it through that mmap event),
 * so to-jitdump serves a run that had the jitdump channel on, or any other consumer.
 *
 * Records follow the log's order with its CLOCK_MONOTONIC timestamps (perf record -k 1).
 * A function's LOAD carries its bytes as they stood at the end of the log (patches applied:
 * jitdump has no record for a patch); code_index is the log's id, never reused. DEBUG_INFO
 * precedes its LOAD and holds absolute addresses (no +0x40: see FACTS.md). UNWINDING_INFO
 * comes from the library's own CFI encoder (src/cfi.c, as the jitdump channel writes it),
 * and is left out, as the channel does, when perf's widened mapping of the function would
 * cover a neighbour that was live then. No padding:
 * perf takes a LOAD's code from the end of the record (total_size - code_size).
 */
#include <inttypes.h>
#include <string.h>

#include "cfi.h"
#include "jitdump_format.h"
#include "log.h"

int export_perfmap(const struct log_file *lf, FILE *f)
{
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct log_rec *r = &lf->recs[i];
        if ((r->kind != LR_CODE_ADD && r->kind != LR_CODE_MOVE) || r->ref < 0)
            continue;
        const struct log_fn *fn = &lf->fns[r->ref];
        uint64_t start = fn->start;
        if (r->kind == LR_CODE_MOVE && !mp_get_u64(&r->map, "start", &start))
            continue;
        /* perf drops the last character of each line and reads the name to its end. */
        fprintf(f, "%" PRIx64 " %" PRIx64 " ", start, fn->size);
        for (const char *c = fn->name; *c; c++)
            fputc(*c == '\n' || *c == '\r' ? ' ' : *c, f);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* ---- jitdump (src/jitdump_format.h, shared with the jitdump channel and its reader) ---- */
enum { JIT_LOAD = JH__JD_CODE_LOAD, JIT_MOVE = JH__JD_CODE_MOVE, JIT_DEBUG_INFO = JH__JD_CODE_DEBUG_INFO,
       JIT_CLOSE = JH__JD_CODE_CLOSE };

static void w32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void w64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }

static void rec_header(FILE *f, uint32_t id, size_t total, uint64_t ts)
{
    w32(f, id);
    w32(f, (uint32_t)total);
    w64(f, ts);
}

/* As the jitdump channel writes it: one entry per line row plus one at the end of the code,
 * which closes the last row's range in the line table perf inject builds from it. */
static void debug_info(FILE *f, const struct log_fn *fn, uint64_t start, uint64_t ts)
{
    const struct log_line *last = &fn->lines[fn->nlines - 1];
    size_t total = JH__JD_PREFIX_SIZE + 16;
    for (uint32_t i = 0; i < fn->nlines; i++)
        total += JH__JD_DEBUG_ENTRY_FIXED + strlen(fn->files[fn->lines[i].file]) + 1;
    total += JH__JD_DEBUG_ENTRY_FIXED + strlen(fn->files[last->file]) + 1;
    rec_header(f, JIT_DEBUG_INFO, total, ts);
    w64(f, start);
    w64(f, (uint64_t)fn->nlines + 1);
    for (uint32_t i = 0; i <= fn->nlines; i++) {
        const struct log_line *l = i < fn->nlines ? &fn->lines[i] : last;
        const char *file = fn->files[l->file];
        w64(f, start + (i < fn->nlines ? l->offset : fn->size));
        w32(f, l->line);
        w32(f, 0);
        fwrite(file, 1, strlen(file) + 1, f);
    }
}

/* Would ALIGN_8(size) + mapped bytes from fn's start reach code live at record `at`? */
static bool reaches_neighbour(const struct log_file *lf, const struct log_fn *fn, uint64_t reach, size_t at)
{
    for (size_t i = 0; i < lf->nfns; i++) {
        const struct log_fn *o = &lf->fns[i];
        if (o != fn && o->start > fn->start && o->start - fn->start < reach && o->rec <= at &&
            o->rm_rec > at)
            return true;
    }
    return false;
}

static void unwinding_info(FILE *f, const struct log_file *lf, const struct log_fn *fn, size_t at,
                           uint64_t ts)
{
    if (!strcmp(fn->unwind, "none"))
        return;
    struct jh__cfi_func cf = {
        .start = fn->start, .size = fn->size, .fp_push_end = fn->fp_push_end,
        .fp_set_end = fn->fp_set_end, .cfi = fn->cfi, .cfi_len = fn->cfi_len,
        .unwind = !strcmp(fn->unwind, "cfi") ? JH_UNWIND_CFI : JH_UNWIND_FRAME_POINTER,
    };
    struct jh__buf b = { 0 };
    size_t hdr = 0;
    int arch = lf->arch && !strcmp(lf->arch, "aarch64") ? JH__CFI_ARM64 : JH__CFI_X86_64;
    int n = jh__cfi_perf_unwinding(&b, &cf, JH__JD_PERF_TEXT_OFFSET, arch, &hdr);
    uint64_t mapped = (b.len + 7) & ~(uint64_t)7;
    if (n == 1 && !b.err && !reaches_neighbour(lf, fn, ((fn->size + 7) & ~(uint64_t)7) + mapped, at)) {
        rec_header(f, JH__JD_CODE_UNWINDING_INFO, JH__JD_UNWIND_FIXED + b.len, ts);
        w64(f, b.len);
        w64(f, hdr);
        w64(f, mapped);
        fwrite(b.p, 1, b.len, f);
    }
    jh__buf_free(&b);
}

int export_jitdump(const struct log_file *lf, FILE *f)
{
    uint32_t mach = lf->arch && !strcmp(lf->arch, "aarch64") ? JH__JD_EM_AARCH64 : JH__JD_EM_X86_64;
    w32(f, JH__JD_MAGIC);
    w32(f, JH__JD_VERSION);
    w32(f, JH__JD_HEADER_SIZE);
    w32(f, mach);
    w32(f, 0);
    w32(f, (uint32_t)lf->pid);
    w64(f, lf->t0);
    w64(f, 0);
    uint64_t last = lf->t0;
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct log_rec *r = &lf->recs[i];
        last = r->time > last ? r->time : last;
        if ((r->kind != LR_CODE_ADD && r->kind != LR_CODE_MOVE) || r->ref < 0)
            continue;
        const struct log_fn *fn = &lf->fns[r->ref];
        if (r->kind == LR_CODE_ADD) {
            if (fn->nlines)
                debug_info(f, fn, fn->start, r->time);
            unwinding_info(f, lf, fn, i, r->time);
            size_t nlen = strlen(fn->name) + 1;
            size_t total = JH__JD_LOAD_FIXED + nlen + fn->size;
            rec_header(f, JIT_LOAD, total, r->time);
            w32(f, (uint32_t)lf->pid);
            w32(f, r->thread ? r->thread : (uint32_t)lf->pid);
            w64(f, fn->start);
            w64(f, fn->start);
            w64(f, fn->size);
            w64(f, fn->id);
            fwrite(fn->name, 1, nlen, f);
            fwrite(log_fn_code(fn), 1, fn->size, f);
        } else {
            uint64_t from = 0, to = 0;
            if (!mp_get_u64(&r->map, "old_start", &from) || !mp_get_u64(&r->map, "start", &to))
                continue;
            rec_header(f, JIT_MOVE, JH__JD_MOVE_SIZE, r->time);
            w32(f, (uint32_t)lf->pid);
            w32(f, r->thread ? r->thread : (uint32_t)lf->pid);
            w64(f, to);
            w64(f, from);
            w64(f, to);
            w64(f, fn->size);
            w64(f, fn->id);
        }
    }
    rec_header(f, JIT_CLOSE, JH__JD_PREFIX_SIZE, last);
    return ferror(f) ? -1 : 0;
}
