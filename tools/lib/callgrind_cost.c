/*
 * callgrind_cost.c — self and inclusive cost per function from a callgrind.out
 * (callgrind_cost.h). The format (valgrind's docs/callgrind-format): a cost line is
 * positions (as many as "positions:" names, default one, each absolute, "+N", "-N" or "*",
 * decimal or 0x hex) and then costs, one per event of "events:", missing ones 0. The line
 * after "calls=" is the cost of that call, inclusive of the callee: the caller's
 * inclusive, not its self. "jump=" and "jcnd=" lines stand alone.
 */
#include "lib/callgrind_cost.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jitherald.h"
#include "lib/hash.h"

#define MAX_ID (1u << 24)

static uint64_t fn_hash(const void *ctx, size_t i)
{
    const char *s = ((const struct jhr_cgc *)ctx)->fns[i].name;
    return jhr_hash_str(s, strlen(s));
}

static bool fn_eq(const void *ctx, size_t i, const void *key)
{
    return !strcmp(((const struct jhr_cgc *)ctx)->fns[i].name, key);
}

/* The entry named s[0..n), made on first use: its index, or -1 (out of memory). */
static long intern(struct jhr_cgc *c, const char *s, size_t n)
{
    char *name = strndup(s, n);
    if (!name)
        return -1;
    uint64_t h = jhr_hash_str(name, strlen(name));
    size_t i = jhr_itab_find(&c->by_name, h, fn_eq, c, name);
    if (i) {
        free(name);
        return (long)i - 1;
    }
    if (c->nfns == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct jhr_cgc_fn *nf = realloc(c->fns, cap * sizeof *nf);
        if (!nf) {
            free(name);
            return -1;
        }
        c->fns = nf;
        c->cap = cap;
    }
    if (jhr_itab_grow(&c->by_name, fn_hash, c) < 0) {
        free(name);
        return -1;
    }
    c->fns[c->nfns] = (struct jhr_cgc_fn){ name, 0, 0 };
    jhr_itab_put(&c->by_name, h, c->nfns);
    return (long)c->nfns++;
}

/* "(id) name", "(id)" or "name": the entry's index; -1 out of memory, -2 unusable. */
static long name_of(struct jhr_cgc *c, const char *v, const char *end)
{
    if (v < end && *v == '(') {
        char *e;
        unsigned long id = strtoul(v + 1, &e, 10);
        if (e >= end || *e != ')' || id >= MAX_ID)
            return -2;
        const char *s = e + 1;
        while (s < end && *s == ' ')
            s++;
        if (s == end)                   /* a reference */
            return id < c->nids && c->by_id[id] ? (long)c->by_id[id] - 1 : -2;
        long k = intern(c, s, (size_t)(end - s));
        if (k < 0)
            return k;
        if (id >= c->nids) {
            size_t n = c->nids ? c->nids : 64;
            while (n <= id)
                n *= 2;
            size_t *nb = realloc(c->by_id, n * sizeof *nb);
            if (!nb)
                return -1;
            memset(nb + c->nids, 0, (n - c->nids) * sizeof *nb);
            c->by_id = nb;
            c->nids = n;
        }
        c->by_id[id] = (size_t)k + 1;
        return k;
    }
    return intern(c, v, (size_t)(end - v));
}

/* The first cost of a cost line (after npos positions), or false when it is not one. */
static bool first_cost(const char *p, const char *end, int npos, uint64_t *cost)
{
    for (int i = 0; i < npos; i++) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            return false;
        if (*p == '*') {
            p++;
        } else {
            if (*p == '+' || *p == '-')
                p++;
            const char *s = p;
            if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
                for (p += 2; p < end && strchr("0123456789abcdefABCDEF", *p) && *p; p++) {}
            else
                for (; p < end && *p >= '0' && *p <= '9'; p++) {}
            if (p == s)
                return false;
        }
    }
    while (p < end && *p == ' ')
        p++;
    uint64_t v = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    *cost = v;
    return true;
}

int jhr_cgc_read(struct jhr_cgc *c, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    int npos = 1;
    long cur = -1;
    bool call = false, events = false;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *line = p;
        p = nl ? nl + 1 : end;
        if (le > line && le[-1] == '\r')
            le--;
        size_t n = (size_t)(le - line);
        if (!n || *line == '#')
            continue;
        if (n > 10 && !memcmp(line, "positions:", 10)) {
            npos = 0;
            for (const char *q = line + 10; q < le; q++)
                npos += *q != ' ' && (q == line + 10 || q[-1] == ' ');
            if (npos < 1 || npos > 2)
                npos = 1;
        } else if (n > 7 && !memcmp(line, "events:", 7)) {
            const char *q = line + 7;
            while (q < le && *q == ' ')
                q++;
            size_t k = 0;
            while (q < le && *q != ' ' && k + 1 < sizeof c->event)
                c->event[k++] = *q++;
            c->event[k] = 0;
            events = true;
        } else if (n > 3 && !memcmp(line, "fn=", 3)) {
            long k = name_of(c, line + 3, le);
            if (k == -1)
                return -ENOMEM;
            cur = k;
            call = false;
        } else if (n > 4 && !memcmp(line, "cfn=", 4)) {
            if (name_of(c, line + 4, le) == -1)   /* defines an id fn= may use later */
                return -ENOMEM;
        } else if (n > 6 && !memcmp(line, "calls=", 6)) {
            call = true;
        } else if (strchr("0123456789+-*", *line)) {
            uint64_t v;
            if (!first_cost(line, le, npos, &v) || cur < 0) {
                call = false;
                continue;
            }
            if (!call) {
                c->fns[cur].self += v;
                c->total += v;
            }
            c->fns[cur].incl += v;
            call = false;
        }
    }
    return events ? 0 : JH_EFORMAT;
}

void jhr_cgc_free(struct jhr_cgc *c)
{
    for (size_t i = 0; i < c->nfns; i++)
        free(c->fns[i].name);
    free(c->fns);
    free(c->by_id);
    jhr_itab_free(&c->by_name);
    *c = (struct jhr_cgc){ 0 };
}
