/*
 * test_elfmap_write.c — how an elfmap image's metadata reaches its file as it grows
 * (src/channels/elfmap_write.c), function after function in one 64 KiB area (LuaJIT's
 * pattern), for both places the writable mapping of the metadata can lie: in the window's
 * arena below the code, and above the window (code where no arena fits: LuaJIT's).
 *   - a growth maps only the new chunks: every page of the metadata mapped before it is
 *     still mapped after it (/proc/self/pagemap: present), so its next store is no page
 *     fault (mapping all of it again cost a LuaJIT trace ~0.75 faults);
 *   - above the window, the whole file is mapped there and a function's code and its
 *     patches are stored through that mapping (no pwrite a function): the file holds the
 *     live bytes after each add and each patch (what perf annotate shows);
 *   - the metadata is written with zeros before the mapping's first stores: its growths,
 *     and at its first mapping the tails of the chunks synced before (SEEK_DATA: no page
 *     of the file from its metadata on is a hole);
 *   - chunks that sections moved out of are the room later sections move into (a section
 *     header names an offset inside one), and are never punched out below EM_HOLES_BATCH
 *     spare bytes: they still hold data after jh_close (punching each retired window's
 *     cost 22 fallocates a LuaJIT run, ~2.6 ms each on a discard-mounted ext4).
 * The file itself is the witness: its section headers (read as a tool reads them) say
 * where each section's chunk is; SEEK_DATA says what holds blocks.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"

#define AREA (64 * 1024)
#define NFN 250
#define MAXSEC 64
#define MAXFREED 512
/* Where the above-the-window case puts its code: low in the application's memory as each
 * build sees it (TSan's application memory ends at 0x8000000000; ASan's shadow ends at
 * 0x10007fff7fff, and its memory above that is the application's). */
#if defined(__SANITIZE_THREAD__)
#define LOW_CODE 0x4000000000ull
#define LOW_CODE_S "0x4000000000"
#else
#define LOW_CODE 0x110000000000ull
#define LOW_CODE_S "0x110000000000"
#endif

static char dir[64];
static size_t pg;
static const char *const files[] = { "write.lua" };

/* The bytes of a frame-pointer function of `size` bytes (the test never runs them: the
 * image's unwind tables describe them). x86-64: push rbp; mov rbp, rsp; nop...; pop rbp;
 * ret. arm64: stp x29, x30, [sp, #-16]!; mov x29, sp; nop...; ldp x29, x30, [sp], #16; ret. */
#if defined(__aarch64__)
#define FP_PUSH_END 4
#define FP_SET_END 8
static void fp_function(uint8_t *p, size_t size)
{
    static const uint32_t head[] = { 0xa9bf7bfd, 0x910003fd }, tail[] = { 0xa8c17bfd, 0xd65f03c0 };
    for (size_t o = 0; o + 4 <= size; o += 4)
        memcpy(p + o, &(uint32_t){ 0xd503201f }, 4);
    memcpy(p, head, sizeof head);
    memcpy(p + size - sizeof tail, tail, sizeof tail);
}
#else
#define FP_PUSH_END 1
#define FP_SET_END 4
static void fp_function(uint8_t *p, size_t size)
{
    memset(p, 0x90, size);
    memcpy(p, "\x55\x48\x89\xe5", 4);
    p[size - 2] = 0x5d;
    p[size - 1] = 0xc3;
}
#endif

/* The i-th function of write.lua, built just below *top in area (96 to 288 bytes, a
 * frame-pointer frame (never run) with its FDE, so that the image has unwind tables, and
 * lines 10+i to 12+i) and announced as name: its address and *size, or NULL when the area
 * has no room left. */
static uint8_t *add_lua_fn(jh_ctx *jh, uint8_t *area, size_t *top, int i, const char *name,
                           size_t *size, uint64_t *id)
{
    *size = 96 + (size_t)(i % 7) * 32;
    if (*top < *size + 64)
        return NULL;
    *top -= *size;
    uint8_t *p = area + *top;
    mprotect(area, AREA, PROT_READ | PROT_WRITE);
    fp_function(p, *size);
    mprotect(area, AREA, PROT_READ | PROT_EXEC);
    struct jh_line lines[3] = { { .offset = 0, .line = (uint32_t)(10 + i) },
                                { .offset = 16, .line = (uint32_t)(11 + i) },
                                { .offset = 32, .line = (uint32_t)(12 + i) } };
    struct jh_code c = { .sz = sizeof c, .name = name, .start = p, .size = *size,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 3,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = FP_PUSH_END,
                         .fp_set_end = FP_SET_END };
    CHECK_EQ(jh_code_add(jh, &c, id), 0);
    return p;
}

/* The file mapped at address p (the image that names the code there): 1 and its path. */
static int image_path(const void *p, char *out, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (!found && f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char *slash = strchr(line, '/');
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= (uintptr_t)p && (uintptr_t)p < b &&
            slash && strstr(slash, dir) == slash) {
            snprintf(out, len, "%s", slash);
            out[strcspn(out, "\n")] = 0;
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* The largest shared, writable mapping of path from offset 0 (the whole file, above the
 * window) or from another offset (the metadata): 1 and [*s, *e). (The metadata's part of a
 * whole mapping is a mapping of its own: it is advised MADV_RANDOM.) */
static int rw_shared(const char *path, bool from0, uintptr_t *s, uintptr_t *e)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b, off;
        char perms[5];
        if (!strstr(line, path) || sscanf(line, "%lx-%lx %4s %lx", &a, &b, perms, &off) != 4 ||
            strcmp(perms, "rw-s") || (off == 0) != from0)
            continue;
        if (!found || b - a > *e - *s) {
            *s = a;
            *e = b;
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* Is the page at a mapped (its page table entry present)? */
static int present(int pm, uintptr_t a)
{
    uint64_t ent = 0;
    if (pread(pm, &ent, sizeof ent, (off_t)(a / pg * 8)) != (ssize_t)sizeof ent)
        return -1;
    return (int)(ent >> 63);
}

/* The section headers of path's image as the file holds them now: their count. */
static int sections(const char *path, Elf64_Shdr *sh)
{
    int fd = open(path, O_RDONLY);
    Elf64_Ehdr eh;
    int n = -1;
    if (fd >= 0 && pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_shnum <= MAXSEC &&
        pread(fd, sh, eh.e_shnum * sizeof *sh, (off_t)eh.e_shoff) ==
            (ssize_t)(eh.e_shnum * sizeof *sh))
        n = eh.e_shnum;
    if (fd >= 0)
        close(fd);
    return n;
}

/* Does [off, off+len) of path hold data (blocks, or pages in the cache)? */
static int holds_data(const char *path, uint64_t off, uint64_t len)
{
    int fd = open(path, O_RDONLY);
    off_t d = fd >= 0 ? lseek(fd, (off_t)off, SEEK_DATA) : -1;
    if (fd >= 0)
        close(fd);
    return d >= 0 && (uint64_t)d < off + len;
}

struct freed { uint64_t off, len; };

/*
 * When the metadata is first mapped shared, no page of it is a hole: the tails of the
 * chunks its sections were synced into (with pwrite, each short of its chunk's end) are
 * written with zeros, as the file past them is. Neither left a hole (nothing there, a
 * store's SIGBUS on a full disk) nor fallocated (an unwritten extent, a hole to SEEK_DATA
 * while no page of it is cached: each first store there a ~3.3 us fault, ext4 converting
 * the page under a journal handle; and an fallocate of ~25 us).
 */
static int first_mapping(const char *path)
{
    Elf64_Shdr sh[MAXSEC];
    int n = sections(path, sh), pages = 0, holes = 0;
    uint64_t meta = 0;
    struct stat st;
    for (int k = 0; k < n; k++)
        if (sh[k].sh_type != SHT_NOBITS && !(sh[k].sh_flags & SHF_EXECINSTR) &&
            sh[k].sh_size && sh[k].sh_offset >= (uint64_t)pg &&
            (!meta || sh[k].sh_offset < meta))
            meta = sh[k].sh_offset;
    CHECK_EQ(stat(path, &st), 0);
    for (uint64_t off = meta / pg * pg; meta && off < (uint64_t)st.st_size; off += pg)
        pages++, holes += !holds_data(path, off, pg);
    CHECK(pages >= 2);
    return holes;
}

/*
 * Each add a new file with every function so far (JITHERALD_ELFMAP_FREEZE: a change is a
 * new generation), synced with pwrite and then mapped: its chunks' tails (page-sized once
 * there are enough functions) are what first_mapping looks at.
 */
static void fresh_files(void)
{
    setenv("JITHERALD_ELFMAP_FREEZE", "1", 1);
    unsetenv("JITHERALD");
    unsetenv("JITHERALD_DIR");
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .engine = "write" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    uint8_t *area = mmap(NULL, AREA, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(area != MAP_FAILED);
    static char names[120][48];
    int nfiles = 0, holes = 0;
    size_t top = AREA - 64;
    for (int i = 0; i < 120; i++) {
        snprintf(names[i], sizeof names[i], "fresh_%d write.lua:%d", i, 10 + i);
        size_t size;
        uint64_t id;
        uint8_t *p = add_lua_fn(jh, area, &top, i, names[i], &size, &id);
        CHECK(p);
        if (!p)
            break;
        char path[512];
        uintptr_t s, e;
        if (i % 10 == 9 && image_path(p, path, sizeof path) && rw_shared(path, false, &s, &e)) {
            nfiles++;
            holes += first_mapping(path);
        }
    }
    printf("fresh files: %d first mapped, %d holes in their metadata\n", nfiles, holes);
    CHECK(nfiles >= 10);
    CHECK_EQ(holes, 0);
    jh_close(jh);
    munmap(area, AREA);
    unsetenv("JITHERALD_ELFMAP_FREEZE");
}

/*
 * NFN functions in one area, top-down, each announced with lines (its DWARF grows the
 * image). Returns the chunks sections moved out of, as seen between the adds, and checks
 * that no growth of the metadata mapping unmapped a page that was mapped.
 */
static int run(uint8_t *area, bool above, char *path, size_t plen, struct freed *fr,
               int *growths, int *reused)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "write" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    int pm = open("/proc/self/pagemap", O_RDONLY);
    CHECK(pm >= 0);
    Elf64_Shdr sh[MAXSEC], was[MAXSEC];
    int nwas = 0, nfr = 0, lost = 0;
    uintptr_t ms = 0, me = 0;
    uint8_t *was_present = calloc(1 << 16, 1);
    size_t top = AREA - 64;
    static struct { uint8_t *p; size_t size; char name[48]; } fn[NFN];
    int nfn = 0, patched = 0, bad_bytes = 0;
    *growths = *reused = 0;
    path[0] = 0;
    for (int i = 0; i < NFN; i++) {
        /* (unwind tables in the image: an arena's metadata is mapped once it has them) */
        snprintf(fn[nfn].name, sizeof fn[nfn].name, "fn_%d write.lua:%d", i, 10 + i);
        size_t size;
        uint64_t id;
        uint8_t *p = add_lua_fn(jh, area, &top, i, fn[nfn].name, &size, &id);
        if (!p)
            break;
        fn[nfn].p = p;
        fn[nfn++].size = size;
        if (!path[0] && !image_path(p, path, plen))
            continue;
        /* a side trace's link: a byte of an earlier function changed, then announced */
        if (i % 3 == 2) {
            uint8_t *q = fn[(i * 7) % (nfn - 1)].p;
            mprotect(area, AREA, PROT_READ | PROT_WRITE);
            q[8] ^= 0x01;                       /* (a nop becomes another one-byte op) */
            mprotect(area, AREA, PROT_READ | PROT_EXEC);
            CHECK_EQ(jh_code_patched(jh, q, 16), 0);
            patched++;
        }
        for (int k = nfn - 1; k >= 0 && k >= nfn - 4; k--) {
            struct ew_fn w = { fn[k].p, fn[k].size, fn[k].name };
            bad_bytes += ew_check_one(&w, NULL, 0) != EW_OK;
        }
        uintptr_t s, e;
        if (rw_shared(path, false, &s, &e)) {
            if (ms && s == ms && e > me) {
                (*growths)++;
                for (uintptr_t a = ms; a < me; a += pg)
                    if (was_present[(a - ms) / pg] && present(pm, a) != 1)
                        lost++;
            }
            ms = s;
            me = e;
            for (uintptr_t a = s; a < e && (a - s) / pg < (1 << 16); a += pg)
                was_present[(a - s) / pg] = present(pm, a) == 1;
        }
        int n = sections(path, sh);
        for (int k = 0; k < n; k++)
            for (int j = 0; j < nwas; j++)
                if (was[j].sh_name == sh[k].sh_name && sh[k].sh_type != SHT_NOBITS &&
                    was[j].sh_size && sh[k].sh_offset != was[j].sh_offset && nfr < MAXFREED) {
                    fr[nfr++] = (struct freed){ was[j].sh_offset, was[j].sh_size };
                    for (int q = 0; q < nfr - 1; q++)      /* moved into a chunk left before */
                        *reused += sh[k].sh_offset >= fr[q].off &&
                                   sh[k].sh_offset < fr[q].off + fr[q].len;
                }
        if (n > 0) {
            memcpy(was, sh, (size_t)n * sizeof *sh);
            nwas = n;
        }
    }
    printf("%s: %d growths of the metadata mapping, %d pages unmapped by them, %d chunks "
           "moved out of\n", path, *growths, lost, nfr);
    CHECK_EQ(lost, 0);
    int named = 0;
    for (int k = 0; k < nfn; k++) {
        struct ew_fn w = { fn[k].p, fn[k].size, fn[k].name };
        named += ew_check_one(&w, NULL, 0) == EW_OK;
    }
    uintptr_t ws = 0, we = 0;
    size_t whole = rw_shared(path, true, &ws, &we) ? we - ws : 0;
    printf("  %d of %d functions named with their live bytes (%d patches); the file mapped "
           "whole from offset 0: %zu bytes\n", named, nfn, patched, whole);
    CHECK_EQ(named, nfn);
    CHECK_EQ(bad_bytes, 0);
    CHECK(patched >= 10);
    /* above the window the code's span is in the shared mapping (code stored there) */
    CHECK_EQ(whole > (size_t)(2 << 20), above);
    CHECK(ms != 0);
    CHECK_EQ(ms > (uintptr_t)area, above);      /* the case meant */
    /* the metadata's growths are allocated ahead and written with zeros before the
     * mapping's stores reach them: a store into a page of a fallocated (unwritten) extent
     * was a ~4 us page fault, ext4 converting it; 1 us after a write. The pages past the
     * image's last section, allocated ahead, are then data to SEEK_DATA, not the hole an
     * unwritten extent without cached pages reads as. */
    struct stat st;
    int n = sections(path, sh), tail = 0, holes = 0;
    uint64_t last = 0;
    for (int k = 0; k < n; k++)
        if (sh[k].sh_type != SHT_NOBITS && sh[k].sh_offset + sh[k].sh_size > last)
            last = sh[k].sh_offset + sh[k].sh_size;
    CHECK_EQ(stat(path, &st), 0);
    for (uint64_t off = (last + pg - 1) / pg * pg; off < (uint64_t)st.st_size; off += pg)
        tail++, holes += !holds_data(path, off, pg);
    printf("  %d pages allocated ahead, %d of them a hole\n", tail, holes);
    CHECK(tail >= 1);
    CHECK_EQ(holes, 0);
    /* chunks moved out of are spare room for the sections that move next (their pages
     * allocated and mapped already: no allocation, no first-store fault), and never punched
     * out (one fallocate each, ~2.6 ms on a discard-mounted ext4) below EM_HOLES_BATCH bytes:
     * not while the image grows, not at jh_close either */
    printf("  %d moves into a chunk left before\n", *reused);
    CHECK(*reused >= 1);
    jh_close(jh);
    int waiting = 0;
    for (int k = 0; k < nfr; k++)
        waiting += holds_data(path, fr[k].off, fr[k].len);
    printf("  %d of %d hold data after jh_close\n", waiting, nfr);
    CHECK_EQ(waiting, nfr);
    free(was_present);
    close(pm);
    return nfr;
}

/* The file's bytes past its last section: allocated ahead of the image's growth. */
static uint64_t ahead_of(const char *path)
{
    Elf64_Shdr sh[MAXSEC];
    struct stat st;
    int n = sections(path, sh);
    uint64_t last = 0;
    for (int k = 0; k < n; k++)
        if (sh[k].sh_type != SHT_NOBITS && sh[k].sh_offset + sh[k].sh_size > last)
            last = sh[k].sh_offset + sh[k].sh_size;
    return n > 0 && stat(path, &st) == 0 && (uint64_t)st.st_size > last
               ? (uint64_t)st.st_size - last : 0;
}

/*
 * A big image (6,000 functions, ~4 MiB of metadata): what the file is allocated ahead of
 * its growth is as much again as its metadata up to 1 MiB, no more. Doubling without a
 * bound left 1.4 MiB allocated and never used here (and 4.3 MiB of 11 in bench/elfmap's
 * 10,240 functions: sections move into spare chunks first, so the image's end may never
 * reach where the file doubled to).
 */
static void big(void)
{
    enum { NBIG = 6000, SIZE = 128 };
    size_t len = (size_t)NBIG * SIZE;
    uint8_t *area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(area != MAP_FAILED);
    for (int i = 0; i < NBIG; i++)
        fp_function(area + (size_t)i * SIZE, SIZE);
    CHECK_EQ(mprotect(area, len, PROT_READ | PROT_EXEC), 0);
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "write" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    for (int i = 0; i < NBIG; i++) {
        char name[48];
        snprintf(name, sizeof name, "big_%d write.lua:%d", i, i + 1);
        struct jh_line lines[2] = { { .offset = 0, .line = (uint32_t)(i + 1) },
                                    { .offset = 16, .line = (uint32_t)(i + 2) } };
        struct jh_code c = { .sz = sizeof c, .name = name, .start = area + (size_t)i * SIZE,
                             .size = SIZE, .files = files, .nfiles = 1, .lines = lines,
                             .nlines = 2, .unwind = JH_UNWIND_FRAME_POINTER,
                             .fp_push_end = FP_PUSH_END, .fp_set_end = FP_SET_END };
        CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    }
    char path[512];
    CHECK(image_path(area, path, sizeof path));
    uint64_t ahead = ahead_of(path);
    printf("%s: %d functions, %llu KiB allocated past the last section\n", path, NBIG,
           (unsigned long long)(ahead >> 10));
    CHECK(ahead <= ((uint64_t)1 << 20) + pg);
    jh_close(jh);
    munmap(area, len);
}

/*
 * One window of n functions in a fresh 64 KiB area (LuaJIT after a flush: a new area, a
 * new window), then all removed (the window retires). Returns how often a section moved
 * to another chunk while it filled, and the file's size when it was full.
 */
static int window(jh_ctx *jh, int n, const char *tag, uint64_t *size)
{
    uint8_t *area = mmap(NULL, AREA, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(area != MAP_FAILED);
    static uint64_t ids[NFN];
    static char names[NFN][48];
    Elf64_Shdr sh[MAXSEC], was[MAXSEC];
    int nwas = 0, moves = 0, nfn = 0;
    char path[512] = "";
    size_t top = AREA - 64;
    for (int i = 0; i < n && i < NFN; i++) {
        snprintf(names[i], sizeof names[i], "%s_%d write.lua:%d", tag, i, 10 + i);
        size_t fsize;
        uint8_t *p = add_lua_fn(jh, area, &top, i, names[i], &fsize, &ids[nfn]);
        if (!p)
            break;
        nfn++;
        if (!path[0] && !image_path(p, path, sizeof path))
            continue;
        int ns = sections(path, sh);
        for (int k = 0; k < ns; k++)
            for (int j = 0; j < nwas; j++)
                moves += was[j].sh_name == sh[k].sh_name && sh[k].sh_type != SHT_NOBITS &&
                         was[j].sh_size && sh[k].sh_offset != was[j].sh_offset;
        if (ns > 0) {
            memcpy(was, sh, (size_t)ns * sizeof *sh);
            nwas = ns;
        }
    }
    CHECK(path[0]);
    /* what a tool reads: every function named, the last section inside the file */
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    int ns = sections(path, sh), named = 0;
    for (int k = 0; k < ns; k++) {
        CHECK(sh[k].sh_type == SHT_NOBITS || sh[k].sh_offset + sh[k].sh_size <= (uint64_t)st.st_size);
        if (sh[k].sh_type == SHT_SYMTAB)
            named = (int)(sh[k].sh_size / sizeof(Elf64_Sym)) - 1;
    }
    CHECK(named >= nfn);
    *size = (uint64_t)st.st_size;
    for (int i = 0; i < nfn; i++)
        CHECK_EQ(jh_code_remove(jh, ids[i]), 0);
    munmap(area, AREA);
    return moves;
}

/*
 * A window that opens after one retired starts as big as that one ended (LuaJIT fills a
 * new window after each flush as much as the one it flushed): its sections do not move
 * on the way (each move a copy into fresh pages, zeros written ahead, a growth of the
 * mapping). It is no cap on a bigger window (sections still move past that room) and is
 * not handed on for ever: a small window after a big one leaves a small room behind.
 */
static void rooms(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "write" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    uint64_t s1, s2, s3, s4, s5;
    int m1 = window(jh, 150, "first", &s1);
    int m2 = window(jh, 150, "again", &s2);
    int m3 = window(jh, 250, "bigger", &s3);
    int m4 = window(jh, 10, "small", &s4);
    int m5 = window(jh, 10, "after_small", &s5);
    printf("section moves filling a window: %d first, %d after one as big (%llu -> %llu "
           "bytes), %d in a bigger one; a small one %llu bytes after it, %llu after that\n",
           m1, m2, (unsigned long long)s1, (unsigned long long)s2, m3,
           (unsigned long long)s4, (unsigned long long)s5);
    CHECK(m1 >= 5);             /* (the control: each section starts at a page) */
    CHECK_EQ(m2, 0);
    CHECK(s2 <= s1);            /* (no spare chunks left behind) */
    CHECK(m3 >= 1);
    CHECK(s5 < s3);
    (void)m4;
    (void)m5;
    jh_close(jh);
}

/* The text PT_LOAD's address in the image file at path (0: none). */
static uint64_t text_load(const char *path)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    Elf64_Ehdr eh;
    Elf64_Phdr ph[16];
    uint64_t at = 0;
    CHECK_EQ(pread(fd, &eh, sizeof eh, 0), (ssize_t)sizeof eh);
    CHECK(eh.e_phnum <= 16);
    CHECK_EQ(pread(fd, ph, eh.e_phnum * sizeof *ph, (off_t)eh.e_phoff),
             (ssize_t)(eh.e_phnum * sizeof *ph));
    for (int i = 0; i < eh.e_phnum && !at; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
            at = ph[i].p_vaddr;
    close(fd);
    return at;
}

/*
 * The text PT_LOAD starts at the lowest page of the window mapped from the file (perf and
 * libdw take a file's lowest mapping for it): code in a second mapping of the JIT's, 14
 * pages below the first in the same window, moves it down to that mapping (the lowest
 * mapped page is looked for from the lowest byte of the window's bitmap that may hold
 * one: mapping pages lowers it).
 */
static void load_start(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "write" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    size_t win = (size_t)1 << 20;
    uint8_t *res = mmap(NULL, 2 * win, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    CHECK(res != MAP_FAILED);
    uintptr_t base = ((uintptr_t)res + win - 1) & ~(uintptr_t)(win - 1);
    uint8_t *hi = (uint8_t *)(base + win / 2), *lo = (uint8_t *)(base + win / 2 - 30 * pg);
    uint8_t *areas[2] = { hi, lo };
    uint64_t ids[2], at[2];
    char path[512] = "";
    for (int k = 0; k < 2; k++) {
        uint8_t *p = mmap(areas[k], 16 * pg, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        CHECK(p == areas[k]);
        fp_function(p + 64, 128);
        CHECK_EQ(mprotect(p, 16 * pg, PROT_READ | PROT_EXEC), 0);
        struct jh_code c = { .sz = sizeof c, .name = k ? "low" : "high", .start = p + 64,
                             .size = 128, .unwind = JH_UNWIND_FRAME_POINTER,
                             .fp_push_end = FP_PUSH_END, .fp_set_end = FP_SET_END };
        CHECK_EQ(jh_code_add(jh, &c, &ids[k]), 0);
        CHECK(image_path(p + 64, path, sizeof path));
        at[k] = text_load(path);
    }
    printf("text PT_LOAD at %#llx with code at %p, at %#llx with code at %p too\n",
           (unsigned long long)at[0], (void *)hi, (unsigned long long)at[1], (void *)lo);
    CHECK_EQ(at[0], (uint64_t)(uintptr_t)hi);
    CHECK_EQ(at[1], (uint64_t)(uintptr_t)lo);
    for (int k = 0; k < 2; k++)
        CHECK_EQ(jh_code_remove(jh, ids[k]), 0);
    jh_close(jh);
    munmap(res, 2 * win);
}

int main(void)
{
    pg = (size_t)sysconf(_SC_PAGESIZE);
    snprintf(dir, sizeof dir, "/tmp/jh-test-write-XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    char path[512];
    struct freed *fr = calloc(MAXFREED, sizeof *fr);

    /* 1. The kernel's choice of address: the arena fits below the code. */
    uint8_t *a = mmap(NULL, AREA, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED);
    int growths, reused;
    int nfr = run(a, false, path, sizeof path, fr, &growths, &reused);
    CHECK(growths >= 2);         /* (3 before spare chunks were used again) */
    CHECK(nfr >= 3);
    munmap(a, AREA);

    /* 2. Code low in the address space, far below any arena the kernel gives (top down,
     * near the libraries): the metadata is mapped above the window, as for LuaJIT. */
    void *hint = (void *)(uintptr_t)LOW_CODE;
    a = mmap(hint, AREA, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
             -1, 0);
    if (a == MAP_FAILED || a != hint) {
        SKIP_PART("no free address space at " LOW_CODE_S " for the above-the-window case");
    } else {
        nfr = run(a, true, path, sizeof path, fr, &growths, &reused);
        CHECK(growths >= 2);
        CHECK(nfr >= 3);
        munmap(a, AREA);
    }
    big();
    rooms();
    load_start();
    fresh_files();
    free(fr);
    rm_tree(dir);
    return check_done();
}
