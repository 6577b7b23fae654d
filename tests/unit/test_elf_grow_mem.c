/*
 * test_elf_grow_mem.c — the gdb channel's growing image (fmt/elf_grow_mem.h) read the way a
 * debugger reads it: after every append, the bytes [base, base + symfile_size) must be a
 * valid ELF image naming exactly the functions so far; at every step of a publish (bytes
 * and table written, size raised, e_shoff switched) the image a debugger would read is the
 * old one or the new one, byte for byte in every section the table names. At checkpoints,
 * the real decoders compare it with a fresh jh__elf_image of the same functions: the same
 * build-id, symbols, line rows (readelf --debug-dump=decodedline) and FDEs (readelf
 * --debug-dump=frames), llvm-dwarfdump-14 --verify clean, readelf without a warning.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/buf.h"
#include "capture.h"
#include "check.h"
#include "fmt/build_id.h"
#include "fmt/elf_grow_mem.h"
#include "fmt/elf_image.h"
#include "fmt/func.h"

enum { N = 400, FN = 64 };
static const char *files[] = { "grow.mini", "lib.mini" };
static struct jh_line lines[N][3];
static struct jh__func fn[N];
static char names[N][40];
static uint64_t code;           /* where the (pretend) code lies */

/* Function i: lines in one or two files; every 5th without a file (named as V8 names its
 * code: a unit with no line program), every 7th with no unwind info. Placed top-down with
 * gaps (a LuaJIT-like allocator), so runs of .text grow both ways; 400 of them outgrow the
 * sections' first chunks, which move. */
static void make(int i)
{
    uint64_t at = code + (uint64_t)(N - i) * 2 * FN - (i % 3 == 0 ? FN : 0);
    snprintf(names[i], sizeof names[i], i % 5 == 4 ? "JS:*f%d grow.js:%d:1" : "g%d", i, i);
    fn[i] = (struct jh__func){ .start = at, .size = FN, .name = names[i] };
    if (i % 5 != 4) {
        lines[i][0] = (struct jh_line){ .offset = 0, .line = (uint32_t)i + 1, .file = 0 };
        lines[i][1] = (struct jh_line){ .offset = 8, .line = (uint32_t)i + 2, .column = 3,
                                        .file = (uint32_t)(i & 1) };
        lines[i][2] = (struct jh_line){ .offset = 40, .line = (uint32_t)i * 7, .file = 0 };
        fn[i].files = files, fn[i].nfiles = 2, fn[i].lines = lines[i], fn[i].nlines = 3;
    }
    if (i % 7) {
        fn[i].unwind = JH_UNWIND_FRAME_POINTER;
        fn[i].fp_push_end = 1, fn[i].fp_set_end = 4;
    }
}

/* ---- what a debugger reads: the image at (p, size) ---- */
struct view {
    bool ok;
    size_t nsym;
    uint64_t sym[N + 1][2];     /* value, size: sorted */
    uint8_t id[64];
    size_t idlen;
    uint64_t digest;            /* of every section's bytes the table names, and the table */
};

static int cmp_u64x2(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void read_view(const uint8_t *p, size_t size, struct view *v)
{
    memset(v, 0, sizeof *v);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || !eh->e_shoff ||
        eh->e_shoff > size || eh->e_shnum > (size - eh->e_shoff) / sizeof(Elf64_Shdr) ||
        eh->e_shstrndx >= eh->e_shnum)
        return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
    for (size_t i = 1; i < eh->e_shnum; i++) {
        /* (what the image says, not where its bytes lie: either view, any chunk) */
        uint64_t what[4] = { sh[i].sh_name, sh[i].sh_type, sh[i].sh_size,
                             sh[i].sh_flags & SHF_EXECINSTR ? sh[i].sh_addr : 0 };
        v->digest += jh__hash64(what, sizeof what, i);
        if (sh[i].sh_type == SHT_NULL || sh[i].sh_type == SHT_NOBITS)
            continue;
        if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
            return;
        v->digest += jh__hash64(p + sh[i].sh_offset, sh[i].sh_size, i);
        if (sh[i].sh_type == SHT_NOTE)
            v->idlen = jh__note_build_id(p + sh[i].sh_offset, sh[i].sh_size, v->id);
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        const Elf64_Sym *s = (const Elf64_Sym *)(p + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof *s;
        for (size_t k = 1; k < n && v->nsym <= N; k++) {
            const Elf64_Shdr *t = &sh[s[k].st_shndx];
            if (s[k].st_shndx >= eh->e_shnum || !(t->sh_flags & SHF_EXECINSTR) ||
                s[k].st_value < t->sh_addr || s[k].st_value + s[k].st_size > t->sh_addr + t->sh_size)
                return;             /* a symbol outside its .text section */
            v->sym[v->nsym][0] = s[k].st_value, v->sym[v->nsym][1] = s[k].st_size;
            v->nsym++;
        }
    }
    qsort(v->sym, v->nsym, sizeof v->sym[0], cmp_u64x2);
    v->ok = true;
}

/* Does v name exactly functions [0, n)? */
static bool holds(const struct view *v, int n)
{
    uint64_t want[N][2];
    for (int i = 0; i < n; i++)
        want[i][0] = fn[i].start, want[i][1] = fn[i].size;
    qsort(want, (size_t)n, sizeof want[0], cmp_u64x2);
    return v->ok && v->nsym == (size_t)n && !memcmp(v->sym, want, (size_t)n * sizeof want[0]);
}

/* The build-id a fresh image of functions [0, n) has. */
static void fresh_id(int n, uint8_t id[JH__BUILD_ID_SIZE])
{
    struct jh__bid bid = { 0 };
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        jh__bid_func(&bid, &fn[i]);
        lo = fn[i].start < lo ? fn[i].start : lo;
        hi = fn[i].start + fn[i].size > hi ? fn[i].start + fn[i].size : hi;
    }
    jh__bid_final(&bid, lo, hi - lo, id);
}

static char dir[] = "/tmp/jh-test-elfm.XXXXXX";

static int by_start(const void *a, const void *b)
{
    const struct jh__func *x = *(const struct jh__func *const *)a;
    const struct jh__func *y = *(const struct jh__func *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* What a decoder says of a file, one line per row worth comparing, sorted. */
static char *rows(const char *what, const char *path)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "readelf --debug-dump=%s %s 2>&1 | %s | sort", what, path,
             !strcmp(what, "frames") ? "grep -o 'pc=[0-9a-f.]*'" :
             "awk 'NF >= 3 && $3 ~ /^0x/ { print $1, $2, $3 }'");
    return capture(cmd, NULL);
}

/* The grown image of functions [0, n) beside a fresh one, through the real decoders. */
static void compare_fresh(const uint8_t *img, size_t size, int n)
{
    char grown[128], fresh[128], cmd[512];
    snprintf(grown, sizeof grown, "%s/grown.elf", dir);
    snprintf(fresh, sizeof fresh, "%s/fresh.elf", dir);
    FILE *f = fopen(grown, "wb");
    CHECK(f && fwrite(img, 1, size, f) == size);
    if (f)
        fclose(f);
    const struct jh__func *sorted[N];
    for (int i = 0; i < n; i++)
        sorted[i] = &fn[i];
    qsort(sorted, (size_t)n, sizeof sorted[0], by_start);
    struct jh__elf_spec spec = { .fns = sorted, .nfns = (size_t)n,
                                 .flags = JH__ELF_NO_PHDRS | JH__ELF_SYMBOLS };
    struct jh__buf b = { 0 };
    CHECK_EQ(jh__elf_image(&b, &spec, NULL), 0);
    struct view *a = malloc(sizeof *a), *z = malloc(sizeof *z);
    read_view(img, size, a);
    read_view(b.p, b.len, z);   /* the same symbols and build-id as the builder's */
    CHECK(a->ok && z->ok && a->nsym == z->nsym && !memcmp(a->sym, z->sym, sizeof a->sym));
    CHECK(a->idlen == JH__BUILD_ID_SIZE && z->idlen == a->idlen && !memcmp(a->id, z->id, a->idlen));
    free(a);
    free(z);
    f = fopen(fresh, "wb");
    CHECK(f && fwrite(b.p, 1, b.len, f) == b.len);
    if (f)
        fclose(f);
    jh__buf_free(&b);
    static const char *const what[] = { "decodedline", "frames" };
    for (int k = 0; k < 2; k++) {
        char *g = rows(what[k], grown), *r = rows(what[k], fresh);
        CHECK(g && r && (n == 1 || strlen(g) > 10) && !strcmp(g, r));
        if (g && r && strcmp(g, r))
            fprintf(stderr, "%s differ at %d functions:\n--- grown\n%s--- fresh\n%s", what[k],
                    n, g, r);
        free(g);
        free(r);
    }
    snprintf(cmd, sizeof cmd, "readelf -a -w %s 2>&1 | grep -i -e warning -e error", grown);
    char *o = capture(cmd, NULL);
    CHECK(o && !*o);
    if (o && *o)
        fprintf(stderr, "readelf on the grown image:\n%s", o);
    free(o);
    snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --verify %s 2>&1 | tail -1", grown);
    o = capture(cmd, NULL);
    CHECK(o && strstr(o, "No errors."));
    free(o);
    unlink(grown);
    unlink(fresh);
}

static bool tools(void)
{
    return system("(llvm-dwarfdump-14 --version && readelf --version) >/dev/null 2>&1") == 0;
}

/* After an append or a pop: the view listed (*cur) unchanged while the other is written
 * and switched; then the other listed, its image read into v. */
static void publish(struct jh__elfm *g, uint8_t *base, int *cur, size_t size[2],
                    const struct view *was, struct view *v)
{
    (void)base;
    int next = jh__elfm_next(g);
    CHECK(next != *cur);
    if (*cur >= 0) {
        read_view(jh__elfm_view(g, *cur), size[*cur], v);
        CHECK(v->ok && v->digest == was->digest);
    }
    size[next] = jh__elfm_size(g, next);
    jh__elfm_flip(g);
    if (*cur >= 0) {
        read_view(jh__elfm_view(g, *cur), size[*cur], v);
        CHECK(v->ok && v->digest == was->digest);
    }
    *cur = next;
    read_view(jh__elfm_view(g, next), size[next], v);
}

/* Every append, every step of its publish; a pop after some of them. */
static void test_grow(bool decoders)
{
    size_t reserve = 8 << 20;
    uint8_t *base = mmap(NULL, reserve, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(base != MAP_FAILED);
    struct jh__elfm g;
    CHECK_EQ(jh__elfm_init(&g, base, reserve, NULL, true), 0);
    int cur = -1;               /* the view listed */
    size_t size[2] = { 0, 0 };  /* each view's symfile_size */
    struct view *was = malloc(sizeof *was), *now = malloc(sizeof *now), *other = malloc(sizeof *other);
    read_view(base, jh__elfm_size(&g, 0), was);
    CHECK(!was->ok);            /* nothing flipped yet: no table */
    int moved = 0;
    for (int i = 0; i < N; i++) {
        make(i);
        uint8_t *info = g.dw.info.p;
        bool join = i % 16 != 1;    /* (the caller's say: nothing else in the gaps) */
        for (int again = 0; again < 1 + (i % 9 == 8); again++) {
            if (again) {        /* the last one undone, then again */
                struct view *t = was;
                was = now, now = t;     /* (the listed view's image: with function i) */
                CHECK_EQ(jh__elfm_pop(&g), 0);
                CHECK_EQ(jh__elfm_pop(&g), -ENOENT);
                publish(&g, base, &cur, size, was, other);
                CHECK(holds(other, i));
                t = was;
                was = other, other = t;
            }
            CHECK_EQ(jh__elfm_add(&g, &fn[i], jh__bid_func_hash(&fn[i]), join, join), 0);
            publish(&g, base, &cur, size, was, now);
            CHECK(holds(now, i + 1));
        }
        moved += g.dw.info.p != info;
        uint8_t id[JH__BUILD_ID_SIZE];
        fresh_id(i + 1, id);
        CHECK(now->idlen == JH__BUILD_ID_SIZE && !memcmp(now->id, id, sizeof id));
        if (decoders && (i == 0 || i == 6 || i == 60 || i == N - 1))
            compare_fresh(jh__elfm_view(&g, cur), size[cur], i + 1);
        struct view *t = was;
        was = now, now = t;
    }
    size_t covered = size[cur];
    CHECK(moved >= 1);          /* .debug_info outgrew its chunk */
    CHECK(g.nruns > 1 && g.nruns < N / 8);
    /* memory stays linear: at most twice the sections' bytes, plus the fixed part */
    size_t bytes = g.eh.len + g.dw.info.len + g.dw.abbrev.len + g.dw.line.len + g.dw.str.len +
                   g.dw.ranges.len + g.sym.len + g.str.len;
    CHECK(covered < 2 * bytes + 64 * 1024);

    /* the compact copy: what the grown image says, in fewer bytes */
    struct jh__buf c = { 0 };
    CHECK_EQ(jh__elfm_copy(&g, &c), 0);
    read_view(c.p, c.len, now);
    CHECK(holds(now, N) && now->idlen == was->idlen && !memcmp(now->id, was->id, was->idlen));
    CHECK(c.len < covered);
    if (decoders) {
        char path[128], cmd[512];
        snprintf(path, sizeof path, "%s/copy.elf", dir);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(c.p, 1, c.len, f) == c.len);
        if (f)
            fclose(f);
        snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --verify %s 2>&1 | tail -1; "
                 "readelf -a -w %s 2>&1 | grep -i -e warning -e error", path, path);
        char *o = capture(cmd, NULL);
        CHECK(o && !strcmp(o, "No errors.\n"));
        free(o);
        unlink(path);
    }
    jh__buf_free(&c);
    free(was);
    free(now);
    free(other);
    munmap(base, reserve);
}

/* A region too small: -ENOSPC, and the image a debugger reads is the one before. */
static void test_full(void)
{
    size_t reserve = 192 * 1024;
    uint8_t *base = mmap(NULL, reserve, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct jh__elfm g;
    CHECK_EQ(jh__elfm_init(&g, base, reserve, NULL, true), 0);
    struct view *v = malloc(sizeof *v);
    int i = 0, err = 0;
    for (; i < N && !(err = jh__elfm_add(&g, &fn[i], jh__bid_func_hash(&fn[i]), true, true)); i++)
        jh__elfm_flip(&g);
    CHECK_EQ(err, -ENOSPC);
    CHECK(i > 10 && i < N);
    read_view(jh__elfm_view(&g, g.cur), jh__elfm_size(&g, g.cur), v);
    CHECK(holds(v, i));
    free(v);
    munmap(base, reserve);
}

int main(void)
{
    code = (uint64_t)1 << 40;
    bool decoders = tools();
    if (!decoders)
        SKIP_PART("llvm-dwarfdump-14 or readelf missing (Debian packages llvm-14, binutils): "
                  "the grown image was not compared with a fresh one by the decoders");
    CHECK(mkdtemp(dir) != NULL);
    test_grow(decoders);
    test_full();
    rmdir(dir);
    return check_done();
}
