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
 * The samples are attributed once, by log_samples.c (the same model the HTML report,
 * `report --profile`, shows); this file prints it for a terminal.
 */
#include <inttypes.h>
#include <string.h>

#include "log_present.h"
#include "log_samples.h"

#define TOP_ROWS 50

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

static double pct(uint64_t n, uint64_t of) { return of ? 100.0 * (double)n / (double)of : 0; }

static void print(const struct jhc_samples *s, FILE *f)
{
    const char *path = s->path;
    fprintf(f, "%s: %" PRIu64 " samples, %" PRIu64 " of %s in pid %" PRIu64 "%s\n", path,
            s->samples, s->ours, s->event, s->lf->pid,
            s->chains ? ", with call chains" : " (no call chains: total is self; record with -g)");
    if (!s->timed)
        fprintf(f, "warning: %s was not recorded with perf record -k 1: its times are not "
                "the log's CLOCK_MONOTONIC, so each sample is named by the code at its "
                "address at the end of the log, and code that reused an address is "
                "misnamed\n", path);
    fprintf(f, "  self%%    self  total%%   total  function\n");
    for (size_t i = 0; i < s->nrows && i < TOP_ROWS; i++) {
        const struct jhc_row *r = &s->rows[s->order[i]];
        fprintf(f, "%6.2f%% %7" PRIu64 " %6.2f%% %7" PRIu64 "  ", pct(r->self, s->ours), r->self,
                pct(r->total, s->ours), r->total);
        if (r->kind == JHC_ROW_MAP && r->name[0] != '[')
            fprintf(f, "[%s]\n", base_name(r->name));
        else if (r->kind == JHC_ROW_MAP)
            fprintf(f, "%s\n", r->name);
        else
            fprintf(f, "%s%s", r->name, r->kind == JHC_ROW_JIT && r->wrong ? "" : "\n");
        if (r->kind == JHC_ROW_JIT && r->wrong)
            fprintf(f, "    (the perf map says %s for %s%" PRIu64 ")\n", r->wrong_as,
                    r->wrong_many ? "some of these, other names for the rest: " : r->wrong == r->self ? "all " : "",
                    r->wrong);
    }
    if (s->nrows > TOP_ROWS)
        fprintf(f, "(%zu more rows)\n", s->nrows - TOP_ROWS);
    fprintf(f, "JIT code: %" PRIu64 " samples; the perf map would name %" PRIu64 " of them "
            "(%.2f%%) differently\n", s->jit, s->wrong, pct(s->wrong, s->jit));
    if (s->jit_near)
        fprintf(f, "%" PRIu64 " JIT samples fell outside every lifetime at their address (taken "
                "just before the code was announced or after it was removed): named by the "
                "nearest\n", s->jit_near);
    if (s->other_pid || s->other_event)
        fprintf(f, "not counted: %" PRIu64 " samples of other processes, %" PRIu64 " of other "
                "events\n", s->other_pid, s->other_event);
    const struct jhr_pd *pd = &s->pd;
    if (pd->cut)
        fprintf(f, "warning: %s ends before its data section does: read as far as it goes\n", path);
    if (pd->bad || pd->compressed || pd->unknown_id)
        fprintf(f, "warning: %s: %zu damaged records%s, %zu compressed (perf record -z: "
                "not read), %zu samples of unknown events\n", path, pd->bad,
                pd->bad ? " (the rest of the file after the first is not read)" : "",
                pd->compressed, pd->unknown_id);
}

/* callgrind: no time, cost merged per address (log_profile_cg.c). */
static void print_cg(const struct jhc_samples *s, FILE *f)
{
    fprintf(f, "%s: %" PRIu64 " %s, %" PRIu64 " address-named blocks named by the log "
            "(callgrind has no time: see the last lines)\n", s->path, s->ours, s->event, s->samples);
    fprintf(f, "  self%%          self   incl%%          incl  function\n");
    for (size_t i = 0; i < s->nrows && i < TOP_ROWS; i++) {
        const struct jhc_row *r = &s->rows[s->order[i]];
        fprintf(f, "%6.2f%% %13" PRIu64 " %6.2f%% %13" PRIu64 "  %s%s\n", pct(r->self, s->ours),
                r->self, pct(r->total, s->ours), r->total, r->name,
                r->kind == JHC_ROW_JIT ? "  (JIT)" : "");
    }
    if (s->nrows > TOP_ROWS)
        fprintf(f, "(%zu more rows)\n", s->nrows - TOP_ROWS);
    fprintf(f, "JIT code: %" PRIu64 " %s; %" PRIu64 " (%.2f%%) at addresses that held several "
            "functions over time (a | b): callgrind merges them and has no time to split them by\n",
            s->jit, s->event, s->shared, pct(s->shared, s->jit));
}

int jhc_log_profile(const struct jhr_al *lf, const char *path, FILE *out)
{
    struct jhc_samples s;
    int rc = jhc_samples_load(&s, lf, path, false);
    if (!rc)
        (s.cg ? print_cg : print)(&s, out);
    jhc_samples_free(&s);
    return rc;
}
