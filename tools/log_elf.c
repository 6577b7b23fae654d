/*
 * log_elf.c — `jitherald log FILE to-elf DIR`: the elfmap channel's image files rebuilt
 * from an audit log, with the build-ids the live files had, for a perf.data or a core dump
 * whose image files are gone:
 *
 *     $ jitherald log minijit-4242.jhlog to-elf imgs/
 *     imgs/jit-4242-1.elf 5f0c...e2           (path and build-id, one per image)
 *     $ perf buildid-cache -a imgs/jit-4242-1.elf; perf report     # or serve imgs/ with
 *     $ debuginfod -F imgs/                                          # debuginfod
 *
 * The images are for the architecture the log recorded (its header's "arch": e_machine and
 * CFI), whatever the machine that rebuilds them; a log of an architecture jitherald does not
 * know is refused (cmd_log.c, jhc_log_arch).
 * The images are built by the very encoder elfmap uses (fmt/elf_grow.c) and the id follows
 * what an image says (fmt/build_id.h: its functions, their code bytes, patches, the
 * window's anchor), not how the file was written, so replaying elfmap's decisions gives
 * the same ids: which window (image file) each function went to, when a window started a
 * new generation (code over a removed function's bytes) or a new name (code with the
 * address and size of a removed function of another name), when it was retired (no live
 * function left). The replay knows only what the log says, so it assumes what holds for
 * most JITs: code mappings that do not cross a 1 MiB boundary (elfmap takes a mapping of up
 * to 1 MiB whole, so its window then starts at the mapping's block), 4 KiB pages, no
 * valgrind, no fork. Where that fails an image gets another id, never a wrong name: perf
 * then shows the address, as with no image. docs/elfmap.md, "Build-ids and publishing".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt/auditlog.h"
#include "fmt/elf_grow.h"
#include "fmt/func.h"
#include "log_present.h"

/* elfmap's geometry (fmt/elf_grow.h), which its files' layout follows */
#define PAGE ((uint64_t)4096)
#define WIN JH__ELFG_WINDOW
#define LEAD JH__ELFG_LEAD
#define SPAN JH__ELFG_SPAN
#define GAP JH__ELFG_GAP

struct tomb {
    uint64_t start, size;
    const char *name;
};

struct win {
    uint64_t anchor, lo, hi;
    uint64_t num;               /* jit-<pid>-<num>.elf */
    unsigned gen;
    bool open;
    struct jh__elfg img;
    size_t nlive;
    struct tomb *tombs;
    size_t ntombs;
    size_t *members;            /* functions whose bytes the file holds */
    size_t nmembers;
};

struct st {
    const struct jhr_al *lf;
    const struct jh__arch *arch;    /* the log's: the images' e_machine and CFI */
    const char *dir;
    FILE *out;
    struct win *w;
    size_t nw;
    uint64_t next_num;
    ptrdiff_t *fwin;            /* per function: its window, -1 */
    uint64_t *fstart;           /* per function: where it is now */
    uint8_t **fbytes;           /* per function: its bytes now */
    struct jh_line *lines;
    size_t lines_cap;
    int err;
    bool said;                  /* a failure was already named on stderr */
};

static uint64_t pg_down(uint64_t a) { return a & ~(PAGE - 1); }
static uint64_t pg_up(uint64_t a) { return pg_down(a + PAGE - 1); }

static int func(struct st *s, size_t i, struct jh__func *f)
{
    const struct jhr_al_fn *fn = &s->lf->fns[i];
    if (fn->nlines > s->lines_cap) {
        free(s->lines);
        s->lines_cap = fn->nlines;
        if (!(s->lines = malloc(s->lines_cap * sizeof *s->lines)))
            return -ENOMEM;
    }
    jhc_func_of(fn, f, s->lines);
    f->start = s->fstart[i];
    return 0;
}

static int push_member(struct win *w, size_t i)
{
    size_t *m = realloc(w->members, (w->nmembers + 1) * sizeof *m);
    if (!m)
        return -ENOMEM;
    w->members = m;
    w->members[w->nmembers++] = i;
    return 0;
}

/* Fold f into w's image as elfmap does (jh__em_image_add): description, then its bytes. */
static int image_add(struct st *s, struct win *w, size_t i)
{
    struct jh__func f;
    int err = func(s, i, &f);
    if (!err)
        err = jh__elfg_add(&w->img, &f);
    if (err)
        return err;
    jh__elfg_code(&w->img, f.start, s->fbytes[i], f.size);
    return push_member(w, i);
}

static int img_init(const struct st *s, struct win *w)
{
    struct jh__elfg_spec spec = { .arch = s->arch, .anchor_addr = w->anchor,
        .anchor_off = PAGE + LEAD,
        .lo = w->lo, .hi = w->hi, .meta_off = PAGE + SPAN + GAP, .page_size = PAGE,
        .producer = "jitherald elfmap" };
    return jh__elfg_init(&w->img, &spec);
}

/* The file of w's current generation, into dir. */
static int write_image(struct st *s, struct win *w)
{
    char path[4200], sub[4096];
    uint64_t pid = s->lf->pid;
    if (w->gen > 1) {
        snprintf(sub, sizeof sub, "%s/jit-%" PRIu64 "-g%u", s->dir, pid, w->gen);
        if (mkdir(sub, 0700) != 0 && errno != EEXIST)
            return -errno;
        snprintf(path, sizeof path, "%s/jit-%" PRIu64 "-%" PRIu64 ".elf", sub, pid, w->num);
    } else {
        snprintf(path, sizeof path, "%s/jit-%" PRIu64 "-%" PRIu64 ".elf", s->dir, pid, w->num);
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        fprintf(stderr, "jitherald log: %s: %s\n", path, strerror(e));
        s->said = true;
        return -e;
    }
    int err = 0;
    for (size_t k = 0; k < w->nmembers && !err; k++) {
        size_t i = w->members[k];
        uint64_t off = PAGE + LEAD + (s->fstart[i] - w->anchor);
        size_t len = s->lf->fns[i].size;
        if (pwrite(fd, s->fbytes[i], len, (off_t)off) != (ssize_t)len)
            err = -errno;
    }
    struct jh__elfg_span v[JH__ELFG_MAXSPANS];
    int n = err ? err : jh__elfg_spans(&w->img, v);
    for (int k = 0; k < n && !err; k++)
        if (pwrite(fd, v[k].p, v[k].len, (off_t)v[k].off) != (ssize_t)v[k].len)
            err = -errno;
    if (n < 0)
        err = n;
    if (close(fd) != 0 && !err)
        err = -errno;
    if (err) {
        fprintf(stderr, "jitherald log: %s: %s\n", path, strerror(-err));
        s->said = true;
        return err;
    }
    uint8_t id[JH__BUILD_ID_SIZE];
    jh__elfg_build_id(&w->img, id);
    fprintf(s->out, "%s ", path);
    for (int k = 0; k < JH__BUILD_ID_SIZE; k++)
        fprintf(s->out, "%02x", id[k]);
    fputc('\n', s->out);
    return 0;
}

static void win_free(struct win *w)
{
    jh__elfg_free(&w->img);
    free(w->tombs);
    free(w->members);
    w->tombs = NULL;
    w->members = NULL;
    w->ntombs = w->nmembers = 0;
}

/* elfmap.c's fit(): the window [lo, hi) goes to, grown if need be; -1 when it cannot. */
static ptrdiff_t fit(struct st *s, uint64_t lo, uint64_t hi)
{
    ptrdiff_t over = -1, prev = -1, next = -1;
    for (size_t k = 0; k < s->nw; k++) {
        struct win *w = &s->w[k];
        if (!w->open)
            continue;
        if (w->lo < hi && lo < w->hi)
            over = (ptrdiff_t)k;
        else if (w->hi <= lo && (prev < 0 || w->hi > s->w[prev].hi))
            prev = (ptrdiff_t)k;
        else if (w->lo >= hi && (next < 0 || w->lo < s->w[next].lo))
            next = (ptrdiff_t)k;
    }
    if (over >= 0) {
        struct win *w = &s->w[over];
        uint64_t l = w->lo < lo ? w->lo : lo, h = w->hi > hi ? w->hi : hi;
        if (l < w->anchor - LEAD || h - (w->anchor - LEAD) > SPAN ||
            (prev >= 0 && s->w[prev].hi > l) || (next >= 0 && h > s->w[next].lo))
            return -1;
        if ((l != w->lo || h != w->hi) && jh__elfg_set_text(&w->img, l, h) != 0)
            return -1;
        w->lo = l;
        w->hi = h;
        return over;
    }
    uint64_t anchor = lo & ~(WIN - 1);
    uint64_t l = prev >= 0 && s->w[prev].hi > anchor ? s->w[prev].hi : anchor, h = anchor + WIN;
    if (next >= 0 && s->w[next].lo < h)
        h = s->w[next].lo;
    if (h < hi && hi - (anchor - LEAD) <= SPAN && (next < 0 || hi <= s->w[next].lo))
        h = hi;
    if (h < hi || anchor < LEAD)
        return -1;
    struct win *nw = realloc(s->w, (s->nw + 1) * sizeof *nw);
    if (!nw) {
        s->err = -ENOMEM;
        return -1;
    }
    s->w = nw;
    struct win *w = &s->w[s->nw];
    *w = (struct win){ .anchor = anchor, .lo = l, .hi = h, .num = ++s->next_num, .gen = 1,
                       .open = true };
    if ((s->err = img_init(s, w)) != 0)
        return -1;
    return (ptrdiff_t)s->nw++;
}

/* A new generation of w with its live functions and i (elfmap_file.c, jh__em_publish). */
static int publish(struct st *s, struct win *w, size_t i, bool new_name)
{
    int err = write_image(s, w);
    if (err)
        return err;
    jh__elfg_free(&w->img);
    free(w->members);
    w->members = NULL;
    w->nmembers = 0;
    w->ntombs = 0;
    if (new_name) {
        w->num = ++s->next_num;
        w->gen = 1;
    } else {
        w->gen++;
    }
    if ((err = img_init(s, w)))
        return err;
    /* the live functions and the new one, by address */
    size_t n = 0, *v = malloc((s->lf->nfns + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t k = 0; k < s->lf->nfns; k++)
        if ((s->fwin[k] == w - s->w) || k == i)
            v[n++] = k;
    for (size_t a = 1; a < n; a++)                  /* insertion sort: a window is small */
        for (size_t b = a; b > 0 && s->fstart[v[b]] < s->fstart[v[b - 1]]; b--) {
            size_t t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    for (size_t k = 0; k < n && !err; k++)
        err = image_add(s, w, v[k]);
    free(v);
    return err;
}

static int add(struct st *s, size_t i)
{
    const struct jhr_al_fn *fn = &s->lf->fns[i];
    uint64_t start = s->fstart[i];
    ptrdiff_t k = fit(s, pg_down(start), pg_up(start + fn->size));
    if (k < 0)
        return s->err;
    struct win *w = &s->w[k];
    bool over = false, same_place = false;
    for (size_t t = 0; t < w->ntombs; t++) {
        const struct tomb *tb = &w->tombs[t];
        if (tb->start < start + fn->size && start < tb->start + tb->size) {
            over = true;
            same_place |= tb->start == start && tb->size == fn->size && strcmp(tb->name, fn->name);
        }
    }
    int err = over ? publish(s, w, i, same_place) : image_add(s, w, i);
    if (err == -EINVAL || err == -E2BIG)
        return 0;       /* elfmap leaves code its encoder refuses as it is, and so do we */
    if (!err) {
        s->fwin[i] = k;
        w->nlive++;
    }
    return err;
}

static int forget(struct st *s, size_t i, uint64_t start)
{
    ptrdiff_t k = s->fwin[i];
    if (k < 0)
        return 0;
    struct win *w = &s->w[k];
    s->fwin[i] = -1;
    struct tomb *t = realloc(w->tombs, (w->ntombs + 1) * sizeof *t);
    if (!t)
        return -ENOMEM;
    w->tombs = t;
    w->tombs[w->ntombs++] = (struct tomb){ start, s->lf->fns[i].size, s->lf->fns[i].name };
    if (--w->nlive == 0) {                          /* retired: its file stays as it is */
        w->open = false;
        int err = write_image(s, w);
        win_free(w);
        return err;
    }
    return 0;
}

static int patched(struct st *s, size_t i, const struct jhr_mp *map)
{
    uint64_t addr;
    struct jhr_mp v;
    const struct jhr_al_fn *fn = &s->lf->fns[i];
    if (!jhr_mp_get_u64(map, JH__AL_K_ADDRESS, &addr) || jhr_mp_get(map, JH__AL_K_DATA, &v) < 0 ||
        v.t != JHR_MP_BIN || addr < s->fstart[i] || addr - s->fstart[i] > fn->size ||
        v.n > fn->size - (addr - s->fstart[i]))
        return 0;
    memcpy(s->fbytes[i] + (addr - s->fstart[i]), v.p, v.n);
    if (s->fwin[i] >= 0)
        jh__elfg_code(&s->w[s->fwin[i]].img, addr, v.p, v.n);
    return 0;
}

int jhc_export_elf(const struct jhr_al *lf, const struct jh__arch *arch, const char *dir,
                   FILE *out)
{
    struct st s = { .lf = lf, .arch = arch, .dir = dir, .out = out };
    size_t n = lf->nfns ? lf->nfns : 1;
    s.fwin = malloc(n * sizeof *s.fwin);
    s.fstart = malloc(n * sizeof *s.fstart);
    s.fbytes = calloc(n, sizeof *s.fbytes);
    int err = s.fwin && s.fstart && s.fbytes ? 0 : -ENOMEM;
    if (!err && mkdir(dir, 0755) != 0 && errno != EEXIST)
        err = -errno;
    for (size_t i = 0; i < lf->nfns && !err; i++) {
        s.fwin[i] = -1;
        s.fstart[i] = lf->fns[i].start;
        if (!(s.fbytes[i] = malloc(lf->fns[i].size ? lf->fns[i].size : 1)))
            err = -ENOMEM;
        else if (lf->fns[i].code)
            memcpy(s.fbytes[i], lf->fns[i].code, lf->fns[i].size);
    }
    for (size_t r = 0; r < lf->nrecs && !err; r++) {
        const struct jhr_al_rec *rec = &lf->recs[r];
        /* code recorded by reference lies in a loaded object's file: elfmap never maps an
         * image over it (that file names it already) */
        if (rec->ref < 0 || (rec->kind >= JHR_AL_CODE_ADD && rec->kind <= JHR_AL_CODE_PATCHED &&
                             lf->fns[rec->ref].code_file))
            continue;
        size_t i = (size_t)rec->ref;
        uint64_t to;
        switch (rec->kind) {
        case JHR_AL_CODE_ADD:
            err = add(&s, i);
            break;
        case JHR_AL_CODE_REMOVE:
            err = forget(&s, i, s.fstart[i]);
            break;
        case JHR_AL_CODE_MOVE:
            if (!jhr_mp_get_u64(&rec->map, JH__AL_K_START, &to))
                break;
            err = forget(&s, i, s.fstart[i]);
            s.fstart[i] = to;
            if (!err)
                err = add(&s, i);
            break;
        case JHR_AL_CODE_PATCHED:
            err = patched(&s, i, &rec->map);
            break;
        default:
            break;
        }
    }
    for (size_t k = 0; k < s.nw; k++) {
        if (s.w[k].open && !err)
            err = write_image(&s, &s.w[k]);
        win_free(&s.w[k]);
    }
    if (err && !s.said)
        fprintf(stderr, "jitherald log: to-elf %s: %s\n", dir, strerror(-err));
    for (size_t i = 0; s.fbytes && i < lf->nfns; i++)
        free(s.fbytes[i]);
    free(s.fbytes);
    free(s.fstart);
    free(s.fwin);
    free(s.w);
    free(s.lines);
    return err ? -1 : 0;
}
