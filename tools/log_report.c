/*
 * log_report.c — `jitherald log FILE report -o report.html`: one self-contained page (no
 * script, no external file) that a person browses instead of reading hex:
 *
 *   - a summary (engine, pid, whether the log was closed or cut by a crash, limit hits);
 *   - a timeline (inline SVG): one bar per function from load to unload, events as ticks;
 *   - the table of functions with sizes, lifetimes and source (table id "functions");
 *   - per function, its disassembly with source lines (<details>, closed by default);
 *   - the events, with address attributes linked to the memory they refer to;
 *   - the logged memory, decoded as C structs when the VM binary's DWARF is at hand.
 *
 * Big logs are cut to the first REPORT_MAX of each list, and the page says so.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log_present.h"
#include "lib/text.h"

#define REPORT_MAX 500
#define TL_ROWS 60

static void esc(FILE *f, const char *s) { jhr_html_escape(f, s ? s : "", s ? strlen(s) : 0); }

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de}"
    ".sum{color:#57606a}.bad{color:#b42318;font-weight:600}.ok{color:#1a7f37}"
    "table{border-collapse:collapse;font-size:13px;background:#fff}"
    "th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left}th{background:#f0f3f6}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "pre{background:#fff;border:1px solid #d0d7de;padding:8px;overflow-x:auto;font-size:12px}"
    ".src{color:#0550ae;font-weight:600}.srctext{color:#0550ae}.fnhead{font-family:monospace;margin-top:6px}"
    "details{margin:4px 0}summary{cursor:pointer;font-family:monospace}"
    "svg{background:#fff;border:1px solid #d0d7de}.warn{color:#9a6700}";

static void fmt_secs(FILE *f, const struct jhr_al *lf, uint64_t t) { fprintf(f, "%.6f", jhr_al_secs(lf, t)); }

static const char *palette[] = { "#2f81f7", "#1a7f37", "#bf3989", "#9a6700", "#8250df", "#0a7b83" };

/* Colour of a function's bar: by the thread that compiled it (the first THREADS seen). */
static const char *thread_colour(const struct jhr_al *lf, uint32_t tid, uint32_t *seen, int *nseen)
{
    for (int i = 0; i < *nseen; i++)
        if (seen[i] == tid)
            return palette[i % 6];
    if (*nseen < 64)
        seen[(*nseen)++] = tid;
    (void)lf;
    return palette[(*nseen - 1) % 6];
}

static void timeline(const struct jhr_al *lf, FILE *f)
{
    /* From the first thing the VM did (not the header: start-up is not interesting). */
    uint64_t t0 = 0, t1 = 0;
    for (size_t i = 1; i < lf->nrecs; i++) {
        if (lf->recs[i].kind == JHR_AL_CLOSE)
            continue;           /* jh_close may come long after the last thing the VM did */
        uint64_t t = lf->recs[i].time;
        if (!t0 || t < t0)
            t0 = t;
        if (t > t1)
            t1 = t;
    }
    if (!t0)
        t0 = t1 = lf->t0;
    if (t1 <= t0)
        t1 = t0 + 1;
    size_t rows = lf->nfns < TL_ROWS ? lf->nfns : TL_ROWS;
    const int W = 900, left = 160, lane = 14, top = 24;
    int H = top + (int)rows * lane + 40;
    double span = (double)(t1 - t0);
#define X(t) (left + (double)((t) < t0 ? 0 : (t) - t0) / span * (W - left - 10))
    fprintf(f, "<svg id=timeline width=%d height=%d viewBox='0 0 %d %d' xmlns='http://www.w3.org/2000/svg'>\n",
            W, H, W, H);
    for (int k = 0; k <= 4; k++) {
        double x = left + k * (W - left - 10) / 4.0;
        fprintf(f, "<line x1=%.1f x2=%.1f y1=16 y2=%d stroke='#eaeef2'/><text x=%.1f y=12 font-size=10 "
                   "text-anchor=%s fill='#57606a'>%.6f s</text>\n", x, x, H - 4, x,
                k == 0 ? "start" : k == 4 ? "end" : "middle",
                jhr_al_secs(lf, t0) + span / 1e9 * k / 4);
    }
    uint32_t seen[64];
    int nseen = 0;
    for (size_t i = 0; i < rows; i++) {
        const struct jhr_al_fn *fn = &lf->fns[i];
        double x0 = X(fn->t_add), x1 = X(fn->removed ? fn->t_remove : t1);
        int y = top + (int)i * lane;
        const char *col = thread_colour(lf, fn->rec < lf->nrecs ? lf->recs[fn->rec].thread : 0, seen, &nseen);
        fprintf(f, "<text x=4 y=%d font-size=11 font-family=monospace>", y + 10);
        char name[24];
        snprintf(name, sizeof name, "%s", fn->name);
        esc(f, name);
        fprintf(f, "</text><rect x=%.1f y=%d width=%.1f height=%d rx=2 fill='%s' fill-opacity='%s'><title>",
                x0, y + 2, x1 - x0 < 2 ? 2 : x1 - x0, lane - 4, col, fn->removed ? "0.75" : "1");
        esc(f, fn->name);
        fprintf(f, " #%" PRIu64 ", %" PRIu64 " bytes, thread %u</title></rect>\n", fn->id, fn->size,
                fn->rec < lf->nrecs ? lf->recs[fn->rec].thread : 0);
    }
    int ey = top + (int)rows * lane + 8;
    fprintf(f, "<text x=4 y=%d font-size=11>events</text>\n", ey + 10);
    size_t ne = 0;
    for (size_t i = 0; i < lf->nrecs && ne < 2000; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        if (r->kind != JHR_AL_EVENT && r->kind != JHR_AL_LIMIT)
            continue;
        ne++;
        fprintf(f, "<line x1=%.1f x2=%.1f y1=%d y2=%d stroke='%s'/>", X(r->time), X(r->time), ey, ey + 14,
                r->kind == JHR_AL_LIMIT ? "#b42318" : "#bf8700");
    }
    fputs("</svg>\n<p class=sum>one bar per function, from load to unload, coloured by the thread "
          "that compiled it", f);
    if (lf->nfns > rows)
        fprintf(f, "; the first %zu of %zu functions", rows, lf->nfns);
    fputs("</p>\n", f);
#undef X
}

static void fn_table(const struct jhr_al *lf, FILE *f)
{
    fputs("<table id=functions><thead><tr><th>id</th><th>name</th><th>address</th><th>size</th>"
          "<th>added (s)</th><th>removed (s)</th><th>lifetime (s)</th><th>source</th><th>notes</th>"
          "</tr></thead><tbody>\n", f);
    uint64_t tend = lf->nrecs ? lf->recs[lf->nrecs - 1].time : lf->t0;
    for (size_t i = 0; i < lf->nfns && i < REPORT_MAX; i++) {
        const struct jhr_al_fn *fn = &lf->fns[i];
        fprintf(f, "<tr><td class=n>%" PRIu64 "</td><td><a href='#fn-%zu'>", fn->id, i);
        esc(f, fn->name);
        fprintf(f, "</a></td><td>0x%" PRIx64 "</td><td class=n>%" PRIu64 "</td><td class=n>", fn->cur_start,
                fn->size);
        fmt_secs(f, lf, fn->t_add);
        fputs("</td><td class=n>", f);
        if (fn->removed)
            fmt_secs(f, lf, fn->t_remove);
        else
            fputs("live", f);
        uint64_t end = fn->removed ? fn->t_remove : tend;
        fprintf(f, "</td><td class=n>%.6f</td><td>", end > fn->t_add ? (double)(end - fn->t_add) / 1e9 : 0.0);
        uint32_t line;
        const char *file = jhr_al_fn_line(fn, 0, &line);
        if (file) {
            const char *base = strrchr(file, '/');
            fputs("<span title='", f);
            esc(f, file);
            fputs("'>", f);
            esc(f, base ? base + 1 : file);
            fprintf(f, ":%u</span>", line);
        }
        fprintf(f, "</td><td>%s%s%s</td></tr>\n", fn->unwind, fn->nmoves ? ", moved" : "",
                fn->npatches ? ", patched" : "");
    }
    fputs("</tbody></table>\n", f);
    if (lf->nfns > REPORT_MAX)
        fprintf(f, "<p class=sum>first %d of %zu functions</p>\n", REPORT_MAX, lf->nfns);
}

static void events(const struct jhr_al *lf, FILE *f)
{
    fputs("<table id=events><thead><tr><th>#</th><th>time (s)</th><th>thread</th><th>event</th>"
          "<th>attributes</th></tr></thead><tbody>\n", f);
    size_t n = 0;
    for (size_t i = 0; i < lf->nrecs && n < REPORT_MAX; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        if (r->kind != JHR_AL_EVENT)
            continue;
        n++;
        const char *s = "";
        uint32_t sl = 0;
        jhr_mp_get_str(&r->map, JH__AL_K_EVENT, &s, &sl);
        fprintf(f, "<tr><td class=n>%zu</td><td class=n>", i);
        fmt_secs(f, lf, r->time);
        fprintf(f, "</td><td class=n>%u</td><td>", r->thread);
        jhr_html_escape(f, s, sl);
        fputs("</td><td>", f);
        struct jhr_mp attrs, k, v;
        if (jhr_mp_get(&r->map, JH__AL_K_ATTRS, &attrs) == 0 && attrs.t == JHR_MP_MAP) {
            const uint8_t *it = attrs.p;
            for (uint32_t j = 0; j < attrs.n && jhr_mp_next(&attrs, &it, &k) == 0 && jhr_mp_next(&attrs, &it, &v) == 0; j++) {
                if (j)
                    fputs(", ", f);
                if (k.t == JHR_MP_STR)
                    jhr_html_escape(f, (const char *)k.p, k.n);
                fputc('=', f);
                uint64_t a;
                const struct jhr_al_mem *m;
                const struct jhr_al_fn *fn;
                if (jhr_mp_addr(&v, &a)) {
                    jhr_al_resolve(lf, a, i, &m, &fn);
                    if (m)
                        fprintf(f, "<a href='#mem-%zu'>0x%" PRIx64 "</a>", (size_t)(m - lf->mems), a);
                    else if (fn)
                        fprintf(f, "<a href='#fn-%zu'>0x%" PRIx64 "</a>", (size_t)(fn - lf->fns), a);
                    else
                        fprintf(f, "0x%" PRIx64, a);
                } else {
                    char *txt = NULL;
                    size_t len = 0;
                    FILE *mf = open_memstream(&txt, &len);
                    if (mf) {
                        jhr_mp_print(mf, &v, 1);
                        fclose(mf);
                        jhr_html_escape(f, txt, len);
                        free(txt);
                    }
                }
            }
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

int jhc_report_html(const struct jhr_al *lf, struct jhc_types *dt, FILE *f)
{
    fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>jitherald audit log: ", f);
    esc(f, lf->engine);
    fprintf(f, " pid %" PRIu64 "</title><style>%s</style></head><body>\n", lf->pid, css);
    fputs("<h1>Audit log: ", f);
    esc(f, lf->engine);
    fprintf(f, ", pid %" PRIu64 "</h1>\n<p class=sum>", lf->pid);
    esc(f, lf->exe);
    size_t nev = 0, live = 0;
    for (size_t i = 0; i < lf->nrecs; i++)
        nev += lf->recs[i].kind == JHR_AL_EVENT;
    for (size_t i = 0; i < lf->nfns; i++)
        live += !lf->fns[i].removed;
    fputs(" &middot; ", f);
    esc(f, lf->arch ? lf->arch : "?");
    fprintf(f, " &middot; format version %" PRIu64 " &middot; %zu records: %zu functions "
               "(%zu live at the end), %zu memory snapshots, %zu events</p>\n<p>",
            lf->version, lf->nrecs, lf->nfns, live, lf->nmems, nev);
    if (lf->closed)
        fputs("<span class=ok>closed cleanly</span>", f);
    else
        fputs("<span class=bad>not closed: the process ended without jh_close (crash or kill)</span>", f);
    if (lf->cut)
        fprintf(f, " &middot; <span class=bad>%zu record(s) cut mid-write</span>", lf->cut);
    if (lf->limit_hit || lf->dropped)
        fprintf(f, " &middot; <span class=bad>size limit of %" PRIu64 " bytes reached, %" PRIu64
                   " record(s) dropped</span>", lf->limit, lf->dropped);
    fputs("</p>\n<h2>Timeline</h2>\n", f);
    timeline(lf, f);
    fputs("<h2>Functions</h2>\n", f);
    fn_table(lf, f);
    fputs("<h2>Events</h2>\n", f);
    events(lf, f);
    fputs("<h2>Code</h2>\n", f);
    for (size_t i = 0; i < lf->nfns && i < REPORT_MAX; i++) {
        fprintf(f, "<details id='fn-%zu'%s><summary>", i, i == 0 ? " open" : "");
        esc(f, lf->fns[i].name);
        fprintf(f, " (%" PRIu64 " bytes)</summary>\n", lf->fns[i].size);
        jhc_disasm_print(lf, &lf->fns[i], f, true);
        fputs("</details>\n", f);
    }
    fputs("<h2>Memory</h2>\n", f);
    if (!dt && lf->nmems)
        fputs("<p class=warn>no VM binary with DWARF (--vm): memory shown as bytes</p>\n", f);
    for (size_t i = 0; i < lf->nmems && i < REPORT_MAX; i++) {
        const struct jhr_al_mem *m = &lf->mems[i];
        fprintf(f, "<div id='mem-%zu'>\n", i);
        if (!dt || jhc_types_print(dt, lf, m, m->rec, f, true) < 0) {
            fputs("<pre>", f);
            esc(f, m->hint ? m->hint : "memory");
            fprintf(f, " @ 0x%" PRIx64 ", %u bytes\n", m->addr, m->size);
            for (uint32_t k = 0; k < m->size && k < 4096; k++)
                fprintf(f, "%02x%s", m->data[k], k % 16 == 15 ? "\n" : " ");
            fputs("</pre>\n", f);
        }
        fputs("</div>\n", f);
    }
    fputs("<p class=sum>generated by jitherald log report</p>\n</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}
