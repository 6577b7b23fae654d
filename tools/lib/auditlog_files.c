/*
 * auditlog_files.c — see auditlog_read.h: the bytes of code the log recorded by reference
 * (code_file, code_build_id, code_offset: V8's builtins in node's text), read from the file.
 *
 * Each file the log names is looked for once: at its path, then through debuginfod. A
 * candidate is used only when it is an ELF64 little-endian image whose GNU build-id is the
 * one the log gives, and a function's bytes only when they lie inside one of its executable
 * segments: a log names any path it likes, and what reaches the output is then code the
 * named build-id vouches for, not the contents of whatever file the path points at. A file
 * that is not the one the log names (rebuilt, upgraded) is said, with both ids, never used.
 */
#include "lib/auditlog_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "lib/core_read.h"
#include "lib/debuginfod.h"

static uint64_t rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void hex(char *out, const uint8_t *id, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
    out[2 * n] = 0;
}

/* Does [off, off + size) lie in an executable PT_LOAD's file bytes of the image at d? */
static bool in_text(const uint8_t *d, size_t len, uint64_t off, uint64_t size)
{
    uint64_t phoff = rd(d + 32, 8), phentsize = rd(d + 54, 2), phnum = rd(d + 56, 2);
    for (uint64_t i = 0; i < phnum; i++) {
        uint64_t at = phoff + i * phentsize;
        if (at > len || len - at < 56)
            return false;
        const uint8_t *ph = d + at;
        uint64_t poff = rd(ph + 8, 8), filesz = rd(ph + 32, 8);
        if (rd(ph, 4) == 1 /* PT_LOAD */ && (rd(ph + 4, 4) & 1) /* PF_X */ && poff <= len &&
            filesz <= len - poff && off >= poff && off - poff <= filesz && size <= filesz - (off - poff))
            return true;
    }
    return false;
}

/* The image's build-id (its PT_NOTEs): length, 0 when none or not an ELF64 LE image. */
static size_t image_id(const uint8_t *d, size_t len, uint8_t id[64])
{
    if (len < 64 || memcmp(d, "\177ELF", 4) || d[4] != 2 || d[5] != 1)
        return 0;
    uint64_t phoff = rd(d + 32, 8), phentsize = rd(d + 54, 2), phnum = rd(d + 56, 2);
    if (phentsize < 56)
        return 0;
    for (uint64_t i = 0; i < phnum; i++) {
        uint64_t at = phoff + i * phentsize;
        if (at > len || len - at < 56)
            return 0;
        const uint8_t *ph = d + at;
        uint64_t off = rd(ph + 8, 8), filesz = rd(ph + 32, 8);
        size_t n;
        if (rd(ph, 4) == 4 /* PT_NOTE */ && off <= len && filesz <= len - off &&
            (n = jhr_note_build_id(d + off, (size_t)filesz, id)))
            return n;
    }
    return 0;
}

static void say(struct jhr_al_cfile *cf, const char *fmt, const char *a, const char *b)
{
    char line[1024];
    snprintf(line, sizeof line, fmt, a, b);
    size_t old = cf->why ? strlen(cf->why) : 0, n = strlen(line);
    char *w = realloc(cf->why, old + n + 3);
    if (!w)
        return;
    if (old)
        memcpy(w + old, "; ", 2), old += 2;
    memcpy(w + old, line, n + 1);
    cf->why = w;
}

/* Map candidate path; keep it in cf when its build-id is cf's. */
static bool try_file(struct jhr_al_cfile *cf, const char *path)
{
    int fd = jh__open_regular(path, 0);
    if (fd < 0) {
        say(cf, "%s: %s", path, jh__file_error(fd));
        return false;
    }
    struct stat sb;
    void *m = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0)
        m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        say(cf, "%s: %s", path, "cannot be read");
        return false;
    }
    uint8_t id[64];
    size_t n = image_id(m, (size_t)sb.st_size, id);
    if (n != cf->idlen || memcmp(id, cf->id, n)) {
        char got[129] = "none", want[129];
        if (n)
            hex(got, id, n);
        hex(want, cf->id, cf->idlen);
        char what[300];
        snprintf(what, sizeof what, "build-id %s, not %s", got, want);
        say(cf, "%s: %s", path, what);
        munmap(m, (size_t)sb.st_size);
        return false;
    }
    cf->map = m;
    cf->map_len = (size_t)sb.st_size;
    cf->read = strdup(path);
    return true;
}

static struct jhr_al_cfile *cfile_of(struct jhr_al *lf, const struct jhr_al_fn *fn, size_t *cap)
{
    for (size_t i = lf->ncfiles; i-- > 0;) {
        struct jhr_al_cfile *cf = &lf->cfiles[i];
        if (cf->idlen == fn->code_idlen && !memcmp(cf->id, fn->code_id, cf->idlen) &&
            !strcmp(cf->path, fn->code_file))
            return cf;
    }
    if (lf->ncfiles == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct jhr_al_cfile *n = realloc(lf->cfiles, nc * sizeof *n);
        if (!n)
            return NULL;
        lf->cfiles = n, *cap = nc;
    }
    struct jhr_al_cfile *cf = &lf->cfiles[lf->ncfiles];
    memset(cf, 0, sizeof *cf);
    if (!(cf->path = strdup(fn->code_file)))
        return NULL;
    lf->ncfiles++;
    cf->id = fn->code_id, cf->idlen = fn->code_idlen;
    if (!try_file(cf, cf->path)) {
        char idhex[129];
        hex(idhex, cf->id, cf->idlen);
        char *got = jhr_debuginfod_find(idhex);
        if (got && strcmp(got, cf->path))
            try_file(cf, got);
        free(got);
    }
    return cf;
}

void jhr_al_read_code_files(struct jhr_al *lf)
{
    size_t cap = lf->ncfiles;
    bool any = false;
    for (size_t i = 0; i < lf->nfns; i++) {
        struct jhr_al_fn *fn = &lf->fns[i];
        if (!fn->code_file || fn->code)
            continue;
        struct jhr_al_cfile *cf = cfile_of(lf, fn, &cap);
        if (!cf)
            continue;
        cf->nfns++;
        if (!cf->map)
            continue;
        if (!in_text(cf->map, cf->map_len, fn->code_offset, fn->size)) {
            if (!cf->why || !strstr(cf->why, "outside its executable"))
                say(cf, "%s: %s", cf->read, "functions outside its executable segments");
            continue;
        }
        fn->code = (const uint8_t *)cf->map + fn->code_offset;
        fn->npatches = 0;       /* counted again as they apply */
        cf->nread++;
        any = true;
    }
    /* the patches to code read just now, in the log's order */
    for (size_t r = 0; any && r < lf->nrecs; r++) {
        struct jhr_al_rec *rec = &lf->recs[r];
        if (rec->kind == JHR_AL_CODE_PATCHED && rec->ref >= 0 && (size_t)rec->ref < lf->nfns &&
            lf->fns[rec->ref].code_file && lf->fns[rec->ref].code)
            jhr_al_patch(&lf->fns[rec->ref], &rec->map);
    }
}

const struct jhr_al_cfile *jhr_al_fn_cfile(const struct jhr_al *lf, const struct jhr_al_fn *fn)
{
    for (size_t i = 0; fn->code_file && i < lf->ncfiles; i++) {
        const struct jhr_al_cfile *cf = &lf->cfiles[i];
        if (cf->idlen == fn->code_idlen && !memcmp(cf->id, fn->code_id, cf->idlen) &&
            !strcmp(cf->path, fn->code_file))
            return cf;
    }
    return NULL;
}

void jhr_al_cfiles_free(struct jhr_al *lf)
{
    for (size_t i = 0; i < lf->ncfiles; i++) {
        struct jhr_al_cfile *cf = &lf->cfiles[i];
        if (cf->map)
            munmap(cf->map, cf->map_len);
        free(cf->path);
        free(cf->read);
        free(cf->why);
    }
    free(lf->cfiles);
    lf->cfiles = NULL;
    lf->ncfiles = 0;
}
