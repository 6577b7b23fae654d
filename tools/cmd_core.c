/*
 * cmd_core.c — `jitherald core CORE`: the gdb commands that name the JIT code of a core
 * dump whose process ran with the elfmap channel.
 *
 *     $ gdb -batch -ex bt ./my-vm core.4242               # without: ?? for JIT frames
 *     #1  0x00007f3a12400052 in ?? ()
 *     $ jitherald core core.4242 > jit.gdb
 *     $ gdb -batch -x jit.gdb -ex bt ./my-vm core.4242
 *     #1  0x00007f3a12400052 in c () at calls.mini:7
 *
 * Why it is needed: a core lists every file-backed mapping in its NT_FILE note, elfmap's
 * images among them, and gdb 13 reads the code bytes of such mappings from those files,
 * but it loads symbols only for the executable and the shared libraries the dynamic linker
 * lists. An image's sections lie at the process's own addresses, so `add-symbol-file IMAGE`
 * with no offset is all gdb needs: names, file:line (.debug_line) and unwinding
 * (.debug_frame).
 *
 * Which file: the image named in the note, if it is still there, else one of the same name
 * (and generation directory) under each --dir (images copied off the host, or rebuilt by
 * `jitherald log FILE to-elf DIR`). A candidate is used only if it describes what the core
 * shows: each of the image's mappings lies in one of its PT_LOADs at the same address, and
 * every byte of the functions it names that the core holds (pages the JIT wrote since,
 * or all of them with bit 2 of coredump_filter) equals the candidate's. When the core holds the image's first page (a
 * mapping at offset 0: the kernel and gcore keep ELF header pages), its build-id is the id
 * the image had at the crash: a candidate must carry the same id, and with DEBUGINFOD_URLS
 * set, `debuginfod-find executable ID` fetches it when no candidate does. elfmap images of
 * this version keep their build-id note out of the pages the process maps, so their cores
 * carry no id and images are found by name only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "jitherald.h"
#include "base/files.h"
#include "lib/core_read.h"
#include "lib/debuginfod.h"

#define USAGE "usage: jitherald core [--dir DIR]... CORE"
#define MAX_DIRS 16

struct image {
    int fd;
    uint64_t size;
    struct { uint64_t offset, vaddr, filesz; } load[16];
    int nload;
    uint8_t id[64];
    size_t idlen;
    struct fn { uint64_t start, end; } *fns; /* .symtab's functions: what must match */
    size_t nfns;
};

static uint64_t rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static const uint8_t *file_get(struct image *im, uint64_t off, uint64_t n, uint8_t *buf)
{
    return off <= im->size && n <= im->size - off &&
           pread(im->fd, buf, n, (off_t)off) == (ssize_t)n ? buf : NULL;
}

/* An ELF64 little-endian image's PT_LOADs and build-id. */
static int read_elf(struct image *im)
{
    uint8_t buf[4096];
    const uint8_t *h = file_get(im, 0, 64, buf);
    if (!h || memcmp(h, "\177ELF", 4) || h[4] != 2 || h[5] != 1)
        return -1;
    uint64_t phoff = rd(h + 32, 8), phentsize = rd(h + 54, 2), phnum = rd(h + 56, 2);
    if (phentsize < 56 || phnum > 64)
        return -1;
    for (uint64_t i = 0; i < phnum; i++) {
        uint8_t pb[56];
        const uint8_t *ph = file_get(im, phoff + i * phentsize, 56, pb);
        if (!ph)
            return -1;
        uint64_t type = rd(ph, 4), off = rd(ph + 8, 8), filesz = rd(ph + 32, 8);
        if (type == 1 && im->nload < 16) {
            im->load[im->nload].offset = off;
            im->load[im->nload].vaddr = rd(ph + 16, 8);
            im->load[im->nload++].filesz = filesz;
        } else if (type == 4 && !im->idlen && filesz <= sizeof buf) {
            const uint8_t *n = file_get(im, off, filesz, buf);
            if (n)
                im->idlen = jhr_note_build_id(n, filesz, im->id);
        }
    }
    return 0;
}

static void hex(char *out, const uint8_t *id, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
    out[2 * n] = 0;
}

/* The path without the " (deleted)" the kernel appends to an unlinked file's name. */
static char *clean_path(const char *p)
{
    char *s = strdup(p);
    size_t n = s ? strlen(s) : 0;
    if (n > 10 && !strcmp(s + n - 10, " (deleted)"))
        s[n - 10] = 0;
    return s;
}

/* A path with a control character (a newline above all) would end the gdb command it is
 * printed in and start another: a core from elsewhere could make `source jit.gdb` run
 * `shell ...`. Such paths are skipped (elfmap never writes one). */
static bool has_control(const char *p)
{
    for (; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

/* elfmap's image names: jit-PID-N.elf, in the image directory or a jit-PID-gK/ one. Its
 * tail under the image directory, or NULL. */
static const char *image_tail(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    unsigned pid, n;
    char end;
    if (sscanf(base, "jit-%u-%u.el%c", &pid, &n, &end) != 3 || end != 'f' ||
        strcmp(base + strlen(base) - 4, ".elf"))
        return NULL;
    if (base - path >= 6) {
        const char *d = base - 2;
        while (d > path && d[-1] != '/')
            d--;
        if (!strncmp(d, "jit-", 4) && strstr(d, "-g") && strstr(d, "-g") < base)
            return d;
    }
    return base;
}

/* Does the candidate describe the core's mappings of path? NULL, or why not. */
static const char *matches(const struct jhr_core *c, const char *path, struct image *im,
                           const uint8_t *want_id, size_t want_len, uint64_t *checked)
{
    static char why[160];
    if (want_len && (im->idlen != want_len || memcmp(im->id, want_id, want_len)))
        return "its build-id is not the one the core holds";
    *checked = 0;
    for (size_t i = 0; i < c->nmaps; i++) {
        const struct jhr_core_map *m = &c->maps[i];
        char *p = clean_path(m->path);
        bool mine = p && !strcmp(p, path);
        free(p);
        if (!mine)
            continue;
        /* Each part of the mapping where a PT_LOAD says: the kernel merges the mappings of
         * adjacent PT_LOADs at adjacent offsets (elfmap's two tables) into one. */
        uint64_t at = m->start, off = m->offset;
        while (at < m->end) {
            int l = 0;
            for (; l < im->nload; l++)
                if (off >= im->load[l].offset && off - im->load[l].offset < im->load[l].filesz &&
                    im->load[l].vaddr + (off - im->load[l].offset) == at)
                    break;
            if (l == im->nload)
                break;
            uint64_t n = im->load[l].filesz - (off - im->load[l].offset);
            if (n > m->end - at)
                n = m->end - at;
            at += n;
            off += n;
        }
        bool code = false;
        for (size_t f = 0; f < im->nfns && !code; f++)
            code = im->fns[f].start < m->end && im->fns[f].end > m->start;
        if (at < m->end) {
            if (!code)
                continue;       /* the header page, the unwind tables: no code to match
                                   (an image rebuilt from the audit log maps them nowhere) */
            snprintf(why, sizeof why, "no PT_LOAD of it maps offset 0x%llx at 0x%llx",
                     (unsigned long long)m->offset, (unsigned long long)m->start);
            return why;
        }
        /* the bytes of each function the image names in this mapping (padding between
         * functions is the JIT's, and an image rebuilt from the audit log has zeros there) */
        for (size_t f = 0; f < im->nfns; f++) {
            uint64_t a = im->fns[f].start > m->start ? im->fns[f].start : m->start;
            uint64_t end = im->fns[f].end < m->end ? im->fns[f].end : m->end;
            while (a < end) {
                const uint8_t *cp;
                size_t n = jhr_core_bytes(c, a, &cp);
                if (!n) {
                    a = (a | 4095) + 1;
                    continue;
                }
                uint8_t buf[4096];
                if (n > end - a)
                    n = (size_t)(end - a);
                if (n > sizeof buf)
                    n = sizeof buf;
                if (pread(im->fd, buf, n, (off_t)(m->offset + (a - m->start))) != (ssize_t)n ||
                    memcmp(buf, cp, n)) {
                    snprintf(why, sizeof why, "its bytes at 0x%llx (in a function it names) "
                             "differ from the core's (rewritten since?)",
                             (unsigned long long)a);
                    return why;
                }
                *checked += n;
                a += n;
            }
        }
    }
    return NULL;
}

/* The sized FUNC symbols of the image's .symtab. */
static int read_functions(struct image *im)
{
    uint8_t h[64];
    if (pread(im->fd, h, 64, 0) != 64)
        return -1;
    uint64_t shoff = rd(h + 40, 8), shentsize = rd(h + 58, 2), shnum = rd(h + 60, 2);
    if (shentsize < 64 || shnum > 4096)
        return -1;
    for (uint64_t i = 0; i < shnum; i++) {
        uint8_t sh[64];
        if (pread(im->fd, sh, 64, (off_t)(shoff + i * shentsize)) != 64)
            return -1;
        uint64_t off = rd(sh + 24, 8), size = rd(sh + 32, 8), entsize = rd(sh + 56, 8);
        if (rd(sh + 4, 4) != 2 /* SHT_SYMTAB */ || entsize < 24)
            continue;
        if (off > im->size || size > im->size - off)
            return -1;
        uint8_t *t = malloc(size ? size : 1);
        im->fns = calloc(size / entsize + 1, sizeof *im->fns);
        if (!t || !im->fns || pread(im->fd, t, size, (off_t)off) != (ssize_t)size) {
            free(t);
            return -1;
        }
        for (uint64_t k = 0; k < size / entsize; k++) {
            const uint8_t *e = t + k * entsize;
            uint64_t value = rd(e + 8, 8), sz = rd(e + 16, 8);
            if ((e[4] & 0xf) == 2 /* STT_FUNC */ && sz && value + sz > value)
                im->fns[im->nfns++] = (struct fn){ value, value + sz };
        }
        free(t);
        return 0;
    }
    return 0;
}

static void close_image(struct image *im)
{
    close(im->fd);
    free(im->fns);
}

static int open_image(const char *path, struct image *im)
{
    memset(im, 0, sizeof *im);
    im->fd = jh__open_regular(path, 0);
    if (im->fd < 0)
        return im->fd;
    struct stat st;
    if (fstat(im->fd, &st) || (im->size = (uint64_t)st.st_size, read_elf(im)) ||
        read_functions(im)) {
        close_image(im);
        return -EINVAL;
    }
    return 0;
}

/* A path as one argument of gdb's add-symbol-file (gdb splits it like a shell's words). */
static void print_quoted(const char *p)
{
    putchar('"');
    for (; *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        putchar(*p);
    }
    putchar('"');
}

/* One image of the core: prints its command, or says on stderr why it cannot. 0 or 1. */
static int one_image(const struct jhr_core *c, const char *path, char **dirs, int ndirs)
{
    uint8_t want[64];
    size_t want_len = 0;
    /* the id, from the image's first page if the core holds it */
    for (size_t i = 0; i < c->nmaps && !want_len; i++) {
        char *p = clean_path(c->maps[i].path);
        if (p && !strcmp(p, path))
            want_len = jhr_core_map_build_id(c, i, want);
        free(p);
    }
    char idhex[129] = "";
    hex(idhex, want, want_len);

    const char *tail = image_tail(path);
    char *cands[MAX_DIRS + 2];
    int n = 0;
    cands[n++] = strdup(path);
    for (int d = 0; d < ndirs; d++) {
        size_t len = strlen(dirs[d]) + strlen(tail) + 2;
        if ((cands[n] = malloc(len)))
            snprintf(cands[n++], len, "%s/%s", dirs[d], tail);
    }
    if (want_len)
        cands[n++] = jhr_debuginfod_find(idhex);
    int rc = 1;
    for (int i = 0; i < n; i++) {
        struct image im;
        if (!cands[i] || has_control(cands[i]) ||
            (i > 0 && cands[0] && !strcmp(cands[i], cands[0])))
            continue;
        int err = open_image(cands[i], &im);
        if (err) {
            if (err != -ENOENT)
                fprintf(stderr, "jitherald core: %s: %s\n", cands[i],
                        err == -EINVAL ? "not an ELF image" : jh__file_error(err));
            continue;
        }
        uint64_t checked = 0;
        const char *why = matches(c, path, &im, want, want_len, &checked);
        close_image(&im);
        if (why) {
            fprintf(stderr, "jitherald core: %s: not used for %s: %s\n", cands[i], path, why);
            continue;
        }
        printf("# %s: %s%s, %llu bytes checked against the core\n", path,
               want_len ? "build-id " : "no build-id in the core", idhex,
               (unsigned long long)checked);
        printf("add-symbol-file ");
        print_quoted(cands[i]);
        printf("\n");
        rc = 0;
        break;
    }
    if (rc)
        fprintf(stderr, "jitherald core: %s: no image found%s%s (gdb cannot name its JIT frames)\n",
                path, want_len ? " for build-id " : "", idhex);
    for (int i = 0; i < n; i++)
        free(cands[i]);
    return rc;
}

static int run(const char *core_path, char **dirs, int ndirs)
{
    int fd = jh__open_regular(core_path, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        fprintf(stderr, "jitherald core: %s: %s\n", core_path,
                jh__file_error(fd < 0 ? fd : -errno));
        if (fd >= 0)
            close(fd);
        return 2;
    }
    size_t len = (size_t)st.st_size;
    void *data = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    struct jhr_core c;
    int err = data == MAP_FAILED ? JH_EFORMAT : jhr_core_read(&c, data, len);
    if (err) {
        if (data != MAP_FAILED)
            jhc_wrong_kind("core", core_path, "a core file", data, len);
        else
            fprintf(stderr, "jitherald core: %s: not a core file\n", core_path);
        if (data != MAP_FAILED)
            munmap(data, len);
        return 1;
    }
    int rc = 0, found = 0;
    for (size_t i = 0; i < c.nmaps; i++) {
        char *p = clean_path(c.maps[i].path);
        bool first = p && image_tail(p);
        for (size_t j = 0; first && j < i; j++) {
            char *q = clean_path(c.maps[j].path);
            first = !q || strcmp(p, q);
            free(q);
        }
        if (first && has_control(p)) {
            fprintf(stderr, "jitherald core: %s: an image path with a control character: "
                    "skipped\n", core_path);
            rc = 1, first = false;
        }
        if (first) {
            found++;
            rc |= one_image(&c, p, dirs, ndirs);
        }
        free(p);
    }
    if (!found && !rc) {
        fprintf(stderr, "jitherald core: %s: %s\n", core_path,
                c.nmaps ? "no elfmap image is mapped in it (was JITHERALD=elfmap on?)" :
                          "it has no NT_FILE note: it does not say which files were mapped");
        rc = 1;
    }
    jhr_core_free(&c);
    munmap(data, len);
    return rc;
}

int jhc_cmd_core(int argc, char **argv)
{
    char *dirs[MAX_DIRS];
    int ndirs = 0;
    const char *core = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf(USAGE "\nPrint the gdb commands that load the symbols of the elfmap images "
                   "mapped in CORE\n(a core dump of a process run with JITHERALD=elfmap):\n"
                   "    jitherald core CORE > jit.gdb     then in gdb EXE CORE: source jit.gdb\n"
                   "  --dir DIR  look for images DIR/jit-PID-N.elf (and DIR/jit-PID-gK/...) "
                   "too,\n             when the paths in the core are gone (up to %d)\n"
                   "An image is used only if its PT_LOADs map the core's mappings of it at "
                   "the same\naddresses and the bytes the core holds of them are the "
                   "image's; when the core\nholds the image's build-id, the image must have "
                   "it, and with DEBUGINFOD_URLS\nset, debuginfod-find fetches it if no "
                   "file has it.\nExit 1 if an image cannot be found or does not match "
                   "(named on stderr).\n", MAX_DIRS);
            return 0;
        } else if (!strcmp(argv[i], "--dir")) {
            if (i + 1 == argc || ndirs == MAX_DIRS)
                return jhc_usage_error("core", USAGE);
            dirs[ndirs++] = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "jitherald core: unknown option %s\n", argv[i]);
            return jhc_usage_error("core", USAGE);
        } else if (!core) {
            core = argv[i];
        } else {
            fprintf(stderr, "jitherald core: one CORE only\n");
            return jhc_usage_error("core", USAGE);
        }
    }
    if (!core)
        return jhc_usage_error("core", USAGE);
    return run(core, dirs, ndirs);
}
