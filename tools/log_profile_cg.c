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

#define TOP_ROWS 50
#define MAX_NAMES 8

struct cg_row { char *name; uint64_t self, incl; bool jit, shared; };

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

static int by_name(const void *a, const void *b)
{
    const struct cg_row *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->jit - y->jit;
}

static int by_self(const void *a, const void *b)
{
    const struct cg_row *x = a, *y = b;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    return x->incl != y->incl ? (x->incl > y->incl ? -1 : 1) : strcmp(x->name, y->name);
}

static double pct(uint64_t n, uint64_t of) { return of ? 100.0 * (double)n / (double)of : 0; }

int jhc_log_profile_cg(const struct jhr_al *lf, const char *text, size_t len, const char *path,
                       FILE *f)
{
    struct jhr_cgc c = { 0 };
    struct jhr_al_when w;
    int err = jhr_cgc_read(&c, text, len);
    if (err == -ENOMEM || jhr_al_when_build(&w, lf) < 0) {
        fprintf(stderr, "jitherald log: out of memory\n");
        jhr_cgc_free(&c);
        return 2;
    }
    if (err < 0) {
        fprintf(stderr, "jitherald log: %s: not a callgrind profile (no events: line)\n", path);
        jhr_cgc_free(&c);
        jhr_al_when_free(&w);
        return 1;
    }
    struct cg_row *rows = calloc(c.nfns ? c.nfns : 1, sizeof *rows);
    size_t n = 0;
    uint64_t jit = 0, shared = 0, named = 0;
    for (size_t i = 0; rows && i < c.nfns; i++) {
        uint64_t addr;
        struct cg_row r = { NULL, c.fns[i].self, c.fns[i].incl, false, false };
        if (hex_name(c.fns[i].name, &addr) && (r.name = names_at(&w, addr, &r.shared))) {
            r.jit = true;
            jit += r.self;
            shared += r.shared ? r.self : 0;
            named++;
        } else if (!(r.name = strdup(c.fns[i].name))) {
            break;
        }
        rows[n++] = r;
    }
    /* rows of one name (pieces of one JIT function, entered at several addresses) merged */
    qsort(rows, n, sizeof *rows, by_name);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !by_name(&rows[m - 1], &rows[i])) {
            rows[m - 1].self += rows[i].self;
            rows[m - 1].incl += rows[i].incl;
            free(rows[i].name);
        } else {
            rows[m++] = rows[i];
        }
    }
    qsort(rows, m, sizeof *rows, by_self);
    fprintf(f, "%s: %" PRIu64 " %s, %" PRIu64 " address-named blocks named by the log "
            "(callgrind has no time: see the last lines)\n", path, c.total, c.event[0] ? c.event : "cost", named);
    fprintf(f, "  self%%          self   incl%%          incl  function\n");
    for (size_t i = 0; i < m && i < TOP_ROWS; i++)
        fprintf(f, "%6.2f%% %13" PRIu64 " %6.2f%% %13" PRIu64 "  %s%s\n", pct(rows[i].self, c.total),
                rows[i].self, pct(rows[i].incl, c.total), rows[i].incl, rows[i].name,
                rows[i].jit ? "  (JIT)" : "");
    if (m > TOP_ROWS)
        fprintf(f, "(%zu more rows)\n", m - TOP_ROWS);
    fprintf(f, "JIT code: %" PRIu64 " %s; %" PRIu64 " (%.2f%%) at addresses that held several "
            "functions over time (a | b): callgrind merges them and has no time to split them by\n",
            jit, c.event[0] ? c.event : "cost", shared, pct(shared, jit));
    for (size_t i = 0; i < m; i++)
        free(rows[i].name);
    free(rows);
    jhr_cgc_free(&c);
    jhr_al_when_free(&w);
    return 0;
}
