/*
 * callgrind_rewrite.c — see callgrind_rewrite.h.
 *
 * What callgrind writes for code without symbols (valgrind 3.19 callgrind/dump.c, fn.c):
 * each entry point it sees gets its own function named by address, file "???", line 0.
 * The rewrite maps those names to JIT functions. The format's traps:
 *   - names are compressed: "fn=(7) name" defines id 7, "fn=(7)" refers to it; fn, cfn and
 *     jfn share one id space, fl/fi/fe/cfi/cfl/jfi another, ob/cob a third; an id may first
 *     be defined on a cfn= line. Renaming at the definition renames every use.
 *   - positions may be relative to the previous cost line ("+3", "-2", "*"), and the
 *     target of calls=/jump= too (without becoming the new reference). Changing line
 *     numbers breaks relative ones: every position is written absolute.
 *   - cfi/cob default to the caller's file/object: once a JIT caller's fl= changes, the
 *     callee's file must be written explicitly, and a JIT callee's file must be written
 *     as the one its own fn= block gets, or callgrind_annotate ("file:fn" keys) splits it.
 *   - callgrind names a function by its entry: a JIT function entered at several places
 *     (BEAM enters at +0x28 of what its map calls the function, V8 and MoarVM return into
 *     the middle of one) is several address-named pieces. They become one name, written
 *     with one id. Every call callgrind recorded stays a call, whatever the offset of the
 *     entry: a call between two pieces is the function calling itself, as callgrind
 *     would have said had it known the symbol.
 *   - a name is "fn'N'caller1'caller2": N the recursion depth (--separate-recs, default
 *     2), callers with --separate-callers=N. Every part that is an address in JIT code is
 *     named, so "0x..'2'0x.." becomes "fib'2'main".
 */
#include "lib/callgrind_rewrite.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitherald.h"
#include "base/vec.h"
#include "lib/callgrind_names.h"
#include "lib/hash.h"
#include "lib/itab.h"

struct rw {
    const struct jhr_syms *s;
    struct jh__buf *out;
    struct jhr_cg_names n;      /* the profile's names, and what they become */
    int npos, addr_col, line_col;
    uint64_t last[8];
    bool pos_hex[8];
    /* the input's view */
    long cur_ob, cur_fl, cur_fi, cur_fn;      /* name indexes, -1 none */
    /* what was written */
    long out_ob, out_fl, out_file;
    const struct jhr_sym_fn *jit;                /* the current block is a JIT function */
    uint64_t jit_addr;
    long jit_ob;                               /* our ob entry, created on first use */
    long *file_of;                             /* strs index -> JHR_CG_FL entry, or -1 */
    /* a call being read: cob= cfi= cfn= calls= then its cost line */
    long call_ob, call_fi, call_fn;
    bool in_call;
    char calls_count[32];
    uint64_t call_target[8];
    int call_ntarget;
    /* jump=/jcnd=: the next position line is the jump's source */
    struct jhr_cg_stats *st;
};

static void put(struct rw *w, const char *s) { jh__buf_put(w->out, s, strlen(s)); }

static void put_ref(struct rw *w, const char *key, int ns, long i)
{
    if (i < 0 || (size_t)i >= w->n.t[ns].n)
        return;                 /* a default that the input never set */
    struct jhr_cg_name *nm = &w->n.t[ns].v[i];
    const char *str = nm->out ? nm->out : nm->jit_file >= 0 ? w->s->strs[nm->jit_file] :
                      nm->str;
    if (nm->out)
        nm = &w->n.t[ns].v[nm->canon];
    put(w, key);
    char b[32];
    if (nm->id) {
        snprintf(b, sizeof b, "(%" PRIu64 ")", nm->id);
        put(w, b);
        if (!nm->out_defined && str) {
            put(w, " ");
            put(w, str);
            nm->out_defined = true;
        }
    } else {
        put(w, str ? str : "???");
    }
    put(w, "\n");
}

/* The JHR_CG_FL entry for a JIT source file (strs index f), made on first use. */
static long jit_file_entry(struct rw *w, int f)
{
    if (w->file_of[f] >= 0)
        return w->file_of[f];
    struct jhr_cg_table *t = &w->n.t[JHR_CG_FL];
    long i = jhr_cg_add(t, t->max_id + 1, NULL);
    if (i < 0)
        return i;
    t->v[i].jit_file = f;
    w->file_of[f] = i;
    return i;
}

static long jit_ob_entry(struct rw *w)
{
    if (w->jit_ob >= 0)
        return w->jit_ob;
    struct jhr_cg_table *t = &w->n.t[JHR_CG_OB];
    char *name = strdup(w->s->object ? w->s->object : "[jit]");
    if (!name)
        return -ENOMEM;
    long i = jhr_cg_add(t, t->max_id + 1, name);
    if (i < 0)
        free(name);
    return w->jit_ob = i;
}

/* A JIT function's file, as its fn= block and every cfi= naming it say: the file of its
 * first line row. -1: no line table (the block keeps callgrind's "???"). */
static long fn_file(struct rw *w, const struct jhr_sym_fn *f)
{
    if (!f->nlines)
        return -1;
    return jit_file_entry(w, (int)w->s->lines[f->line0].file);
}

/* Parse npos positions at *p; relative ones against w->last. */
static bool parse_pos(struct rw *w, char **p, uint64_t *v, int *nv)
{
    char *c = *p;
    int n = 0;
    for (; n < w->npos; n++) {
        while (*c == ' ' || *c == '\t')
            c++;
        uint64_t x = 0;
        if (*c == '*') {
            x = w->last[n];
            c++;
        } else if (*c == '+' || *c == '-') {
            char sign = *c++;
            uint64_t d = 0;
            if (*c < '0' || *c > '9')
                return false;
            while (*c >= '0' && *c <= '9')
                d = d * 10 + (uint64_t)(*c++ - '0');
            x = sign == '+' ? w->last[n] + d : w->last[n] - d;
        } else if (c[0] == '0' && (c[1] == 'x' || c[1] == 'X')) {
            c += 2;
            for (int d; (d = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ?
                             *c - 'a' + 10 : *c >= 'A' && *c <= 'F' ? *c - 'A' + 10 : -1) >= 0; c++)
                x = x << 4 | (uint64_t)d;
        } else if (*c >= '0' && *c <= '9') {
            while (*c >= '0' && *c <= '9')
                x = x * 10 + (uint64_t)(*c++ - '0');
        } else {
            break;              /* fewer positions than declared */
        }
        v[n] = x;
    }
    for (int k = n; k < w->npos; k++)
        v[k] = w->last[k];
    *nv = n;
    *p = c;
    return n > 0;
}

static void put_pos(struct rw *w, const uint64_t *v)
{
    char b[32];
    for (int k = 0; k < w->npos; k++) {
        snprintf(b, sizeof b, w->pos_hex[k] ? "%s%#" PRIx64 : "%s%" PRIu64, k ? " " : "", v[k]);
        put(w, b);
    }
}

/* In a JIT block: give position v its line, and switch files (fi=/fe=) as needed. */
static int jit_line(struct rw *w, const struct jhr_sym_fn *f, uint64_t fallback_addr, uint64_t *v,
                    bool switch_file)
{
    if (w->line_col < 0)
        return 0;
    uint64_t addr = w->addr_col >= 0 ? v[w->addr_col] : fallback_addr;
    const struct jhr_sym_line *l =
        f && addr >= f->start && addr < f->end ? jhr_syms_line_at(w->s, f, addr) : NULL;
    if (!l)
        return 0;
    v[w->line_col] = l->line;
    if (switch_file) {
        long fe = jit_file_entry(w, (int)l->file);
        if (fe < 0)
            return (int)fe;
        if (fe != w->out_file) {
            put_ref(w, fe == w->out_fl ? "fe=" : "fi=", JHR_CG_FL, fe);
            w->out_file = fe;
        }
    }
    return 0;
}

/* A function's file is the current one, fi=/fe= included: callgrind (dump.c) writes fl=
 * before fn= only when they differ, callgrind_annotate keys functions so. */
static int begin_block(struct rw *w)
{
    long ob = w->cur_ob, fl = w->cur_fi;
    w->jit = w->cur_fn >= 0 ? w->n.t[JHR_CG_FN].v[w->cur_fn].jit : NULL;
    if (w->jit) {
        w->jit_addr = w->n.t[JHR_CG_FN].v[w->cur_fn].addr;
        if ((ob = jit_ob_entry(w)) < 0)
            return (int)ob;
        long f = fn_file(w, w->jit);
        if (f < -1)
            return (int)f;
        if (f >= 0)
            fl = f;
        w->st->fns_named++;
    }
    if (ob >= 0 && ob != w->out_ob) {
        put_ref(w, "ob=", JHR_CG_OB, ob);
        w->out_ob = ob;
    }
    if (fl >= 0 && fl != w->out_file) {
        put_ref(w, "fl=", JHR_CG_FL, fl);
        w->out_fl = w->out_file = fl;
    }
    if (w->cur_fn >= 0)
        put_ref(w, "fn=", JHR_CG_FN, w->cur_fn);
    return 0;
}

static int write_call(struct rw *w, const struct jhr_cg_name *callee, uint64_t *src,
                      const char *costs)
{
    int err;
    if (w->jit && (err = jit_line(w, w->jit, w->jit_addr, src, true)))
        return err;
    if (callee && callee->jit) {
        long ob = jit_ob_entry(w), f = fn_file(w, callee->jit);
        if (ob < 0 || f < -1)
            return -ENOMEM;
        put_ref(w, "cob=", JHR_CG_OB, ob);
        if (f >= 0)
            put_ref(w, "cfi=", JHR_CG_FL, f);
        else if (w->call_fi >= 0 || w->jit)
            put_ref(w, "cfi=", JHR_CG_FL, w->call_fi >= 0 ? w->call_fi : w->cur_fi);
    } else {
        /* The defaults (caller's object and current file) changed if the caller is JIT
         * code: spell them out. */
        long ob = w->call_ob >= 0 ? w->call_ob : w->jit ? w->cur_ob : -1;
        long fi = w->call_fi >= 0 ? w->call_fi : w->jit ? w->cur_fi : -1;
        if (ob >= 0)
            put_ref(w, "cob=", JHR_CG_OB, ob);
        if (fi >= 0)
            put_ref(w, "cfi=", JHR_CG_FL, fi);
    }
    if (w->call_fn >= 0)
        put_ref(w, "cfn=", JHR_CG_FN, w->call_fn);
    uint64_t tgt[8];
    memcpy(tgt, w->call_target, sizeof tgt);
    if (callee && callee->jit)
        jit_line(w, callee->jit, callee->addr, tgt, false);
    put(w, "calls=");
    put(w, w->calls_count);
    if (w->call_ntarget) {
        put(w, " ");
        put_pos(w, tgt);
    }
    put(w, "\n");
    put_pos(w, src);
    put(w, costs);
    put(w, "\n");
    return 0;
}

/* The cost line after calls=: write the whole call. */
static int end_call(struct rw *w, uint64_t *src, const char *costs)
{
    w->in_call = false;
    const struct jhr_cg_name *callee = w->call_fn >= 0 ? &w->n.t[JHR_CG_FN].v[w->call_fn] : NULL;
    w->st->calls++;
    int err = write_call(w, callee, src, costs);
    w->call_ob = w->call_fi = w->call_fn = -1;
    return err;
}

static int set_positions(struct rw *w, const char *v)
{
    w->npos = 0;
    w->addr_col = w->line_col = -1;
    char word[32];
    while (*v && w->npos < 8) {
        while (*v == ' ' || *v == '\t')
            v++;
        size_t n = 0;
        while (*v && *v != ' ' && *v != '\t') {
            if (n + 1 < sizeof word)
                word[n++] = *v;
            v++;
        }
        word[n] = 0;
        if (!n)
            break;
        bool addr = !strcmp(word, "instr") || !strcmp(word, "addr");
        if (addr && w->addr_col < 0)
            w->addr_col = w->npos;
        if (!strcmp(word, "line") && w->line_col < 0)
            w->line_col = w->npos;
        w->pos_hex[w->npos++] = addr;
    }
    if (!w->npos) {
        w->npos = 1;
        w->line_col = 0;
        w->pos_hex[0] = false;
    }
    memset(w->last, 0, sizeof w->last);
    return 0;
}

static int do_line(struct rw *w, char *line)
{
    uint64_t v[8];
    int nv, err;
    char *c = line;
    if (!*line || *line == '#')
        goto pass;
    if ((*c >= '0' && *c <= '9') || *c == '+' || *c == '-' || *c == '*') {
        if (!parse_pos(w, &c, v, &nv))
            goto pass;
        memcpy(w->last, v, sizeof(uint64_t) * (size_t)w->npos);
        if (w->in_call)
            return end_call(w, v, c);
        if (!w->jit && w->cur_ob >= 0 && w->cur_ob != w->out_ob) {
            put_ref(w, "ob=", JHR_CG_OB, w->cur_ob);    /* ob= not followed by fn= */
            w->out_ob = w->cur_ob;
        }
        if (!w->jit && w->cur_fi >= 0 && w->cur_fi != w->out_file) {
            put_ref(w, "fl=", JHR_CG_FL, w->cur_fi);            /* fl= not followed by fn= */
            w->out_fl = w->out_file = w->cur_fi;
        }
        if (w->jit && (err = jit_line(w, w->jit, w->jit_addr, v, true)))
            return err;
        put_pos(w, v);
        put(w, c);
        put(w, "\n");
        return 0;
    }
    char *eq = strchr(line, '=');
    char *colon = strchr(line, ':');
    if (colon && (!eq || colon < eq)) {                 /* a header line */
        if (!strncmp(line, "positions:", 10))
            set_positions(w, line + 10);
        goto pass;
    }
    if (!eq)
        goto pass;
    size_t klen = (size_t)(eq - line);
    char *val = eq + 1;
    int ns = jhr_cg_ns(line, klen);
    if (ns >= 0) {
        long i = jhr_cg_parse(&w->n, ns, val);
        if (i == -ENOMEM)
            return -ENOMEM;
        if (i < 0)
            goto pass;
#define K(s) (klen == sizeof(s) - 1 && !memcmp(line, s, klen))
        if (K("ob")) {
            w->cur_ob = i;
        } else if (K("fl")) {
            w->cur_fl = w->cur_fi = i;
        } else if (K("fn")) {
            w->cur_fn = i;
            w->in_call = false;
            w->call_ob = w->call_fi = w->call_fn = -1;
            return begin_block(w);
        } else if (K("fi") || K("fe")) {
            w->cur_fi = i;
            if (!w->jit) {
                put_ref(w, K("fi") ? "fi=" : "fe=", JHR_CG_FL, i);
                w->out_file = i;
            }
        } else if (K("cob")) {
            w->call_ob = i;
        } else if (K("cfi") || K("cfl")) {
            w->call_fi = i;
        } else if (K("cfn")) {
            w->call_fn = i;
        } else {                                        /* jfi= jfn= */
            put_ref(w, K("jfi") ? "jfi=" : "jfn=", ns, i);
        }
        return 0;
#undef K
    }
    if (klen == 5 && !memcmp(line, "calls", 5)) {
        c = val;
        size_t n = 0;
        while (*c && *c != ' ' && *c != '\t' && n + 1 < sizeof w->calls_count)
            w->calls_count[n++] = *c++;
        w->calls_count[n] = 0;
        w->call_ntarget = 0;
        if (!parse_pos(w, &c, w->call_target, &w->call_ntarget))
            memcpy(w->call_target, w->last, sizeof w->last);
        w->in_call = true;
        return 0;
    }
    if ((klen == 4 && !memcmp(line, "jump", 4)) || (klen == 4 && !memcmp(line, "jcnd", 4))) {
        c = val;
        while (*c && *c != ' ' && *c != '\t')
            c++;
        char *after_count = c;
        if (parse_pos(w, &c, v, &nv)) {
            if (w->jit)
                jit_line(w, w->jit, w->jit_addr, v, false);
            jh__buf_put(w->out, line, (size_t)(after_count - line));
            put(w, " ");
            put_pos(w, v);
            put(w, c);
            put(w, "\n");
            return 0;
        }
    }
pass:
    put(w, line);
    put(w, "\n");
    return 0;
}

int jhr_cg_rewrite(const char *text, size_t len, const struct jhr_syms *s,
                         struct jh__buf *out, struct jhr_cg_stats *st)
{
    struct jhr_cg_stats dummy;
    struct rw w = { .s = s, .n.s = s, .out = out, .cur_ob = -1, .cur_fl = -1, .cur_fi = -1,
                    .cur_fn = -1, .out_ob = -1, .out_fl = -1, .out_file = -1, .jit_ob = -1,
                    .call_ob = -1, .call_fi = -1, .call_fn = -1, .st = st ? st : &dummy };
    memset(w.st, 0, sizeof *w.st);
    set_positions(&w, "line");
    int err = 0;
    char *buf = malloc(len + 1);
    w.file_of = malloc((s->nstrs + 1) * sizeof *w.file_of);
    if (!buf || !w.file_of) {
        err = -ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < s->nstrs; i++)
        w.file_of[i] = -1;
    memcpy(buf, text, len);
    buf[len] = 0;
    /* Ids we add must not collide with the input's, defined anywhere in it. */
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] != '=' || buf[i + 1] != '(')
            continue;
        size_t k = i;
        while (k > 0 && buf[k - 1] >= 'a' && buf[k - 1] <= 'z')
            k--;
        int ns = jhr_cg_ns(buf + k, i - k);
        uint64_t id = 0;
        for (size_t j = i + 2;
             j < len && buf[j] >= '0' && buf[j] <= '9' && id < UINT64_MAX / 16; j++)
            id = id * 10 + (uint64_t)(buf[j] - '0');
        if (ns >= 0 && id > w.n.t[ns].max_id)
            w.n.t[ns].max_id = id;
    }
    bool any = false;
    for (char *line = buf; line && line <= buf + len && !err;) {
        char *nl = memchr(line, '\n', (size_t)(buf + len - line));
        if (nl)
            *nl = 0;
        else if (line == buf + len)
            break;
        if (nl && nl > line && nl[-1] == '\r')
            nl[-1] = 0;
        if (!strncmp(line, "events:", 7) || !strncmp(line, "# callgrind format", 18))
            any = true;
        w.st->lines++;
        err = do_line(&w, line);
        line = nl ? nl + 1 : NULL;
    }
    if (!err && out->err)
        err = out->err;
    if (!err && !any)
        err = JH_EFORMAT;
done:
    jhr_cg_names_free(&w.n);
    free(w.file_of);
    free(buf);
    return err;
}

