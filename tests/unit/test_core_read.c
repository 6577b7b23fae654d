/*
 * test_core_read.c — the core file reader behind `jitherald core` (tools/lib/core_read.h)
 * on a core built here the way Linux writes one (fs/binfmt_elf.c: an NT_FILE note of
 * count, page size, (start, end, page offset) triples and the paths; PT_LOAD segments with
 * the bytes kept): the mappings and their paths, the bytes by address, the build-id of an
 * image whose first page the core holds, and every cut of the file (each prefix, and each
 * length field made huge) refused or read without reading past the end. The real cores
 * (gcore, the kernel's) are read by tests/integration/core_gdb.sh. `test_core_read FILE`
 * also writes the core it builds to FILE: the fuzz corpus's seed (fuzz/corpus/core/).
 */
#include <elf.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jitherald.h"
#include "lib/core_read.h"

static uint8_t core[16384];
static size_t core_len;

static void put(size_t at, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        core[at + i] = (uint8_t)(v >> (8 * i));
}

/* An image's first page: ELF header, one PT_NOTE right after it, the build-id note. */
static size_t image_page(uint8_t *p, const uint8_t *id, size_t idlen)
{
    memset(p, 0, 4096);
    memcpy(p, "\177ELF\2\1\1", 7);
    Elf64_Ehdr *e = (Elf64_Ehdr *)p;
    e->e_type = ET_DYN;
    e->e_phoff = 64;
    e->e_phentsize = 56;
    e->e_phnum = 1;
    Elf64_Phdr *ph = (Elf64_Phdr *)(p + 64);
    ph->p_type = PT_NOTE;
    ph->p_offset = 128;
    ph->p_filesz = 16 + idlen;
    uint32_t hdr[3] = { 4, (uint32_t)idlen, NT_GNU_BUILD_ID };
    memcpy(p + 128, hdr, 12);
    memcpy(p + 140, "GNU", 4);
    memcpy(p + 144, id, idlen);
    return 4096;
}

/* ELF header, 2 program headers (PT_NOTE, PT_LOAD), the note, the loaded page. */
static void build(const uint8_t *id, size_t idlen)
{
    memset(core, 0, sizeof core);
    memcpy(core, "\177ELF\2\1\1", 7);
    put(16, ET_CORE, 2);
    put(18, EM_X86_64, 2);
    put(32, 64, 8);            /* e_phoff */
    put(54, 56, 2);
    put(56, 2, 2);
    const char *paths[2] = { "/tmp/jitherald-1000/jit-42-1.elf",
                             "/tmp/jitherald-1000/jit-42-g2/jit-42-1.elf (deleted)" };
    size_t note = 64 + 2 * 56, d = note + 12 + 8, at = d;
    put(at, 3, 8), put(at + 8, 4096, 8), at += 16;
    uint64_t tr[3][3] = { { 0x10000, 0x11000, 0 }, { 0x7f0000000000, 0x7f0000002000, 0x101 },
                          { 0x7f0000100000, 0x7f0000101000, 0x101 } };
    for (int i = 0; i < 3; i++, at += 24)
        put(at, tr[i][0], 8), put(at + 8, tr[i][1], 8), put(at + 16, tr[i][2], 8);
    for (int i = 0; i < 3; i++) {
        const char *p = paths[i == 2];
        memcpy(core + at, p, strlen(p) + 1);
        at += strlen(p) + 1;
    }
    size_t descsz = at - d;
    put(note, 5, 4), put(note + 4, descsz, 4), put(note + 8, 0x46494c45, 4);
    memcpy(core + note + 12, "CORE", 5);
    size_t load = (at + 4095) & ~(size_t)4095;
    put(64, PT_NOTE, 4), put(64 + 8, note, 8), put(64 + 32, 20 + descsz, 8);
    put(120, PT_LOAD, 4), put(120 + 8, load, 8), put(120 + 16, 0x10000, 8);
    put(120 + 32, 4096, 8), put(120 + 40, 4096, 8);
    core_len = load + image_page(core + load, id, idlen);
}

int main(int argc, char **argv)
{
    uint8_t id[20];
    for (int i = 0; i < 20; i++)
        id[i] = (uint8_t)(0xa0 + i);
    build(id, sizeof id);
    if (argc > 1) {
        FILE *f = fopen(argv[1], "wb");
        CHECK(f && fwrite(core, 1, core_len, f) == core_len && fclose(f) == 0);
    }

    struct jhr_core c;
    CHECK_EQ(jhr_core_read(&c, core, core_len), 0);
    CHECK_EQ(c.machine, EM_X86_64);
    CHECK_EQ(c.nmaps, 3);
    CHECK_EQ(c.nsegs, 1);
    if (c.nmaps == 3) {
        CHECK_STR(c.maps[0].path, "/tmp/jitherald-1000/jit-42-1.elf");
        CHECK_EQ(c.maps[1].offset, 0x101000);
        CHECK_EQ(c.maps[1].end - c.maps[1].start, 0x2000);
        CHECK_STR(c.maps[2].path, "/tmp/jitherald-1000/jit-42-g2/jit-42-1.elf (deleted)");
        const uint8_t *p;
        CHECK_EQ(jhr_core_bytes(&c, 0x10010, &p), 4096 - 16);
        CHECK(p && p[0] == core[core_len - 4096 + 16]);
        CHECK_EQ(jhr_core_bytes(&c, 0x7f0000000000, &p), 0);   /* left out of the core */
        CHECK(p == NULL);
        uint8_t got[64];
        CHECK_EQ(jhr_core_map_build_id(&c, 0, got), 20);
        CHECK(!memcmp(got, id, 20));
        CHECK_EQ(jhr_core_map_build_id(&c, 1, got), 0);       /* not at offset 0 */
        CHECK_EQ(jhr_core_map_build_id(&c, 2, got), 0);       /* not held */
    }
    jhr_core_free(&c);

    /* every prefix: read or refused, never past the end (ASan builds watch) */
    for (size_t n = 0; n < core_len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, core, n);
        int err = jhr_core_read(&c, cut, n);
        CHECK(err == 0 || err == JH_EFORMAT);
        if (!err) {
            uint8_t got[64];
            for (size_t i = 0; i < c.nmaps; i++)
                jhr_core_map_build_id(&c, i, got);
            jhr_core_free(&c);
        }
        free(cut);
    }
    /* huge counts and sizes: the note's count, a note size, a segment size, the phnum */
    size_t fields[][2] = { { 64 + 2 * 56 + 20, 8 }, { 64 + 2 * 56 + 4, 4 }, { 120 + 32, 8 },
                           { 56, 2 }, { 64 + 32, 8 } };
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        build(id, sizeof id);
        put(fields[f][0], UINT64_MAX, (int)fields[f][1]);
        CHECK_EQ(jhr_core_read(&c, core, core_len), JH_EFORMAT);
    }
    /* not a core: an executable's header */
    build(id, sizeof id);
    put(16, ET_EXEC, 2);
    CHECK_EQ(jhr_core_read(&c, core, core_len), JH_EFORMAT);
    return check_done();
}
