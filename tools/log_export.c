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
 * The lines and records are the library's own encoders (fmt/perfmap.c, fmt/jitdump.c), so
 * these files are what the perfmap and jitdump channels would have written, in the log's
 * order with its CLOCK_MONOTONIC timestamps (perf record -k 1). A function's LOAD carries
 * its bytes as they stood at the end of the log (patches applied: jitdump has no record
 * for a patch); code_index is the log's id, never reused. The neighbour rule for
 * UNWINDING_INFO needs the next live function at each record: the log is replayed into a
 * registry (base/registry.h), so that costs O(log n) per record.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/registry.h"
#include "fmt/arch.h"
#include "fmt/cfi.h"
#include "fmt/jitdump.h"
#include "fmt/perfmap.h"
#include "log_present.h"

int jhc_perfmap_each(const struct jhr_al *lf, void *arg,
                     int (*fn)(void *arg, uint64_t start, uint64_t size, const char *name))
{
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        if ((r->kind != JHR_AL_CODE_ADD && r->kind != JHR_AL_CODE_MOVE) || r->ref < 0)
            continue;
        const struct jhr_al_fn *f = &lf->fns[r->ref];
        uint64_t start = f->start;
        if (r->kind == JHR_AL_CODE_MOVE && !jhr_mp_get_u64(&r->map, JH__AL_K_START, &start))
            continue;
        int rc = fn(arg, start, f->size, f->name);
        if (rc)
            return rc;
    }
    return 0;
}

static int print_line(void *arg, uint64_t start, uint64_t size, const char *name)
{
    char line[JH__PERFMAP_NAME_MAX + 64];
    size_t n = jh__perfmap_line(line, sizeof line, start, size, name);
    fwrite(line, 1, n, (FILE *)arg);
    return 0;
}

int jhc_export_perfmap(const struct jhr_al *lf, FILE *f)
{
    jhc_perfmap_each(lf, f, print_line);
    return ferror(f) ? -1 : 0;
}

/* The neutral description of fn (lines converted into `lines`, n rows of room). */
void jhc_func_of(const struct jhr_al_fn *fn, struct jh__func *out, struct jh_line *lines)
{
    for (uint32_t i = 0; i < fn->nlines; i++)
        lines[i] = (struct jh_line){ fn->lines[i].offset, fn->lines[i].line,
                                     fn->lines[i].column, fn->lines[i].file };
    *out = (struct jh__func){
        .start = fn->start, .size = fn->size, .name = fn->name,
        .files = (const char *const *)fn->files, .nfiles = fn->nfiles,
        .lines = lines, .nlines = fn->nlines, .fp_push_end = fn->fp_push_end,
        .fp_set_end = fn->fp_set_end, .cfi = fn->cfi, .cfi_len = fn->cfi_len,
        .unwind = !strcmp(fn->unwind, JH__AL_UNWIND_CFI) ? JH_UNWIND_CFI :
                  !strcmp(fn->unwind, JH__AL_UNWIND_FRAME_POINTER) ? JH_UNWIND_FRAME_POINTER :
                  !strcmp(fn->unwind, JH__AL_UNWIND_FRAMELESS) ? JH_UNWIND_FRAMELESS :
                  JH_UNWIND_NONE,
        .symbol = fn->symbol, .prologue_end = fn->prologue_end,
        .cfa_offset = fn->cfa_offset, .cfa_steps = fn->cfa_steps, .ncfa_steps = fn->ncfa_steps,
        .saved_regs = fn->saved_regs, .nsaved_regs = fn->nsaved_regs,
        .epilogues = fn->epilogues, .nepilogues = fn->nepilogues,
        .personality = fn->personality, .lsda = fn->lsda,
        .ra_signed = fn->ra_signed, .nra_signed = fn->nra_signed, .ra_key = fn->ra_key,
    };
}

const struct jh__arch *jhc_log_arch(const struct jhr_al *lf, const char *file, const char *cmd)
{
    const struct jh__arch *a = jh__arch_by_name(lf->arch);
    if (a)
        return a;
    if (lf->arch)
        fprintf(stderr, "jitherald log: %s: %s: the log's code is for architecture \"%s\", "
                "which jitherald cannot write files for (it knows", file, cmd, lf->arch);
    else
        fprintf(stderr, "jitherald log: %s: %s: the log's header names no architecture, "
                "so jitherald cannot tell which to write files for (it knows", file, cmd);
    for (size_t i = 0; jh__arch_list[i]; i++)
        fprintf(stderr, "%s%s", i ? ", " : " ", jh__arch_list[i]->log_name);
    fprintf(stderr, ")\n");
    return NULL;
}

int jhc_export_jitdump(const struct jhr_al *lf, const struct jh__arch *arch, FILE *f)
{
    struct jh__buf b = { 0 };
    struct jh__registry live = { 0 };
    struct jh__node *nodes = calloc(lf->nfns ? lf->nfns : 1, sizeof *nodes);
    struct jh_line *lines = NULL;
    size_t lines_cap = 0;
    int rc = nodes ? 0 : -1;
    jh__jd_header(&b, arch, (uint32_t)lf->pid, lf->t0);
    uint64_t last = lf->t0;
    for (size_t i = 0; i < lf->nrecs && !rc; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        last = r->time > last ? r->time : last;
        if (r->ref < 0 || (r->kind != JHR_AL_CODE_ADD && r->kind != JHR_AL_CODE_MOVE &&
                           r->kind != JHR_AL_CODE_REMOVE))
            continue;
        const struct jhr_al_fn *fn = &lf->fns[r->ref];
        struct jh__node *node = &nodes[r->ref];
        uint32_t tid = r->thread ? r->thread : (uint32_t)lf->pid;
        if (r->kind == JHR_AL_CODE_REMOVE) {
            if (node->id)
                jh__reg_erase(&live, node);
            node->id = 0;
            continue;
        }
        if (r->kind == JHR_AL_CODE_MOVE) {
            uint64_t from = 0, to = 0;
            if (!jhr_mp_get_u64(&r->map, JH__AL_K_OLD_START, &from) || !jhr_mp_get_u64(&r->map, JH__AL_K_START, &to))
                continue;
            if (node->id && !jh__reg_overlaps(&live, to, node->size, node))
                jh__reg_rekey(&live, node, to);
            jh__jd_move(&b, (uint32_t)lf->pid, tid, from, to, fn->size, fn->id, r->time);
        } else {
            /* live now, for the neighbour rule of the functions after it (a damaged log
             * with overlapping code keeps the first) */
            *node = (struct jh__node){ .start = fn->start, .size = fn->size, .id = r->ref + 1 };
            if (jh__reg_insert(&live, node) < 0)
                node->id = 0;
            if (fn->nlines > lines_cap) {
                free(lines);
                lines_cap = fn->nlines;
                if (!(lines = malloc(lines_cap * sizeof *lines))) {
                    rc = -1;
                    break;
                }
            }
            struct jh__func func;
            jhc_func_of(fn, &func, lines);
            struct jh__node *next = jh__reg_ceil(&live, fn->start + 1);
            struct jh__jd_unit u;
            if (jhr_al_fn_code(fn) &&     /* NULL: its file was not found (see info) */
                jh__jd_function(&b, &func, arch, (uint32_t)lf->pid, tid, r->time, fn->id,
                                next ? next->start : 0, &u) == 0)
                jh__buf_put(&b, jhr_al_fn_code(fn), fn->size);
        }
        if (b.len >= (1u << 20)) {      /* keep the buffer small on big logs */
            if (b.err || fwrite(b.p, 1, b.len, f) != b.len)
                rc = -1;
            b.len = 0;
        }
    }
    jh__jd_close(&b, last);
    if (!rc && (b.err || fwrite(b.p, 1, b.len, f) != b.len))
        rc = -1;
    jh__buf_free(&b);
    jh__reg_fini(&live);
    free(nodes);
    free(lines);
    return rc || ferror(f) ? -1 : 0;
}
