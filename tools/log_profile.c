/*
 * log_profile.c — `jitherald log FILE profile perf.data`: a profile's samples named by the
 * audit log, each against the code that was at its address at the sample's time.
 *
 *     $ JITHERALD=auditlog perf record -k 1 -g ./minijit --recompile-from b.mini a.mini
 *     $ jitherald log minijit-4242.jhlog profile perf.data
 *     perf.data: 3350 samples, 3350 of cpu-clock in pid 4242, with call chains
 *       self%   self   total%  total  function
 *      74.52%   2468   74.94%   2482  spin_b
 *      24.91%    825   25.27%    837  spin_a    (the perf map says spin_b for all 825)
 *     ...
 *     JIT code: 3293 samples; the perf map would name 825 of them (25.05%) differently
 *
 * Why: a JIT that frees code and compiles other code into the same addresses leaves
 * /tmp/perf-PID.map with every name the range ever had, and perf shows one of them for
 * all of its samples (lib/perfmap_pick.h says which). The audit log has each function's
 * lifetime with CLOCK_MONOTONIC times, the clock of `perf record -k 1`, so each sample
 * gets the name it had then (lib/auditlog_when.h). Without -k 1 the samples' times are
 * perf's own clock: then each is named by the code at its address at the end of the log,
 * and the report says so.
 *
 * Rows are merged by name (a function recompiled under its own name is one row); code
 * outside the log is named by its mapping ("[libc.so.6]"), "[kernel]" or "[unknown]".
 * total counts the samples whose call chain passes through the row at least once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/auditlog_when.h"
#include "lib/files.h"
#include "lib/filekind.h"
#include "lib/hash.h"
#include "lib/itab.h"
#include "lib/perfdata_read.h"
#include "lib/perfmap_pick.h"
#include "log_present.h"

#define TOP_ROWS 50

enum { ROW_JIT, ROW_MAP, ROW_OTHER };

struct row {
    const char *name;           /* a function, a mapping's path, or "[kernel]"... */
    int kind;
    uint64_t self, total, stamp;
    uint64_t wrong;             /* self samples the perf map names otherwise */
    const char *wrong_as;       /* the name it shows for the first of them (NULL: none) */
    bool wrong_many;            /* ... and some other name for others */
};

struct map { uint64_t addr, end; const char *name; size_t seq; };

struct prof {
    const struct jhr_al *lf;
    struct jhr_al_when when;
    struct jhr_pmpick pick;
    bool timed;                 /* sample times are CLOCK_MONOTONIC */
    struct row *rows;
    size_t nrows, caprows;
    struct jhr_itab names;
    struct map *maps;
    size_t nmaps, capmaps;
    uint64_t sample_no;
    uint64_t samples, ours, other_pid, other_event, jit, jit_near, wrong, chains;
};

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

static uint64_t row_hash(const void *ctx, size_t i)
{
    const struct row *r = &((const struct prof *)ctx)->rows[i];
    return jhr_hash_str(r->name, strlen(r->name)) ^ (uint64_t)r->kind;
}

static bool row_eq(const void *ctx, size_t i, const void *key)
{
    const struct row *r = &((const struct prof *)ctx)->rows[i], *k = key;
    return r->kind == k->kind && !strcmp(r->name, k->name);
}

/* The row named name, made on first use; NULL when memory runs out. */
static struct row *row_of(struct prof *pr, int kind, const char *name)
{
    struct row key = { .name = name, .kind = kind };
    uint64_t h = jhr_hash_str(name, strlen(name)) ^ (uint64_t)kind;
    size_t i = jhr_itab_find(&pr->names, h, row_eq, pr, &key);
    if (i)
        return &pr->rows[i - 1];
    if (pr->nrows == pr->caprows) {
        size_t cap = pr->caprows ? pr->caprows * 2 : 256;
        struct row *nr = realloc(pr->rows, cap * sizeof *nr);
        if (!nr)
            return NULL;
        pr->rows = nr;
        pr->caprows = cap;
    }
    if (jhr_itab_grow(&pr->names, row_hash, pr) < 0)
        return NULL;
    pr->rows[pr->nrows] = key;
    jhr_itab_put(&pr->names, h, pr->nrows);
    return &pr->rows[pr->nrows++];
}

static int cmp_map(const void *a, const void *b)
{
    const struct map *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The mapping holding addr (the latest of those at the same start), or NULL. */
static const struct map *map_at(const struct prof *pr, uint64_t addr)
{
    size_t lo = 0, hi = pr->nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pr->maps[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++)
        if (addr < pr->maps[i].end)
            return &pr->maps[i];
    return NULL;
}

/* The row an address of the log's process falls in; `self`: the sample's own ip (then the
 * perf map's name is checked against the log's). */
static struct row *row_at(struct prof *pr, uint64_t addr, uint64_t t, bool kernel, bool self)
{
    if (kernel)
        return row_of(pr, ROW_OTHER, "[kernel]");
    bool live = false;
    const struct jhr_al_fn *fn = pr->timed ? jhr_al_when_fn(&pr->when, addr, t, &live)
                                           : jhr_al_fn_at(pr->lf, addr, SIZE_MAX);
    if (fn) {
        struct row *r = row_of(pr, ROW_JIT, fn->name ? fn->name : "?");
        if (r && self) {
            pr->jit++;
            pr->jit_near += pr->timed && !live;
            const char *shown = jhr_pmpick_find(&pr->pick, addr);
            if (!shown || strcmp(shown, r->name)) {
                pr->wrong++;
                r->wrong++;
                if (!r->wrong_as)
                    r->wrong_as = shown ? shown : "no name";
                else if (strcmp(r->wrong_as, shown ? shown : "no name"))
                    r->wrong_many = true;
            }
        }
        return r;
    }
    const struct map *m = map_at(pr, addr);
    return m ? row_of(pr, ROW_MAP, m->name) : row_of(pr, ROW_OTHER, "[unknown]");
}

static void count(struct prof *pr, struct row *r, bool self)
{
    if (!r)
        return;
    if (self)
        r->self++;
    if (r->stamp != pr->sample_no) {
        r->stamp = pr->sample_no;
        r->total++;
    }
}

static void sample(struct prof *pr, const struct jhr_pd_sample *s)
{
    pr->sample_no++;
    bool kernel = s->cpumode == JHR_PD_CPU_KERNEL;
    count(pr, row_at(pr, s->ip, s->time, kernel, true), true);
    if (!s->nchain)
        return;
    pr->chains++;
    /* the chain repeats the ip first; return addresses are looked up one byte back, in
     * the call instruction, as perf does */
    bool first = true;
    for (uint32_t i = 0; i < s->nchain; i++) {
        uint64_t a = jhr_pd_chain(s, i);
        if (a >= JHR_PD_CONTEXT_MAX) {
            kernel = a != JHR_PD_CONTEXT_USER;
            first = true;
            continue;
        }
        count(pr, row_at(pr, first ? a : a - 1, s->time, kernel, false), false);
        first = false;
    }
}

/* The event profiled: the first that is not perf's "dummy" (software event 9). */
static uint32_t main_event(const struct jhr_pd *pd)
{
    for (size_t a = 0; a < pd->nattrs; a++)
        if (!(pd->attrs[a].type == 1 && pd->attrs[a].config == 9))
            return (uint32_t)a;
    return 0;
}

static const char *event_name(const struct jhr_pd_attr *a)
{
    static const char *sw[] = { "cpu-clock", "task-clock" }, *hw[] = { "cycles", "instructions" };
    if (a->type == 1 && a->config < 2)
        return sw[a->config];
    if (a->type == 0 && a->config < 2)
        return hw[a->config];
    return "an event";
}

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

static double pct(uint64_t n, uint64_t of) { return of ? 100.0 * (double)n / (double)of : 0; }

static void print(struct prof *pr, const char *path, const struct jhr_pd *pd, FILE *f)
{
    const struct jhr_pd_attr *ev = &pd->attrs[main_event(pd)];
    fprintf(f, "%s: %" PRIu64 " samples, %" PRIu64 " of %s in pid %" PRIu64 "%s\n", path,
            pr->samples, pr->ours, event_name(ev), pr->lf->pid,
            pr->chains ? ", with call chains" : " (no call chains: total is self; record with -g)");
    if (!pr->timed)
        fprintf(f, "warning: %s was not recorded with perf record -k 1: its times are not "
                "the log's CLOCK_MONOTONIC, so each sample is named by the code at its "
                "address at the end of the log, and code that reused an address is "
                "misnamed\n", path);
    qsort(pr->rows, pr->nrows, sizeof *pr->rows, cmp_row);
    fprintf(f, "  self%%    self  total%%   total  function\n");
    for (size_t i = 0; i < pr->nrows && i < TOP_ROWS; i++) {
        const struct row *r = &pr->rows[i];
        fprintf(f, "%6.2f%% %7" PRIu64 " %6.2f%% %7" PRIu64 "  ", pct(r->self, pr->ours), r->self,
                pct(r->total, pr->ours), r->total);
        if (r->kind == ROW_MAP && r->name[0] != '[')
            fprintf(f, "[%s]\n", base_name(r->name));
        else if (r->kind == ROW_MAP)
            fprintf(f, "%s\n", r->name);
        else
            fprintf(f, "%s%s", r->name, r->kind == ROW_JIT && r->wrong ? "" : "\n");
        if (r->kind == ROW_JIT && r->wrong)
            fprintf(f, "    (the perf map says %s for %s%" PRIu64 ")\n", r->wrong_as,
                    r->wrong_many ? "some of these, other names for the rest: " : r->wrong == r->self ? "all " : "",
                    r->wrong);
    }
    if (pr->nrows > TOP_ROWS)
        fprintf(f, "(%zu more rows)\n", pr->nrows - TOP_ROWS);
    fprintf(f, "JIT code: %" PRIu64 " samples; the perf map would name %" PRIu64 " of them "
            "(%.2f%%) differently\n", pr->jit, pr->wrong, pct(pr->wrong, pr->jit));
    if (pr->jit_near)
        fprintf(f, "%" PRIu64 " JIT samples fell outside every lifetime at their address (taken "
                "just before the code was announced or after it was removed): named by the "
                "nearest\n", pr->jit_near);
    if (pr->other_pid || pr->other_event)
        fprintf(f, "not counted: %" PRIu64 " samples of other processes, %" PRIu64 " of other "
                "events\n", pr->other_pid, pr->other_event);
    if (pd->cut)
        fprintf(f, "warning: %s ends before its data section does: read as far as it goes\n", path);
    if (pd->bad || pd->compressed || pd->unknown_id)
        fprintf(f, "warning: %s: %zu damaged records%s, %zu compressed (perf record -z: "
                "not read), %zu samples of unknown events\n", path, pd->bad,
                pd->bad ? " (the rest of the file after the first is not read)" : "",
                pd->compressed, pd->unknown_id);
}

/* The perf map the perfmap channel wrote, line for line (log_export.c's order), into the
 * emulation of perf's lookup. */
static int load_pick(struct prof *pr)
{
    const struct jhr_al *lf = pr->lf;
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        if ((r->kind != JHR_AL_CODE_ADD && r->kind != JHR_AL_CODE_MOVE) || r->ref < 0)
            continue;
        const struct jhr_al_fn *fn = &lf->fns[r->ref];
        uint64_t start = fn->start;
        if (r->kind == JHR_AL_CODE_MOVE && !jhr_mp_get_u64(&r->map, JH__AL_K_START, &start))
            continue;
        if (jhr_pmpick_add(&pr->pick, start, fn->size, fn->name ? fn->name : "?") < 0)
            return -ENOMEM;
    }
    return 0;
}

static int walk(struct prof *pr, struct jhr_pd *pd, uint32_t event)
{
    struct jhr_pd_ev ev;
    size_t pos = 0;
    int rc;
    /* the mappings first: perf writes some after samples that fall in them */
    while ((rc = jhr_pd_next(pd, &pos, &ev)) > 0) {
        if ((ev.type != JHR_PD_MMAP && ev.type != JHR_PD_MMAP2) || ev.m.pid != pr->lf->pid ||
            ev.m.addr + ev.m.len < ev.m.addr)
            continue;
        if (pr->nmaps == pr->capmaps) {
            size_t cap = pr->capmaps ? pr->capmaps * 2 : 64;
            struct map *nm = realloc(pr->maps, cap * sizeof *nm);
            if (!nm)
                return -ENOMEM;
            pr->maps = nm;
            pr->capmaps = cap;
        }
        pr->maps[pr->nmaps] = (struct map){ ev.m.addr, ev.m.addr + ev.m.len, ev.m.name, pr->nmaps };
        pr->nmaps++;
    }
    qsort(pr->maps, pr->nmaps, sizeof *pr->maps, cmp_map);
    pd->bad = pd->compressed = pd->unknown_id = 0;     /* counted again by the second walk */
    for (pos = 0; (rc = jhr_pd_next(pd, &pos, &ev)) > 0;) {
        if (ev.type != JHR_PD_SAMPLE)
            continue;
        pr->samples++;
        if (ev.s.attr != event)
            pr->other_event++;
        else if (ev.s.pid != pr->lf->pid)
            pr->other_pid++;
        else {
            pr->ours++;
            sample(pr, &ev.s);
        }
    }
    return pr->nrows || !pr->ours ? 0 : -ENOMEM;
}

int jhc_log_profile(const struct jhr_al *lf, const char *path, FILE *out)
{
    uint8_t *data;
    size_t len;
    int err = jhr_read_file(path, &data, &len);
    if (err < 0) {
        fprintf(stderr, "jitherald log: %s: %s\n", path, jhr_file_error(err));
        return 2;
    }
    enum jhr_kind k = jhr_kind_of(data, len < JHR_KIND_PEEK ? len : JHR_KIND_PEEK);
    if (k == JHR_KIND_CALLGRIND) {
        int crc = jhc_log_profile_cg(lf, (const char *)data, len, path, out);
        free(data);
        return crc;
    }
    if (k != JHR_KIND_PERFDATA) {
        fprintf(stderr, "jitherald log: %s: not a perf.data file or a callgrind profile: %s\n",
                path, jhr_kind_name(k));
        free(data);
        return 1;
    }
    struct jhr_pd pd;
    char msg[256];
    if (jhr_pd_open(&pd, data, len, msg, sizeof msg) < 0) {
        fprintf(stderr, "jitherald log: %s: %s\n", path, msg);
        free(data);
        return 1;
    }
    struct prof pr = { .lf = lf, .timed = jhr_pd_monotonic(&pd) };
    int rc = 0;
    if (jhr_al_when_build(&pr.when, lf) < 0 || load_pick(&pr) < 0 ||
        walk(&pr, &pd, main_event(&pd)) < 0) {
        fprintf(stderr, "jitherald log: out of memory\n");
        rc = 2;
    } else if (!pr.ours) {
        fprintf(stderr, "jitherald log: %s: no samples of pid %" PRIu64 " (the log's process) "
                "among its %" PRIu64 "\n", path, lf->pid, pr.samples);
        rc = 1;
    } else {
        print(&pr, path, &pd, out);
    }
    jhr_itab_free(&pr.names);
    free(pr.rows);
    free(pr.maps);
    jhr_pmpick_free(&pr.pick);
    jhr_al_when_free(&pr.when);
    jhr_pd_free(&pd);
    free(data);
    return rc;
}
