/*
 * auditlog_read.c — see auditlog_read.h: frames into records, records into the model.
 *
 * The damage the format expects: the VM crashed with frames reserved but unfinished (first
 * byte still 0x00: skipped by their length), the file ends inside the chunk of zeros grown
 * ahead of the writers, or something overwrote part of it (we scan for the next frame that
 * decodes). Every string that reaches the model has its control characters replaced: they
 * go to terminals, HTML and perf's files.
 */
#include "lib/auditlog_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "base/vec.h"
#include "lib/auditlog_resync.h"
#include "lib/hash.h"

/* A NUL-terminated copy (names may hold any byte but NUL; a NUL inside ends them here).
 * Control characters become '?': these strings reach terminals, HTML and perf's files,
 * and a log must not be able to send escape sequences to whoever reads it. */
static char *dup_str(const char *s, uint32_t n)
{
    char *c = malloc((size_t)n + 1);
    if (c) {
        for (uint32_t i = 0; i < n; i++)
            c[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
        c[n] = 0;
    }
    return c;
}

static char *get_dup(const struct jhr_mp *map, const char *key)
{
    const char *s;
    uint32_t n;
    return jhr_mp_get_str(map, key, &s, &n) ? dup_str(s, n) : NULL;
}

static const char *const kind_names[] = {
#define NAME(e, s) [JHR_AL_##e] = s,
    JH__AL_RECORDS(NAME)
#undef NAME
};

const char *jhr_al_kind_name(enum jhr_al_kind k)
{
    return k < JHR_AL_UNKNOWN ? kind_names[k] : "unknown";
}

struct caps { size_t recs, fns, mems; };

/* The high bits: ids are small consecutive numbers, whose low bits of a product repeat. */
static uint64_t id_hash(uint64_t id) { return jhr_hash_u64(id) >> 20; }

static uint64_t fn_hash(const void *ctx, size_t i)
{
    return id_hash(((const struct jhr_al *)ctx)->fns[i].id);
}

static bool fn_is(const void *ctx, size_t i, const void *id)
{
    return ((const struct jhr_al *)ctx)->fns[i].id == *(const uint64_t *)id;
}

/* ids are never reused: the one add with this id */
static struct jhr_al_fn *fn_by_id(struct jhr_al *lf, uint64_t id)
{
    size_t i = jhr_itab_find(&lf->ids, id_hash(id), fn_is, lf, &id);
    return i ? &lf->fns[i - 1] : NULL;
}

/* Remember fns[idx] under its id (a later add with the same id, which a sane log never
 * has, shadows nothing: the first one stays). */
static int index_id(struct jhr_al *lf, size_t idx)
{
    uint64_t id = lf->fns[idx].id;
    if (jhr_itab_grow(&lf->ids, fn_hash, lf))
        return -1;
    if (!jhr_itab_find(&lf->ids, id_hash(id), fn_is, lf, &id))
        jhr_itab_put(&lf->ids, id_hash(id), idx);
    return 0;
}

/* An array of [a, b] pairs (a uint, b a uint or, with sign, an int that fits int32) into
 * *out (n pairs of uint32, stride bytes apart); as many as are good from the first on. */
static uint32_t get_pairs(const struct jhr_mp *m, const char *key, bool sign, void **out,
                          size_t stride)
{
    struct jhr_mp v, row, x;
    *out = NULL;
    if (jhr_mp_get(m, key, &v) < 0 || v.t != JHR_MP_ARRAY || !v.n || !(*out = calloc(v.n, stride)))
        return 0;
    const uint8_t *it = v.p;
    uint32_t n = 0;
    for (; n < v.n && jhr_mp_next(&v, &it, &row) == 0 && row.t == JHR_MP_ARRAY && row.n == 2; n++) {
        const uint8_t *jt = row.p;
        uint32_t pair[2];
        if (jhr_mp_next(&row, &jt, &x) || x.t != JHR_MP_UINT || x.v.u > UINT32_MAX)
            break;
        pair[0] = (uint32_t)x.v.u;
        if (jhr_mp_next(&row, &jt, &x))
            break;
        if (x.t == JHR_MP_UINT && x.v.u <= (sign ? (uint64_t)INT32_MAX : UINT32_MAX))
            pair[1] = (uint32_t)x.v.u;
        else if (sign && x.t == JHR_MP_INT && x.v.i >= INT32_MIN && x.v.i < 0)
            pair[1] = (uint32_t)(int32_t)x.v.i;
        else
            break;
        memcpy((char *)*out + n * stride, pair, sizeof pair);
    }
    return n;
}

static uint64_t get_addr(const struct jhr_mp *m, const char *key)
{
    struct jhr_mp v;
    uint64_t a = 0;
    if (jhr_mp_get(m, key, &v) == 0 && !jhr_mp_addr(&v, &a))
        a = 0;
    return a;
}

/* The unwind description of a code_add (the encoders validate it again before use). */
static void get_unwind(const struct jhr_mp *m, struct jhr_al_fn *fn)
{
    struct jhr_mp v;
    uint64_t u;
    fn->unwind = JH__AL_UNWIND_NONE;
    if (jhr_mp_get(m, JH__AL_K_UNWIND, &v) == 0) {
        if (jhr_mp_str_eq(&v, JH__AL_UNWIND_FRAME_POINTER))
            fn->unwind = JH__AL_UNWIND_FRAME_POINTER;
        else if (jhr_mp_str_eq(&v, JH__AL_UNWIND_CFI))
            fn->unwind = JH__AL_UNWIND_CFI;
        else if (jhr_mp_str_eq(&v, JH__AL_UNWIND_FRAMELESS))
            fn->unwind = JH__AL_UNWIND_FRAMELESS;
    }
    if (jhr_mp_get_u64(m, JH__AL_K_FP_PUSH_END, &u))
        fn->fp_push_end = (uint32_t)u;
    if (jhr_mp_get_u64(m, JH__AL_K_FP_SET_END, &u))
        fn->fp_set_end = (uint32_t)u;
    if (jhr_mp_get(m, JH__AL_K_CFI, &v) == 0 && v.t == JHR_MP_BIN) {
        fn->cfi = v.p;
        fn->cfi_len = v.n;
    }
    if (jhr_mp_get_u64(m, JH__AL_K_CFA_OFFSET, &u) && u <= UINT32_MAX)
        fn->cfa_offset = (uint32_t)u;
    fn->ncfa_steps = get_pairs(m, JH__AL_K_CFA_STEPS, false, (void **)&fn->cfa_steps,
                               sizeof *fn->cfa_steps);
    fn->nsaved_regs = get_pairs(m, JH__AL_K_SAVED_REGS, true, (void **)&fn->saved_regs,
                                sizeof *fn->saved_regs);
    fn->nepilogues = get_pairs(m, JH__AL_K_EPILOGUES, false, (void **)&fn->epilogues,
                               sizeof *fn->epilogues);
    fn->personality = get_addr(m, JH__AL_K_PERSONALITY);
    fn->lsda = get_addr(m, JH__AL_K_LSDA);
    fn->nra_signed = get_pairs(m, JH__AL_K_RA_SIGNED, false, (void **)&fn->ra_signed,
                               sizeof *fn->ra_signed);
    if (jhr_mp_get_u64(m, JH__AL_K_RA_KEY, &u) && u <= 1)
        fn->ra_key = (uint32_t)u;
}

static int add_fn(struct jhr_al *lf, struct caps *cap, const struct jhr_mp *m, struct jhr_al_rec *r)
{
    struct jhr_al_fn fn = { 0 };
    struct jhr_mp v;
    const char *s;
    uint32_t n;
    if (!jhr_mp_get_u64(m, JH__AL_K_ID, &fn.id) || !jhr_mp_get_u64(m, JH__AL_K_START, &fn.start) ||
        !jhr_mp_get_u64(m, JH__AL_K_SIZE, &fn.size) || !jhr_mp_get_str(m, JH__AL_K_NAME, &s, &n))
        return -1;
    if (jhr_mp_get(m, JH__AL_K_CODE, &v) == 0) {
        if (v.t != JHR_MP_BIN || v.n != fn.size)
            return -1;
        fn.code = v.p;
    } else {    /* by reference: read from the file later (jhr_al_read_code_files) */
        uint32_t pn;
        const char *ps;
        if (jhr_mp_get(m, JH__AL_K_CODE_BUILD_ID, &v) < 0 || v.t != JHR_MP_BIN || !v.n ||
            v.n > JH__AL_BUILD_ID_MAX || !jhr_mp_get_u64(m, JH__AL_K_CODE_OFFSET, &fn.code_offset) ||
            !jhr_mp_get_str(m, JH__AL_K_CODE_FILE, &ps, &pn) || !pn ||
            !(fn.code_file = dup_str(ps, pn)))
            return -1;
        fn.code_id = v.p;
        fn.code_idlen = v.n;
    }
    fn.cur_start = fn.start;
    fn.t_add = r->time;
    fn.name = dup_str(s, n);
    if (jhr_mp_get_str(m, JH__AL_K_SYMBOL, &s, &n))
        fn.symbol = dup_str(s, n);
    uint64_t u;
    if (jhr_mp_get_u64(m, JH__AL_K_PROLOGUE_END, &u) && u < fn.size)
        fn.prologue_end = (uint32_t)u;
    get_unwind(m, &fn);
    if (jhr_mp_get(m, JH__AL_K_FILES, &v) == 0 && v.t == JHR_MP_ARRAY && v.n) {
        fn.files = calloc(v.n, sizeof *fn.files);
        const uint8_t *it = v.p;
        struct jhr_mp f;
        for (uint32_t i = 0; fn.files && i < v.n && jhr_mp_next(&v, &it, &f) == 0; i++) {
            fn.files[i] = f.t == JHR_MP_STR ? dup_str((const char *)f.p, f.n) : dup_str("?", 1);
            fn.nfiles = i + 1;
        }
    }
    if (jhr_mp_get(m, JH__AL_K_LINES, &v) == 0 && v.t == JHR_MP_ARRAY && v.n) {
        fn.lines = calloc(v.n, sizeof *fn.lines);
        const uint8_t *it = v.p;
        struct jhr_mp row, x;
        for (uint32_t i = 0; fn.lines && i < v.n && jhr_mp_next(&v, &it, &row) == 0; i++) {
            if (row.t != JHR_MP_ARRAY || row.n != 4)
                break;
            const uint8_t *jt = row.p;
            uint32_t vals[4];
            int j = 0;
            for (; j < 4 && jhr_mp_next(&row, &jt, &x) == 0 && x.t == JHR_MP_UINT && x.v.u <= UINT32_MAX; j++)
                vals[j] = (uint32_t)x.v.u;
            if (j < 4 || vals[3] >= fn.nfiles || vals[0] >= fn.size)
                break;          /* the line table is only as good as its first bad row */
            fn.lines[i] = (struct jhr_al_line){ vals[0], vals[1], vals[2], vals[3] };
            fn.nlines = i + 1;
        }
    }
    if (JH__VEC_RESERVE(lf->fns, cap->fns, lf->nfns + 1))
        return -1;
    fn.rec = lf->nrecs;
    fn.rm_rec = SIZE_MAX;
    r->ref = (ptrdiff_t)lf->nfns;
    lf->fns[lf->nfns] = fn;
    if (index_id(lf, lf->nfns) < 0)
        return -1;
    lf->nfns++;
    return 0;
}

static int add_mem(struct jhr_al *lf, struct caps *cap, const struct jhr_mp *m, struct jhr_al_rec *r)
{
    struct jhr_al_mem mem = { .time = r->time, .rec = lf->nrecs };
    struct jhr_mp v;
    if (!jhr_mp_get_u64(m, JH__AL_K_ADDRESS, &mem.addr) || jhr_mp_get(m, JH__AL_K_DATA, &v) < 0 || v.t != JHR_MP_BIN)
        return -1;
    mem.data = v.p;
    mem.size = v.n;
    mem.hint = get_dup(m, JH__AL_K_HINT);
    if (JH__VEC_RESERVE(lf->mems, cap->mems, lf->nmems + 1)) {
        free(mem.hint);
        return -1;
    }
    r->ref = (ptrdiff_t)lf->nmems;
    lf->mems[lf->nmems++] = mem;
    return 0;
}

static void apply(struct jhr_al *lf, const struct jhr_mp *m, struct jhr_al_rec *r)
{
    uint64_t id = 0, u;
    struct jhr_al_fn *fn = NULL;
    if (r->kind >= JHR_AL_CODE_REMOVE && r->kind <= JHR_AL_CODE_PATCHED &&
        jhr_mp_get_u64(m, JH__AL_K_ID, &id) && (fn = fn_by_id(lf, id)))
        r->ref = fn - lf->fns;
    switch (r->kind) {
    case JHR_AL_CODE_REMOVE:
        if (fn && !fn->removed) {
            fn->removed = true;
            fn->t_remove = r->time;
            fn->rm_rec = lf->nrecs;
        }
        break;
    case JHR_AL_CODE_MOVE:
        if (fn && jhr_mp_get_u64(m, JH__AL_K_START, &u)) {
            fn->cur_start = u;
            fn->nmoves++;
        }
        break;
    case JHR_AL_CODE_PATCHED:
        if (fn && fn->code)
            jhr_al_patch(fn, m);
        else if (fn)
            fn->npatches++;     /* applied once its bytes are read from its file */
        break;
    case JHR_AL_LIMIT:
        lf->limit_hit = true;
        break;
    case JHR_AL_CLOSE:
        lf->closed = true;
        jhr_mp_get_u64(m, JH__AL_K_DROPPED, &lf->dropped);
        break;
    default:
        break;
    }
}

void jhr_al_patch(struct jhr_al_fn *fn, const struct jhr_mp *m)
{
    struct jhr_mp v;
    uint64_t u;
    if (!jhr_mp_get_u64(m, JH__AL_K_ADDRESS, &u) || jhr_mp_get(m, JH__AL_K_DATA, &v) < 0 ||
        v.t != JHR_MP_BIN)
        return;
    /* Patched at the address it had then; the range must lie inside the code. */
    if (u < fn->cur_start || u - fn->cur_start > fn->size || v.n > fn->size - (u - fn->cur_start))
        return;
    if (!fn->patched && (fn->patched = malloc(fn->size ? fn->size : 1)))
        memcpy(fn->patched, fn->code, fn->size);
    if (fn->patched)
        memcpy(fn->patched + (u - fn->cur_start), v.p, v.n);
    fn->npatches++;
}

static int take_header(struct jhr_al *lf, const struct jhr_mp *m, char *err, size_t errlen)
{
    struct jhr_mp v;
    if (jhr_mp_get(m, JH__AL_K_FORMAT, &v) < 0 || !jhr_mp_str_eq(&v, JH__AL_FORMAT)) {
        snprintf(err, errlen, "not a jitherald audit log (no format field in the header)");
        return -1;
    }
    if (!jhr_mp_get_u64(m, JH__AL_K_VERSION, &lf->version) || lf->version != JH__AL_VERSION) {
        snprintf(err, errlen, "audit log format version %llu; this reader knows version %d",
                 (unsigned long long)lf->version, JH__AL_VERSION);
        return -1;
    }
    jhr_mp_get_u64(m, JH__AL_K_PID, &lf->pid);
    jhr_mp_get_u64(m, JH__AL_K_PARENT_PID, &lf->parent_pid);
    jhr_mp_get_u64(m, JH__AL_K_TIME, &lf->t0);
    jhr_mp_get_u64(m, JH__AL_K_REALTIME, &lf->realtime);
    jhr_mp_get_u64(m, JH__AL_K_LIMIT, &lf->limit);
    jhr_mp_get_u64(m, JH__AL_K_PAC_MASK, &lf->pac_mask);
    lf->engine = get_dup(m, JH__AL_K_ENGINE);
    lf->exe = get_dup(m, JH__AL_K_EXE);
    lf->arch = get_dup(m, JH__AL_K_ARCH);
    return 0;
}

/* Is there a complete, decodable frame at off? Sets *len to the map's length. */
static bool frame_ok(const uint8_t *d, size_t size, size_t off, uint32_t *len, struct jhr_mp *m)
{
    if (size - off < JH__AL_FRAME_HDR || d[off] != JH__AL_FRAME_MARK)
        return false;
    *len = (uint32_t)jhr_mp_be(d + off + 1, 4);
    if (*len > size - off - JH__AL_FRAME_HDR)
        return false;
    const uint8_t *p = d + off + JH__AL_FRAME_HDR;
    struct jhr_mp t;
    return jhr_mp_decode(p, p + *len, m) == 0 && m->t == JHR_MP_MAP && m->end == p + *len &&
           jhr_mp_get(m, JH__AL_K_TYPE, &t) == 0 && t.t == JHR_MP_STR;
}

/* Order by address, then by record: the indexes' order. */
static int by_addr_rec(uint64_t xa, size_t xr, uint64_t ya, size_t yr)
{
    if (xa != ya)
        return xa < ya ? -1 : 1;
    return xr < yr ? -1 : xr > yr;
}

static int cmp_fn(const void *a, const void *b, void *arg)
{
    const struct jhr_al *lf = arg;
    const struct jhr_al_fn *x = &lf->fns[*(const size_t *)a], *y = &lf->fns[*(const size_t *)b];
    return by_addr_rec(x->cur_start, x->rec, y->cur_start, y->rec);
}

static int cmp_mem(const void *a, const void *b, void *arg)
{
    const struct jhr_al *lf = arg;
    const struct jhr_al_mem *x = &lf->mems[*(const size_t *)a], *y = &lf->mems[*(const size_t *)b];
    return by_addr_rec(x->addr, x->rec, y->addr, y->rec);
}

/* Without an index (out of memory) the lookups fall back to scanning. */
static void build_indexes(struct jhr_al *lf)
{
    if (lf->nfns && (lf->fn_by_start = malloc(lf->nfns * sizeof(size_t)))) {
        for (size_t i = 0; i < lf->nfns; i++) {
            lf->fn_by_start[i] = i;
            if (lf->fns[i].size > lf->fn_maxsize)
                lf->fn_maxsize = lf->fns[i].size;
        }
        qsort_r(lf->fn_by_start, lf->nfns, sizeof(size_t), cmp_fn, lf);
    }
    if (lf->nmems && (lf->mem_by_addr = malloc(lf->nmems * sizeof(size_t)))) {
        for (size_t i = 0; i < lf->nmems; i++) {
            lf->mem_by_addr[i] = i;
            if (lf->mems[i].size > lf->mem_maxsize)
                lf->mem_maxsize = lf->mems[i].size;
        }
        qsort_r(lf->mem_by_addr, lf->nmems, sizeof(size_t), cmp_mem, lf);
    }
}

int jhr_al_parse(struct jhr_al *lf, const uint8_t *d, size_t size, char *err, size_t errlen)
{
    memset(lf, 0, sizeof *lf);
    lf->data = d;
    lf->size = size;
    struct caps cap = { 0 };
    uint32_t len;
    struct jhr_mp m;
    if (!frame_ok(d, size, 0, &len, &m)) {
        snprintf(err, errlen, "not a jitherald audit log (no header frame)");
        return -1;
    }
    size_t off = 0;
    struct jhr_resync rs;
    jhr_resync_init(&rs, d, size);
    while (off < size) {
        if (!frame_ok(d, size, off, &len, &m)) {
            size_t left = size - off;
            if (left >= JH__AL_FRAME_HDR && d[off] == 0) {
                len = (uint32_t)jhr_mp_be(d + off + 1, 4);
                if (len && len <= left - JH__AL_FRAME_HDR) {
                    lf->cut++;          /* reserved, never finished: skip by its length */
                    off += JH__AL_FRAME_HDR + len;
                    continue;
                }
            }
            if (d[off] == JH__AL_FRAME_MARK && left >= JH__AL_FRAME_HDR && jhr_mp_be(d + off + 1, 4) <= left - JH__AL_FRAME_HDR) {
                lf->bad++;              /* complete but not a record we can read: skip it */
                off += JH__AL_FRAME_HDR + jhr_mp_be(d + off + 1, 4);
                continue;
            }
            /* Zeros (grown ahead, or a hole) or garbage: find the next frame that decodes,
             * in one pass however the garbage looks (auditlog_resync.h). */
            size_t q = jhr_resync_next(&rs, off);
            lf->resync_steps = rs.steps;
            bool zeros = true;
            for (size_t k = off; k < q && zeros; k++)
                zeros = d[k] == 0;
            if (q >= size) {
                if (!zeros)
                    lf->cut++;          /* a frame cut off by the end of the file */
                break;
            }
            lf->resyncs++;
            off = q;
            if (!frame_ok(d, size, off, &len, &m))
                continue;       /* never: the resync's frames are frame_ok's; if so, skipped */
        }
        struct jhr_mp t;
        jhr_mp_get(&m, JH__AL_K_TYPE, &t);
        struct jhr_al_rec r = { .kind = JHR_AL_UNKNOWN, .off = off, .map = m, .ref = -1 };
        for (int k = 0; k < JHR_AL_UNKNOWN; k++)
            if (jhr_mp_str_eq(&t, kind_names[k]))
                r.kind = (enum jhr_al_kind)k;
        uint64_t u = 0;
        jhr_mp_get_u64(&m, JH__AL_K_TIME, &r.time);
        if (jhr_mp_get_u64(&m, JH__AL_K_THREAD, &u))
            r.thread = (uint32_t)u;
        off += JH__AL_FRAME_HDR + len;
        if (lf->nrecs == 0) {
            if (r.kind != JHR_AL_HEADER) {
                snprintf(err, errlen, "not a jitherald audit log (first record is not a header)");
                jhr_resync_free(&rs);
                jhr_al_free(lf);
                return -1;
            }
            if (take_header(lf, &m, err, errlen) < 0) {
                jhr_resync_free(&rs);
                jhr_al_free(lf);
                return -1;
            }
        }
        if (JH__VEC_RESERVE(lf->recs, cap.recs, lf->nrecs + 1))
            break;
        if ((r.kind == JHR_AL_CODE_ADD && add_fn(lf, &cap, &m, &r) < 0) ||
            (r.kind == JHR_AL_MEMORY && add_mem(lf, &cap, &m, &r) < 0)) {
            lf->bad++;
            continue;
        }
        apply(lf, &m, &r);
        lf->recs[lf->nrecs++] = r;
    }
    jhr_resync_free(&rs);
    build_indexes(lf);
    return 0;
}

int jhr_al_open(struct jhr_al *lf, const char *path, char *err, size_t errlen)
{
    int fd = jh__open_regular(path, 0);
    if (fd < 0 && fd != -EINVAL) {
        snprintf(err, errlen, "%s: %s", path, strerror(-fd));
        return -1;
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        snprintf(err, errlen, "%s: not a regular non-empty file", path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        return -1;
    }
    if (jhr_al_parse(lf, p, size, err, errlen) < 0) {
        munmap(p, size);
        return -1;
    }
    lf->owned = p;
    lf->owned_size = size;
    lf->mapped = true;
    jhr_al_read_code_files(lf);
    return 0;
}

void jhr_al_free(struct jhr_al *lf)
{
    for (size_t i = 0; i < lf->nfns; i++) {
        struct jhr_al_fn *fn = &lf->fns[i];
        free(fn->name);
        for (uint32_t k = 0; k < fn->nfiles; k++)
            free(fn->files[k]);
        free(fn->files);
        free(fn->lines);
        free(fn->patched);
        free(fn->symbol);
        free(fn->code_file);
        free(fn->cfa_steps);
        free(fn->saved_regs);
        free(fn->epilogues);
        free(fn->ra_signed);
    }
    for (size_t i = 0; i < lf->nmems; i++)
        free(lf->mems[i].hint);
    free(lf->fns);
    free(lf->mems);
    free(lf->recs);
    jhr_itab_free(&lf->ids);
    free(lf->fn_by_start);
    free(lf->mem_by_addr);
    free(lf->engine);
    free(lf->exe);
    free(lf->arch);
    jhr_al_cfiles_free(lf);
    if (lf->mapped)
        munmap(lf->owned, lf->owned_size);
    memset(lf, 0, sizeof *lf);
}
