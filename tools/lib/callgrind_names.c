/*
 * callgrind_names.c — see callgrind_names.h.
 */
#include "lib/callgrind_names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/vec.h"
#include "lib/hash.h"

static uint64_t key_of(uint64_t id, const char *str)
{
    return id ? jhr_hash_u64(id) : jhr_hash_str(str, strlen(str)) | 1;
}

struct jhr_cg_key { uint64_t id; const char *str; };

static uint64_t name_hash(const void *ctx, size_t i)
{
    const struct jhr_cg_name *nm = &((const struct jhr_cg_table *)ctx)->v[i];
    return key_of(nm->id, nm->str ? nm->str : "");
}

static bool name_is(const void *ctx, size_t i, const void *key)
{
    const struct jhr_cg_name *nm = &((const struct jhr_cg_table *)ctx)->v[i];
    const struct jhr_cg_key *k = key;
    return k->id ? nm->id == k->id : !nm->id && nm->str && !strcmp(nm->str, k->str);
}

static long find_name(struct jhr_cg_table *t, uint64_t id, const char *str)
{
    struct jhr_cg_key k = { id, str };
    return (long)jhr_itab_find(&t->idx, key_of(id, str), name_is, t, &k) - 1;
}

long jhr_cg_add(struct jhr_cg_table *t, uint64_t id, char *str)
{
    if (jhr_itab_grow(&t->idx, name_hash, t) || JH__VEC_RESERVE(t->v, t->cap, t->n + 1))
        return -ENOMEM;
    t->v[t->n] = (struct jhr_cg_name){ .id = id, .str = str, .jit_file = -1, .canon = t->n };
    jhr_itab_put(&t->idx, key_of(id, str ? str : ""), t->n);
    if (id > t->max_id)
        t->max_id = id;
    return (long)t->n++;
}

/* Callgrind names code it has no symbol for "0x" + hex address (valgrind 3.19
 * callgrind/fn.c: "%#016lx"). The part [p, end) of a name: is it one, and in JIT code? */
static const struct jhr_sym_fn *jit_part(const struct jhr_syms *s, const char *p,
                                         const char *end, uint64_t *addr)
{
    if (end - p < 3 || p[0] != '0' || p[1] != 'x' || end - p > 18)
        return NULL;
    uint64_t v = 0;
    for (const char *c = p + 2; c < end; c++) {
        int d = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 :
                *c >= 'A' && *c <= 'F' ? *c - 'A' + 10 : -1;
        if (d < 0)
            return NULL;
        v = v << 4 | (uint64_t)d;
    }
    *addr = v;
    return jhr_syms_find(s, v);
}

/* nm's name with every part in JIT code named: "0x..'2'0x..'main" -> "fib'2'fib'main"
 * (callgrind/dump.c writes a context as fn[0], "'N" for recursion depth N, then "'caller"
 * for each of --separate-callers). nm->jit is the JIT function of the first part. */
static int name_parts(const struct jhr_syms *s, struct jhr_cg_name *nm)
{
    const char *p = nm->str;
    struct jh__buf b = { 0 };
    bool any = false;
    for (int part = 0;; part++) {
        const char *end = strchr(p, '\'');
        if (!end)
            end = p + strlen(p);
        uint64_t addr;
        const struct jhr_sym_fn *f = jit_part(s, p, end, &addr);
        if (part)
            jh__buf_u8(&b, '\'');
        if (f) {
            const char *n = s->strs[f->name];
            jh__buf_put(&b, n, strlen(n));
            any = true;
            if (!part)
                nm->jit = f, nm->addr = addr;
        } else {
            jh__buf_put(&b, p, (size_t)(end - p));
        }
        if (!*end)
            break;
        p = end + 1;
    }
    jh__buf_u8(&b, 0);
    int err = b.err;
    if (any && !err)
        nm->out = (char *)b.p;      /* the buffer's bytes are ours: freed with the name */
    else
        jh__buf_free(&b);
    return err;
}

static uint64_t canon_hash(const void *ctx, size_t i)
{
    const char *o = ((const struct jhr_cg_table *)ctx)->v[i].out;
    return o ? jhr_hash_str(o, strlen(o)) : 0;     /* NULL: redefined since */
}

static bool canon_is(const void *ctx, size_t i, const void *key)
{
    const char *o = ((const struct jhr_cg_table *)ctx)->v[i].out;
    return o && !strcmp(o, key);
}

/* Pieces with the same new name are written with the first one's id. */
static int canonical(struct jhr_cg_names *w, size_t i)
{
    struct jhr_cg_table *t = &w->t[JHR_CG_FN];
    const char *o = t->v[i].out;
    uint64_t h = jhr_hash_str(o, strlen(o));
    size_t c = jhr_itab_find(&w->canon, h, canon_is, t, o);
    if (c) {
        t->v[i].canon = c - 1;
        return 0;
    }
    if (jhr_itab_grow(&w->canon, canon_hash, t))
        return -ENOMEM;
    jhr_itab_put(&w->canon, h, i);
    return 0;
}

/* "(id) name", "(id)" or "name": the name's index (defining it if new), -ENOMEM, or -1
 * for a reference to an id never defined. */
long jhr_cg_parse(struct jhr_cg_names *w, int ns, char *v)
{
    struct jhr_cg_table *t = &w->t[ns];
    uint64_t id = 0;
    char *str = v;
    if (v[0] == '(') {
        char *c = v + 1;
        while (*c >= '0' && *c <= '9' && id < (UINT64_MAX - 9) / 10)
            id = id * 10 + (uint64_t)(*c++ - '0');
        if (*c == ')' && id) {
            str = c + 1;
            while (*str == ' ' || *str == '\t')
                str++;
        } else {
            id = 0;
        }
    }
    long i = find_name(t, id, str);
    if (i >= 0 && (!id || !*str || (t->v[i].str && !strcmp(t->v[i].str, str))))
        return i;
    if (id && !*str && i < 0) {
        long n = jhr_cg_add(t, id, NULL);     /* referenced before defined: keep the id */
        return n;
    }
    char *dup = strdup(str);
    if (!dup)
        return -ENOMEM;
    if (i >= 0) {                           /* (re)definition of a known id */
        free(t->v[i].str);
        t->v[i].str = dup;
    } else if ((i = jhr_cg_add(t, id, dup)) < 0) {
        free(dup);
        return i;
    }
    struct jhr_cg_name *nm = &t->v[i];
    nm->jit = NULL;
    free(nm->out);
    nm->out = NULL;
    nm->canon = (size_t)i;
    if (ns == JHR_CG_FN && w->s->nfns) {
        int err = name_parts(w->s, nm);
        if (!err && nm->out)
            err = canonical(w, (size_t)i);
        if (err)
            return err;
    }
    return i;
}

int jhr_cg_ns(const char *key, size_t n)
{
#define K(s) (n == sizeof(s) - 1 && !memcmp(key, s, n))
    if (K("fn") || K("cfn") || K("jfn"))
        return JHR_CG_FN;
    if (K("fl") || K("fi") || K("fe") || K("cfi") || K("cfl") || K("jfi"))
        return JHR_CG_FL;
    if (K("ob") || K("cob"))
        return JHR_CG_OB;
    return -1;
#undef K
}

void jhr_cg_names_free(struct jhr_cg_names *w)
{
    for (int ns = 0; ns < JHR_CG_NS; ns++) {
        for (size_t i = 0; i < w->t[ns].n; i++) {
            free(w->t[ns].v[i].str);
            free(w->t[ns].v[i].out);
        }
        free(w->t[ns].v);
        jhr_itab_free(&w->t[ns].idx);
    }
    jhr_itab_free(&w->canon);
}
