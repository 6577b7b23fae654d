/*
 * log_read.c — the audit-log reader: a bounded msgpack decoder and the model of functions,
 * memory snapshots and events built from the records. No library behind it, so the fuzz
 * target (fuzz/fuzz_auditlog.c) and the writer's unit test use exactly this code.
 *
 * A log may be damaged in ways the format expects: the VM crashed with frames reserved but
 * unfinished (first byte still 0x00: skipped by their length), the file ends inside the
 * chunk of zeros grown ahead of the writers, or something overwrote part of it (we scan for
 * the next frame that decodes). Every length is checked against the bytes left before it is
 * used, and nothing recurses on input, so no file can make the reader crash or loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define FRAME_HDR 5

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Header of the value at p: type, scalar, and for str/bin/ext the payload. For containers
 * p/n are set and end is not (the caller walks). Returns the byte after the header or
 * payload, or NULL. */
static const uint8_t *decode_head(const uint8_t *p, const uint8_t *end, struct mpv *v)
{
    if (p >= end)
        return NULL;
    size_t left = (size_t)(end - p) - 1;
    uint8_t c = *p++;
    memset(v, 0, sizeof *v);
    uint64_t len = 0;
    int lenbytes = 0;
#define NEED(k) do { if (left < (size_t)(k)) return NULL; } while (0)
    if (c <= 0x7f) { v->t = MPV_UINT; v->v.u = c; return p; }
    if (c >= 0xe0) { v->t = MPV_INT; v->v.i = (int8_t)c; return p; }
    if ((c & 0xf0) == 0x80) { v->t = MPV_MAP; len = c & 0x0f; goto container; }
    if ((c & 0xf0) == 0x90) { v->t = MPV_ARRAY; len = c & 0x0f; goto container; }
    if ((c & 0xe0) == 0xa0) { v->t = MPV_STR; len = c & 0x1f; goto payload; }
    switch (c) {
    case 0xc0: v->t = MPV_NIL; return p;
    case 0xc2: case 0xc3: v->t = MPV_BOOL; v->v.b = c == 0xc3; return p;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        lenbytes = 1 << (c - 0xcc);
        NEED(lenbytes);
        v->t = MPV_UINT; v->v.u = be(p, lenbytes);
        return p + lenbytes;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        lenbytes = 1 << (c - 0xd0);
        NEED(lenbytes);
        uint64_t u = be(p, lenbytes);
        int sh = 64 - 8 * lenbytes;
        v->t = MPV_INT;
        v->v.i = sh ? (int64_t)(u << sh) >> sh : (int64_t)u;
        return p + lenbytes;
    }
    case 0xca: {
        NEED(4);
        uint32_t u = (uint32_t)be(p, 4);
        float f;
        memcpy(&f, &u, 4);
        v->t = MPV_DOUBLE; v->v.d = f;
        return p + 4;
    }
    case 0xcb: {
        NEED(8);
        uint64_t u = be(p, 8);
        v->t = MPV_DOUBLE;
        memcpy(&v->v.d, &u, 8);
        return p + 8;
    }
    case 0xd9: case 0xda: case 0xdb:
        v->t = MPV_STR; lenbytes = 1 << (c - 0xd9); goto sized;
    case 0xc4: case 0xc5: case 0xc6:
        v->t = MPV_BIN; lenbytes = 1 << (c - 0xc4); goto sized;
    case 0xdc: case 0xdd:
        v->t = MPV_ARRAY; lenbytes = c == 0xdc ? 2 : 4; NEED(lenbytes);
        len = be(p, lenbytes); p += lenbytes; left -= lenbytes; goto container;
    case 0xde: case 0xdf:
        v->t = MPV_MAP; lenbytes = c == 0xde ? 2 : 4; NEED(lenbytes);
        len = be(p, lenbytes); p += lenbytes; left -= lenbytes; goto container;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        v->t = MPV_EXT; len = 1u << (c - 0xd4);
        NEED(1);
        v->ext = (int8_t)*p++; left--;
        goto payload;
    case 0xc7: case 0xc8: case 0xc9:
        v->t = MPV_EXT; lenbytes = 1 << (c - 0xc7); NEED(lenbytes + 1);
        len = be(p, lenbytes); p += lenbytes; left -= lenbytes;
        v->ext = (int8_t)*p++; left--;
        goto payload;
    default:
        return NULL;            /* 0xc1 is never used */
    }
sized:
    NEED(lenbytes);
    len = be(p, lenbytes);
    p += lenbytes;
    left -= lenbytes;
payload:
    NEED(len);
    v->p = p;
    v->n = (uint32_t)len;
    v->end = p + len;
    return p + len;
container:
    /* Every element takes at least one byte: a count larger than what is left is a lie. */
    if (len > left || (v->t == MPV_MAP && len * 2 > left))
        return NULL;
    v->p = p;
    v->n = (uint32_t)len;
    return p;
#undef NEED
}

/* Skip the value at p without recursion: count the values still owed. */
static const uint8_t *skip(const uint8_t *p, const uint8_t *end)
{
    uint64_t owed = 1;
    while (owed) {
        struct mpv v;
        p = decode_head(p, end, &v);
        if (!p)
            return NULL;
        owed--;
        if (v.t == MPV_ARRAY)
            owed += v.n;
        else if (v.t == MPV_MAP)
            owed += 2 * (uint64_t)v.n;
        if (owed > (uint64_t)(end - p))
            return NULL;
    }
    return p;
}

int mp_decode(const uint8_t *p, const uint8_t *end, struct mpv *out)
{
    const uint8_t *q = decode_head(p, end, out);
    if (!q)
        return -1;
    if (out->t == MPV_ARRAY || out->t == MPV_MAP) {
        const uint8_t *e = skip(p, end);
        if (!e)
            return -1;
        out->end = e;
    } else {
        out->end = q;
    }
    return 0;
}

int mp_next(const struct mpv *c, const uint8_t **it, struct mpv *out)
{
    if (*it >= c->end || mp_decode(*it, c->end, out) < 0)
        return -1;
    *it = out->end;
    return 0;
}

bool mp_str_eq(const struct mpv *v, const char *s)
{
    size_t n = strlen(s);
    return v->t == MPV_STR && v->n == n && !memcmp(v->p, s, n);
}

int mp_get(const struct mpv *map, const char *key, struct mpv *out)
{
    if (map->t != MPV_MAP)
        return -1;
    const uint8_t *it = map->p;
    for (uint32_t i = 0; i < map->n; i++) {
        struct mpv k;
        if (mp_next(map, &it, &k) < 0 || mp_next(map, &it, out) < 0)
            return -1;
        if (mp_str_eq(&k, key))
            return 0;
    }
    return -1;
}

bool mp_get_u64(const struct mpv *map, const char *key, uint64_t *out)
{
    struct mpv v;
    if (mp_get(map, key, &v) < 0)
        return false;
    if (v.t == MPV_UINT)
        *out = v.v.u;
    else if (v.t == MPV_EXT && v.n == 8)
        *out = be(v.p, 8);
    else
        return false;
    return true;
}

bool mp_get_str(const struct mpv *map, const char *key, const char **s, uint32_t *n)
{
    struct mpv v;
    if (mp_get(map, key, &v) < 0 || v.t != MPV_STR)
        return false;
    *s = (const char *)v.p;
    *n = v.n;
    return true;
}

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

static char *get_dup(const struct mpv *map, const char *key)
{
    const char *s;
    uint32_t n;
    return mp_get_str(map, key, &s, &n) ? dup_str(s, n) : NULL;
}

/* ---- the model ------------------------------------------------------------------------- */

static const struct { const char *name; enum log_rec_kind kind; } kinds[] = {
    { "header", LR_HEADER }, { "memory", LR_MEMORY }, { "event", LR_EVENT },
    { "code_add", LR_CODE_ADD }, { "code_remove", LR_CODE_REMOVE }, { "code_move", LR_CODE_MOVE },
    { "code_patched", LR_CODE_PATCHED }, { "limit", LR_LIMIT }, { "close", LR_CLOSE },
};

const char *log_kind_name(enum log_rec_kind k)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].kind == k)
            return kinds[i].name;
    return "unknown";
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

struct caps { size_t recs, fns, mems; };

static size_t id_slot(uint64_t id, size_t cap)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static struct log_fn *fn_by_id(struct log_file *lf, uint64_t id)
{
    if (!lf->id_hash_cap)
        return NULL;
    for (size_t i = id_slot(id, lf->id_hash_cap);; i = (i + 1) & (lf->id_hash_cap - 1)) {
        size_t k = lf->id_hash[i];
        if (!k)
            return NULL;
        if (lf->fns[k - 1].id == id)
            return &lf->fns[k - 1];     /* ids are never reused: the one add with this id */
    }
}

/* Remember fns[idx] under its id (a later add with the same id, which a sane log never
 * has, shadows nothing: the first one stays). */
static int index_id(struct log_file *lf, size_t idx)
{
    if ((lf->nfns + 1) * 2 > lf->id_hash_cap) {
        size_t cap = lf->id_hash_cap ? lf->id_hash_cap * 2 : 1024;
        size_t *h = calloc(cap, sizeof *h);
        if (!h)
            return -1;
        for (size_t i = 0; i < lf->id_hash_cap; i++) {
            size_t k = lf->id_hash[i];
            if (!k)
                continue;
            size_t j = id_slot(lf->fns[k - 1].id, cap);
            while (h[j])
                j = (j + 1) & (cap - 1);
            h[j] = k;
        }
        free(lf->id_hash);
        lf->id_hash = h;
        lf->id_hash_cap = cap;
    }
    uint64_t id = lf->fns[idx].id;
    size_t j = id_slot(id, lf->id_hash_cap);
    while (lf->id_hash[j]) {
        if (lf->fns[lf->id_hash[j] - 1].id == id)
            return 0;
        j = (j + 1) & (lf->id_hash_cap - 1);
    }
    lf->id_hash[j] = idx + 1;
    return 0;
}

static int add_fn(struct log_file *lf, struct caps *cap, const struct mpv *m, struct log_rec *r)
{
    struct log_fn fn = { 0 };
    struct mpv v;
    const char *s;
    uint32_t n;
    if (!mp_get_u64(m, "id", &fn.id) || !mp_get_u64(m, "start", &fn.start) ||
        !mp_get_u64(m, "size", &fn.size) || !mp_get_str(m, "name", &s, &n) ||
        mp_get(m, "code", &v) < 0 || v.t != MPV_BIN || v.n != fn.size)
        return -1;
    fn.code = v.p;
    fn.cur_start = fn.start;
    fn.t_add = r->time;
    fn.name = dup_str(s, n);
    fn.unwind = "none";
    if (mp_get_str(m, "unwind", &s, &n)) {
        if (n == 13 && !memcmp(s, "frame_pointer", 13))
            fn.unwind = "frame_pointer";
        else if (n == 3 && !memcmp(s, "cfi", 3))
            fn.unwind = "cfi";
    }
    uint64_t u;
    if (mp_get_u64(m, "fp_push_end", &u))
        fn.fp_push_end = (uint32_t)u;
    if (mp_get_u64(m, "fp_set_end", &u))
        fn.fp_set_end = (uint32_t)u;
    if (mp_get(m, "cfi", &v) == 0 && v.t == MPV_BIN) {
        fn.cfi = v.p;
        fn.cfi_len = v.n;
    }
    if (mp_get(m, "files", &v) == 0 && v.t == MPV_ARRAY && v.n) {
        fn.files = calloc(v.n, sizeof *fn.files);
        const uint8_t *it = v.p;
        struct mpv f;
        for (uint32_t i = 0; fn.files && i < v.n && mp_next(&v, &it, &f) == 0; i++) {
            fn.files[i] = f.t == MPV_STR ? dup_str((const char *)f.p, f.n) : dup_str("?", 1);
            fn.nfiles = i + 1;
        }
    }
    if (mp_get(m, "lines", &v) == 0 && v.t == MPV_ARRAY && v.n) {
        fn.lines = calloc(v.n, sizeof *fn.lines);
        const uint8_t *it = v.p;
        struct mpv row, x;
        for (uint32_t i = 0; fn.lines && i < v.n && mp_next(&v, &it, &row) == 0; i++) {
            if (row.t != MPV_ARRAY || row.n != 4)
                break;
            const uint8_t *jt = row.p;
            uint32_t vals[4];
            int j = 0;
            for (; j < 4 && mp_next(&row, &jt, &x) == 0 && x.t == MPV_UINT && x.v.u <= UINT32_MAX; j++)
                vals[j] = (uint32_t)x.v.u;
            if (j < 4 || vals[3] >= fn.nfiles || vals[0] >= fn.size)
                break;          /* the line table is only as good as its first bad row */
            fn.lines[i] = (struct log_line){ vals[0], vals[1], vals[2], vals[3] };
            fn.nlines = i + 1;
        }
    }
    if (grow((void **)&lf->fns, &cap->fns, lf->nfns, sizeof fn) < 0)
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

static int add_mem(struct log_file *lf, struct caps *cap, const struct mpv *m, struct log_rec *r)
{
    struct log_mem mem = { .time = r->time, .rec = lf->nrecs };
    struct mpv v;
    if (!mp_get_u64(m, "address", &mem.addr) || mp_get(m, "data", &v) < 0 || v.t != MPV_BIN)
        return -1;
    mem.data = v.p;
    mem.size = v.n;
    mem.hint = get_dup(m, "hint");
    if (grow((void **)&lf->mems, &cap->mems, lf->nmems, sizeof mem) < 0) {
        free(mem.hint);
        return -1;
    }
    r->ref = (ptrdiff_t)lf->nmems;
    lf->mems[lf->nmems++] = mem;
    return 0;
}

static void apply(struct log_file *lf, const struct mpv *m, struct log_rec *r)
{
    uint64_t id = 0, u;
    struct log_fn *fn = NULL;
    if (r->kind >= LR_CODE_REMOVE && r->kind <= LR_CODE_PATCHED &&
        mp_get_u64(m, "id", &id) && (fn = fn_by_id(lf, id)))
        r->ref = fn - lf->fns;
    switch (r->kind) {
    case LR_CODE_REMOVE:
        if (fn && !fn->removed) {
            fn->removed = true;
            fn->t_remove = r->time;
            fn->rm_rec = lf->nrecs;
        }
        break;
    case LR_CODE_MOVE:
        if (fn && mp_get_u64(m, "start", &u)) {
            fn->cur_start = u;
            fn->nmoves++;
        }
        break;
    case LR_CODE_PATCHED: {
        struct mpv v;
        if (!fn || !mp_get_u64(m, "address", &u) || mp_get(m, "data", &v) < 0 || v.t != MPV_BIN)
            break;
        /* Patched at the address it had then; the range must lie inside the code. */
        if (u < fn->cur_start || u - fn->cur_start > fn->size || v.n > fn->size - (u - fn->cur_start))
            break;
        if (!fn->patched && (fn->patched = malloc(fn->size ? fn->size : 1)))
            memcpy(fn->patched, fn->code, fn->size);
        if (fn->patched)
            memcpy(fn->patched + (u - fn->cur_start), v.p, v.n);
        fn->npatches++;
        break;
    }
    case LR_LIMIT:
        lf->limit_hit = true;
        break;
    case LR_CLOSE:
        lf->closed = true;
        mp_get_u64(m, "dropped", &lf->dropped);
        break;
    default:
        break;
    }
}

static int take_header(struct log_file *lf, const struct mpv *m, char *err, size_t errlen)
{
    struct mpv v;
    if (mp_get(m, "format", &v) < 0 || !mp_str_eq(&v, "jitherald-auditlog")) {
        snprintf(err, errlen, "not a jitherald audit log (no format field in the header)");
        return -1;
    }
    if (!mp_get_u64(m, "version", &lf->version) || lf->version != 1) {
        snprintf(err, errlen, "audit log format version %llu; this reader knows version 1",
                 (unsigned long long)lf->version);
        return -1;
    }
    mp_get_u64(m, "pid", &lf->pid);
    mp_get_u64(m, "parent_pid", &lf->parent_pid);
    mp_get_u64(m, "time", &lf->t0);
    mp_get_u64(m, "realtime", &lf->realtime);
    mp_get_u64(m, "limit", &lf->limit);
    lf->engine = get_dup(m, "engine");
    lf->exe = get_dup(m, "exe");
    lf->arch = get_dup(m, "arch");
    return 0;
}

/* Is there a complete, decodable frame at off? Sets *len to the map's length. */
static bool frame_ok(const uint8_t *d, size_t size, size_t off, uint32_t *len, struct mpv *m)
{
    if (size - off < FRAME_HDR || d[off] != 0xce)
        return false;
    *len = (uint32_t)be(d + off + 1, 4);
    if (*len > size - off - FRAME_HDR)
        return false;
    const uint8_t *p = d + off + FRAME_HDR;
    struct mpv t;
    return mp_decode(p, p + *len, m) == 0 && m->t == MPV_MAP && m->end == p + *len &&
           mp_get(m, "type", &t) == 0 && t.t == MPV_STR;
}

static int cmp_fn(const void *a, const void *b, void *arg)
{
    const struct log_file *lf = arg;
    const struct log_fn *x = &lf->fns[*(const size_t *)a], *y = &lf->fns[*(const size_t *)b];
    if (x->cur_start != y->cur_start)
        return x->cur_start < y->cur_start ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static int cmp_mem(const void *a, const void *b, void *arg)
{
    const struct log_file *lf = arg;
    const struct log_mem *x = &lf->mems[*(const size_t *)a], *y = &lf->mems[*(const size_t *)b];
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* Without an index (out of memory) the lookups fall back to scanning. */
static void build_indexes(struct log_file *lf)
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

int log_parse(struct log_file *lf, const uint8_t *d, size_t size, char *err, size_t errlen)
{
    memset(lf, 0, sizeof *lf);
    lf->data = d;
    lf->size = size;
    struct caps cap = { 0 };
    uint32_t len;
    struct mpv m;
    if (!frame_ok(d, size, 0, &len, &m)) {
        snprintf(err, errlen, "not a jitherald audit log (no header frame)");
        return -1;
    }
    size_t off = 0;
    while (off < size) {
        if (!frame_ok(d, size, off, &len, &m)) {
            size_t left = size - off;
            if (left >= FRAME_HDR && d[off] == 0) {
                len = (uint32_t)be(d + off + 1, 4);
                if (len && len <= left - FRAME_HDR) {
                    lf->cut++;          /* reserved, never finished: skip by its length */
                    off += FRAME_HDR + len;
                    continue;
                }
            }
            if (d[off] == 0xce && left >= FRAME_HDR && be(d + off + 1, 4) <= left - FRAME_HDR) {
                lf->bad++;              /* complete but not a record we can read: skip it */
                off += FRAME_HDR + be(d + off + 1, 4);
                continue;
            }
            /* Zeros (grown ahead, or a hole) or garbage: find the next frame that decodes. */
            size_t q = off + 1;
            while (q < size && !(d[q] == 0xce && frame_ok(d, size, q, &len, &m)))
                q++;
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
        }
        struct mpv t;
        mp_get(&m, "type", &t);
        struct log_rec r = { .kind = LR_UNKNOWN, .off = off, .map = m, .ref = -1 };
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (mp_str_eq(&t, kinds[i].name))
                r.kind = kinds[i].kind;
        uint64_t u = 0;
        mp_get_u64(&m, "time", &r.time);
        if (mp_get_u64(&m, "thread", &u))
            r.thread = (uint32_t)u;
        off += FRAME_HDR + len;
        if (lf->nrecs == 0) {
            if (r.kind != LR_HEADER) {
                snprintf(err, errlen, "not a jitherald audit log (first record is not a header)");
                log_free(lf);
                return -1;
            }
            if (take_header(lf, &m, err, errlen) < 0) {
                log_free(lf);
                return -1;
            }
        }
        if (grow((void **)&lf->recs, &cap.recs, lf->nrecs, sizeof r) < 0)
            break;
        if ((r.kind == LR_CODE_ADD && add_fn(lf, &cap, &m, &r) < 0) ||
            (r.kind == LR_MEMORY && add_mem(lf, &cap, &m, &r) < 0)) {
            lf->bad++;
            continue;
        }
        apply(lf, &m, &r);
        lf->recs[lf->nrecs++] = r;
    }
    build_indexes(lf);
    return 0;
}

int log_open(struct log_file *lf, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        snprintf(err, errlen, "%s: not a regular non-empty file", path);
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
    if (log_parse(lf, p, size, err, errlen) < 0) {
        munmap(p, size);
        return -1;
    }
    lf->owned = p;
    lf->owned_size = size;
    lf->mapped = true;
    return 0;
}

void log_free(struct log_file *lf)
{
    for (size_t i = 0; i < lf->nfns; i++) {
        struct log_fn *fn = &lf->fns[i];
        free(fn->name);
        for (uint32_t k = 0; k < fn->nfiles; k++)
            free(fn->files[k]);
        free(fn->files);
        free(fn->lines);
        free(fn->patched);
    }
    for (size_t i = 0; i < lf->nmems; i++)
        free(lf->mems[i].hint);
    free(lf->fns);
    free(lf->mems);
    free(lf->recs);
    free(lf->id_hash);
    free(lf->fn_by_start);
    free(lf->mem_by_addr);
    free(lf->engine);
    free(lf->exe);
    free(lf->arch);
    if (lf->mapped)
        munmap(lf->owned, lf->owned_size);
    memset(lf, 0, sizeof *lf);
}

/* ---- queries --------------------------------------------------------------------------- */

/* Better of two functions containing an address, seen from record `at`: one alive then
 * (added at or before `at`, not yet removed) beats one that is not; among equals, the
 * later add. */
static bool fn_better(const struct log_fn *fn, const struct log_fn *best, size_t at)
{
    if (!best)
        return true;
    bool a = fn->rm_rec > at, b = best->rm_rec > at;
    return a != b ? a : fn->rec > best->rec;
}

static bool fn_has(const struct log_fn *fn, uint64_t addr, size_t at)
{
    return fn->rec <= at && addr >= fn->cur_start && addr - fn->cur_start < fn->size;
}

const struct log_fn *log_fn_at(const struct log_file *lf, uint64_t addr, size_t at)
{
    const struct log_fn *best = NULL;
    if (!lf->fn_by_start) {
        for (size_t i = 0; i < lf->nfns; i++)
            if (fn_has(&lf->fns[i], addr, at) && fn_better(&lf->fns[i], best, at))
                best = &lf->fns[i];
        return best;
    }
    /* The last function starting at or below addr, then back while one could still reach. */
    size_t lo = 0, hi = lf->nfns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lf->fns[lf->fn_by_start[mid]].cur_start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        const struct log_fn *fn = &lf->fns[lf->fn_by_start[i]];
        if (addr - fn->cur_start >= lf->fn_maxsize)
            break;
        if (fn_has(fn, addr, at) && fn_better(fn, best, at))
            best = fn;
    }
    return best;
}

const struct log_fn *log_fn_named(const struct log_file *lf, const char *name)
{
    const struct log_fn *best = NULL;
    for (size_t i = 0; i < lf->nfns; i++)
        if (lf->fns[i].name && !strcmp(lf->fns[i].name, name) && (!best || best->removed || !lf->fns[i].removed))
            best = &lf->fns[i];
    return best;
}

static bool mem_has(const struct log_mem *m, uint64_t addr, uint64_t len, size_t at)
{
    return m->rec <= at && addr >= m->addr && addr - m->addr <= m->size && len <= m->size - (addr - m->addr);
}

const struct log_mem *log_mem_at(const struct log_file *lf, uint64_t addr, uint64_t len, size_t at)
{
    const struct log_mem *best = NULL;
    if (!lf->mem_by_addr) {
        for (size_t i = lf->nmems; i-- > 0;)
            if (mem_has(&lf->mems[i], addr, len, at))
                return &lf->mems[i];
        return NULL;
    }
    /* Sorted by (address, record): the last snapshot at or below addr, then back. Within one
     * address, the first hit walking back is the latest at or before `at`. */
    size_t lo = 0, hi = lf->nmems;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct log_mem *m = &lf->mems[lf->mem_by_addr[mid]];
        if (m->addr < addr || (m->addr == addr && m->rec <= at))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        const struct log_mem *m = &lf->mems[lf->mem_by_addr[i]];
        if (addr - m->addr > lf->mem_maxsize)
            break;
        if (mem_has(m, addr, len, at) && (!best || m->rec > best->rec)) {
            best = m;
            /* Skip the older snapshots of this same address: jump to its first one. */
            size_t a = 0, b = i;
            while (a < b) {
                size_t mid = a + (b - a) / 2;
                if (lf->mems[lf->mem_by_addr[mid]].addr < m->addr)
                    a = mid + 1;
                else
                    b = mid;
            }
            i = a;
        }
    }
    return best;
}

const uint8_t *log_fn_code(const struct log_fn *fn)
{
    return fn->patched ? fn->patched : fn->code;
}

const char *log_fn_line(const struct log_fn *fn, uint64_t off, uint32_t *line)
{
    const struct log_line *hit = NULL;
    for (uint32_t i = 0; i < fn->nlines && fn->lines[i].offset <= off; i++)
        hit = &fn->lines[i];
    if (!hit || hit->file >= fn->nfiles)
        return NULL;
    *line = hit->line;
    return fn->files[hit->file];
}

double log_secs(const struct log_file *lf, uint64_t t)
{
    return t >= lf->t0 ? (double)(t - lf->t0) / 1e9 : -(double)(lf->t0 - t) / 1e9;
}

/* ---- printing ------------------------------------------------------------------------- */

static void print_str(FILE *f, const uint8_t *p, uint32_t n)
{
    fputc('"', f);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void mp_print(FILE *f, const struct mpv *v, int depth)
{
    const uint8_t *it = v->p;
    struct mpv a, b;
    switch (v->t) {
    case MPV_NIL: fputs("nil", f); break;
    case MPV_BOOL: fputs(v->v.b ? "true" : "false", f); break;
    case MPV_UINT: fprintf(f, "%llu", (unsigned long long)v->v.u); break;
    case MPV_INT: fprintf(f, "%lld", (long long)v->v.i); break;
    case MPV_DOUBLE: fprintf(f, "%g", v->v.d); break;
    case MPV_STR: print_str(f, v->p, v->n); break;
    case MPV_BIN: fprintf(f, "<%u bytes>", v->n); break;
    case MPV_EXT:
        if (v->ext == 1 && v->n == 8)
            fprintf(f, "0x%llx", (unsigned long long)be(v->p, 8));
        else
            fprintf(f, "<ext %d, %u bytes>", v->ext, v->n);
        break;
    case MPV_ARRAY:
        if (depth > 8) { fputs("[...]", f); break; }
        fputc('[', f);
        for (uint32_t i = 0; i < v->n && mp_next(v, &it, &a) == 0; i++) {
            if (i) fputs(", ", f);
            mp_print(f, &a, depth + 1);
        }
        fputc(']', f);
        break;
    case MPV_MAP:
        if (depth > 8) { fputs("{...}", f); break; }
        fputc('{', f);
        for (uint32_t i = 0; i < v->n && mp_next(v, &it, &a) == 0 && mp_next(v, &it, &b) == 0; i++) {
            if (i) fputs(", ", f);
            if (a.t == MPV_STR)
                text_safe(f, a.p, a.n);
            else
                mp_print(f, &a, depth + 1);
            fputc('=', f);
            mp_print(f, &b, depth + 1);
        }
        fputc('}', f);
        break;
    }
}

void text_safe(FILE *f, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        fputc(c[i] < 0x20 || c[i] == 0x7f ? '?' : c[i], f);
}

void html_escape(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        switch (s[i]) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
                fputc('?', f);      /* HTML has no character reference for most of these */
            else
                fputc(s[i], f);
        }
    }
}
