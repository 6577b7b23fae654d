/*
 * log_disasm.c — a logged function's code, disassembled with capstone and interleaved
 * with its source lines, as `objdump -dl` would show it for ahead-of-time code:
 *
 *     fib  #1  0x7f3a1c000000  62 bytes  added 0.000412 s, live  (frame_pointer)
 *     fib.mini:1
 *       7f3a1c000000:  55                    push   rbp
 *       7f3a1c000001:  48 89 e5              mov    rbp, rsp
 *
 * Code bytes come from the log (with later patches applied), so this works long after the
 * process is gone. Without capstone the bytes are dumped in hex. When a source file named
 * in the line table can be read (now, from the current directory for a relative name), the
 * line's text is shown beside its file:line; jhc_disasm_source = false turns that off.
 *
 * A log names whatever files it likes as sources, and whoever wrote it need not be whoever
 * reads it (a log attached to a bug report, another user's log read by root): a report of
 * a log naming /etc/shadow must not quote it. So a source is read only when its real path
 * (symlinks and .. resolved) lies under a directory the user allowed: the current
 * directory, or those given with --source-dir (jhc_source_allow). Any other file that
 * exists is named on stderr, once, as not read.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "fmt/arch.h"
#include "log_present.h"
#include "lib/text.h"

#ifdef JH_HAVE_CAPSTONE
#include <capstone/capstone.h>

#include "log_libs.h"

/* capstone, opened at the first disassembly rather than linked: its 77,000 relocations cost
 * every start of the CLI ~2 ms of CPU (measured: `jitherald run -- true` 4.0 ms, 1.35 ms
 * for `true`), and `jitherald run` starts before every VM it runs. Not found: hex. */
#define CS_STR(x) #x
#define CS_SONAME(v) "libcapstone.so." CS_STR(v)
static struct {
    cs_err (*open)(cs_arch, cs_mode, csh *);
    cs_err (*option)(csh, cs_opt_type, size_t);
    cs_insn *(*malloc)(csh);
    bool (*iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
    void (*free)(cs_insn *, size_t);
    cs_err (*close)(csh *);
} cs_api;

static const char *const cs_names[] = { "cs_open", "cs_option", "cs_malloc", "cs_disasm_iter",
                                        "cs_free", "cs_close" };
static void **const cs_slots[] = { (void **)&cs_api.open, (void **)&cs_api.option,
                                   (void **)&cs_api.malloc, (void **)&cs_api.iter,
                                   (void **)&cs_api.free, (void **)&cs_api.close };
static struct jhc_lib cs_lib = { CS_SONAME(CS_API_MAJOR), cs_names, cs_slots,
                                 sizeof cs_names / sizeof cs_names[0], 0 };

static bool cs_loaded(void)
{
    return jhc_lib_load(&cs_lib);
}
#endif

static void put(FILE *f, bool html, const char *s)
{
    if (html)
        jhr_html_escape(f, s, strlen(s));
    else
        fputs(s, f);
}

/* Where the bytes of code recorded by reference came from, or why there are none. */
static void code_file_line(const struct jhr_al *lf, const struct jhr_al_fn *fn, FILE *f, bool html)
{
    char id[2 * JH__AL_BUILD_ID_MAX + 1], buf[512];
    for (uint32_t i = 0; i < fn->code_idlen; i++)
        snprintf(id + 2 * i, 3, "%02x", fn->code_id[i]);
    id[2 * fn->code_idlen] = 0;
    const struct jhr_al_cfile *cf = jhr_al_fn_cfile(lf, fn);
    snprintf(buf, sizeof buf, "  code: %s at offset 0x%" PRIx64 ", build-id %s: ", fn->code_file,
             fn->code_offset, id);
    put(f, html, buf);
    if (fn->code)
        snprintf(buf, sizeof buf, "read from %s\n", cf && cf->read ? cf->read : "?");
    else
        snprintf(buf, sizeof buf, "not read (%s)\n", cf && cf->why ? cf->why : "no such file");
    put(f, html, buf);
}

static void header(const struct jhr_al *lf, const struct jhr_al_fn *fn, FILE *f, bool html)
{
    char buf[256];
    if (html) {
        fputs("<div class=fnhead>", f);
        put(f, true, fn->name);
    } else {
        fputs(fn->name, f);
    }
    snprintf(buf, sizeof buf, "  #%" PRIu64 "  0x%" PRIx64 "  %" PRIu64 " bytes  added %.6f s, ", fn->id,
             fn->cur_start, fn->size, jhr_al_secs(lf, fn->t_add));
    put(f, html, buf);
    if (fn->removed)
        snprintf(buf, sizeof buf, "removed %.6f s", jhr_al_secs(lf, fn->t_remove));
    else
        snprintf(buf, sizeof buf, "live at the end");
    put(f, html, buf);
    snprintf(buf, sizeof buf, "  (%s%s%s)", fn->unwind, fn->nmoves ? ", moved" : "",
             fn->npatches ? ", patched" : "");
    put(f, html, buf);
    fputs(html ? "</div>\n<pre class=asm>" : "\n", f);
    if (fn->code_file)
        code_file_line(lf, fn, f, html);
}

bool jhc_disasm_source = true;

/* Real paths of the directories sources may be read from (none yet: the current one). */
static char *roots[16];
static int nroots;
static bool roots_given;

static int add_root(const char *dir)
{
    if (nroots == (int)(sizeof roots / sizeof roots[0]))
        return -E2BIG;
    char *r = realpath(dir, NULL);
    struct stat st;
    if (!r || stat(r, &st) != 0 || !S_ISDIR(st.st_mode)) {
        int err = r ? -ENOTDIR : -errno;
        free(r);
        return err;
    }
    roots[nroots++] = r;
    return 0;
}

int jhc_source_allow(const char *dir)
{
    roots_given = true;
    return add_root(dir);
}

static bool under_root(const char *r)
{
    for (int i = 0; i < nroots; i++) {
        size_t n = strlen(roots[i]);
        if (!strcmp(roots[i], "/") || (!strncmp(r, roots[i], n) && (r[n] == '/' || r[n] == 0)))
            return true;
    }
    return false;
}

/* The real path of file if the user allowed reading it (malloc'd), else NULL. A relative
 * name (relative to wherever the JIT ran) is looked for under each allowed directory. */
static char *source_path(const char *file)
{
    if (!nroots && add_root(".") < 0)
        return NULL;
    char *r = NULL;
    if (file[0] == '/') {
        r = realpath(file, NULL);
    } else {
        for (int i = 0; i < nroots && !r; i++) {
            char joined[PATH_MAX];
            if ((size_t)snprintf(joined, sizeof joined, "%s/%s", roots[i], file) < sizeof joined)
                r = realpath(joined, NULL);
        }
    }
    if (!r)
        return NULL;            /* not there: nothing to read, nothing to say */
    if (under_root(r))
        return r;
    fprintf(stderr, "jitherald log: %s: not read, though the log names it as a source: it is "
            "outside %s (--source-dir DIR reads the sources under DIR)\n", r,
            roots_given ? "the directories given with --source-dir" : "the current directory");
    free(r);
    return NULL;
}

/* Source files read so far: name -> lines (NULL: unreadable). */
static struct src { char *name; char *text; char **lines; uint32_t n; } srcs[64];
static int nsrcs;

static const char *source_line(const char *file, uint32_t line)
{
    if (!jhc_disasm_source)
        return NULL;
    struct src *s = NULL;
    for (int i = 0; i < nsrcs && !s; i++)
        if (!strcmp(srcs[i].name, file))
            s = &srcs[i];
    if (!s) {
        if (nsrcs == 64)
            return NULL;
        s = &srcs[nsrcs++];
        s->name = strdup(file);
        /* Only regular files: a name like /dev/stdin or a FIFO in a log must not block us. */
        char *path = source_path(file);
        int fd = path ? jh__open_regular(path, JH__OPEN_NOFOLLOW) : -EPERM;
        free(path);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (fd >= 0 && !f)
            close(fd);
        size_t len = 0;
        if (f) {
            FILE *m = open_memstream(&s->text, &len);
            char buf[4096];
            size_t k;
            while (m && len < (4u << 20) && (k = fread(buf, 1, sizeof buf, f)) > 0)
                fwrite(buf, 1, k, m);
            if (m)
                fclose(m);
            fclose(f);
        }
        for (size_t i = 0; s->text && i < len; i++)
            s->n += s->text[i] == '\n';
        s->lines = s->text ? calloc((size_t)s->n + 2, sizeof *s->lines) : NULL;
        if (s->lines) {
            uint32_t k = 0;
            s->lines[k++] = s->text;
            for (size_t i = 0; i < len && k <= s->n; i++)
                if (s->text[i] == '\n') {
                    s->text[i] = 0;
                    s->lines[k++] = s->text + i + 1;
                }
            s->n = k;
        }
    }
    if (!s->lines || line == 0 || line > s->n)
        return NULL;
    const char *t = s->lines[line - 1];
    while (*t == ' ' || *t == '\t')
        t++;
    return t;
}

/* fn's line-table rows by offset (then by their place in the table): each instruction
 * finds its rows by binary search, so a function of 100,000 lines is not read 100,000
 * times over. NULL when memory runs out (then the rows are scanned). */
static const struct jhr_al_fn *sort_fn;
static int by_offset(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t ox = sort_fn->lines[x].offset, oy = sort_fn->lines[y].offset;
    return ox != oy ? (ox < oy ? -1 : 1) : (x > y) - (x < y);
}

static uint32_t *lines_by_offset(const struct jhr_al_fn *fn)
{
    uint32_t *ord = malloc((fn->nlines ? fn->nlines : 1) * sizeof *ord);
    for (uint32_t i = 0; ord && i < fn->nlines; i++)
        ord[i] = i;
    sort_fn = fn;
    if (ord)
        qsort(ord, fn->nlines, sizeof *ord, by_offset);
    return ord;
}

/* The source line that starts at off, if a new one does. */
static void line_mark(const struct jhr_al_fn *fn, const uint32_t *ord, uint64_t off, uint64_t len,
                      const char **last_file, uint32_t *last_line, FILE *f, bool html)
{
    uint32_t from = 0;
    if (ord) {
        uint32_t lo = 0, hi = fn->nlines;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (fn->lines[ord[mid]].offset < off)
                lo = mid + 1;
            else
                hi = mid;
        }
        from = lo;
    }
    for (uint32_t k = from; k < fn->nlines; k++) {
        const struct jhr_al_line *l = &fn->lines[ord ? ord[k] : k];
        if (ord && l->offset >= off + (len ? len : 1))
            break;
        if (l->offset < off || l->offset >= off + (len ? len : 1) || l->file >= fn->nfiles)
            continue;
        const char *file = fn->files[l->file];
        if (file == *last_file && l->line == *last_line)
            continue;
        *last_file = file;
        *last_line = l->line;
        char buf[64];
        snprintf(buf, sizeof buf, ":%u", l->line);
        const char *text = source_line(file, l->line);
        char tbuf[160];
        snprintf(tbuf, sizeof tbuf, "%s%s", text ? "    " : "", text ? text : "");
        if (html) {
            fputs("<span class=src>", f);
            put(f, true, file);
            fputs(buf, f);
            fputs("</span><span class=srctext>", f);
            put(f, true, tbuf);
            fputs("</span>\n", f);
        } else {
            fprintf(f, "%s%s%s\n", file, buf, tbuf);
        }
    }
}

int jhc_disasm_print(const struct jhr_al *lf, const struct jhr_al_fn *fn, FILE *f, bool html)
{
    const uint8_t *code = jhr_al_fn_code(fn);
    const char *last_file = NULL;
    uint32_t last_line = 0;
    char buf[256];
    header(lf, fn, f, html);
    if (!code) {                /* recorded by reference, its file not found: said above */
        if (html)
            fputs("</pre>\n", f);
        return 0;
    }
    uint32_t *ord = lines_by_offset(fn);
#ifdef JH_HAVE_CAPSTONE
    csh cs;
    /* capstone's name for the log's architecture; one jitherald does not know: bytes */
    const struct jh__arch *a = jh__arch_by_name(lf->arch);
    cs_arch arch = a == &jh__arch_arm64 ? CS_ARCH_ARM64 : CS_ARCH_X86;
    cs_mode mode = a == &jh__arch_arm64 ? CS_MODE_ARM : CS_MODE_64;
    if (a && cs_loaded() && cs_api.open(arch, mode, &cs) == CS_ERR_OK) {
        cs_api.option(cs, CS_OPT_SKIPDATA, CS_OPT_ON);   /* data in code: show it and go on */
        cs_insn *insn = cs_api.malloc(cs);
        const uint8_t *p = code;
        size_t left = fn->size;
        uint64_t pc = fn->cur_start;
        while (insn && left && cs_api.iter(cs, &p, &left, &pc, insn)) {
            uint64_t off = insn->address - fn->cur_start;
            line_mark(fn, ord, off, insn->size, &last_file, &last_line, f, html);
            int k = snprintf(buf, sizeof buf, "  %12" PRIx64 ":  ", insn->address);
            for (int j = 0; j < insn->size && j < 10 && k < 200; j++)
                k += snprintf(buf + k, sizeof buf - (size_t)k, "%02x ", insn->bytes[j]);
            snprintf(buf + k, sizeof buf - (size_t)k, "%*s%s %s\n", k < 48 ? 48 - k : 1, "",
                     insn->mnemonic, insn->op_str);
            put(f, html, buf);
        }
        if (insn)
            cs_api.free(insn, 1);
        cs_api.close(&cs);
        free(ord);
        if (html)
            fputs("</pre>\n", f);
        return 0;
    }
#endif
    for (uint64_t off = 0; off < fn->size; off += 16) {
        line_mark(fn, ord, off, 16, &last_file, &last_line, f, html);
        int k = snprintf(buf, sizeof buf, "  %12" PRIx64 ": ", fn->cur_start + off);
        for (uint64_t j = off; j < off + 16 && j < fn->size; j++)
            k += snprintf(buf + k, sizeof buf - (size_t)k, " %02x", code[j]);
        snprintf(buf + k, sizeof buf - (size_t)k, "\n");
        put(f, html, buf);
    }
    free(ord);
    if (html)
        fputs("</pre>\n", f);
    return 0;
}
