/*
 * log_report.c — `jitherald log FILE report [--profile perf.data|callgrind.out] -o r.html`:
 * one self-contained page (no network, no external file) where a person sees which JIT
 * code was hot and how it was compiled:
 *
 *   - the hot functions first (self and total samples; call-graph totals when the profile
 *     has call chains), each sample named by the code at its address at its time, and how
 *     often the perf map would have named it otherwise (log_samples.c, the same code as
 *     `jitherald log FILE profile`); without a profile, every function in load order;
 *   - each function opens to its compile history, its disassembly with samples per
 *     instruction and per source line, and the memory its events name, decoded with the
 *     VM's DWARF types;
 *   - a flame graph of the call chains (JIT and native frames together);
 *   - a timeline aggregated into bins, one lane per kind of record and of sample;
 *   - search (also from the address: report.html#q=NAME) and a filter by kind.
 *
 * The data is one JSON document (log_report_data.c), deflated (zlib) and base64-encoded
 * into the page, which inflates it with the browser's DecompressionStream and renders
 * lazily (tools/report/page.js): only the rows in view, a function's details when opened.
 * Built without zlib, the JSON is embedded as it is.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log_present.h"
#include "lib/text.h"

#ifdef JH_HAVE_ZLIB
#include <zlib.h>

#include "log_libs.h"

/* zlib, opened at the first report rather than linked, like libdw (log_dwarf.c): every
 * start of the CLI, `jitherald run` included, would load it for nothing. Not found: the
 * JSON as it is. */
static struct {
    __typeof__(compressBound) *bound;
    __typeof__(compress2) *compress2;
} z_api;

static const char *const z_names[] = { "compressBound", "compress2" };
static void **const z_slots[] = { (void **)&z_api.bound, (void **)&z_api.compress2 };
static struct jhc_lib z_lib = { "libz.so.1", z_names, z_slots, 2, 0 };

static bool z_loaded(void)
{
    return jhc_lib_load(&z_lib);
}
#endif

static void esc(FILE *f, const char *s) { jhr_html_escape(f, s ? s : "", s ? strlen(s) : 0); }

#ifdef JH_HAVE_ZLIB
static void base64(FILE *f, const unsigned char *p, size_t n)
{
    static const char b[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        char out[4] = { b[v >> 18 & 63], b[v >> 12 & 63], i + 1 < n ? b[v >> 6 & 63] : '=', i + 2 < n ? b[v & 63] : '=' };
        fwrite(out, 1, 4, f);
        if (i % 57000 == 56997)
            fputc('\n', f);
    }
}
#endif

/* The JSON into the page: deflated and base64 (data-enc=deflate), or as it is. */
static int embed(FILE *f, const char *json, size_t len)
{
#ifdef JH_HAVE_ZLIB
    uLongf clen = z_loaded() ? z_api.bound((uLong)len) : 0;
    unsigned char *c = clen ? malloc(clen) : NULL;
    if (c && z_api.compress2(c, &clen, (const Bytef *)json, (uLong)len, 6) == Z_OK) {
        fprintf(f, "<script id=data type=application/octet-stream data-enc=deflate data-raw=%zu>", len);
        base64(f, c, clen);
        fputs("</script>\n", f);
        free(c);
        return 0;
    }
    free(c);
#endif
    fputs("<script id=data type=application/json>", f);
    fwrite(json, 1, len, f);            /* '<' is escaped in every string (log_report_data.c) */
    fputs("</script>\n", f);
    return 0;
}

int jhc_report_html(const struct jhr_al *lf, const struct jhc_samples *s, struct jhc_types *dt, FILE *f)
{
    char *json = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&json, &len);
    if (!m)
        return -1;
    int rc = jhc_report_json(lf, s, dt, m);
    if (fclose(m) != 0 || rc < 0) {
        free(json);
        return -1;
    }
    fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
          "<meta name=viewport content='width=device-width'><title>jitherald: ", f);
    esc(f, lf->engine);
    fprintf(f, " pid %" PRIu64 "</title>\n<style>%s</style></head><body>\n", lf->pid, jhc_report_css);
    fputs("<header><h1>Audit log: ", f);
    esc(f, lf->engine);
    fprintf(f, ", pid %" PRIu64 "</h1><p class=sum id=summary>", lf->pid);
    esc(f, lf->exe);
    fputs("</p></header>\n<main id=app><p id=loading>loading the data&hellip; (the page needs "
          "JavaScript)</p></main>\n", f);
    embed(f, json, len);
    free(json);
    fprintf(f, "<script>%s</script>\n</body></html>\n", jhc_report_js);
    return ferror(f) ? -1 : 0;
}
