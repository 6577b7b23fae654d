/* elf_wrap.c — see elf_wrap.h. */
#include "elf_wrap.h"

#include <elf.h>
#include <stdio.h>

int elf_wrap_eh_frame(const char *path, uint64_t text_addr, uint64_t text_size,
                      uint64_t eh_addr, const uint8_t *eh, size_t eh_len,
                      uint64_t hdr_addr, const uint8_t *hdr, size_t hdr_len)
{
    static const char shstr[] = "\0.text\0.eh_frame\0.eh_frame_hdr\0.shstrtab";
    enum { N_TEXT = 1, N_EH = 7, N_HDR = 17, N_SHSTR = 31 };
    size_t off_eh = sizeof(Elf64_Ehdr);
    size_t off_hdr = (off_eh + eh_len + 7) & ~(size_t)7;
    size_t off_str = off_hdr + hdr_len;
    size_t off_sh = (off_str + sizeof shstr + 7) & ~(size_t)7;
    int nsec = hdr ? 5 : 4;
    Elf64_Ehdr eh_ = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
                                    ELFDATA2LSB, EV_CURRENT },
                       .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
                       .e_shoff = off_sh, .e_ehsize = sizeof(Elf64_Ehdr),
                       .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = (uint16_t)nsec,
                       .e_shstrndx = (uint16_t)(nsec - 1) };
    Elf64_Shdr sh[5] = { { 0 } };
    sh[1] = (Elf64_Shdr){ .sh_name = N_TEXT, .sh_type = SHT_NOBITS,
                          .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = text_addr,
                          .sh_offset = off_eh, .sh_size = text_size, .sh_addralign = 16 };
    sh[2] = (Elf64_Shdr){ .sh_name = N_EH, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
                          .sh_addr = eh_addr, .sh_offset = off_eh, .sh_size = eh_len,
                          .sh_addralign = 8 };
    if (hdr)
        sh[3] = (Elf64_Shdr){ .sh_name = N_HDR, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
                              .sh_addr = hdr_addr, .sh_offset = off_hdr, .sh_size = hdr_len,
                              .sh_addralign = 4 };
    sh[nsec - 1] = (Elf64_Shdr){ .sh_name = N_SHSTR, .sh_type = SHT_STRTAB,
                                 .sh_offset = off_str, .sh_size = sizeof shstr,
                                 .sh_addralign = 1 };
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    uint8_t zero[8] = { 0 };
    fwrite(&eh_, sizeof eh_, 1, f);
    fwrite(eh, 1, eh_len, f);
    fwrite(zero, 1, off_hdr - off_eh - eh_len, f);
    if (hdr)
        fwrite(hdr, 1, hdr_len, f);
    fwrite(shstr, 1, sizeof shstr, f);
    fwrite(zero, 1, off_sh - off_str - sizeof shstr, f);
    fwrite(sh, sizeof sh[0], (size_t)nsec, f);
    return fclose(f);
}
