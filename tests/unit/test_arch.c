/*
 * test_arch.c — the architecture descriptions (fmt/arch.h) against the system's own facts:
 * e_machine against <elf.h>, the host's audit-log name against uname(2) (what `uname -m`
 * prints, and what the log's readers look up), the lookups by e_machine and by name, and
 * the CIE each one gives, decoded by readelf (register names are readelf's, per machine, and
 * the ones jh__arch gives readers are too).
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "fmt/arch.h"
#include "fmt/cfi.h"

/* readelf --debug-dump=frames of a .debug_frame holding arch's CIE, in a minimal ELF of
 * arch's e_machine (so readelf names its registers). */
static char *cie_as_readelf_says(const struct jh__arch *a, const char *dir)
{
    struct jh__buf frame = { 0 };
    jh__cfi_debug_frame_cie(&frame, a);
    CHECK_EQ(frame.err, 0);
    static const char shstr[] = "\0.debug_frame\0.shstrtab";
    Elf64_Ehdr eh = { .e_type = ET_REL, .e_machine = a->e_machine, .e_version = EV_CURRENT,
                      .e_ehsize = sizeof eh, .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3,
                      .e_shstrndx = 2 };
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    size_t at_frame = sizeof eh, at_str = at_frame + frame.len;
    eh.e_shoff = (at_str + sizeof shstr + 7) & ~(size_t)7;
    Elf64_Shdr sh[3] = {
        { 0 },
        { .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_offset = at_frame, .sh_size = frame.len,
          .sh_addralign = 8 },
        { .sh_name = 14, .sh_type = SHT_STRTAB, .sh_offset = at_str, .sh_size = sizeof shstr,
          .sh_addralign = 1 },
    };
    char path[256], cmd[512];
    snprintf(path, sizeof path, "%s/%s.o", dir, a->log_name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    static const char zeros[8];
    fwrite(&eh, sizeof eh, 1, f);
    fwrite(frame.p, 1, frame.len, f);
    fwrite(shstr, 1, sizeof shstr, f);
    fwrite(zeros, 1, eh.e_shoff - (at_str + sizeof shstr), f);
    fwrite(sh, sizeof sh, 1, f);
    CHECK_EQ(fclose(f), 0);
    free(frame.p);
    snprintf(cmd, sizeof cmd, "readelf -h --debug-dump=frames %s 2>&1", path);
    int status = -1;
    char *out = capture(cmd, &status);
    CHECK_EQ(status, 0);
    return out;
}

int main(void)
{
    /* the numbers arch.c spells out, against the system's <elf.h> */
    CHECK_EQ(jh__arch_x86_64.e_machine, EM_X86_64);
    CHECK_EQ(jh__arch_arm64.e_machine, EM_AARCH64);

    CHECK(jh__arch_by_machine(EM_X86_64) == &jh__arch_x86_64);
    CHECK(jh__arch_by_machine(EM_AARCH64) == &jh__arch_arm64);
    CHECK(jh__arch_by_machine(EM_386) == NULL);
    CHECK(jh__arch_by_machine(0) == NULL);
    CHECK(jh__arch_by_name("x86_64") == &jh__arch_x86_64);
    CHECK(jh__arch_by_name("aarch64") == &jh__arch_arm64);
    CHECK(jh__arch_by_name("arm64") == NULL);       /* the log's name, not ours */
    CHECK(jh__arch_by_name("riscv64") == NULL);
    CHECK(jh__arch_by_name("") == NULL);
    CHECK(jh__arch_by_name(NULL) == NULL);
    size_t n = 0;
    for (; jh__arch_list[n]; n++)
        CHECK(jh__arch_by_name(jh__arch_list[n]->log_name) == jh__arch_list[n]);
    CHECK_EQ(n, 2);

    /* the audit log records the host as `uname -m` says it */
    struct utsname u;
    CHECK_EQ(uname(&u), 0);
    CHECK_STR(JH__ARCH_HOST->log_name, u.machine);
    CHECK_EQ(JH__ARCH_HOST->ptr_size, sizeof(void *));

    /* each CIE as readelf decodes it for that machine */
    if (system("command -v readelf >/dev/null 2>&1") != 0) {
        SKIP_PART("readelf not installed (Debian package binutils)");
        return check_done();
    }
    char dir[] = "/tmp/jh-test-arch.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *x = cie_as_readelf_says(&jh__arch_x86_64, dir);
    char *a = cie_as_readelf_says(&jh__arch_arm64, dir);
    printf("%s\n%s\n", x ? x : "", a ? a : "");
    CHECK(x && strstr(x, "Advanced Micro Devices X86-64"));
    CHECK(x && strstr(x, "Return address column: 16"));
    CHECK(x && strstr(x, "DW_CFA_def_cfa: r7 (rsp) ofs 8"));
    CHECK(x && strstr(x, "DW_CFA_offset: r16 (rip) at cfa-8"));
    CHECK(a && strstr(a, "AArch64"));
    CHECK(a && strstr(a, "Return address column: 30"));
    CHECK(a && strstr(a, "DW_CFA_def_cfa: r31 (sp) ofs 0"));
    CHECK(a && !strstr(a, "DW_CFA_offset"));        /* the return address is still in x30 */
    /* the names readers print are readelf's */
    const struct jh__arch *arch[2] = { &jh__arch_x86_64, &jh__arch_arm64 };
    const char *said[2] = { x, a };
    for (int i = 0; i < 2; i++) {
        char want[64];
        CHECK(arch[i]->nreg_names > arch[i]->sp && arch[i]->nreg_names > arch[i]->ra);
        snprintf(want, sizeof want, "r%u (%s)", arch[i]->sp, arch[i]->reg_names[arch[i]->sp]);
        CHECK(said[i] && strstr(said[i], want));
    }
    CHECK_STR(jh__arch_x86_64.reg_names[jh__arch_x86_64.ra], "rip");
    CHECK_STR(jh__arch_x86_64.reg_names[jh__arch_x86_64.fp], "rbp");
    CHECK_STR(jh__arch_arm64.reg_names[jh__arch_arm64.ra], "x30");
    CHECK_STR(jh__arch_arm64.reg_names[jh__arch_arm64.fp], "x29");
    free(x);
    free(a);
    CHECK_EQ(rm_tree(dir), 0);
    return check_done();
}
