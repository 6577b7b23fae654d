/*
 * elf_grow_hdrs.c — an elf_grow.h image's ELF header and program headers, and its meta page
 * (section headers, .shstrtab, .debug_abbrev). See elf_grow.h.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "fmt/arch.h"
#include "fmt/elf_image.h"
#include "fmt/elf_grow_sec.h"

static const char *const sec_name[X_MAX] = {
    [G_SYMTAB] = ".symtab", [G_STRTAB] = ".strtab", [G_FRAME] = ".debug_frame",
    [G_INFO] = ".debug_info", [G_LINE] = ".debug_line", [G_STR] = ".debug_str",
    [G_RANGES] = ".debug_ranges", [G_ARANGES] = ".debug_aranges", [X_TEXT] = ".text",
    [X_DATA] = ".data", [X_ABBREV] = ".debug_abbrev", [X_SHSTRTAB] = ".shstrtab",
    [X_NOTE] = ".note.gnu.build-id", [G_EH] = ".eh_frame", [G_EHDR] = ".eh_frame_hdr",
};

void jh__elfg_build_hdr(struct jh__elfg *g)
{
    size_t pg = page_of(g);
    Elf64_Ehdr eh;
    jh__elf_ehdr_init(&eh, ET_DYN, g->s.arch->e_machine);
    eh.e_phoff = sizeof eh;
    eh.e_shoff = g->s.meta_off + NOTE_SPACE;
    eh.e_phnum = (uint16_t)nphdrs(g);
    eh.e_shnum = (uint16_t)nsections(g);
    eh.e_shstrndx = (uint16_t)shndx(g, X_SHSTRTAB);
    uint64_t text = g->load_lo ? g->load_lo : g->s.lo;
    Elf64_Phdr load[5] = {
        { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = off_of(g, text),
          .p_vaddr = text, .p_paddr = text, .p_filesz = g->s.hi - text,
          .p_memsz = g->s.hi - text, .p_align = pg },
        { .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = g->s.meta_off + pg,
          .p_vaddr = g->s.rw_addr, .p_paddr = g->s.rw_addr, .p_filesz = DATA_SIZE,
          .p_memsz = DATA_SIZE, .p_align = pg },
    };
    size_t nload = 1 + (g->s.rw_addr != 0);
    if (arena(g)) {
        /* The first page (ELF header, program headers) and the tables' chunks, where the
         * caller maps them (jh__elfg_eh_chunk). perf 6.1 takes the lowest mapping of the
         * file for the first PT_LOAD's address, libdw the lowest of the lines of the file
         * that /proc/PID/maps lists one after the other: docs/elfmap.md. */
        load[nload++] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R, .p_offset = 0,
            .p_vaddr = addr_of(g, 0), .p_paddr = addr_of(g, 0), .p_filesz = pg, .p_memsz = pg,
            .p_align = pg };
        for (int i = G_EH; i <= G_EHDR; i++) {
            const struct jh__elfg_chunk *c = &g->chunk[i];
            load[nload++] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R,
                .p_offset = c->off, .p_vaddr = addr_of(g, c->off),
                .p_paddr = addr_of(g, c->off), .p_filesz = c->cap, .p_memsz = c->cap,
                .p_align = pg };
        }
    }
    /* in address order, as the ELF spec wants them (valgrind requires it; perf and libdw
     * take the first for the lowest) */
    for (size_t i = 1; i < nload; i++)
        for (size_t k = i; k > 0 && load[k].p_vaddr < load[k - 1].p_vaddr; k--) {
            Elf64_Phdr t = load[k];
            load[k] = load[k - 1];
            load[k - 1] = t;
        }
    /* (in memory where the first page is mapped: a core holds that page) */
    uint64_t note_at = arena(g) ? addr_of(g, NOTE_OFF) : 0;
    Elf64_Phdr note = { .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTE_OFF,
                        .p_vaddr = note_at, .p_paddr = note_at,
                        .p_filesz = JH__BUILD_ID_NOTE_SIZE,
                        .p_memsz = note_at ? JH__BUILD_ID_NOTE_SIZE : 0, .p_align = 4 };
    memset(g->hdr, 0, sizeof g->hdr);
    memcpy(g->hdr, &eh, sizeof eh);
    uint8_t *at = g->hdr + sizeof eh;
    memcpy(at, load, nload * sizeof load[0]);
    at += nload * sizeof load[0];
    memcpy(at, &note, sizeof note);
    at += sizeof note;
    if (g->neh) {
        const struct jh__elfg_chunk *c = &g->chunk[G_EHDR];
        Elf64_Phdr ehp = { .p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_offset = c->off,
                           .p_vaddr = addr_of(g, c->off), .p_paddr = addr_of(g, c->off),
                           .p_filesz = c->cap, .p_memsz = c->cap, .p_align = 4 };
        memcpy(at, &ehp, sizeof ehp);
    }
}

/* Only the growing sections' sizes changed since the meta page was built (an add): stored
 * into their headers as built, in the order build_meta wrote them. */
static bool meta_sizes(struct jh__elfg *g)
{
    if (g->meta_layout || !g->meta.len)
        return false;
    uint8_t *sh = g->meta.p + NOTE_SPACE + sizeof(Elf64_Shdr);
    for (int k = 0; k < X_MAX; k++) {
        int i = shdr_order[k];
        if (!present(g, i))
            continue;
        if (i < JH__ELFG_NGROW) {
            uint64_t size = sec(g, i)->len;
            memcpy(sh + offsetof(Elf64_Shdr, sh_size), &size, sizeof size);
        }
        sh += sizeof(Elf64_Shdr);
    }
    return true;
}

/* The meta page: section headers, then .shstrtab and .debug_abbrev after them. */
int jh__elfg_build_meta(struct jh__elfg *g)
{
    if (meta_sizes(g))
        return 0;
    struct jh__buf *b = &g->meta;
    b->len = 0;
    b->err = 0;
    uint32_t nsec = nsections(g);
    size_t names_off = NOTE_SPACE + nsec * sizeof(Elf64_Shdr);
    uint32_t name_at[X_MAX] = { 0 };
    size_t names_len = 1;
    for (int i = 0; i < X_MAX; i++) {
        name_at[i] = (uint32_t)names_len;
        names_len += strlen(sec_name[i]) + 1;
    }
    size_t abbrev_off = names_off + names_len;
    if (abbrev_off + g->dw.abbrev.len > page_of(g))
        return -E2BIG;

    uint8_t note[NOTE_SPACE] = { 0 };
    jh__buf_put(b, note, sizeof note);
    Elf64_Shdr sh = { 0 };
    jh__buf_put(b, &sh, sizeof sh);
    for (int k = 0; k < X_MAX; k++) {
        int i = shdr_order[k];
        if (!present(g, i))
            continue;
        sh = (Elf64_Shdr){ .sh_name = name_at[i], .sh_type = SHT_PROGBITS, .sh_addralign = 1 };
        if (i < JH__ELFG_NGROW) {
            sh.sh_offset = g->chunk[i].off;
            sh.sh_size = sec(g, i)->len;
        }
        switch (i) {
        case X_TEXT:
            sh.sh_flags = SHF_ALLOC | SHF_EXECINSTR;
            sh.sh_addr = g->s.lo;
            sh.sh_offset = off_of(g, g->s.lo);
            sh.sh_size = g->s.hi - g->s.lo;
            sh.sh_addralign = 16;
            break;
        case X_DATA:
            sh.sh_flags = SHF_ALLOC | SHF_WRITE;
            sh.sh_addr = g->s.rw_addr;
            sh.sh_offset = g->s.meta_off + page_of(g);
            sh.sh_size = DATA_SIZE;
            sh.sh_addralign = 8;
            break;
        case X_ABBREV:
            sh.sh_offset = g->s.meta_off + abbrev_off;
            sh.sh_size = g->dw.abbrev.len;
            break;
        case X_NOTE:
            sh.sh_type = SHT_NOTE;
            sh.sh_offset = NOTE_OFF;
            if (arena(g)) {
                sh.sh_flags = SHF_ALLOC;
                sh.sh_addr = addr_of(g, NOTE_OFF);
            }
            sh.sh_size = JH__BUILD_ID_NOTE_SIZE;
            sh.sh_addralign = 4;
            break;
        case X_SHSTRTAB:
            sh.sh_type = SHT_STRTAB;
            sh.sh_offset = g->s.meta_off + names_off;
            sh.sh_size = names_len;
            break;
        case G_SYMTAB:
            sh.sh_type = SHT_SYMTAB;
            sh.sh_link = shndx(g, G_STRTAB);
            sh.sh_info = 1;                     /* every symbol but the null one is global */
            sh.sh_entsize = sizeof(Elf64_Sym);
            sh.sh_addralign = 8;
            break;
        case G_STRTAB:
            sh.sh_type = SHT_STRTAB;
            break;
        case G_FRAME:
            sh.sh_addralign = 8;
            break;
        case G_EH: case G_EHDR:
            sh.sh_flags = SHF_ALLOC;
            sh.sh_addr = addr_of(g, g->chunk[i].off);
            sh.sh_addralign = i == G_EH ? 8 : 4;
            break;
        case G_STR:
            sh.sh_flags = SHF_MERGE | SHF_STRINGS;
            sh.sh_entsize = 1;
            break;
        }
        jh__buf_put(b, &sh, sizeof sh);
    }
    jh__buf_u8(b, 0);
    for (int i = 0; i < X_MAX; i++)
        jh__buf_str(b, sec_name[i]);
    jh__buf_put(b, g->dw.abbrev.p, g->dw.abbrev.len);
    if (b->err)
        b->len = 0;                     /* built whole next time */
    else
        g->meta_layout = false;
    return b->err;
}
