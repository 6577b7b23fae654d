/*
 * auditlog.c — the audit log's records (see auditlog.h), encoded in place: each record's
 * exact size first (jh__al_*_size), then its bytes straight into the space the caller
 * reserved (jh__al_put_*), the way the channel fills a frame of its file mapping. Keys
 * are literals whose msgpack form the compiler folds; the values take the shortest form
 * (msgpack.h). A record built through a jh_buf (the file's header, the fuzzers) is the
 * same put into the buffer, checked against its size.
 */
#include "fmt/auditlog.h"

#include <errno.h>
#include <string.h>

#include "fmt/msgpack.h"

/* A key: a string literal (its length is a constant). */
#define KEY_SIZE(k) (jh__mp_str_hsize(sizeof(k) - 1) + sizeof(k) - 1)
#define PUT_KEY(p, k) jh__mp_put_str((p), (k), sizeof(k) - 1)

/* A C string value, nil for NULL; longer than msgpack can say is cut (as jh__mp_strn). */
static size_t cstr_len(const char *s)
{
    size_t n = strlen(s);
    return n > 0xffffffffu ? 0xffffffffu : n;
}
static size_t cstr_size(const char *s) { return s ? jh__mp_str_size(cstr_len(s)) : 1; }
static uint8_t *put_cstr(uint8_t *p, const char *s)
{
    return s ? jh__mp_put_str(p, s, cstr_len(s)) : jh__mp_put_nil(p);
}

/* The name's and the symbol's lengths, from the entry when it knows them (as cstr_len). */
static size_t fname_len(const struct jh__func *f)
{
    return f->name_len ? f->name_len : cstr_len(f->name);
}
static size_t fsymbol_len(const struct jh__func *f)
{
    return f->symbol_len ? f->symbol_len : cstr_len(f->symbol);
}

static size_t ref_path_len(const struct jh__al_ref *ref)
{
    return ref->path_len && ref->path_len <= 0xffffffffu ? ref->path_len : cstr_len(ref->path);
}

size_t jh__al_head_size(uint32_t nkeys, size_t tlen, uint64_t ts, uint32_t tid)
{
    return jh__mp_cont_hsize(nkeys) + KEY_SIZE(JH__AL_K_TYPE) + jh__mp_str_size(tlen) +
           KEY_SIZE(JH__AL_K_TIME) + jh__mp_uint_size(ts) + KEY_SIZE(JH__AL_K_THREAD) +
           jh__mp_uint_size(tid);
}

uint8_t *jh__al_put_head(uint8_t *p, uint32_t nkeys, const char *type, size_t tlen,
                         uint64_t ts, uint32_t tid)
{
    p = jh__mp_put_map(p, nkeys);
    p = PUT_KEY(p, JH__AL_K_TYPE);
    p = jh__mp_put_str(p, type, tlen);
    p = PUT_KEY(p, JH__AL_K_TIME);
    p = jh__mp_put_uint(p, ts);
    p = PUT_KEY(p, JH__AL_K_THREAD);
    return jh__mp_put_uint(p, tid);
}

static const char *unwind_name(enum jh_unwind_kind k)
{
    return k == JH_UNWIND_FRAME_POINTER ? JH__AL_UNWIND_FRAME_POINTER :
           k == JH_UNWIND_CFI ? JH__AL_UNWIND_CFI :
           k == JH_UNWIND_FRAMELESS ? JH__AL_UNWIND_FRAMELESS : JH__AL_UNWIND_NONE;
}

/* The keys of the unwind description beyond `unwind` itself. */
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

/* [[a, b], ...] of n structs of two u32 each (epilogues, CFA steps, signed ranges). */
static size_t pairs_size(uint32_t n, const void *arr, size_t stride)
{
    size_t s = jh__mp_cont_hsize(n) + n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v[2];
        memcpy(v, (const char *)arr + i * stride, sizeof v);
        s += jh__mp_uint_size(v[0]) + jh__mp_uint_size(v[1]);
    }
    return s;
}
static uint8_t *put_pairs(uint8_t *p, uint32_t n, const void *arr, size_t stride)
{
    p = jh__mp_put_array(p, n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v[2];
        memcpy(v, (const char *)arr + i * stride, sizeof v);
        *p++ = 0x92;
        p = jh__mp_put_uint(p, v[0]);
        p = jh__mp_put_uint(p, v[1]);
    }
    return p;
}

static size_t unwind_size(const struct jh__func *f)
{
    size_t s = KEY_SIZE(JH__AL_K_UNWIND) + cstr_size(unwind_name(f->unwind));
    switch (f->unwind) {
    case JH_UNWIND_FRAME_POINTER:
        s += KEY_SIZE(JH__AL_K_FP_PUSH_END) + jh__mp_uint_size(f->fp_push_end) +
             KEY_SIZE(JH__AL_K_FP_SET_END) + jh__mp_uint_size(f->fp_set_end);
        if (f->nepilogues)
            s += KEY_SIZE(JH__AL_K_EPILOGUES) +
                 pairs_size(f->nepilogues, f->epilogues, sizeof *f->epilogues);
        break;
    case JH_UNWIND_CFI:
        s += KEY_SIZE(JH__AL_K_CFI) + jh__mp_bin_hsize(f->cfi_len) + f->cfi_len;
        break;
    case JH_UNWIND_FRAMELESS:
        s += KEY_SIZE(JH__AL_K_CFA_OFFSET) + jh__mp_uint_size(f->cfa_offset) +
             KEY_SIZE(JH__AL_K_CFA_STEPS) +
             pairs_size(f->ncfa_steps, f->cfa_steps, sizeof *f->cfa_steps) +
             KEY_SIZE(JH__AL_K_SAVED_REGS) + jh__mp_cont_hsize(f->nsaved_regs);
        for (uint32_t i = 0; i < f->nsaved_regs; i++)
            s += 1 + jh__mp_uint_size(f->saved_regs[i].reg) +
                 jh__mp_int_size(f->saved_regs[i].cfa_offset);
        break;
    case JH_UNWIND_NONE:
    case JH_UNWIND_EH_FRAME:
        break;
    }
    if (f->personality)
        s += KEY_SIZE(JH__AL_K_PERSONALITY) + JH__MP_ADDR_SIZE;
    if (f->lsda)
        s += KEY_SIZE(JH__AL_K_LSDA) + JH__MP_ADDR_SIZE;
    if (f->nra_signed)
        s += KEY_SIZE(JH__AL_K_RA_SIGNED) +
             pairs_size(f->nra_signed, f->ra_signed, sizeof *f->ra_signed);
    if (f->ra_key)
        s += KEY_SIZE(JH__AL_K_RA_KEY) + jh__mp_uint_size(f->ra_key);
    return s;
}

static uint8_t *put_unwind(uint8_t *p, const struct jh__func *f)
{
    p = PUT_KEY(p, JH__AL_K_UNWIND);
    p = put_cstr(p, unwind_name(f->unwind));
    switch (f->unwind) {
    case JH_UNWIND_FRAME_POINTER:
        p = PUT_KEY(p, JH__AL_K_FP_PUSH_END);
        p = jh__mp_put_uint(p, f->fp_push_end);
        p = PUT_KEY(p, JH__AL_K_FP_SET_END);
        p = jh__mp_put_uint(p, f->fp_set_end);
        if (f->nepilogues) {
            p = PUT_KEY(p, JH__AL_K_EPILOGUES);
            p = put_pairs(p, f->nepilogues, f->epilogues, sizeof *f->epilogues);
        }
        break;
    case JH_UNWIND_CFI:
        p = PUT_KEY(p, JH__AL_K_CFI);
        p = jh__mp_put_bin_header(p, f->cfi_len);
        if (f->cfi_len)
            memcpy(p, f->cfi, f->cfi_len);
        p += f->cfi_len;
        break;
    case JH_UNWIND_FRAMELESS:
        p = PUT_KEY(p, JH__AL_K_CFA_OFFSET);
        p = jh__mp_put_uint(p, f->cfa_offset);
        p = PUT_KEY(p, JH__AL_K_CFA_STEPS);
        p = put_pairs(p, f->ncfa_steps, f->cfa_steps, sizeof *f->cfa_steps);
        p = PUT_KEY(p, JH__AL_K_SAVED_REGS);
        p = jh__mp_put_array(p, f->nsaved_regs);
        for (uint32_t i = 0; i < f->nsaved_regs; i++) {
            *p++ = 0x92;
            p = jh__mp_put_uint(p, f->saved_regs[i].reg);
            p = jh__mp_put_int(p, f->saved_regs[i].cfa_offset);
        }
        break;
    case JH_UNWIND_NONE:
    case JH_UNWIND_EH_FRAME:
        break;
    }
    if (f->personality) {
        p = PUT_KEY(p, JH__AL_K_PERSONALITY);
        p = jh__mp_put_addr(p, f->personality);
    }
    if (f->lsda) {
        p = PUT_KEY(p, JH__AL_K_LSDA);
        p = jh__mp_put_addr(p, f->lsda);
    }
    if (f->nra_signed) {
        p = PUT_KEY(p, JH__AL_K_RA_SIGNED);
        p = put_pairs(p, f->nra_signed, f->ra_signed, sizeof *f->ra_signed);
    }
    if (f->ra_key) {
        p = PUT_KEY(p, JH__AL_K_RA_KEY);
        p = jh__mp_put_uint(p, f->ra_key);
    }
    return p;
}

static uint32_t code_add_keys(const struct jh__func *f, const struct jh__al_ref *ref)
{
    return 11 + 2 * (ref != NULL) + unwind_keys(f) + (f->symbol != NULL) +
           (f->prologue_end != 0);
}

size_t jh__al_code_add_size(uint64_t ts, uint32_t tid, uint64_t id, const struct jh__func *f,
                            const struct jh__al_ref *ref)
{
    size_t s = jh__al_head_size(code_add_keys(f, ref), sizeof "code_add" - 1, ts, tid) +
               KEY_SIZE(JH__AL_K_ID) + jh__mp_uint_size(id) +
               KEY_SIZE(JH__AL_K_NAME) + jh__mp_str_size(fname_len(f)) +
               KEY_SIZE(JH__AL_K_START) + jh__mp_uint_size(f->start) +
               KEY_SIZE(JH__AL_K_SIZE) + jh__mp_uint_size(f->size) +
               KEY_SIZE(JH__AL_K_FILES) + jh__mp_cont_hsize(f->nfiles) +
               KEY_SIZE(JH__AL_K_LINES) + jh__mp_cont_hsize(f->nlines) + unwind_size(f);
    if (f->symbol)
        s += KEY_SIZE(JH__AL_K_SYMBOL) + jh__mp_str_size(fsymbol_len(f));
    for (uint32_t i = 0; i < f->nfiles; i++)
        s += cstr_size(f->files[i]);
    /* a row is an array of 4 (one byte) and its four numbers; the common row (a small
     * offset and line, no column, file 0) is 5 bytes */
    for (uint32_t i = 0; i < f->nlines; i++) {
        const struct jh_line *l = &f->lines[i];
        s += (l->offset | l->line | l->column | l->file) < 128 ? 5 :
             1 + jh__mp_uint_size(l->offset) + jh__mp_uint_size(l->line) +
             jh__mp_uint_size(l->column) + jh__mp_uint_size(l->file);
    }
    if (f->prologue_end)
        s += KEY_SIZE(JH__AL_K_PROLOGUE_END) + jh__mp_uint_size(f->prologue_end);
    if (ref)
        s += KEY_SIZE(JH__AL_K_CODE_FILE) + jh__mp_str_size(ref_path_len(ref)) +
             KEY_SIZE(JH__AL_K_CODE_BUILD_ID) + jh__mp_bin_hsize(ref->build_id_len) +
             ref->build_id_len + KEY_SIZE(JH__AL_K_CODE_OFFSET) + jh__mp_uint_size(ref->offset);
    else
        s += KEY_SIZE(JH__AL_K_CODE) + jh__mp_bin_hsize(f->size) + f->size;
    return s;
}

/* jh__al_put_head(p, nkeys, "code_add", 8, ts, tid), its constant bytes in one copy
 * (~40 instructions a record less: node's 2,182 builtins at start, issue 30). */
static inline uint8_t *code_add_head(uint8_t *p, uint32_t nkeys, uint64_t ts, uint32_t tid)
{
    static const char type_time[] = "\xa4" JH__AL_K_TYPE "\xa8" "code_add" "\xa4" JH__AL_K_TIME;
    static const char thread[] = "\xa6" JH__AL_K_THREAD;
    _Static_assert(sizeof JH__AL_K_TYPE == 5 && sizeof JH__AL_K_TIME == 5 &&
                   sizeof JH__AL_K_THREAD == 7, "the keys' fixstr headers above");
    p = jh__mp_put_map(p, nkeys);
    memcpy(p, type_time, sizeof type_time - 1);
    p = jh__mp_put_uint(p + sizeof type_time - 1, ts);
    memcpy(p, thread, sizeof thread - 1);
    return jh__mp_put_uint(p + sizeof thread - 1, tid);
}

/* The keys of a code_add (at most 26 of at most 14 bytes, each with a 1-byte string header)
 * and their numbers and headers (at most 9 bytes each), with room to spare. */
#define CODE_ADD_FIXED 1024

size_t jh__al_code_add_bound(const struct jh__func *f, const struct jh__al_ref *ref)
{
    if (f->nfiles)
        return SIZE_MAX;
    /* a row or a pair: an array header and at most four numbers of 5 bytes (u32) */
    uint64_t s = CODE_ADD_FIXED + (uint64_t)fname_len(f) +
                 (f->symbol ? (uint64_t)fsymbol_len(f) : 0) + 21 * (uint64_t)f->nlines +
                 11 * ((uint64_t)f->nepilogues + f->ncfa_steps + f->nsaved_regs + f->nra_signed) +
                 (f->unwind == JH_UNWIND_CFI ? (uint64_t)f->cfi_len : 0);
    s += ref ? (uint64_t)ref_path_len(ref) + ref->build_id_len : f->size;
    return s > SIZE_MAX / 2 ? SIZE_MAX : (size_t)s;
}

uint8_t *jh__al_put_code_add(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                             const struct jh__func *f, const struct jh__al_ref *ref)
{
    p = code_add_head(p, code_add_keys(f, ref), ts, tid);
    p = PUT_KEY(p, JH__AL_K_ID);
    p = jh__mp_put_uint(p, id);
    p = PUT_KEY(p, JH__AL_K_NAME);
    p = jh__mp_put_str(p, f->name, fname_len(f));
    if (f->symbol) {
        p = PUT_KEY(p, JH__AL_K_SYMBOL);
        p = jh__mp_put_str(p, f->symbol, fsymbol_len(f));
    }
    p = PUT_KEY(p, JH__AL_K_START);
    p = jh__mp_put_uint(p, f->start);
    p = PUT_KEY(p, JH__AL_K_SIZE);
    p = jh__mp_put_uint(p, f->size);
    p = PUT_KEY(p, JH__AL_K_FILES);
    p = jh__mp_put_array(p, f->nfiles);
    for (uint32_t i = 0; i < f->nfiles; i++)
        p = put_cstr(p, f->files[i]);
    p = PUT_KEY(p, JH__AL_K_LINES);
    p = jh__mp_put_array(p, f->nlines);
    for (uint32_t i = 0; i < f->nlines; i++) {
        const struct jh_line *l = &f->lines[i];
        if ((l->offset | l->line | l->column | l->file) < 128) {
            p[0] = 0x94;                /* every number a positive fixint */
            p[1] = (uint8_t)l->offset;
            p[2] = (uint8_t)l->line;
            p[3] = (uint8_t)l->column;
            p[4] = (uint8_t)l->file;
            p += 5;
            continue;
        }
        *p++ = 0x94;
        p = jh__mp_put_uint(p, l->offset);
        p = jh__mp_put_uint(p, l->line);
        p = jh__mp_put_uint(p, l->column);
        p = jh__mp_put_uint(p, l->file);
    }
    if (f->prologue_end) {
        p = PUT_KEY(p, JH__AL_K_PROLOGUE_END);
        p = jh__mp_put_uint(p, f->prologue_end);
    }
    p = put_unwind(p, f);
    if (ref) {
        p = PUT_KEY(p, JH__AL_K_CODE_FILE);
        p = jh__mp_put_str(p, ref->path, ref_path_len(ref));
        p = PUT_KEY(p, JH__AL_K_CODE_BUILD_ID);
        p = jh__mp_put_bin_header(p, ref->build_id_len);
        memcpy(p, ref->build_id, ref->build_id_len);
        p += ref->build_id_len;
        p = PUT_KEY(p, JH__AL_K_CODE_OFFSET);
        p = jh__mp_put_uint(p, ref->offset);
    } else {
        p = PUT_KEY(p, JH__AL_K_CODE);
        p = jh__mp_put_bin_header(p, f->size);
        memcpy(p, (const void *)(uintptr_t)f->start, f->size);
        p += f->size;
    }
    return p;
}

/* code_remove and code_move: id, the old start (a move), start, size. */
static size_t span_size(uint32_t nkeys, size_t tlen, uint64_t ts, uint32_t tid, uint64_t id,
                        const uint64_t *old_start, uint64_t start, uint64_t size)
{
    return jh__al_head_size(nkeys, tlen, ts, tid) + KEY_SIZE(JH__AL_K_ID) + jh__mp_uint_size(id) +
           (old_start ? KEY_SIZE(JH__AL_K_OLD_START) + jh__mp_uint_size(*old_start) : 0) +
           KEY_SIZE(JH__AL_K_START) + jh__mp_uint_size(start) +
           KEY_SIZE(JH__AL_K_SIZE) + jh__mp_uint_size(size);
}

static uint8_t *put_span(uint8_t *p, uint32_t nkeys, const char *type, size_t tlen, uint64_t ts,
                         uint32_t tid, uint64_t id, const uint64_t *old_start, uint64_t start,
                         uint64_t size)
{
    p = jh__al_put_head(p, nkeys, type, tlen, ts, tid);
    p = PUT_KEY(p, JH__AL_K_ID);
    p = jh__mp_put_uint(p, id);
    if (old_start) {
        p = PUT_KEY(p, JH__AL_K_OLD_START);
        p = jh__mp_put_uint(p, *old_start);
    }
    p = PUT_KEY(p, JH__AL_K_START);
    p = jh__mp_put_uint(p, start);
    p = PUT_KEY(p, JH__AL_K_SIZE);
    return jh__mp_put_uint(p, size);
}

#define REMOVE "code_remove"
#define MOVE "code_move"

size_t jh__al_code_remove_size(uint64_t ts, uint32_t tid, uint64_t id, uint64_t start,
                               uint64_t size)
{
    return span_size(6, sizeof REMOVE - 1, ts, tid, id, NULL, start, size);
}

uint8_t *jh__al_put_code_remove(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                                uint64_t start, uint64_t size)
{
    return put_span(p, 6, REMOVE, sizeof REMOVE - 1, ts, tid, id, NULL, start, size);
}

size_t jh__al_code_move_size(uint64_t ts, uint32_t tid, uint64_t id, uint64_t old_start,
                             uint64_t start, uint64_t size)
{
    return span_size(7, sizeof MOVE - 1, ts, tid, id, &old_start, start, size);
}

uint8_t *jh__al_put_code_move(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                              uint64_t old_start, uint64_t start, uint64_t size)
{
    return put_span(p, 7, MOVE, sizeof MOVE - 1, ts, tid, id, &old_start, start, size);
}

size_t jh__al_code_patched_size(uint64_t ts, uint32_t tid, uint64_t id, uint64_t addr,
                                size_t len)
{
    return jh__al_head_size(6, sizeof "code_patched" - 1, ts, tid) +
           KEY_SIZE(JH__AL_K_ID) + jh__mp_uint_size(id) +
           KEY_SIZE(JH__AL_K_ADDRESS) + jh__mp_uint_size(addr) +
           KEY_SIZE(JH__AL_K_DATA) + jh__mp_bin_hsize(len) + len;
}

uint8_t *jh__al_put_code_patched(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                                 uint64_t addr, const void *bytes, size_t len)
{
    p = jh__al_put_head(p, 6, "code_patched", sizeof "code_patched" - 1, ts, tid);
    p = PUT_KEY(p, JH__AL_K_ID);
    p = jh__mp_put_uint(p, id);
    p = PUT_KEY(p, JH__AL_K_ADDRESS);
    p = jh__mp_put_uint(p, addr);
    p = PUT_KEY(p, JH__AL_K_DATA);
    p = jh__mp_put_bin_header(p, len);
    if (len)
        memcpy(p, bytes, len);
    return p + len;
}

/* ---- the same records appended to a jh_buf -------------------------------------------- */

/* Room for n bytes at the buffer's end, or NULL (err set: no memory, or a map larger than
 * a frame can hold). */
static uint8_t *room(struct jh__buf *b, size_t n)
{
    if (n > 0xffffffffu && !b->err)
        b->err = -EOVERFLOW;
    return jh__buf_reserve(b, n) ? NULL : b->p + b->len;
}

/* The put wrote exactly what the size said, or the buffer is marked broken. */
static void placed(struct jh__buf *b, const uint8_t *at, const uint8_t *end, size_t n)
{
    if ((size_t)(end - at) != n)
        b->err = -EPROTO;
    else
        b->len += n;
}

void jh__al_head(struct jh__buf *b, uint32_t nkeys, const char *type, uint64_t ts, uint32_t tid)
{
    size_t tlen = cstr_len(type), n = jh__al_head_size(nkeys, tlen, ts, tid);
    uint8_t *p = room(b, n);
    if (p)
        placed(b, p, jh__al_put_head(p, nkeys, type, tlen, ts, tid), n);
}

void jh__al_code_add(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                     const struct jh__func *f, const struct jh__al_ref *ref)
{
    size_t n = jh__al_code_add_size(ts, tid, id, f, ref);
    uint8_t *p = room(b, n);
    if (p)
        placed(b, p, jh__al_put_code_add(p, ts, tid, id, f, ref), n);
}

void jh__al_code_remove(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                        uint64_t start, uint64_t size)
{
    size_t n = jh__al_code_remove_size(ts, tid, id, start, size);
    uint8_t *p = room(b, n);
    if (p)
        placed(b, p, jh__al_put_code_remove(p, ts, tid, id, start, size), n);
}

void jh__al_code_move(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                      uint64_t old_start, uint64_t start, uint64_t size)
{
    size_t n = jh__al_code_move_size(ts, tid, id, old_start, start, size);
    uint8_t *p = room(b, n);
    if (p)
        placed(b, p, jh__al_put_code_move(p, ts, tid, id, old_start, start, size), n);
}

void jh__al_code_patched(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                         uint64_t addr, const void *bytes, size_t len)
{
    size_t n = jh__al_code_patched_size(ts, tid, id, addr, len);
    uint8_t *p = room(b, n);
    if (p)
        placed(b, p, jh__al_put_code_patched(p, ts, tid, id, addr, bytes, len), n);
}
