/*
 * log_samples.c — a perf.data's samples named by the audit log, each against the code that
 * was at its address at the sample's time (log_samples.h): the model `profile` prints and
 * `report --profile` shows.
 *
 * Why: a JIT that frees code and compiles other code into the same addresses leaves
 * /tmp/perf-PID.map with every name the range ever had, and perf shows one of them for
 * all of its samples (lib/perfmap_pick.h says which). The audit log has each function's
 * lifetime with CLOCK_MONOTONIC times, the clock of `perf record -k 1`, so each sample
 * gets the name it had then (lib/auditlog_when.h). Without -k 1 the samples' times are
 * perf's own clock: then each is named by the code at its address at the end of the log.
 *
 * Rows are merged by name (a function recompiled under its own name is one row); code
 * outside the log is named by its mapping ("[libc.so.6]"), "[kernel]" or "[unknown]".
 * total counts the samples whose call chain passes through the row at least once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/files.h"
#include "lib/filekind.h"
#include "lib/hash.h"
#include "log_present.h"
#include "log_samples.h"

static uint64_t row_hash(const void *ctx, size_t i)
{
    const struct jhc_row *r = &((const struct jhc_samples *)ctx)->rows[i];
    return jhr_hash_str(r->name, strlen(r->name)) ^ (uint64_t)r->kind;
}

static bool row_eq(const void *ctx, size_t i, const void *key)
{
    const struct jhc_row *r = &((const struct jhc_samples *)ctx)->rows[i], *k = key;
    return r->kind == k->kind && !strcmp(r->name, k->name);
}

struct jhc_row *jhc_samples_row(struct jhc_samples *s, int kind, const char *name)
{
    struct jhc_row key = { .name = name, .kind = kind, .fn = SIZE_MAX };
    uint64_t h = jhr_hash_str(name, strlen(name)) ^ (uint64_t)kind;
    size_t i = jhr_itab_find(&s->names, h, row_eq, s, &key);
    if (i)
        return &s->rows[i - 1];
    if (s->nrows == s->caprows) {
        size_t cap = s->caprows ? s->caprows * 2 : 256;
        struct jhc_row *nr = realloc(s->rows, cap * sizeof *nr);
        if (!nr)
            return NULL;
        s->rows = nr;
        s->caprows = cap;
    }
    if (jhr_itab_grow(&s->names, row_hash, s) < 0)
        return NULL;
    s->rows[s->nrows] = key;
    jhr_itab_put(&s->names, h, s->nrows);
    return &s->rows[s->nrows++];
}

static int cmp_map(const void *a, const void *b)
{
    const struct jhc_map *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The mapping holding addr (the latest of those at the same start), or NULL. */
static const struct jhc_map *map_at(const struct jhc_samples *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++)
        if (addr < s->maps[i].end)
            return &s->maps[i];
    return NULL;
}

/* Samples per instruction: one counter per byte offset of the function (functions over
 * 16 MiB are not counted per instruction). */
static void count_ip(struct jhc_samples *s, const struct jhr_al_fn *fn, uint64_t addr)
{
    size_t i = (size_t)(fn - s->lf->fns);
    if (!s->ipc || addr < fn->cur_start || addr - fn->cur_start >= fn->size || fn->size > (16u << 20))
        return;
    if (!s->ipc[i] && !(s->ipc[i] = calloc(fn->size, sizeof **s->ipc)))
        return;
    s->ipc[i][addr - fn->cur_start]++;
}

/* The row an address of the log's process falls in; `self`: the sample's own ip (then the
 * perf map's name is checked against the log's). */
static struct jhc_row *row_at(struct jhc_samples *s, uint64_t addr, uint64_t t, bool kernel, bool self)
{
    if (kernel)
        return jhc_samples_row(s, JHC_ROW_OTHER, "[kernel]");
    bool live = false;
    const struct jhr_al_fn *fn = s->timed ? jhr_al_when_fn(&s->when, addr, t, &live)
                                          : jhr_al_fn_at(s->lf, addr, SIZE_MAX);
    if (fn) {
        struct jhc_row *r = jhc_samples_row(s, JHC_ROW_JIT, fn->name ? fn->name : "?");
        if (r && self) {
            r->fn = (size_t)(fn - s->lf->fns);
            count_ip(s, fn, addr);
            s->jit++;
            s->jit_near += s->timed && !live;
            const char *shown = jhr_pmpick_find(&s->pick, addr);
            if (!shown || strcmp(shown, r->name)) {
                s->wrong++;
                r->wrong++;
                if (!r->wrong_as)
                    r->wrong_as = shown ? shown : "no name";
                else if (strcmp(r->wrong_as, shown ? shown : "no name"))
                    r->wrong_many = true;
            }
        } else if (r && r->fn == SIZE_MAX) {
            r->fn = (size_t)(fn - s->lf->fns);
        }
        return r;
    }
    const struct jhc_map *m = map_at(s, addr);
    return m ? jhc_samples_row(s, JHC_ROW_MAP, m->name) : jhc_samples_row(s, JHC_ROW_OTHER, "[unknown]");
}

static void count(struct jhc_samples *s, struct jhc_row *r, bool self)
{
    if (!r)
        return;
    if (self)
        r->self++;
    if (r->stamp != s->sample_no) {
        r->stamp = s->sample_no;
        r->total++;
    }
}

static uint64_t node_hash(const void *ctx, size_t i)
{
    const struct jhc_node *n = &((const struct jhc_samples *)ctx)->nodes[i];
    return jhr_hash_u64(n->parent * 0x9e3779b97f4a7c15ull ^ n->row);
}

static bool node_eq(const void *ctx, size_t i, const void *key)
{
    const struct jhc_node *n = &((const struct jhc_samples *)ctx)->nodes[i], *k = key;
    return n->parent == k->parent && n->row == k->row;
}

/* The child of parent for row (made on first use), SIZE_MAX when memory runs out. */
static size_t child(struct jhc_samples *s, size_t parent, size_t row)
{
    struct jhc_node key = { parent, row, 0 };
    uint64_t h = jhr_hash_u64(parent * 0x9e3779b97f4a7c15ull ^ row);
    size_t i = jhr_itab_find(&s->kids, h, node_eq, s, &key);
    if (i)
        return i - 1;
    if (s->nnodes == s->capnodes) {
        size_t cap = s->capnodes * 2;
        struct jhc_node *nn = realloc(s->nodes, cap * sizeof *nn);
        if (!nn)
            return SIZE_MAX;
        s->nodes = nn;
        s->capnodes = cap;
    }
    if (jhr_itab_grow(&s->kids, node_hash, s) < 0)
        return SIZE_MAX;
    s->nodes[s->nnodes] = key;
    jhr_itab_put(&s->kids, h, s->nnodes);
    return s->nnodes++;
}

#define MAX_DEPTH 256

static void sample(struct jhc_samples *s, const struct jhr_pd_sample *ps)
{
    s->sample_no++;
    bool kernel = ps->cpumode == JHR_PD_CPU_KERNEL;
    struct jhc_row *self = row_at(s, ps->ip, ps->time, kernel, true);
    count(s, self, true);
    size_t stack[MAX_DEPTH], depth = 0;
    if (ps->nchain) {
        s->chains++;
        /* the chain repeats the ip first; return addresses are looked up one byte back,
         * in the call instruction, as perf does */
        bool first = true;
        for (uint32_t i = 0; i < ps->nchain; i++) {
            uint64_t a = jhr_pd_chain(ps, i);
            if (a >= JHR_PD_CONTEXT_MAX) {
                kernel = a != JHR_PD_CONTEXT_USER;
                first = true;
                continue;
            }
            struct jhc_row *r = row_at(s, first ? a : a - 1, ps->time, kernel, false);
            count(s, r, false);
            /* frames named only by their mapping ("[kernel]", "[libc.so.6]") that follow
             * one another are one frame of the flame graph; a JIT function calling itself
             * stays a frame per call */
            size_t ri = r ? (size_t)(r - s->rows) : 0;
            if (r && depth < MAX_DEPTH && !(depth && stack[depth - 1] == ri && r->kind != JHC_ROW_JIT))
                stack[depth++] = ri;
            first = false;
        }
    }
    if (!s->detail || !self)
        return;
    if (!depth)
        stack[depth++] = (size_t)(self - s->rows);
    size_t node = 0;
    s->nodes[0].count++;
    while (depth-- > 0 && node != SIZE_MAX)
        if ((node = child(s, node, stack[depth])) != SIZE_MAX)
            s->nodes[node].count++;
    if (s->ntimes == s->captimes) {
        size_t cap = s->captimes ? s->captimes * 2 : 4096;
        uint64_t *t = realloc(s->times, cap * sizeof *t);
        if (t)
            s->times = t;
        uint8_t *k = t ? realloc(s->tkind, cap) : NULL;
        if (k)
            s->tkind = k;
        if (!t || !k)
            return;
        s->captimes = cap;
    }
    s->times[s->ntimes] = ps->time;
    s->tkind[s->ntimes++] = (uint8_t)(self->kind == JHC_ROW_OTHER && !strcmp(self->name, "[kernel]") ? 3 : self->kind);
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

/* The perf map the perfmap channel wrote, line for line (log_export.c's order), into the
 * emulation of perf's lookup. */
static int pick_line(void *arg, uint64_t start, uint64_t size, const char *name)
{
    struct jhc_samples *s = arg;
    return jhr_pmpick_add(&s->pick, start, size, name ? name : "?") < 0 ? -ENOMEM : 0;
}

static int load_pick(struct jhc_samples *s)
{
    return jhc_perfmap_each(s->lf, s, pick_line);
}

static int walk(struct jhc_samples *s, uint32_t event)
{
    struct jhr_pd *pd = &s->pd;
    struct jhr_pd_ev ev;
    size_t pos = 0;
    int rc;
    /* the mappings first: perf writes some after samples that fall in them */
    while ((rc = jhr_pd_next(pd, &pos, &ev)) > 0) {
        if ((ev.type != JHR_PD_MMAP && ev.type != JHR_PD_MMAP2) || ev.m.pid != s->lf->pid ||
            ev.m.addr + ev.m.len < ev.m.addr)
            continue;
        if (s->nmaps == s->capmaps) {
            size_t cap = s->capmaps ? s->capmaps * 2 : 64;
            struct jhc_map *nm = realloc(s->maps, cap * sizeof *nm);
            if (!nm)
                return -ENOMEM;
            s->maps = nm;
            s->capmaps = cap;
        }
        s->maps[s->nmaps] = (struct jhc_map){ ev.m.addr, ev.m.addr + ev.m.len, ev.m.name, s->nmaps };
        s->nmaps++;
    }
    qsort(s->maps, s->nmaps, sizeof *s->maps, cmp_map);
    pd->bad = pd->compressed = pd->unknown_id = 0;     /* counted again by the second walk */
    for (pos = 0; (rc = jhr_pd_next(pd, &pos, &ev)) > 0;) {
        if (ev.type != JHR_PD_SAMPLE)
            continue;
        s->samples++;
        if (ev.s.attr != event)
            s->other_event++;
        else if (ev.s.pid != s->lf->pid)
            s->other_pid++;
        else {
            s->ours++;
            sample(s, &ev.s);
        }
    }
    return s->nrows || !s->ours ? 0 : -ENOMEM;
}

static const struct jhc_samples *sort_ctx;

static int cmp_row(const void *a, const void *b)
{
    const struct jhc_row *x = &sort_ctx->rows[*(const size_t *)a], *y = &sort_ctx->rows[*(const size_t *)b];
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : x->kind - y->kind;
}

static int sort_rows(struct jhc_samples *s)
{
    if (!(s->order = malloc((s->nrows ? s->nrows : 1) * sizeof *s->order)))
        return -ENOMEM;
    for (size_t i = 0; i < s->nrows; i++)
        s->order[i] = i;
    sort_ctx = s;
    qsort(s->order, s->nrows, sizeof *s->order, cmp_row);
    return 0;
}

static int load_perf(struct jhc_samples *s)
{
    char msg[256];
    if (jhr_pd_open(&s->pd, s->data, s->len, msg, sizeof msg) < 0) {
        fprintf(stderr, "jitherald log: %s: %s\n", s->path, msg);
        return 1;
    }
    s->timed = jhr_pd_monotonic(&s->pd);
    uint32_t ev = main_event(&s->pd);
    snprintf(s->event, sizeof s->event, "%s", s->pd.nattrs ? event_name(&s->pd.attrs[ev]) : "samples");
    if (s->detail) {
        s->capnodes = 1024;
        s->nodes = malloc(s->capnodes * sizeof *s->nodes);
        s->ipc = calloc(s->lf->nfns ? s->lf->nfns : 1, sizeof *s->ipc);
        if (!s->nodes || !s->ipc)
            goto oom;
        s->nodes[0] = (struct jhc_node){ SIZE_MAX, SIZE_MAX, 0 };
        s->nnodes = 1;
    }
    if (jhr_al_when_build(&s->when, s->lf) < 0 || load_pick(s) < 0 || walk(s, ev) < 0)
        goto oom;
    if (!s->ours) {
        fprintf(stderr, "jitherald log: %s: no samples of pid %" PRIu64 " (the log's process) "
                "among its %" PRIu64 "\n", s->path, s->lf->pid, s->samples);
        return 1;
    }
    return 0;
oom:
    fprintf(stderr, "jitherald log: out of memory\n");
    return 2;
}

int jhc_samples_load(struct jhc_samples *s, const struct jhr_al *lf, const char *path, bool detail)
{
    memset(s, 0, sizeof *s);
    s->lf = lf;
    s->path = path;
    s->detail = detail;
    int err = jhr_read_file(path, &s->data, &s->len);
    if (err < 0) {
        fprintf(stderr, "jitherald log: %s: %s\n", path, jhr_file_error(err));
        return 2;
    }
    enum jhr_kind k = jhr_kind_of(s->data, s->len < JHR_KIND_PEEK ? s->len : JHR_KIND_PEEK);
    int rc;
    if (k == JHR_KIND_CALLGRIND) {
        s->cg = true;
        rc = jhc_samples_cg(s);
    } else if (k == JHR_KIND_PERFDATA) {
        rc = load_perf(s);
    } else {
        fprintf(stderr, "jitherald log: %s: not a perf.data file or a callgrind profile: %s\n",
                path, jhr_kind_name(k));
        return 1;
    }
    if (!rc && sort_rows(s) < 0) {
        fprintf(stderr, "jitherald log: out of memory\n");
        rc = 2;
    }
    return rc;
}

void jhc_samples_free(struct jhc_samples *s)
{
    jhr_itab_free(&s->names);
    jhr_itab_free(&s->kids);
    free(s->rows);
    free(s->order);
    free(s->maps);
    free(s->nodes);
    free(s->times);
    free(s->tkind);
    for (size_t i = 0; s->ipc && i < s->lf->nfns; i++)
        free(s->ipc[i]);
    free(s->ipc);
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    jhr_pmpick_free(&s->pick);
    if (!s->cg && s->data)
        jhr_pd_free(&s->pd);
    if (s->when.lf)
        jhr_al_when_free(&s->when);
    free(s->data);
    memset(s, 0, sizeof *s);
}
