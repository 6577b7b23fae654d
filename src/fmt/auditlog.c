/* auditlog.c — the audit log's code records (see auditlog.h). */
#include "fmt/auditlog.h"

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
           k == JH_UNWIND_CFI ? JH__AL_UNWIND_CFI : JH__AL_UNWIND_NONE;
}

void jh__al_code_add(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                     const struct jh__func *f)
{
    uint32_t n = 11 + (f->unwind == JH_UNWIND_FRAME_POINTER ? 2 : f->unwind == JH_UNWIND_CFI);
    jh__al_head(b, n, "code_add", ts, tid);
    jh__mp_kuint(b, JH__AL_K_ID, id);
    jh__mp_kstr(b, JH__AL_K_NAME, f->name);
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
    jh__mp_kstr(b, JH__AL_K_UNWIND, unwind_name(f->unwind));
    if (f->unwind == JH_UNWIND_FRAME_POINTER) {
        jh__mp_kuint(b, JH__AL_K_FP_PUSH_END, f->fp_push_end);
        jh__mp_kuint(b, JH__AL_K_FP_SET_END, f->fp_set_end);
    } else if (f->unwind == JH_UNWIND_CFI) {
        jh__mp_str(b, JH__AL_K_CFI);
        jh__mp_bin(b, f->cfi, f->cfi_len);
    }
    jh__mp_str(b, JH__AL_K_CODE);
    jh__mp_bin(b, (const void *)(uintptr_t)f->start, f->size);
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
