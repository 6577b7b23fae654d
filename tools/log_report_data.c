/*
 * log_report_data.c — the data of the HTML report (log_report.c) as one JSON document,
 * columnar so that a log of 100,000 functions stays a few bytes per function before
 * compression: the page (tools/report/page.js) renders from it lazily.
 *
 *   meta      the log's header and what the reader met; the profile's totals
 *   fn        one column per field, one entry per function of the log, in load order
 *   rows      the profile's rows (log_samples.h), hottest first; without a profile, none
 *   flame     the call tree: parent, row, count per node (node 0: all samples)
 *   detail    for the hottest functions (or the first ones, without a profile): the
 *             disassembly with source lines (log_disasm.c), samples per instruction, the
 *             compile history (its loads, moves, patches, unload and the events that
 *             name its code) and the logged memory those events name, decoded (log_dwarf.c)
 *   tl        the timeline, aggregated: counts per time bin, one lane per kind of record
 *             (per event name) and per kind of sample
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log_present.h"
#include "log_samples.h"

#define DETAIL_MAX 300
#define HIST_MAX 200            /* history entries per function */
#define MEMS_MAX 20             /* memory snapshots per function */
#define BINS 240
#define EV_LANES 6

static void jstr(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else if (c == '<')
            fputs("\\u003c", f);        /* never "</script>" inside the page */
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void js(FILE *f, const char *s) { jstr(f, s ? s : "", s ? strlen(s) : 0); }

/* Microseconds since the log's header. */
static long long us(const struct jhr_al *lf, uint64_t t) { return (long long)(jhr_al_secs(lf, t) * 1e6 + 0.5); }

/* A view's text (print(ctx, f)) as a JSON string. */
static void jtext(FILE *f, void (*print)(void *ctx, FILE *m), void *ctx)
{
    char *txt = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&txt, &len);
    if (!m) {
        js(f, "");
        return;
    }
    print(ctx, m);
    fclose(m);
    jstr(f, txt, len);
    free(txt);
}

static void col_u64(FILE *f, const char *name, const struct jhr_al *lf, uint64_t (*get)(const struct jhr_al *, size_t))
{
    fprintf(f, "\"%s\":[", name);
    for (size_t i = 0; i < lf->nfns; i++)
        fprintf(f, "%s%" PRIu64, i ? "," : "", get(lf, i));
    fputs("]", f);
}

static uint64_t g_start(const struct jhr_al *lf, size_t i) { return lf->fns[i].cur_start; }
static uint64_t g_size(const struct jhr_al *lf, size_t i) { return lf->fns[i].size; }
static uint64_t g_add(const struct jhr_al *lf, size_t i) { return (uint64_t)us(lf, lf->fns[i].t_add); }
static uint64_t g_rm(const struct jhr_al *lf, size_t i) { return lf->fns[i].removed ? (uint64_t)us(lf, lf->fns[i].t_remove) + 1 : 0; }
static uint64_t g_moves(const struct jhr_al *lf, size_t i) { return lf->fns[i].nmoves; }
static uint64_t g_patches(const struct jhr_al *lf, size_t i) { return lf->fns[i].npatches; }
static uint64_t g_thread(const struct jhr_al *lf, size_t i)
{
    return lf->fns[i].rec < lf->nrecs ? lf->recs[lf->fns[i].rec].thread : 0;
}

static void functions(const struct jhr_al *lf, FILE *f)
{
    fputs("\"fn\":{\"name\":[", f);
    for (size_t i = 0; i < lf->nfns; i++) {
        if (i)
            fputc(',', f);
        js(f, lf->fns[i].name);
    }
    fputs("],", f);
    col_u64(f, "start", lf, g_start);
    fputc(',', f);
    col_u64(f, "size", lf, g_size);
    fputc(',', f);
    col_u64(f, "add", lf, g_add);
    fputc(',', f);
    col_u64(f, "rm", lf, g_rm);         /* 0: live at the end, else µs + 1 */
    fputc(',', f);
    col_u64(f, "moves", lf, g_moves);
    fputc(',', f);
    col_u64(f, "patches", lf, g_patches);
    fputc(',', f);
    col_u64(f, "thread", lf, g_thread);
    /* source: "file:line" of the first line-table row, files interned */
    fputs(",\"src\":[", f);
    for (size_t i = 0; i < lf->nfns; i++) {
        uint32_t line;
        const char *file = jhr_al_fn_line(&lf->fns[i], 0, &line);
        if (i)
            fputc(',', f);
        if (!file) {
            fputs("\"\"", f);
            continue;
        }
        char buf[64];
        const char *base = strrchr(file, '/');
        snprintf(buf, sizeof buf, ":%u", line);
        size_t n = strlen(base ? base + 1 : file);
        char *s = malloc(n + sizeof buf);
        if (!s) {
            fputs("\"\"", f);
            continue;
        }
        memcpy(s, base ? base + 1 : file, n);
        strcpy(s + n, buf);
        js(f, s);
        free(s);
    }
    fputs("]}", f);
}

static void rows(const struct jhc_samples *s, FILE *f)
{
    fputs("\"rows\":{\"name\":[", f);
    for (size_t k = 0; k < s->nrows; k++) {
        if (k)
            fputc(',', f);
        js(f, s->rows[s->order[k]].name);
    }
#define COL(key, expr) do { fputs("],\"" key "\":[", f); \
        for (size_t k = 0; k < s->nrows; k++) { const struct jhc_row *r = &s->rows[s->order[k]]; \
            fprintf(f, "%s%lld", k ? "," : "", (long long)(expr)); } } while (0)
    COL("kind", r->kind);
    COL("self", r->self);
    COL("total", r->total);
    COL("wrong", r->wrong);
    COL("many", r->wrong_many);
    COL("shared", r->shared);
    COL("fn", r->kind == JHC_ROW_JIT && r->fn != SIZE_MAX ? (long long)r->fn : -1);
#undef COL
    fputs("],\"as\":[", f);
    for (size_t k = 0; k < s->nrows; k++) {
        if (k)
            fputc(',', f);
        js(f, s->rows[s->order[k]].wrong_as);
    }
    fputs("]}", f);
    /* the call tree, rows by their place in the order above */
    size_t *place = malloc((s->nrows ? s->nrows : 1) * sizeof *place);
    if (!place || !s->nnodes) {
        free(place);
        fputs(",\"flame\":null", f);
        return;
    }
    for (size_t k = 0; k < s->nrows; k++)
        place[s->order[k]] = k;
    fputs(",\"flame\":{\"parent\":[", f);
    for (size_t i = 0; i < s->nnodes; i++)
        fprintf(f, "%s%lld", i ? "," : "", i ? (long long)s->nodes[i].parent : -1LL);
    fputs("],\"row\":[", f);
    for (size_t i = 0; i < s->nnodes; i++)
        fprintf(f, "%s%lld", i ? "," : "", i ? (long long)place[s->nodes[i].row] : -1LL);
    fputs("],\"count\":[", f);
    for (size_t i = 0; i < s->nnodes; i++)
        fprintf(f, "%s%" PRIu64, i ? "," : "", s->nodes[i].count);
    fputs("]}", f);
    free(place);
}

/* The disassembly as a JSON string; of a big function (a VM's main with 100,000 calls)
 * only the first lines and those around each instruction with samples, the rest said to
 * be left out: the page stays small and its DOM light. */
#define ASM_WHOLE (256u << 10)
#define ASM_HEAD 400
#define ASM_AROUND 40

static bool sampled(const struct jhr_al_fn *fn, const uint32_t *ipc, const char *line, size_t n)
{
    char buf[24];
    if (!ipc || n < 16 || line[0] != ' ')
        return false;
    size_t k = 0;
    while (k < n && line[k] == ' ')
        k++;
    size_t d = 0;
    while (k < n && d < sizeof buf - 1 && line[k] != ':')
        buf[d++] = line[k++];
    buf[d] = 0;
    char *e;
    uint64_t a = strtoull(buf, &e, 16);
    return k < n && *e == 0 && d && a >= fn->cur_start && a - fn->cur_start < fn->size && ipc[a - fn->cur_start];
}

static void asm_text(const struct jhr_al *lf, const struct jhr_al_fn *fn, const uint32_t *ipc, FILE *f)
{
    char *txt = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&txt, &len);
    if (!m) {
        js(f, "");
        return;
    }
    jhc_disasm_print(lf, fn, m, false);
    fclose(m);
    size_t nl = 0;
    for (size_t i = 0; i < len; i++)
        nl += txt[i] == '\n';
    size_t *at = len > ASM_WHOLE ? malloc((nl + 1) * sizeof *at) : NULL;
    uint8_t *keep = at ? calloc(nl + 1, 1) : NULL;
    if (!keep) {
        free(at);
        jstr(f, txt, len);
        free(txt);
        return;
    }
    size_t n = 0;
    at[n++] = 0;
    for (size_t i = 0; i < len; i++)
        if (txt[i] == '\n' && i + 1 < len)
            at[n++] = i + 1;
    for (size_t k = 0; k < n; k++) {
        size_t end = k + 1 < n ? at[k + 1] : len;
        if (k < ASM_HEAD || sampled(fn, ipc, txt + at[k], end - at[k]))
            for (size_t j = k > ASM_AROUND ? k - ASM_AROUND : 0; j <= k + ASM_AROUND && j < n; j++)
                keep[j] = 1;
    }
    char *out = NULL;
    size_t olen = 0;
    FILE *o = open_memstream(&out, &olen);
    for (size_t k = 0; o && k < n;) {
        size_t end = k + 1 < n ? at[k + 1] : len;
        if (keep[k]) {
            fwrite(txt + at[k], 1, end - at[k], o);
            k++;
            continue;
        }
        size_t skip = 0;
        while (k < n && !keep[k])
            k++, skip++;
        fprintf(o, "    ... %zu lines left out of the page: jitherald log FILE show %s\n", skip,
                fn->name ? fn->name : "?");
    }
    if (o) {
        fclose(o);
        jstr(f, out, olen);
    } else {
        js(f, "");
    }
    free(out);
    free(keep);
    free(at);
    free(txt);
}

struct mem_ctx { struct jhc_types *dt; const struct jhr_al *lf; const struct jhr_al_mem *m; };
static void mem_text(void *ctx, FILE *f)
{
    struct mem_ctx *c = ctx;
    const struct jhr_al_mem *m = c->m;
    if (c->dt && jhc_types_print(c->dt, c->lf, m, m->rec, f, false) == 0)
        return;
    fprintf(f, "%s @ 0x%" PRIx64 ", %u bytes%s\n", m->hint ? m->hint : "memory", m->addr, m->size,
            c->dt ? "" : " (no VM binary with DWARF: --vm)");
    for (uint32_t k = 0; k < m->size && k < 1024; k++)
        fprintf(f, "%02x%s", m->data[k], k % 16 == 15 ? "\n" : " ");
    fputc('\n', f);
}

static void event_text(void *ctx, FILE *f)
{
    const struct jhr_al_rec *r = ctx;
    const char *s = "";
    uint32_t sl = 0;
    jhr_mp_get_str(&r->map, JH__AL_K_EVENT, &s, &sl);
    fprintf(f, "%.*s", (int)sl, s);
    struct jhr_mp attrs;
    if (jhr_mp_get(&r->map, JH__AL_K_ATTRS, &attrs) == 0) {
        fputc(' ', f);
        jhr_mp_print(f, &attrs, 1);
    }
}

/* Per detailed function, the records that concern it, in log order: (record index + 1)
 * lists, and the memory snapshots its events name. */
struct hist { size_t *recs; size_t n; size_t mems[MEMS_MAX]; size_t nmems; };

static void hist_add(struct hist *h, size_t rec)
{
    if (h->n >= HIST_MAX)
        return;
    if (!h->recs && !(h->recs = malloc(HIST_MAX * sizeof *h->recs)))
        return;
    h->recs[h->n++] = rec;
}

static void histories(const struct jhr_al *lf, const int *slot, struct hist *hs)
{
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        if (r->kind == JHR_AL_CODE_ADD || r->kind == JHR_AL_CODE_MOVE || r->kind == JHR_AL_CODE_PATCHED ||
            r->kind == JHR_AL_CODE_REMOVE) {
            if (r->ref >= 0 && slot[r->ref] >= 0)
                hist_add(&hs[slot[r->ref]], i);
            continue;
        }
        struct jhr_mp attrs, k, v;
        if (r->kind != JHR_AL_EVENT || jhr_mp_get(&r->map, JH__AL_K_ATTRS, &attrs) != 0 || attrs.t != JHR_MP_MAP)
            continue;
        /* the functions this event names, and the memory it names beside them */
        int named[8], nnamed = 0;
        size_t mems[8], nm = 0;
        const uint8_t *it = attrs.p;
        for (uint32_t j = 0; j < attrs.n && jhr_mp_next(&attrs, &it, &k) == 0 && jhr_mp_next(&attrs, &it, &v) == 0; j++) {
            uint64_t a;
            const struct jhr_al_mem *m;
            const struct jhr_al_fn *fn;
            if (!jhr_mp_addr(&v, &a) || !jhr_al_resolve(lf, a, i, &m, &fn))
                continue;
            if (m && nm < 8)
                mems[nm++] = (size_t)(m - lf->mems);
            if (!m && fn && slot[fn - lf->fns] >= 0 && nnamed < 8)
                named[nnamed++] = slot[fn - lf->fns];
        }
        for (int x = 0; x < nnamed; x++) {
            struct hist *h = &hs[named[x]];
            hist_add(h, i);
            for (size_t y = 0; y < nm; y++) {
                bool have = false;
                for (size_t z = 0; z < h->nmems; z++)
                    have |= h->mems[z] == mems[y];
                if (!have && h->nmems < MEMS_MAX)
                    h->mems[h->nmems++] = mems[y];
            }
        }
    }
}

static void detail_one(const struct jhr_al *lf, const struct jhc_samples *s, struct jhc_types *dt,
                       size_t fi, const struct hist *h, FILE *f)
{
    const struct jhr_al_fn *fn = &lf->fns[fi];
    fprintf(f, "\"%zu\":{\"asm\":", fi);
    const uint32_t *ipc = s && s->ipc ? s->ipc[fi] : NULL;
    asm_text(lf, fn, ipc, f);
    fputs(",\"ipc\":[", f);
    for (uint64_t o = 0, n = 0; ipc && o < fn->size; o++)
        if (ipc[o])
            fprintf(f, "%s[%" PRIu64 ",%u]", n++ ? "," : "", fn->cur_start + o, ipc[o]);
    fputs("],\"hist\":[", f);
    for (size_t k = 0; k < h->n; k++) {
        const struct jhr_al_rec *r = &lf->recs[h->recs[k]];
        fprintf(f, "%s[%lld,\"%s\",%u,", k ? "," : "", us(lf, r->time), jhr_al_kind_name(r->kind), r->thread);
        if (r->kind == JHR_AL_EVENT) {
            jtext(f, event_text, (void *)r);
        } else if (r->kind == JHR_AL_CODE_MOVE) {
            uint64_t to = 0;
            jhr_mp_get_u64(&r->map, JH__AL_K_START, &to);
            char b[64];
            snprintf(b, sizeof b, "to 0x%" PRIx64, to);
            js(f, b);
        } else if (r->kind == JHR_AL_CODE_ADD) {
            char b[96];
            snprintf(b, sizeof b, "at 0x%" PRIx64 ", %" PRIu64 " bytes", fn->start, fn->size);
            js(f, b);
        } else {
            js(f, "");
        }
        fputc(']', f);
    }
    fputs("],\"mem\":[", f);
    for (size_t k = 0; k < h->nmems; k++) {
        struct mem_ctx mc = { dt, lf, &lf->mems[h->mems[k]] };
        if (k)
            fputc(',', f);
        jtext(f, mem_text, &mc);
    }
    fputs("]}", f);
}

static void details(const struct jhr_al *lf, const struct jhc_samples *s, struct jhc_types *dt, FILE *f)
{
    int *slot = malloc((lf->nfns ? lf->nfns : 1) * sizeof *slot);
    size_t *pick = malloc(DETAIL_MAX * sizeof *pick), npick = 0;
    struct hist *hs = calloc(DETAIL_MAX, sizeof *hs);
    fputs("\"detail\":{", f);
    if (!slot || !pick || !hs)
        goto out;
    for (size_t i = 0; i < lf->nfns; i++)
        slot[i] = -1;
    /* the hottest JIT functions, each under the function last seen with its name; then
     * (and without a profile) the first functions loaded */
    for (size_t k = 0; s && k < s->nrows && npick < DETAIL_MAX; k++) {
        const struct jhc_row *r = &s->rows[s->order[k]];
        if (r->kind == JHC_ROW_JIT && r->fn != SIZE_MAX && slot[r->fn] < 0) {
            slot[r->fn] = (int)npick;
            pick[npick++] = r->fn;
        }
    }
    size_t upto = s ? npick + 20 : DETAIL_MAX;
    for (size_t i = 0; i < lf->nfns && npick < upto && npick < DETAIL_MAX; i++)
        if (slot[i] < 0) {
            slot[i] = (int)npick;
            pick[npick++] = i;
        }
    histories(lf, slot, hs);
    for (size_t k = 0; k < npick; k++) {
        if (k)
            fputc(',', f);
        detail_one(lf, s, dt, pick[k], &hs[k], f);
    }
out:
    fputs("}", f);
    for (size_t k = 0; hs && k < DETAIL_MAX; k++)
        free(hs[k].recs);
    free(hs);
    free(pick);
    free(slot);
}

/* The timeline: records and samples counted per bin, one lane per kind. */
static void timeline(const struct jhr_al *lf, const struct jhc_samples *s, FILE *f)
{
    uint64_t t0 = 0, t1 = 0;
    for (size_t i = 1; i < lf->nrecs; i++) {
        if (lf->recs[i].kind == JHR_AL_CLOSE)
            continue;           /* jh_close may come long after the last thing the VM did */
        uint64_t t = lf->recs[i].time;
        t0 = !t0 || t < t0 ? t : t0;
        t1 = t > t1 ? t : t1;
    }
    bool samples = s && s->timed && s->ntimes;
    for (size_t i = 0; samples && i < s->ntimes; i++) {
        t0 = !t0 || s->times[i] < t0 ? s->times[i] : t0;
        t1 = s->times[i] > t1 ? s->times[i] : t1;
    }
    if (!t0)
        t0 = t1 = lf->t0;
    if (t1 <= t0)
        t1 = t0 + 1;
    /* the event names with most records get their own lane */
    const char *evn[EV_LANES];
    uint32_t evl[EV_LANES];
    size_t evc[EV_LANES] = { 0 }, nev = 0;
    for (size_t i = 0; i < lf->nrecs; i++) {
        const char *n;
        uint32_t l;
        if (lf->recs[i].kind != JHR_AL_EVENT || !jhr_mp_get_str(&lf->recs[i].map, JH__AL_K_EVENT, &n, &l))
            continue;
        size_t k = 0;
        while (k < nev && !(evl[k] == l && !memcmp(evn[k], n, l)))
            k++;
        if (k == nev && nev < EV_LANES) {
            evn[nev] = n;
            evl[nev++] = l;
        }
        if (k < nev)
            evc[k]++;
    }
    enum { L_ADD, L_MOVE, L_PATCH, L_RM, L_MEM, L_EV0, L_EVX = L_EV0 + EV_LANES, L_SJIT, L_SMAP, L_SOTHER, L_SKERN, NL };
    static uint32_t c[NL][BINS];
    memset(c, 0, sizeof c);
    double span = (double)(t1 - t0);
#define BIN(t) ((t) <= t0 ? 0 : (t) >= t1 ? BINS - 1 : (int)((double)((t) - t0) / span * BINS))
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        int lane = r->kind == JHR_AL_CODE_ADD ? L_ADD : r->kind == JHR_AL_CODE_MOVE ? L_MOVE
                 : r->kind == JHR_AL_CODE_PATCHED ? L_PATCH : r->kind == JHR_AL_CODE_REMOVE ? L_RM
                 : r->kind == JHR_AL_MEMORY ? L_MEM : r->kind == JHR_AL_EVENT ? L_EVX : -1;
        if (lane == L_EVX) {
            const char *n;
            uint32_t l;
            if (jhr_mp_get_str(&r->map, JH__AL_K_EVENT, &n, &l))
                for (size_t k = 0; k < nev; k++)
                    if (evl[k] == l && !memcmp(evn[k], n, l))
                        lane = L_EV0 + (int)k;
        }
        if (lane >= 0)
            c[lane][BIN(r->time)]++;
    }
    for (size_t i = 0; samples && i < s->ntimes; i++)
        c[L_SJIT + s->tkind[i]][BIN(s->times[i])]++;
#undef BIN
    fprintf(f, "\"tl\":{\"t0\":%lld,\"t1\":%lld,\"lanes\":[", us(lf, t0), us(lf, t1));
    static const char *names[] = { "load", "move", "patch", "unload", "memory" };
    bool first = true;
    for (int l = 0; l < NL; l++) {
        char nm[96];
        if (l < L_EV0)
            snprintf(nm, sizeof nm, "%s%s", l == L_MEM ? "" : "code: ", names[l]);
        else if (l < L_EVX && (size_t)(l - L_EV0) < nev)
            snprintf(nm, sizeof nm, "event: %.*s", (int)evl[l - L_EV0], evn[l - L_EV0]);
        else if (l == L_EVX)
            snprintf(nm, sizeof nm, "event: others");
        else if (l >= L_SJIT)
            snprintf(nm, sizeof nm, "samples: %s", (const char *[]){ "JIT", "native", "other", "kernel" }[l - L_SJIT]);
        else
            continue;
        uint64_t sum = 0;
        for (int b = 0; b < BINS; b++)
            sum += c[l][b];
        if (!sum)
            continue;
        fprintf(f, "%s{\"name\":", first ? "" : ",");
        first = false;
        js(f, nm);
        fputs(",\"c\":[", f);
        for (int b = 0; b < BINS; b++)
            fprintf(f, "%s%u", b ? "," : "", c[l][b]);
        fputs("]}", f);
    }
    fputs("]}", f);
}

int jhc_report_json(const struct jhr_al *lf, const struct jhc_samples *s, struct jhc_types *dt, FILE *f)
{
    size_t nev = 0;
    for (size_t i = 0; i < lf->nrecs; i++)
        nev += lf->recs[i].kind == JHR_AL_EVENT;
    fputs("{\"meta\":{\"engine\":", f);
    js(f, lf->engine);
    fputs(",\"exe\":", f);
    js(f, lf->exe);
    fputs(",\"arch\":", f);
    js(f, lf->arch);
    fprintf(f, ",\"pid\":%" PRIu64 ",\"version\":%" PRIu64 ",\"closed\":%d,\"cut\":%zu,\"limit\":%d,"
               "\"dropped\":%" PRIu64 ",\"nrecs\":%zu,\"nfns\":%zu,\"nmems\":%zu,\"nev\":%zu,\"dt\":%d",
            lf->pid, lf->version, lf->closed, lf->cut, lf->limit_hit, lf->dropped, lf->nrecs, lf->nfns,
            lf->nmems, nev, dt != NULL);
    if (s) {
        fputs(",\"profile\":{\"path\":", f);
        js(f, s->path);
        fputs(",\"event\":", f);
        js(f, s->event);
        fprintf(f, ",\"cg\":%d,\"timed\":%d,\"samples\":%" PRIu64 ",\"ours\":%" PRIu64 ",\"jit\":%" PRIu64
                   ",\"wrong\":%" PRIu64 ",\"near\":%" PRIu64 ",\"chains\":%" PRIu64 ",\"shared\":%" PRIu64
                   ",\"otherpid\":%" PRIu64 "}", s->cg, s->timed, s->samples, s->ours, s->jit, s->wrong,
                s->jit_near, s->chains, s->shared, s->other_pid);
    }
    fputs("},", f);
    functions(lf, f);
    fputc(',', f);
    if (s)
        rows(s, f);
    else
        fputs("\"rows\":null,\"flame\":null", f);
    fputc(',', f);
    details(lf, s, dt, f);
    fputc(',', f);
    timeline(lf, s, f);
    fputs("}\n", f);
    return ferror(f) ? -1 : 0;
}
