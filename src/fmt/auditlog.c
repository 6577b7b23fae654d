/* auditlog.c — the audit log's code records (see auditlog.h). */
#include "fmt/auditlog.h"

#include <string.h>

#include "fmt/msgpack.h"

void jh__al_head(struct jh__buf *b, uint32_t nkeys, const char *type, uint64_t ts, uint32_t tid)
{
    jh__mp_map(b, nkeys);
    jh__mp_kstr(b, JH__AL_K_TYPE, type);
    jh__mp_kuint(b, JH__AL_K_TIME, ts);
    jh__mp_kuint(b, JH__AL_K_THREAD, tid);
}

static const char *unwind_name(enum jh_unwind_kind k)
{
    return k == JH_UNWIND_FRAME_POINTER ? JH__AL_UNWIND_FRAME_POINTER :
           k == JH_UNWIND_CFI ? JH__AL_UNWIND_CFI :
           k == JH_UNWIND_FRAMELESS ? JH__AL_UNWIND_FRAMELESS : JH__AL_UNWIND_NONE;
}

/* The keys of the unwind description beyond `unwind` itself, counted and written. */
static uint32_t unwind_keys(const struct jh__func *f)
{
    uint32_t n = (f->personality != 0) + (f->lsda != 0) + (f->nra_signed != 0) +
                 (f->ra_key != 0);
    switch (f->unwind) {
    case JH_UNWIND_FRAME_POINTER:
        return n + 2 + (f->nepilogues != 0);
    case JH_UNWIND_CFI:
        return n + 1;
    case JH_UNWIND_FRAMELESS:
        return n + 3;
    case JH_UNWIND_NONE:
    case JH_UNWIND_EH_FRAME:            /* lowered by the core: never in a jh__func */
        break;
    }
    return n;
}

static void pairs(struct jh__buf *b, const char *key, uint32_t n, const void *arr, size_t stride)
{
    jh__mp_str(b, key);
    jh__mp_array(b, n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v[2];
        memcpy(v, (const char *)arr + i * stride, sizeof v);
        jh__mp_array(b, 2);
        jh__mp_uint(b, v[0]);
        jh__mp_uint(b, v[1]);
    }
}

static void unwind_fields(struct jh__buf *b, const struct jh__func *f)
{
    jh__mp_kstr(b, JH__AL_K_UNWIND, unwind_name(f->unwind));
    switch (f->unwind) {
    case JH_UNWIND_FRAME_POINTER:
        jh__mp_kuint(b, JH__AL_K_FP_PUSH_END, f->fp_push_end);
        jh__mp_kuint(b, JH__AL_K_FP_SET_END, f->fp_set_end);
        if (f->nepilogues)
            pairs(b, JH__AL_K_EPILOGUES, f->nepilogues, f->epilogues, sizeof *f->epilogues);
        break;
    case JH_UNWIND_CFI:
        jh__mp_str(b, JH__AL_K_CFI);
        jh__mp_bin(b, f->cfi, f->cfi_len);
        break;
    case JH_UNWIND_FRAMELESS:
        jh__mp_kuint(b, JH__AL_K_CFA_OFFSET, f->cfa_offset);
        pairs(b, JH__AL_K_CFA_STEPS, f->ncfa_steps, f->cfa_steps, sizeof *f->cfa_steps);
        jh__mp_str(b, JH__AL_K_SAVED_REGS);
        jh__mp_array(b, f->nsaved_regs);
        for (uint32_t i = 0; i < f->nsaved_regs; i++) {
            jh__mp_array(b, 2);
            jh__mp_uint(b, f->saved_regs[i].reg);
            jh__mp_int(b, f->saved_regs[i].cfa_offset);
        }
        break;
    case JH_UNWIND_NONE:
    case JH_UNWIND_EH_FRAME:
        break;
    }
    if (f->personality) {
        jh__mp_str(b, JH__AL_K_PERSONALITY);
        jh__mp_addr(b, f->personality);
    }
    if (f->lsda) {
        jh__mp_str(b, JH__AL_K_LSDA);
        jh__mp_addr(b, f->lsda);
    }
    if (f->nra_signed)
        pairs(b, JH__AL_K_RA_SIGNED, f->nra_signed, f->ra_signed, sizeof *f->ra_signed);
    if (f->ra_key)
        jh__mp_kuint(b, JH__AL_K_RA_KEY, f->ra_key);
}

void jh__al_code_add(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                     const struct jh__func *f, const struct jh__al_ref *ref)
{
    uint32_t n = 11 + 2 * (ref != NULL) + unwind_keys(f) + (f->symbol != NULL) + (f->prologue_end != 0);
    jh__al_head(b, n, "code_add", ts, tid);
    jh__mp_kuint(b, JH__AL_K_ID, id);
    jh__mp_kstr(b, JH__AL_K_NAME, f->name);
    if (f->symbol)
        jh__mp_kstr(b, JH__AL_K_SYMBOL, f->symbol);
    jh__mp_kuint(b, JH__AL_K_START, f->start);
    jh__mp_kuint(b, JH__AL_K_SIZE, f->size);
    jh__mp_str(b, JH__AL_K_FILES);
    jh__mp_array(b, f->nfiles);
    for (uint32_t i = 0; i < f->nfiles; i++)
        jh__mp_str(b, f->files[i]);
    jh__mp_str(b, JH__AL_K_LINES);
    jh__mp_array(b, f->nlines);
    for (uint32_t i = 0; i < f->nlines; i++) {
        const struct jh_line *l = &f->lines[i];
        jh__mp_array(b, 4);
        jh__mp_uint(b, l->offset);
        jh__mp_uint(b, l->line);
        jh__mp_uint(b, l->column);
        jh__mp_uint(b, l->file);
    }
    if (f->prologue_end)
        jh__mp_kuint(b, JH__AL_K_PROLOGUE_END, f->prologue_end);
    unwind_fields(b, f);
    if (ref) {
        jh__mp_kstr(b, JH__AL_K_CODE_FILE, ref->path);
        jh__mp_str(b, JH__AL_K_CODE_BUILD_ID);
        jh__mp_bin(b, ref->build_id, ref->build_id_len);
        jh__mp_kuint(b, JH__AL_K_CODE_OFFSET, ref->offset);
    } else {
        jh__mp_str(b, JH__AL_K_CODE);
        jh__mp_bin(b, (const void *)(uintptr_t)f->start, f->size);
    }
}

void jh__al_code_remove(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                        uint64_t start, uint64_t size)
{
    jh__al_head(b, 6, "code_remove", ts, tid);
    jh__mp_kuint(b, JH__AL_K_ID, id);
    jh__mp_kuint(b, JH__AL_K_START, start);
    jh__mp_kuint(b, JH__AL_K_SIZE, size);
}

void jh__al_code_move(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                      uint64_t old_start, uint64_t start, uint64_t size)
{
    jh__al_head(b, 7, "code_move", ts, tid);
    jh__mp_kuint(b, JH__AL_K_ID, id);
    jh__mp_kuint(b, JH__AL_K_OLD_START, old_start);
    jh__mp_kuint(b, JH__AL_K_START, start);
    jh__mp_kuint(b, JH__AL_K_SIZE, size);
}

void jh__al_code_patched(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                         uint64_t addr, const void *bytes, size_t len)
{
    jh__al_head(b, 6, "code_patched", ts, tid);
    jh__mp_kuint(b, JH__AL_K_ID, id);
    jh__mp_kuint(b, JH__AL_K_ADDRESS, addr);
    jh__mp_str(b, JH__AL_K_DATA);
    jh__mp_bin(b, bytes, len);
}
