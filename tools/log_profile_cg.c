/*
 * log_profile_cg.c — `jitherald log FILE profile callgrind.out.PID`: callgrind's functions
 * that it could only name by address ("0x0000000010000040": JIT code seen with no
 * symbols) named by the audit log.
 *
 *     $ JITHERALD=auditlog valgrind --tool=callgrind ./minijit --recompile-from b.mini a.mini
 *     $ jitherald log minijit-4242.jhlog profile callgrind.out.4242
 *
 * callgrind records no time, and merges all the cost at one address whatever code was
 * there: where the log shows several functions at an address over time the cost cannot be
 * split, so the row says so ("spin_a | spin_b  (JIT)": rows the log named are marked, as
 * a JIT function may share a name with a native one) and the last line counts that cost. (The
 * elfmap channel avoids it at the source: each generation is a new file valgrind names.)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/auditlog_when.h"
#include "lib/callgrind_cost.h"
#include "log_present.h"
#include "log_samples.h"

#define MAX_NAMES 8

/* "0x" and hex digits only: the address, else false. */
static bool hex_name(const char *s, uint64_t *addr)
{
    if (s[0] != '0' || s[1] != 'x' || !s[2] || strlen(s) > 18)
        return false;
    char *e;
    *addr = strtoull(s + 2, &e, 16);
    return !*e;
}

/* The names of the functions that held addr, "a | b" when several; NULL when none. */
static char *names_at(const struct jhr_al_when *w, uint64_t addr, bool *shared)
{
    const struct jhr_al_fn *fns[MAX_NAMES];
    size_t n = jhr_al_when_all(w, addr, fns, MAX_NAMES), len = 1;
    if (!n)
        return NULL;
    if (n > MAX_NAMES)
        n = MAX_NAMES;
    for (size_t i = 0; i < n; i++)
        len += strlen(fns[i]->name ? fns[i]->name : "?") + 3;
    char *s = malloc(len + 8);
    if (!s)
        return NULL;
    s[0] = 0;
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        const char *nm = fns[i]->name ? fns[i]->name : "?";
        bool dup = false;
        for (size_t k = 0; k < i; k++)
            dup |= !strcmp(nm, fns[k]->name ? fns[k]->name : "?");
        if (dup)
            continue;
        if (distinct++)
            strcat(s, " | ");
        strcat(s, nm);
    }
    *shared = distinct > 1;
    return s;
}

/* The name made here is kept until jhc_samples_free. */
static const char *own(struct jhc_samples *s, char *name)
{
    char **o = realloc(s->owned, (s->nowned + 1) * sizeof *o);
    if (!o) {
        free(name);
        return NULL;
    }
    s->owned = o;
    return s->owned[s->nowned++] = name;
}

int jhc_samples_cg(struct jhc_samples *s)
{
    struct jhr_cgc c = { 0 };
    int err = jhr_cgc_read(&c, (const char *)s->data, s->len);
    if (err == -ENOMEM || (!err && jhr_al_when_build(&s->when, s->lf) < 0)) {
        fprintf(stderr, "jitherald log: out of memory\n");
        jhr_cgc_free(&c);
        return 2;
    }
    if (err < 0) {
        fprintf(stderr, "jitherald log: %s: not a callgrind profile (no events: line)\n", s->path);
        jhr_cgc_free(&c);
        return 1;
    }
    snprintf(s->event, sizeof s->event, "%s", c.event[0] ? c.event : "cost");
    s->ours = c.total;
    int rc = 0;
    /* rows of one name (pieces of one JIT function, entered at several addresses) merged */
    for (size_t i = 0; i < c.nfns && !rc; i++) {
        uint64_t addr = 0;
        bool shared = false;
        char *jname = hex_name(c.fns[i].name, &addr) ? names_at(&s->when, addr, &shared) : NULL;
        const char *name = jname ? own(s, jname) : c.fns[i].name;
        struct jhc_row *r = name ? jhc_samples_row(s, jname ? JHC_ROW_JIT : JHC_ROW_OTHER, name) : NULL;
        if (!r) {
            rc = 2;
            break;
        }
        if (jname) {
            const struct jhr_al_fn *fns[1];
            if (jhr_al_when_all(&s->when, addr, fns, 1))
                r->fn = (size_t)(fns[0] - s->lf->fns);
            s->jit += c.fns[i].self;
            s->shared += shared ? c.fns[i].self : 0;
            s->samples++;
            r->shared = shared;
        } else if (r->name == c.fns[i].name && !(r->name = own(s, strdup(name)))) {
            rc = 2;
        }
        r->self += c.fns[i].self;
        r->total += c.fns[i].incl;
    }
    if (rc)
        fprintf(stderr, "jitherald log: out of memory\n");
    jhr_cgc_free(&c);
    return rc;
}
