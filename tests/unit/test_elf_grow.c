/*
 * test_elf_grow.c — the growing ELF image (fmt/elf_grow.h) as the real decoders read it:
 * readelf and llvm-dwarfdump-14 --verify, after the first functions, after hundreds more
 * (every section has moved to a bigger chunk by then) and after the window grew. The file
 * is written only through the spans the builder gives, as the elfmap channel does, so a
 * span it forgot shows up as a file the decoders reject.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "fmt/arch.h"
#include "fmt/elf_grow.h"
#include "fmt/func.h"

static char tmpdir[] = "/tmp/jh-test-elfg.XXXXXX";

#define PG 4096u
#define ANCHOR 0x7f1234500000ull
#define META (PG + (4u << 20))
#define EH_ADDR (ANCHOR - (32ull << 20))      /* an arena below the code */

static const char *files[] = { "/src/fib.mini", "prelude.mini" };
static struct jh_line lines[] = {
    { .offset = 0, .line = 3, .column = 1, .file = 0 },
    { .offset = 4, .line = 4, .column = 9, .file = 0 },
    { .offset = 14, .line = 40, .column = 2, .file = 1 },
};
static const uint8_t cfi[] = { 0x41, 0x0e, 0x10 };  /* advance 1; def_cfa_offset 16 */

static void sync_file(struct jh__elfg *g, int fd)
{
    struct jh__elfg_span v[JH__ELFG_MAXSPANS];
    int n = jh__elfg_spans(g, v);
    CHECK(n >= 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ(pwrite(fd, v[i].p, v[i].len, (off_t)v[i].off), (ssize_t)v[i].len);
    jh__elfg_synced(g);
    /* the spare chunks (left behind, for others to move into) hold no section and are less
     * than the sections' chunks; not punched, so a reused chunk keeps the stale bytes of
     * its last section: a span the builder forgot would leave them for the decoders */
    uint64_t live = 0;
    for (int i = 0; i < JH__ELFG_NGROW; i++) {
        live += g->chunk[i].cap;
        for (size_t k = 0; k < g->spare.n; k++)
            CHECK(g->spare.v[k].off + g->spare.v[k].len <= g->chunk[i].off ||
                  g->chunk[i].off + g->chunk[i].cap <= g->spare.v[k].off);
    }
    CHECK(g->spare.bytes < live);
    CHECK_EQ(jh__elfg_spans(g, v), 0);     /* nothing left to write */
}

/* An image kept up to date piece by piece (.eh_frame_hdr's entries moved up as they are at
 * each insert, the meta page's sizes stored into its headers as built) is, in memory and
 * in the file, what building it whole gives. */
static void same_as_built_whole(struct jh__elfg *g, int fd)
{
    size_t nh = g->ehdr.len, nm = g->meta.len;
    uint8_t *was = malloc(nh + nm + nh + 1);
    CHECK(was != NULL);
    if (!was)
        return;
    memcpy(was, g->ehdr.p, nh);
    memcpy(was + nh, g->meta.p, nm);
    CHECK_EQ(pread(fd, was + nh + nm, nh, (off_t)g->chunk[9].off), (ssize_t)nh);
    g->ehdr_from = g->neh ? 0 : SIZE_MAX;
    g->meta_layout = g->meta_dirty = true;
    sync_file(g, fd);
    CHECK_EQ(g->ehdr.len, nh);
    CHECK_EQ(g->meta.len, nm);
    CHECK(memcmp(was, g->ehdr.p, nh) == 0);
    CHECK(memcmp(was + nh, g->meta.p, nm) == 0);
    CHECK(memcmp(was + nh + nm, g->ehdr.p, nh) == 0);
    free(was);
}

static void expect(const char *out, const char *what)
{
    check_count++;
    if (!out || !strstr(out, what)) {
        check_failures++;
        fprintf(stderr, "expected \"%s\" in output:\n%.3000s\n", what, out ? out : "(none)");
    }
}

static void decoders(const char *path, int nfns)
{
    char cmd[512], want[128];
    int rc;
    snprintf(cmd, sizeof cmd, "readelf -W -a -w %s 2>&1", path);
    char *o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    CHECK(o && !strstr(o, "Warning") && !strstr(o, "Error"));
    for (int i = 0; i < nfns; i += nfns > 10 ? 97 : 1) {
        snprintf(want, sizeof want, " FUNC    GLOBAL DEFAULT    1 f%d\n", i);
        expect(o, want);
    }
    snprintf(want, sizeof want, "Symbol table '.symtab' contains %d entries", nfns + 1);
    expect(o, want);
    free(o);

    snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --verify %s 2>&1", path);
    o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    expect(o, "No errors.");
    free(o);

    /* the last function: its name, its lines, its frame */
    uint64_t a = ANCHOR + 64 * (uint64_t)(nfns - 1);
    snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --lookup=0x%llx %s 2>&1",
             (unsigned long long)(a + 15), path);
    o = capture(cmd, &rc);
    snprintf(want, sizeof want, "DW_AT_name\t(\"f%d\")", nfns - 1);
    expect(o, want);
    expect(o, "Line info: file 'prelude.mini', line 40, column 2");
    free(o);
    snprintf(cmd, sizeof cmd, "readelf --debug-dump=frames-interp %s 2>&1", path);
    o = capture(cmd, &rc);
    snprintf(want, sizeof want, "pc=%016llx..%016llx", (unsigned long long)a,
             (unsigned long long)(a + 40));
    expect(o, want);
    /* the frame record pushed: CFA = sp + 16, sp as readelf names it */
    snprintf(want, sizeof want, "%s+%d", JH__ARCH_HOST->reg_names[JH__ARCH_HOST->sp],
             JH__ARCH_HOST->frame_cfa);
    expect(o, want);
    free(o);
}

/* The .eh_frame_hdr search table as elfutils decodes it: n entries, ascending, the i-th for
 * want[i] (the code's address) and pointing
 * at an FDE that readelf decodes with that function's range. */
static void eh_table(const char *path, const uint64_t *want, const uint64_t *size, int n,
                     uint64_t hdr_off)
{
    char cmd[512], line[256];
    snprintf(cmd, sizeof cmd, "eu-readelf --debug-dump=frames %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    int k = -1;
    unsigned long long prev = 0, off, fde;
    unsigned long long pcrel;
    while (p && fgets(line, sizeof line, p)) {
        if (strstr(line, "fde_count:"))
            CHECK_EQ(strtol(strchr(line, ':') + 1, NULL, 0), n);
        else if (strstr(line, " Table:"))
            k = 0;
        else if (k >= 0 && k < n &&
                 sscanf(line, " %llx (offset: %llx) -> %llx", &pcrel, &off, &fde) == 3) {
            CHECK(k == 0 || off > prev);
            /* (eu-readelf turns the pc into an offset through the table's own PT_LOAD, the
             * arena's: vaddr - offset = EH_ADDR + PG - META) */
            CHECK_EQ(off, want[k] - (EH_ADDR + PG - META));
            prev = off;
            k++;
        }
    }
    CHECK(p && pclose(p) == 0);
    CHECK_EQ(k, n);
    snprintf(cmd, sizeof cmd, "readelf -W -l --debug-dump=frames %s 2>&1", path);
    int rc;
    char *o = capture(cmd, &rc);
    CHECK(o && !strstr(o, "Warning") && !strstr(o, "Error"));
    expect(o, "GNU_EH_FRAME ");
    /* with an arena (spec.eh_addr, below the code as elfmap reserves it): the first PT_LOAD
     * is the file's first page, at the arena's start (perf 6.1 and libdw both take it for
     * the file's base: docs/elfmap.md); the tables have a PT_LOAD each in the arena, at
     * eh_addr + one page + (offset - meta_off) */
    snprintf(line, sizeof line, "LOAD           0x000000 0x%016llx 0x%016llx 0x001000 0x001000 R ",
             (unsigned long long)EH_ADDR, (unsigned long long)EH_ADDR);
    expect(o, line);
    const char *load = strstr(o ? o : "", "LOAD ");
    CHECK(load && strstr(o, line) == load);
    snprintf(line, sizeof line, "GNU_EH_FRAME   0x%llx 0x%016llx", (unsigned long long)hdr_off,
             (unsigned long long)(EH_ADDR + PG + (hdr_off - META)));
    expect(o, line);
    snprintf(line, sizeof line, "LOAD           0x%llx 0x%016llx", (unsigned long long)hdr_off,
             (unsigned long long)(EH_ADDR + PG + (hdr_off - META)));
    expect(o, line);
    expect(o, "Contents of the .eh_frame section");
    for (int i = 0; i < n; i += n > 10 ? 97 : 1) {
        snprintf(line, sizeof line, "pc=%016llx..%016llx", (unsigned long long)want[i],
                 (unsigned long long)(want[i] + size[i]));
        expect(o, line);
    }
    free(o);
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        SKIP("mkdtemp failed");
    char path[256];
    snprintf(path, sizeof path, "%s/grow.elf", tmpdir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);

    struct jh__elfg g;
    struct jh__elfg_spec s = { .anchor_addr = ANCHOR, .anchor_off = PG, .lo = ANCHOR,
                               .hi = ANCHOR + 16 * PG, .meta_off = META,
                               .rw_addr = ANCHOR + (64u << 20), .eh_addr = EH_ADDR };
    /* bad specs */
    struct jh__elfg_spec bad = s;
    bad.lo = ANCHOR - PG;                      /* off(lo) would be 0: the headers' page */
    CHECK_EQ(jh__elfg_init(&g, &bad), -EINVAL);
    bad = s;
    bad.hi = ANCHOR + META;                    /* past meta_off */
    CHECK_EQ(jh__elfg_init(&g, &bad), -EINVAL);
    CHECK_EQ(jh__elfg_init(&g, &s), 0);

    char names[1000][16];
    struct jh__func f[1000];
    for (int i = 0; i < 1000; i++) {
        snprintf(names[i], sizeof names[i], "f%d", i);
        f[i] = (struct jh__func){ .start = ANCHOR + 64 * (uint64_t)i, .size = 40, .name = names[i],
            .files = files, .nfiles = 2, .lines = lines, .nlines = 3,
            .unwind = i % 2 ? JH_UNWIND_CFI : JH_UNWIND_FRAME_POINTER, .cfi = cfi,
            .cfi_len = sizeof cfi, .fp_push_end = 1, .fp_set_end = 4 };
    }
    /* the code bytes are the caller's to write: some, so readelf -x has something */
    static uint8_t code[16 * PG];
    memset(code, 0x90, sizeof code);
    CHECK_EQ(pwrite(fd, code, sizeof code, PG), (ssize_t)sizeof code);

    for (int i = 0; i < 3; i++)
        CHECK_EQ(jh__elfg_add(&g, &f[i]), 0);
    sync_file(&g, fd);
    decoders(path, 3);

    /* a function outside the window is refused and changes nothing */
    struct jh__func out = f[0];
    out.start = ANCHOR + 16 * PG - 8;
    CHECK_EQ(jh__elfg_add(&g, &out), -EINVAL);
    struct jh__func badcfi = f[1];
    static const uint8_t junk[] = { 0x3f };
    badcfi.cfi = junk;
    badcfi.cfi_len = 1;
    CHECK_EQ(jh__elfg_add(&g, &badcfi), -EINVAL);

    /* hundreds more: every chunk outgrows its page and moves */
    uint64_t first_symtab = g.chunk[0].off;
    int reused = 0;
    for (int i = 3; i < 1000; i++) {
        if (f[i].start + f[i].size > g.s.hi)
            CHECK_EQ(jh__elfg_set_text(&g, g.s.lo, g.s.hi + 16 * PG), 0);
        uint64_t end = g.end, was[JH__ELFG_NGROW];
        for (int k = 0; k < JH__ELFG_NGROW; k++)
            was[k] = g.chunk[k].off;
        CHECK_EQ(jh__elfg_add(&g, &f[i]), 0);
        for (int k = 0; k < JH__ELFG_NGROW; k++)    /* moved, but not to the file's end */
            reused += g.chunk[k].off != was[k] && g.chunk[k].off < end;
        if (i % 100 == 0 || i % 7 == 0)
            sync_file(&g, fd);             /* some appends written in between */
    }
    sync_file(&g, fd);
    CHECK(g.chunk[0].off != first_symtab);
    /* sections moved into chunks others left (their pages allocated and mapped already) */
    printf("%d moves into a spare chunk, %llu bytes spare, file end %#llx\n", reused,
           (unsigned long long)g.spare.bytes, (unsigned long long)g.end);
    CHECK(reused >= 3);
    decoders(path, 1000);
    static uint64_t pcs[1000], sizes[1000];
    for (int i = 0; i < 1000; i++) {
        pcs[i] = f[i].start;
        sizes[i] = f[i].size;
    }
    eh_table(path, pcs, sizes, 1000, g.chunk[9].off);

    /* perf's view: symbol start as a file offset = off(address), through the PT_LOAD */
    char cmd[512];
    int rc;
    snprintf(cmd, sizeof cmd, "readelf -W -l %s 2>&1", path);
    char *o = capture(cmd, &rc);
    char want[160];
    snprintf(want, sizeof want, "LOAD           0x%06x 0x%016llx 0x%016llx 0x%06llx 0x%06llx R E",
             PG, ANCHOR, ANCHOR, (unsigned long long)(g.s.hi - g.s.lo),
             (unsigned long long)(g.s.hi - g.s.lo));
    expect(o, want);
    expect(o, " RW  ");
    /* the build-id note in the first page, in memory where the arena maps that page */
    snprintf(want, sizeof want, "NOTE           0x000200 0x%016llx", (unsigned long long)(EH_ADDR + 0x200));
    expect(o, want);
    free(o);
    snprintf(cmd, sizeof cmd, "readelf -n %s 2>&1", path);
    o = capture(cmd, &rc);
    expect(o, "Build ID: ");
    free(o);

    /* while a change is written the note names no build-id (issue 29: an id never stands
     * for other contents); the next sync writes it again, the same id for the same content */
    struct jh__elfg_span nv = jh__elfg_note_void(&g);
    CHECK_EQ(pwrite(fd, nv.p, nv.len, (off_t)nv.off), (ssize_t)nv.len);
    o = capture(cmd, &rc);
    CHECK(o && !strstr(o, "Build ID: "));
    free(o);
    sync_file(&g, fd);
    o = capture(cmd, &rc);
    expect(o, "Build ID: ");
    free(o);

    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    printf("1000 functions: file %lld bytes, %lld on disk\n", (long long)st.st_size,
           (long long)st.st_blocks * 512);
    jh__elfg_free(&g);
    close(fd);

    /* sections appear as they get content: symbols only first, then a function with
     * lines but no unwind info (DWARF, no .debug_frame), then one with a frame */
    snprintf(path, sizeof path, "%s/late.elf", tmpdir);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK_EQ(jh__elfg_init(&g, &s), 0);
    struct jh__func bare = f[0], lined = f[1], framed = f[2];
    bare.nfiles = bare.nlines = 0;
    bare.unwind = lined.unwind = JH_UNWIND_NONE;
    CHECK_EQ(jh__elfg_add(&g, &bare), 0);
    sync_file(&g, fd);
    snprintf(cmd, sizeof cmd, "readelf -W -S %s 2>&1", path);
    o = capture(cmd, &rc);
    CHECK(o && !strstr(o, ".debug_") && !strstr(o, "Warning"));
    free(o);
    CHECK_EQ(jh__elfg_add(&g, &lined), 0);
    sync_file(&g, fd);
    o = capture(cmd, &rc);
    expect(o, ".debug_info");
    expect(o, ".debug_line");
    CHECK(o && !strstr(o, ".debug_frame"));
    free(o);
    CHECK_EQ(jh__elfg_add(&g, &framed), 0);
    sync_file(&g, fd);
    decoders(path, 3);
    jh__elfg_free(&g);
    close(fd);

    /* .eh_frame_hdr stays sorted whatever the order functions come in, written through
     * the spans (a sync after each, after some, at the end); code added again at a start
     * already described replaces that entry; functions without unwind info get none */
    snprintf(path, sizeof path, "%s/shuffled.elf", tmpdir);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK_EQ(jh__elfg_init(&g, &s), 0);
    CHECK_EQ(pwrite(fd, code, sizeof code, PG), (ssize_t)sizeof code);
    int order[200], nin = 0;
    for (int i = 0; i < 200; i++)
        order[i] = (i * 73 + 11) % 200;         /* 73 is prime to 200: a permutation */
    for (int i = 0; i < 200; i++) {
        struct jh__func h = f[order[i]];
        h.unwind = order[i] % 7 == 3 ? JH_UNWIND_NONE : h.unwind;
        CHECK_EQ(jh__elfg_add(&g, &h), 0);
        if (i < 20 || i % 37 == 0) {
            sync_file(&g, fd);
            same_as_built_whole(&g, fd);
        }
    }
    struct jh__func again = f[5];
    again.size = 24;
    CHECK_EQ(jh__elfg_add(&g, &again), 0);
    sync_file(&g, fd);
    same_as_built_whole(&g, fd);
    for (int i = 0; i < 200; i++) {
        if (i % 7 == 3)
            continue;
        pcs[nin] = f[i].start;
        sizes[nin++] = i == 5 ? 24 : f[i].size;
    }
    eh_table(path, pcs, sizes, nin, g.chunk[9].off);
    /* the text PT_LOAD from the lowest page the caller maps (jh__elfg_set_load): the
     * table's entries and the window's rule stay as they were */
    jh__elfg_set_load(&g, ANCHOR + 2 * PG);
    jh__elfg_set_load(&g, ANCHOR + 2 * PG + 1);    /* not a page: ignored */
    sync_file(&g, fd);
    eh_table(path, pcs, sizes, nin, g.chunk[9].off);
    {
        char lcmd[512], lwant[160];
        int lrc;
        snprintf(lcmd, sizeof lcmd, "readelf -W -l %s 2>&1", path);
        char *lo = capture(lcmd, &lrc);
        snprintf(lwant, sizeof lwant, "LOAD           0x%06x 0x%016llx 0x%016llx 0x%06llx",
                 3 * PG, ANCHOR + 2 * PG, ANCHOR + 2 * PG,
                 (unsigned long long)(g.s.hi - ANCHOR - 2 * PG));
        expect(lo, lwant);
        free(lo);
    }
    jh__elfg_free(&g);
    close(fd);

    /* the table's index keeps room on both sides (elf_grow.c, eh_reserve): functions
     * added top-down (LuaJIT: each trace below the others), then bottom-up above them,
     * then into the middle, each past the room it had, stay sorted */
    for (int dir = 0; dir < 2; dir++) {
        snprintf(path, sizeof path, "%s/%s.elf", tmpdir, dir ? "up" : "down");
        fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
        CHECK_EQ(jh__elfg_init(&g, &s), 0);
        CHECK_EQ(pwrite(fd, code, sizeof code, PG), (ssize_t)sizeof code);
        static bool added[750];
        memset(added, 0, sizeof added);
        int seq[600], ns = 0;
        for (int i = 0; i < 300; i++)            /* 300..599 down from the top, or up */
            seq[ns++] = dir ? 300 + i : 599 - i;
        for (int i = 0; i < 150; i++)            /* then past them: 600.. above, ..149 below */
            seq[ns++] = dir ? 149 - i : 600 + i;
        for (int i = 150; i < 300; i += 3)       /* and some in between */
            seq[ns++] = i;
        for (int i = 0; i < ns; i++) {
            CHECK_EQ(jh__elfg_add(&g, &f[seq[i]]), 0);
            added[seq[i]] = true;
        }
        sync_file(&g, fd);
        same_as_built_whole(&g, fd);
        nin = 0;
        for (int i = 0; i < 750; i++) {
            if (added[i]) {
                pcs[nin] = f[i].start;
                sizes[nin++] = f[i].size;
            }
        }
        eh_table(path, pcs, sizes, nin, g.chunk[9].off);
        jh__elfg_free(&g);
        close(fd);
    }

    /* without .eh_frame (spec.no_eh_frame): .debug_frame only, no PT_GNU_EH_FRAME */
    snprintf(path, sizeof path, "%s/no_eh.elf", tmpdir);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    struct jh__elfg_spec noeh = s;
    noeh.no_eh_frame = true;
    CHECK_EQ(jh__elfg_init(&g, &noeh), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(jh__elfg_add(&g, &f[i]), 0);
    sync_file(&g, fd);
    decoders(path, 3);
    snprintf(cmd, sizeof cmd, "readelf -W -l -S %s 2>&1", path);
    o = capture(cmd, &rc);
    CHECK(o && !strstr(o, "eh_frame") && !strstr(o, "EH_FRAME"));
    expect(o, ".debug_frame");
    free(o);
    jh__elfg_free(&g);
    close(fd);

    /* an image with no rw segment and no function at all is still a valid ELF file */
    snprintf(path, sizeof path, "%s/empty.elf", tmpdir);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    s.rw_addr = 0;
    CHECK_EQ(jh__elfg_init(&g, &s), 0);
    sync_file(&g, fd);
    snprintf(cmd, sizeof cmd, "readelf -W -a %s 2>&1", path);
    o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    CHECK(o && !strstr(o, "Warning") && !strstr(o, "Error"));
    expect(o, "DYN");
    free(o);
    jh__elfg_free(&g);
    close(fd);

    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    return check_done();
}
