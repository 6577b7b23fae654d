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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/files.h"
#include "lib/symtab.h"

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

/* The name as the rewrite should write it. */
static void map_name(const struct jhr_syms *s, const char *in, char *out, size_t outlen,
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
            const struct jhr_sym_fn *f = *end ? NULL : jhr_syms_find(s, a);
            if (f)
                rep = s->strs[f->name], *changed = true;
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

static int read_prof(const char *path, const struct jhr_syms *s, struct prof *p)
{
    uint8_t *data;
    size_t len;
    int err = jhr_read_file(path, &data, &len);
    if (err) {
        fprintf(stderr, "%s: %s\n", path, strerror(-err));
        return -1;
    }
    data = xrealloc(data, len + 1);
    data[len] = 0;
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
    for (char *line = (char *)data, *nl; line && *line; line = nl) {
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
    struct jhr_syms s = { 0 };
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--map") || !strcmp(argv[i], "--jitdump")) && i + 1 < argc) {
            uint8_t *d;
            size_t n;
            if (jhr_read_file(argv[i + 1], &d, &n)) {
                perror(argv[i + 1]);
                return 2;
            }
            if (argv[i][2] == 'm' ? jhr_syms_load_perfmap(&s, d, n)
                                  : jhr_syms_load_jitdump(&s, d, n)) {
                fprintf(stderr, "%s: unreadable\n", argv[i + 1]);
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
    if (!in || !out || !s.nfns) {
        fprintf(stderr, "usage: cg_invariants --map MAP | --jitdump DUMP IN OUT\n");
        return 2;
    }
    jhr_syms_finish(&s);
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
