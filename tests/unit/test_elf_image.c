/*
 * test_elf_image.c — the ELF image builder and the DWARF encoders, checked by the real
 * decoders: readelf (binutils) and llvm-dwarfdump-14 --verify, not by bytes we wrote.
 * Several functions, several files per unit, columns, a function without lines and one
 * without any file, in both .text modes (NOBITS for gdb, COPY for elfmap).
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "fmt/arch.h"
#include "fmt/elf_image.h"
#include "fmt/func.h"
#include "base/buf.h"

static char tmpdir[] = "/tmp/jh-test-elf.XXXXXX";

static const char *fib_files[] = { "fib.mini", "prelude.mini" };
static const char *main_files[] = { "main.mini" };
static struct jh_line fib_lines[] = {
    { .offset = 0, .line = 3, .column = 1, .file = 0 },
    { .offset = 4, .line = 4, .column = 9, .file = 0 },
    { .offset = 14, .line = 40, .column = 2, .file = 1 },   /* inlined from another file */
    { .offset = 20, .line = 5, .column = 0, .file = 0 },
    { .offset = 300, .line = 1000, .column = 7, .file = 0 }, /* long jumps: no special op */
};
static struct jh_line main_lines[] = {
    { .offset = 0, .line = 10, .column = 0, .file = 0 },
    { .offset = 8, .line = 11, .column = 5, .file = 0 },
};

static struct jh__func fns[4];

static void setup(uintptr_t base)
{
    memset(fns, 0, sizeof fns);
    /* fib: fib.mini, frame pointer unwind */
    fns[0] = (struct jh__func){ .start = base, .size = 320, .name = "fib",
        .files = fib_files, .nfiles = 2, .lines = fib_lines, .nlines = 5,
        .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    /* main: main.mini, adjacent to fib */
    fns[1] = (struct jh__func){ .start = base + 320, .size = 32, .name = "main",
        .files = main_files, .nfiles = 1, .lines = main_lines, .nlines = 2,
        .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    /* helper: in fib.mini's unit but no rows, after a gap */
    fns[2] = (struct jh__func){ .start = base + 0x400, .size = 16,
        .name = "helper with spaces", .files = fib_files, .nfiles = 1 };
    /* stub: no file at all: symbol only */
    fns[3] = (struct jh__func){ .start = base + 0x500, .size = 8, .name = "stub" };
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_EQ(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void expect(const char *out, const char *what)
{
    check_count++;
    if (!out || !strstr(out, what)) {
        check_failures++;
        fprintf(stderr, "expected \"%s\" in output:\n%s\n", what, out ? out : "(none)");
    }
}

static void reject(const char *out, const char *what)
{
    check_count++;
    if (out && strstr(out, what)) {
        check_failures++;
        fprintf(stderr, "did not expect \"%s\" in output:\n%s\n", what, out);
    }
}

/* The decoders' verdict on one image file, common to both modes. */
static void check_decoders(const char *path, uintptr_t base, int stub_sec)
{
    char cmd[512], want[256];
    int rc;
    char *o;

    snprintf(cmd, sizeof cmd, "readelf -a -w %s", path);
    o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    reject(o, "Warning");
    reject(o, "Error");
    expect(o, "FUNC    GLOBAL DEFAULT    1 fib");
    expect(o, "FUNC    GLOBAL DEFAULT    1 main");
    expect(o, "helper with spaces");
    snprintf(want, sizeof want, "FUNC    GLOBAL DEFAULT    %d stub", stub_sec);
    expect(o, want);
    expect(o, "DW_AT_name        : (indirect string, offset: 0x");
    expect(o, "fib.mini");
    expect(o, "prelude.mini");
    expect(o, "main.mini");
    free(o);

    snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --verify %s", path);
    o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    expect(o, "No errors.");
    free(o);

    /* Address -> function and file:line:column, through LLVM's own lookup. */
    static const struct { uint64_t off; const char *want[2]; } lookups[] = {
        { 5, { "DW_AT_name\t(\"fib\")", "Line info: file 'fib.mini', line 4, column 9" } },
        { 15, { "Line info: file 'prelude.mini', line 40, column 2" } },
        { 310, { "line 1000, column 7" } },
        { 330, { "DW_AT_name\t(\"main\")", "Line info: file 'main.mini', line 11, column 5" } },
        { 0x404, { "DW_AT_name\t(\"helper with spaces\")" } },
    };
    for (size_t i = 0; i < sizeof lookups / sizeof lookups[0]; i++) {
        snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --lookup=0x%lx %s",
                 (unsigned long)(base + lookups[i].off), path);
        o = capture(cmd, &rc);
        for (int k = 0; k < 2 && lookups[i].want[k]; k++)
            expect(o, lookups[i].want[k]);
        free(o);
    }

    /* Unwind info: one FDE per function with a frame-pointer description. */
    snprintf(cmd, sizeof cmd, "readelf --debug-dump=frames-interp %s", path);
    o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    snprintf(want, sizeof want, "pc=%016lx..%016lx", (unsigned long)base, (unsigned long)(base + 320));
    expect(o, want);
    snprintf(want, sizeof want, "pc=%016lx..%016lx", (unsigned long)(base + 320), (unsigned long)(base + 352));
    expect(o, want);
    snprintf(want, sizeof want, "%s+%d", JH__ARCH_HOST->reg_names[JH__ARCH_HOST->fp],
             JH__ARCH_HOST->frame_cfa);
    expect(o, want);
    free(o);
}

static void test_nobits(void)
{
    uintptr_t base = 0x7f1234560000;
    setup(base);
    const struct jh__func *set[4] = { &fns[0], &fns[1], &fns[2], &fns[3] };
    struct jh__buf b = { 0 };
    struct jh__elf_layout lay;
    jh__buf_u8(&b, 0x55);   /* appending after existing bytes must work */
    struct jh__elf_spec s = { .fns = set, .nfns = 4, .comp_dir = "/src/proj" };
    CHECK_EQ(jh__elf_image(&b, &s, &lay), 0);
    CHECK_EQ(b.len, 8 + lay.size);
    CHECK_EQ(lay.nfde, 2);
    CHECK(lay.eh_frame_addr == (uintptr_t)(b.p + 8 + lay.eh_frame_off));

    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(b.p + 8);
    CHECK(!memcmp(eh->e_ident, ELFMAG, SELFMAG));
    CHECK_EQ(eh->e_type, ET_DYN);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(b.p + 8 + eh->e_shoff);
    /* one exact .text per run of adjacent functions: fib+main, helper, stub */
    CHECK_EQ(lay.ntext, 3);
    CHECK_EQ(eh->e_phnum, 4);     /* and one for .eh_frame */
    CHECK_EQ(sh[1].sh_type, SHT_NOBITS);
    CHECK_EQ(sh[1].sh_addr, base);
    CHECK_EQ(sh[1].sh_size, 352);
    CHECK_EQ(sh[2].sh_addr, base + 0x400);
    CHECK_EQ(sh[2].sh_size, 16);
    CHECK_EQ(sh[3].sh_type, SHT_NOBITS);
    CHECK_EQ(sh[3].sh_addr, base + 0x500);
    CHECK_EQ(sh[3].sh_size, 8);
    /* every SHF_ALLOC section at a real, non-zero address */
    for (int i = 1; i < eh->e_shnum; i++)
        if (sh[i].sh_flags & SHF_ALLOC)
            CHECK(sh[i].sh_addr != 0);

    char path[256];
    snprintf(path, sizeof path, "%s/nobits.elf", tmpdir);
    write_file(path, b.p + 8, lay.size);
    check_decoders(path, base, 3);

    int rc;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "readelf -wi %s", path);
    char *o = capture(cmd, &rc);
    expect(o, "/src/proj");
    expect(o, "DW_AT_decl_line   : 3");
    free(o);
    jh__buf_free(&b);

    /* without program headers (what the gdb channel registers): same sections */
    s.flags = JH__ELF_NO_PHDRS;
    CHECK_EQ(jh__elf_image(&b, &s, &lay), 0);
    eh = (const Elf64_Ehdr *)b.p;
    CHECK_EQ(eh->e_phnum, 0);
    CHECK_EQ(eh->e_phoff, 0);
    CHECK_EQ(lay.ntext, 3);
    snprintf(path, sizeof path, "%s/nophdrs.elf", tmpdir);
    write_file(path, b.p, lay.size);
    check_decoders(path, base, 3);
    jh__buf_free(&b);
}

static void test_copy(void)
{
    const size_t page = 4096;
    uintptr_t base = 0x7f0000200000, rw = 0x7f0000300000;
    static uint8_t code[2 * 4096];
    memset(code, 0xcc, sizeof code);
    /* The host's frame-pointer prologue, which objdump must find and name below */
#if defined(__aarch64__)
    /* stp x29, x30, [sp, #-16]!; mov x29, sp; ldp x29, x30, [sp], #16; ret */
    static const uint8_t prologue[] = { 0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91,
                                        0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6 };
    static const char first_insn[] = "stp\tx29, x30, [sp, #-16]!";
#else
    /* push rbp; mov rbp,rsp; pop rbp; ret */
    static const uint8_t prologue[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
    static const char first_insn[] = "push   %rbp";
#endif
    memcpy(code, prologue, sizeof prologue);
    memcpy(code + 320, prologue, sizeof prologue);
    setup(base);
    const struct jh__func *set[4] = { &fns[0], &fns[1], &fns[2], &fns[3] };
    struct jh__buf b = { 0 };
    struct jh__elf_layout lay;
    struct jh__elf_spec s = { .fns = set, .nfns = 4, .text = JH__ELF_TEXT_COPY,
        .text_addr = base, .text_size = sizeof code, .text_bytes = code, .page_size = page,
        .rw_addr = rw, .e_type = ET_EXEC };
    CHECK_EQ(jh__elf_image(&b, &s, &lay), 0);
    CHECK_EQ(lay.text_off % page, base % page);
    CHECK(lay.text_off > 0);
    CHECK(!memcmp(b.p + lay.text_off, code, sizeof code));
    CHECK_EQ(lay.rw_off % page, 0);
    CHECK(lay.rw_size > 0);
    CHECK_EQ(lay.eh_frame_addr, rw);
    CHECK_EQ(lay.eh_frame_off, lay.rw_off);

    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b.p;
    CHECK_EQ(eh->e_type, ET_EXEC);
    CHECK_EQ(eh->e_phnum, 2);
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(b.p + eh->e_phoff);
    CHECK_EQ(ph[0].p_type, PT_LOAD);
    CHECK_EQ(ph[0].p_vaddr, base);
    CHECK_EQ(ph[0].p_offset, lay.text_off);
    CHECK_EQ(ph[0].p_filesz, sizeof code);
    CHECK_EQ(ph[0].p_flags, PF_R | PF_X);
    CHECK_EQ(ph[1].p_vaddr, rw);
    CHECK_EQ(ph[1].p_offset, lay.rw_off);
    CHECK_EQ(ph[1].p_flags, PF_R | PF_W);

    char path[256], cmd[512];
    snprintf(path, sizeof path, "%s/copy.elf", tmpdir);
    write_file(path, b.p, lay.size);
    check_decoders(path, base, 1);

    /* objdump reads the copied bytes and names them */
    int rc;
    /* JH_OBJDUMP: the host's objdump knows only its own machine, under qemu-user too */
    const char *objdump = getenv("JH_OBJDUMP") ? getenv("JH_OBJDUMP") : "objdump";
    snprintf(cmd, sizeof cmd, "%s -d %s", objdump, path);
    char *o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    expect(o, "<fib>:");
    expect(o, first_insn);
    expect(o, "<main>:");
    free(o);
    jh__buf_free(&b);

    /* without an rw segment: no .eh_frame, a single PT_LOAD */
    s.rw_addr = 0;
    CHECK_EQ(jh__elf_image(&b, &s, &lay), 0);
    CHECK_EQ(((const Elf64_Ehdr *)b.p)->e_phnum, 1);
    CHECK_EQ(lay.eh_frame_size, 0);
    jh__buf_free(&b);
}

static void test_errors(void)
{
    uintptr_t base = 0x7f1234560000;
    setup(base);
    struct jh__buf b = { 0 };
    jh__buf_u32(&b, 7);
    const struct jh__func *unsorted[2] = { &fns[1], &fns[0] };
    struct jh__elf_spec s = { .fns = unsorted, .nfns = 2 };
    CHECK_EQ(jh__elf_image(&b, &s, NULL), -EINVAL);
    CHECK_EQ(b.len, 4);
    const struct jh__func *one[1] = { &fns[3] };
    s = (struct jh__elf_spec){ .fns = one, .nfns = 1, .text_addr = base, .text_size = 0x100 };
    CHECK_EQ(jh__elf_image(&b, &s, NULL), -EINVAL);     /* function outside .text */
    s = (struct jh__elf_spec){ .nfns = 0 };
    CHECK_EQ(jh__elf_image(&b, &s, NULL), -EINVAL);     /* empty NOBITS without a range */
    s = (struct jh__elf_spec){ .fns = one, .nfns = 1, .text = JH__ELF_TEXT_COPY,
        .text_addr = base + 1, .text_size = 4096, .text_bytes = &b };
    CHECK_EQ(jh__elf_image(&b, &s, NULL), -EINVAL);     /* COPY range not page aligned */
    CHECK_EQ(b.len, 4);
    /* a bad raw CFI program is refused rather than emitted */
    static const uint8_t bad_cfi[] = { 0x0c };          /* DW_CFA_def_cfa, truncated */
    struct jh__func e = fns[3];
    e.unwind = JH_UNWIND_CFI;
    e.cfi = (uint8_t *)bad_cfi;
    e.cfi_len = sizeof bad_cfi;
    const struct jh__func *bad[1] = { &e };
    s = (struct jh__elf_spec){ .fns = bad, .nfns = 1 };
    CHECK_EQ(jh__elf_image(&b, &s, NULL), -EINVAL);
    CHECK_EQ(b.len, 4);
    jh__buf_free(&b);
}

/* Many functions, many files: the sizes add up and LLVM still verifies the result. */
static void test_many(void)
{
    enum { N = 3000, NF = 7 };
    static struct jh__func many[N];
    static struct jh_line rows[N][3];
    static const char *files[NF] = { "a.js", "b.js", "c.js", "d.js", "e.js", "f.js", "g.js" };
    static char names[N][16];
    static const struct jh__func *set[N];
    uintptr_t base = 0x7f5500000000;
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "f%d", i);
        for (int r = 0; r < 3; r++)
            rows[i][r] = (struct jh_line){ .offset = (uint32_t)r * 8, .line = (uint32_t)(i + r + 1),
                                           .column = (uint32_t)r, .file = (uint32_t)((i + r) % 2) };
        many[i] = (struct jh__func){ .start = base + (uintptr_t)i * 64,
            .size = 48, .name = names[i], .files = files + (i % (NF - 1)), .nfiles = 2,
            .lines = rows[i], .nlines = 3, .unwind = JH_UNWIND_FRAME_POINTER,
            .fp_push_end = 1, .fp_set_end = 4 };
        set[i] = &many[i];
    }
    struct jh__buf b = { 0 };
    struct jh__elf_layout lay;
    struct jh__elf_spec s = { .fns = set, .nfns = N };
    CHECK_EQ(jh__elf_image(&b, &s, &lay), 0);
    CHECK_EQ(lay.nfde, N);
    char path[256], cmd[512];
    snprintf(path, sizeof path, "%s/many.elf", tmpdir);
    write_file(path, b.p, lay.size);
    int rc;
    snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --verify %s", path);
    char *o = capture(cmd, &rc);
    CHECK_EQ(rc, 0);
    expect(o, "No errors.");
    free(o);
    snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --lookup=0x%lx %s",
             (unsigned long)(base + 2999 * 64 + 9), path);
    o = capture(cmd, &rc);
    expect(o, "DW_AT_name\t(\"f2999\")");
    expect(o, "line 3001, column 1");
    free(o);
    jh__buf_free(&b);
}

/* A scratch kept across images (the gdb channel's) changes no byte: each image is the one
 * a fresh builder makes, whatever was built before with other functions, another producer
 * or comp_dir, or none (the kept abbreviations and strings are checked, not assumed). */
static void test_scratch(void)
{
    uintptr_t base = 0x7f1234560000;
    setup(base);
    const struct jh__func *set[4] = { &fns[0], &fns[1], &fns[2], &fns[3] };
    struct jh__elf_scratch sc = { 0 };
    const struct { size_t n; const char *producer, *comp_dir; } seq[] = {
        { 4, NULL, "/src/proj" }, { 1, NULL, NULL }, { 2, "other", NULL }, { 4, NULL, NULL },
        { 3, NULL, "/src/proj" }, { 4, NULL, "/src/proj" }, { 1, "x", "/y" }, { 1, NULL, NULL } };
    for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++) {
        struct jh__buf fresh = { 0 }, reused = { 0 };
        struct jh__elf_spec s = { .fns = set, .nfns = seq[k].n, .producer = seq[k].producer,
                                  .comp_dir = seq[k].comp_dir, .flags = JH__ELF_NO_EH_FRAME };
        CHECK_EQ(jh__elf_image(&fresh, &s, NULL), 0);
        s.scratch = &sc;
        CHECK_EQ(jh__elf_image(&reused, &s, NULL), 0);
        CHECK(fresh.len == reused.len && !memcmp(fresh.p, reused.p, fresh.len));
        jh__buf_free(&fresh);
        jh__buf_free(&reused);
    }
    jh__elf_scratch_free(&sc);
}

int main(void)
{
    int rc;
    char *o = capture("readelf --version && llvm-dwarfdump-14 --version", &rc);
    free(o);
    if (rc != 0)
        SKIP("readelf or llvm-dwarfdump-14 not installed (binutils, llvm-14)");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_nobits();
    test_copy();
    test_errors();
    test_many();
    test_scratch();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (getenv("JH_KEEP"))      /* keep the images to look at them by hand */
        printf("images kept in %s\n", tmpdir);
    else if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_done();
}
