/*
 * cg_invariants.c — what `jitherald callgrind IN OUT` must preserve, checked on a real
 * profile and its rewrite, with a callgrind reader of its own (not the rewriter's):
 *
 *     cg_invariants --map perf-PID.map | --jitdump jit-PID.dump  IN OUT
 *
 * Every name of IN is mapped as the rewrite should map it (each "'"-separated part that is
 * an address in a JIT function becomes that function's name); then, name by name:
 *   1. the totals (totals:/summary: lines, and the sum of all self costs) are equal;
 *   2. every function's self cost and inclusive cost (self + the cost of its calls) equals
 *      the sum over the IN functions that map to it: non-JIT functions unchanged, a JIT
 *      function the sum of its pieces;
 *   3. every call edge caller -> callee has the same count (so every function keeps all
 *      the callers and callees of its pieces, and the sum of call counts is preserved);
 *   4. each function has one identity: its fn= blocks and every call to it name the same
 *      object and file (otherwise callgrind_annotate and KCachegrind show two functions);
 *   5. no address in JIT code is left unnamed in OUT.
 * Prints a one-line summary; exit 0 when all hold, 1 with the first differences otherwise.
 *
 * Which addresses are JIT code, and whose, comes from the map or dump read here with code
 * of its own (no tools/lib: a checker sharing the rewriter's symbol table passed when that
 * table missed its highest function). The rule is the tools' (perf's, valgrind's): an
 * address belongs to the function loaded last among those containing it; a jitdump MOVE
 * loads the function again at its new address.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define MAXEV 64

/* strings -> dense ids */
struct smap { char **k; size_t *slot, cap, n; };

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        perror("cg_invariants");
        exit(2);
    }
    return p;
}

static size_t sm_get(struct smap *m, const char *key, bool add, bool *added)
{
    if (added)
        *added = false;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        size_t *slot = xrealloc(NULL, cap * sizeof *slot);
        for (size_t i = 0; i < cap; i++)
            slot[i] = SIZE_MAX;
        for (size_t i = 0; i < m->n; i++) {
            size_t h = fnv(m->k[i]) & (cap - 1);
            while (slot[h] != SIZE_MAX)
                h = (h + 1) & (cap - 1);
            slot[h] = i;
        }
        free(m->slot);
        m->slot = slot;
        m->cap = cap;
    }
    size_t h = fnv(key) & (m->cap - 1);
    for (; m->slot[h] != SIZE_MAX; h = (h + 1) & (m->cap - 1))
        if (!strcmp(m->k[m->slot[h]], key))
            return m->slot[h];
    if (!add)
        return SIZE_MAX;
    m->k = xrealloc(m->k, (m->n + 1) * sizeof *m->k);
    m->k[m->n] = strdup(key);
    m->slot[h] = m->n;
    if (added)
        *added = true;
    return m->n++;
}

struct prof {
    int nev;
    char events[512];
    struct smap fns, edges, idents;
    uint64_t *self, *incl;              /* nev per function */
    size_t *ident;                      /* identity id per function, SIZE_MAX: none yet */
    bool *split;                        /* more than one identity seen */
    char (*split_why)[300];
    uint64_t *count;                    /* per edge */
    char totals[1024];
    uint64_t calls, sum_self[MAXEV];
    size_t fncap, edgecap, unnamed;
    char first_unnamed[200];
};

/* ---- the JIT's functions, from the perf map or the jitdump ---- */
struct jfn { uint64_t start, end; size_t seq; char *name; };
struct syms {
    struct jfn *f;
    size_t n, cap;
    uint64_t *maxend;                   /* after sorting: max end of f[0..i] */
};

static void sym_add(struct syms *s, uint64_t start, uint64_t size, const char *name, size_t len)
{
    if (!size || start + size < start)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->f = xrealloc(s->f, s->cap * sizeof *s->f);
    }
    char *nm = xrealloc(NULL, len + 1);
    for (size_t i = 0; i < len; i++)        /* one name per line in callgrind's format */
        nm[i] = name[i] == '\n' || name[i] == '\r' || !name[i] ? '?' : name[i];
    nm[len] = 0;
    s->f[s->n] = (struct jfn){ start, start + size, s->n, nm };
    s->n++;
}

static int by_start(const void *a, const void *b)
{
    const struct jfn *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void sym_sort(struct syms *s)
{
    qsort(s->f, s->n, sizeof *s->f, by_start);
    s->maxend = xrealloc(NULL, (s->n ? s->n : 1) * sizeof *s->maxend);
    for (size_t i = 0; i < s->n; i++)
        s->maxend[i] = i && s->maxend[i - 1] > s->f[i].end ? s->maxend[i - 1] : s->f[i].end;
}

/* The function loaded last among those containing a: back from the last start <= a for
 * as long as some function before could still reach a. */
static const struct jfn *sym_find(const struct syms *s, uint64_t a)
{
    size_t lo = 0, hi = s->n;               /* first start > a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->f[mid].start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct jfn *best = NULL;
    for (size_t i = lo; i-- > 0 && s->maxend[i] > a;)
        if (a < s->f[i].end && (!best || s->f[i].seq > best->seq))
            best = &s->f[i];
    return best;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *d = xrealloc(NULL, cap);
    for (size_t k; (k = fread(d + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (cap - n - 1 == 0)
            d = xrealloc(d, cap *= 2);
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        free(d);
        return NULL;
    }
    d[n] = 0;
    *len = n;
    return d;
}

/* "START SIZE name" per line, hex, with or without 0x (Erlang writes it), names padded
 * with spaces to 3 bytes for perf (the padding is not part of them). */
static void load_perfmap(struct syms *s, char *d)
{
    for (char *line = d, *nl; *line; line = nl) {
        nl = strchr(line, '\n');
        nl = nl ? nl + 1 : line + strlen(line);
        char *e1, *e2;
        uint64_t start = strtoull(line, &e1, 16);
        if (e1 == line || *e1 != ' ')
            continue;
        uint64_t size = strtoull(e1 + 1, &e2, 16);
        if (e2 == e1 + 1 || *e2 != ' ')
            continue;
        const char *name = e2 + 1;
        size_t len = (size_t)(nl - name);
        while (len && (name[len - 1] == '\n' || name[len - 1] == '\r'))
            len--;
        while (len > 1 && name[len - 1] == ' ')
            len--;
        if (len)
            sym_add(s, start, size, name, len);
    }
}

static uint32_t le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* perf's jitdump (tools/perf/util/jitdump.h): a header of header_size bytes, then records
 * {u32 id, u32 total_size, u64 timestamp, body}. LOAD (0): pid, tid, vma, code_addr,
 * code_size, code_index, name NUL-terminated, code. MOVE (1): pid, tid, vma, old_code_addr,
 * new_code_addr, code_size, code_index. A file cut short ends where it is cut. */
static int load_jitdump(struct syms *s, const unsigned char *d, size_t len)
{
    if (len < 40 || le32(d) != 0x4A695444)
        return -1;                          /* (a big-endian file is not for this machine) */
    size_t p = le32(d + 8);
    while (p + 16 <= len) {
        uint32_t id = le32(d + p), sz = le32(d + p + 4);
        if (sz < 16 || sz > len - p)
            break;
        const unsigned char *b = d + p + 16;
        size_t blen = sz - 16;
        if (id == 0 && blen > 40) {
            const unsigned char *name = b + 40, *nul = memchr(name, 0, blen - 40);
            if (nul)
                sym_add(s, le64(b + 16), le64(b + 24), (const char *)name, (size_t)(nul - name));
        } else if (id == 1 && blen >= 48) {
            uint64_t from = le64(b + 16), to = le64(b + 24), size = le64(b + 32);
            for (size_t i = s->n; i-- > 0;) {  /* the latest function loaded at from */
                if (s->f[i].start == from) {
                    const char *nm = s->f[i].name;  /* (not moved by sym_add's realloc) */
                    sym_add(s, to, size, nm, strlen(nm));
                    break;
                }
            }
        }
        p += sz;
    }
    return 0;
}

/* The name as the rewrite should write it. */
static void map_name(const struct syms *s, const char *in, char *out, size_t outlen,
                     bool *changed)
{
    size_t o = 0;
    *changed = false;
    for (const char *p = in;;) {
        const char *e = strchr(p, '\'');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char part[64];
        const char *rep = NULL;
        if (n > 2 && n < sizeof part && p[0] == '0' && p[1] == 'x') {
            memcpy(part, p, n);
            part[n] = 0;
            char *end;
            uint64_t a = strtoull(part + 2, &end, 16);
            const struct jfn *f = *end ? NULL : sym_find(s, a);
            if (f)
                rep = f->name, *changed = true;
        }
        const char *src = rep ? rep : p;
        size_t len = rep ? strlen(rep) : n;
        if (o + len + 2 < outlen) {
            memcpy(out + o, src, len);
            o += len;
        }
        if (!e)
            break;
        out[o++] = '\'';
        p = e + 1;
    }
    out[o] = 0;
}

static size_t fn_id(struct prof *p, const char *name)
{
    bool added;
    size_t i = sm_get(&p->fns, name, true, &added);
    if (added) {
        if (i >= p->fncap) {
            p->fncap = p->fncap ? p->fncap * 2 : 1024;
            p->self = xrealloc(p->self, p->fncap * MAXEV * sizeof *p->self);
            p->incl = xrealloc(p->incl, p->fncap * MAXEV * sizeof *p->incl);
            p->ident = xrealloc(p->ident, p->fncap * sizeof *p->ident);
            p->split = xrealloc(p->split, p->fncap * sizeof *p->split);
            p->split_why = xrealloc(p->split_why, p->fncap * sizeof *p->split_why);
        }
        memset(p->self + i * MAXEV, 0, MAXEV * sizeof *p->self);
        memset(p->incl + i * MAXEV, 0, MAXEV * sizeof *p->incl);
        p->ident[i] = SIZE_MAX;
        p->split[i] = false;
    }
    return i;
}

static void identity(struct prof *p, size_t fn, const char *ob, const char *fl, const char *how)
{
    char key[2048];
    snprintf(key, sizeof key, "%s\001%s", ob, fl);
    size_t id = sm_get(&p->idents, key, true, NULL);
    if (p->ident[fn] == SIZE_MAX) {
        p->ident[fn] = id;
    } else if (p->ident[fn] != id && !p->split[fn]) {
        p->split[fn] = true;
        snprintf(p->split_why[fn], sizeof p->split_why[0], "%s names it in %s / %s", how, ob, fl);
    }
}

static void edge(struct prof *p, size_t from, size_t to, uint64_t n)
{
    char key[32];
    snprintf(key, sizeof key, "%zu>%zu", from, to);
    bool added;
    size_t i = sm_get(&p->edges, key, true, &added);
    if (i >= p->edgecap) {
        p->edgecap = p->edgecap ? p->edgecap * 2 : 1024;
        p->count = xrealloc(p->count, p->edgecap * sizeof *p->count);
    }
    if (added)
        p->count[i] = 0;
    p->count[i] += n;
    p->calls += n;
}

/* Compressed names: "(id) name" defines, "(id)" refers; one table per kind. */
struct names { struct smap ids; char **str; };

static const char *name_of(struct names *t, const char *v)
{
    while (*v == ' ')
        v++;
    if (*v != '(')
        return v;
    const char *c = strchr(v, ')');
    if (!c)
        return v;
    char id[32];
    snprintf(id, sizeof id, "%.*s", (int)(c - v - 1), v + 1);
    bool added;
    size_t i = sm_get(&t->ids, id, true, &added);
    if (added) {
        t->str = xrealloc(t->str, t->ids.n * sizeof *t->str);
        t->str[i] = strdup("");
    }
    const char *s = c + 1;
    while (*s == ' ')
        s++;
    if (*s) {
        free(t->str[i]);
        t->str[i] = strdup(s);
    }
    return t->str[i];
}

/* Skip the positions of a cost line; the costs follow. */
static char *skip_positions(char *c, int npos)
{
    for (int k = 0; k < npos; k++) {
        while (*c == ' ' || *c == '\t')
            c++;
        while (*c && *c != ' ' && *c != '\t')
            c++;
    }
    return c;
}

static void costs(char *c, uint64_t *into, int nev)
{
    for (int e = 0; e < nev; e++) {
        while (*c == ' ' || *c == '\t')
            c++;
        if (!*c)
            break;
        into[e] += strtoull(c, &c, 10);
    }
}

static int read_prof(const char *path, const struct syms *s, struct prof *p)
{
    size_t len;
    char *data = read_all(path, &len);
    if (!data) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    struct names fnn = { 0 }, fln = { 0 }, obn = { 0 };
    struct smap raw = { 0 };            /* every function name as written */
    int npos = 1;
    char ob[1024] = "", fl[1024] = "", file[1024] = "", cob[1024] = "", cfi[1024] = "";
    bool have_cob = false, have_cfi = false;
    size_t cur = SIZE_MAX, callee = SIZE_MAX;
    uint64_t pending_calls = 0;
    bool in_call = false;
    char mapped[4096];
    bool changed;
    for (char *line = data, *nl; line && *line; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = 0;
        if (!*line || *line == '#')
            continue;
        char c0 = *line;
        if ((c0 >= '0' && c0 <= '9') || c0 == '+' || c0 == '-' || c0 == '*') {
            char *c = skip_positions(line, npos);
            if (cur == SIZE_MAX)
                continue;
            if (in_call) {
                uint64_t v[MAXEV] = { 0 };
                costs(c, v, p->nev);
                for (int e = 0; e < p->nev; e++)
                    p->incl[cur * MAXEV + e] += v[e];
                edge(p, cur, callee, pending_calls);
                in_call = false;
            } else {
                uint64_t v[MAXEV] = { 0 };
                costs(c, v, p->nev);
                for (int e = 0; e < p->nev; e++) {
                    p->self[cur * MAXEV + e] += v[e];
                    p->incl[cur * MAXEV + e] += v[e];
                    p->sum_self[e] += v[e];
                }
            }
            continue;
        }
        char *eq = strchr(line, '=');
        char *colon = strchr(line, ':');
        if (colon && (!eq || colon < eq)) {
            if (!strncmp(line, "events:", 7)) {
                snprintf(p->events, sizeof p->events, "%s", line + 7);
                p->nev = 0;
                for (char *t = strtok(line + 7, " \t"); t; t = strtok(NULL, " \t"))
                    p->nev += p->nev < MAXEV;
            } else if (!strncmp(line, "positions:", 10)) {
                npos = 0;
                for (char *t = strtok(line + 10, " \t"); t; t = strtok(NULL, " \t"))
                    npos++;
                npos = npos ? npos : 1;
            } else if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8)) {
                size_t n = strlen(p->totals);
                snprintf(p->totals + n, sizeof p->totals - n, "%s;", line);
            }
            continue;
        }
        if (!eq)
            continue;
        *eq = 0;
        const char *k = line, *v = eq + 1;
        if (!strcmp(k, "ob")) {
            snprintf(ob, sizeof ob, "%s", name_of(&obn, v));
        } else if (!strcmp(k, "fl")) {
            snprintf(fl, sizeof fl, "%s", name_of(&fln, v));
            snprintf(file, sizeof file, "%s", fl);
        } else if (!strcmp(k, "fi") || !strcmp(k, "fe")) {
            snprintf(file, sizeof file, "%s", name_of(&fln, v));
        } else if (!strcmp(k, "fn")) {
            /* a function's file is the current one, fi=/fe= included (callgrind writes
             * fl= before fn= when they differ; callgrind_annotate reads it so) */
            sm_get(&raw, name_of(&fnn, v), true, NULL);
            map_name(s, name_of(&fnn, v), mapped, sizeof mapped, &changed);
            cur = fn_id(p, mapped);
            identity(p, cur, ob, file, "an fn= block");
            in_call = have_cob = have_cfi = false;
        } else if (!strcmp(k, "cob")) {
            snprintf(cob, sizeof cob, "%s", name_of(&obn, v));
            have_cob = true;
        } else if (!strcmp(k, "cfi") || !strcmp(k, "cfl")) {
            snprintf(cfi, sizeof cfi, "%s", name_of(&fln, v));
            have_cfi = true;
        } else if (!strcmp(k, "cfn")) {
            sm_get(&raw, name_of(&fnn, v), true, NULL);
            map_name(s, name_of(&fnn, v), mapped, sizeof mapped, &changed);
            callee = fn_id(p, mapped);
            identity(p, callee, have_cob ? cob : ob, have_cfi ? cfi : file, "a call");
            have_cob = have_cfi = false;
        } else if (!strcmp(k, "calls")) {
            pending_calls = strtoull(v, NULL, 10);
            in_call = callee != SIZE_MAX;
        } else if (!strcmp(k, "jfi")) {
            name_of(&fln, v);
        } else if (!strcmp(k, "jfn")) {
            name_of(&fnn, v);
        }
    }
    /* names the rewrite should have named */
    for (size_t i = 0; i < raw.n; i++) {
        map_name(s, raw.k[i], mapped, sizeof mapped, &changed);
        if (changed && !p->unnamed++)
            snprintf(p->first_unnamed, sizeof p->first_unnamed, "%s", raw.k[i]);
    }
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    struct syms s = { 0 };
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--map") || !strcmp(argv[i], "--jitdump")) && i + 1 < argc) {
            size_t n;
            char *d = read_all(argv[i + 1], &n);
            if (!d) {
                perror(argv[i + 1]);
                return 2;
            }
            if (argv[i][2] == 'm')
                load_perfmap(&s, d);
            else if (load_jitdump(&s, (const unsigned char *)d, n)) {
                fprintf(stderr, "%s: not a jitdump\n", argv[i + 1]);
                return 2;
            }
            free(d);
            i++;
        } else if (!in) {
            in = argv[i];
        } else {
            out = argv[i];
        }
    }
    if (!in || !out || !s.n) {
        fprintf(stderr, "usage: cg_invariants --map MAP | --jitdump DUMP IN OUT\n");
        return 2;
    }
    sym_sort(&s);
    static struct prof a, b;
    if (read_prof(in, &s, &a) || read_prof(out, &s, &b))
        return 2;
    int bad = 0;
#define BAD(...) do { if (bad++ < 12) { printf("FAIL: " __VA_ARGS__); putchar('\n'); } } while (0)
    if (strcmp(a.events, b.events))
        BAD("events differ: %s / %s", a.events, b.events);
    if (strcmp(a.totals, b.totals))
        BAD("totals differ: %s / %s", a.totals, b.totals);
    for (int e = 0; e < a.nev; e++)
        if (a.sum_self[e] != b.sum_self[e])
            BAD("event %d: self costs add up to %" PRIu64 " / %" PRIu64, e, a.sum_self[e],
                b.sum_self[e]);
    if (a.fns.n != b.fns.n)
        BAD("%zu functions expected, %zu in the rewrite", a.fns.n, b.fns.n);
    for (size_t i = 0; i < a.fns.n; i++) {
        const char *name = a.fns.k[i];
        size_t j = sm_get(&b.fns, name, false, NULL);
        if (j == SIZE_MAX) {
            BAD("%s: missing from the rewrite", name);
            continue;
        }
        for (int e = 0; e < a.nev; e++) {
            if (a.self[i * MAXEV + e] != b.self[j * MAXEV + e])
                BAD("%s: self cost %" PRIu64 " / %" PRIu64, name, a.self[i * MAXEV + e],
                    b.self[j * MAXEV + e]);
            if (a.incl[i * MAXEV + e] != b.incl[j * MAXEV + e])
                BAD("%s: inclusive cost %" PRIu64 " / %" PRIu64, name, a.incl[i * MAXEV + e],
                    b.incl[j * MAXEV + e]);
        }
        if (b.split[j] && !a.split[i])
            BAD("%s: two identities: %s", name, b.split_why[j]);
    }
    for (size_t i = 0; i < b.fns.n; i++)
        if (sm_get(&a.fns, b.fns.k[i], false, NULL) == SIZE_MAX)
            BAD("%s: in the rewrite only", b.fns.k[i]);
    if (a.edges.n != b.edges.n)
        BAD("%zu call edges expected, %zu in the rewrite", a.edges.n, b.edges.n);
    for (size_t i = 0; i < a.edges.n; i++) {
        size_t from, to;
        sscanf(a.edges.k[i], "%zu>%zu", &from, &to);
        char key[32];
        size_t bf = sm_get(&b.fns, a.fns.k[from], false, NULL);
        size_t bt = sm_get(&b.fns, a.fns.k[to], false, NULL);
        snprintf(key, sizeof key, "%zu>%zu", bf, bt);
        size_t j = sm_get(&b.edges, key, false, NULL);
        if (j == SIZE_MAX || a.count[i] != b.count[j])
            BAD("call %s -> %s: %" PRIu64 " calls / %" PRIu64, a.fns.k[from], a.fns.k[to],
                a.count[i], j == SIZE_MAX ? 0 : b.count[j]);
    }
    if (a.calls != b.calls)
        BAD("%" PRIu64 " calls in all / %" PRIu64, a.calls, b.calls);
    if (b.unnamed)
        BAD("%zu names with JIT addresses left in the rewrite, first %s", b.unnamed,
            b.first_unnamed);
    size_t jit = a.unnamed;
    printf("%s: %zu functions (%zu names with JIT addresses before), %zu call edges, %" PRIu64
           " calls, %d events: %s\n", bad ? "FAIL" : "ok", b.fns.n, jit, b.edges.n, b.calls,
           a.nev, bad ? "invariants broken" : "totals, self and inclusive costs, callers and "
           "callees, call counts and identities all preserved");
    return bad ? 1 : 0;
}
