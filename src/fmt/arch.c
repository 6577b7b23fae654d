/*
 * arch.c — the architectures jitherald knows (see arch.h). e_machine values are spelled as
 * numbers: <elf.h> is not there on every platform the library builds for (mingw-w64).
 */
#include "fmt/arch.h"

#include <stddef.h>
#include <string.h>

const struct jh__arch jh__arch_x86_64 = {
    .name = "x86-64", .log_name = "x86_64", .e_machine = 62 /* EM_X86_64 */, .ptr_size = 8,
    .ra = 16 /* rip */, .sp = 7 /* rsp */, .fp = 6 /* rbp */,
    .code_align = 1, .data_align = -8, .entry_cfa = 8, .entry_ra = 8,
    .frame_cfa = 16, .frame_fp = 16, .frame_ra = 8,
    .brk = { 0xcc }, .brk_len = 1,                              /* int3 */
};

const struct jh__arch jh__arch_arm64 = {
    .name = "arm64", .log_name = "aarch64", .e_machine = 183 /* EM_AARCH64 */, .ptr_size = 8,
    .ra = 30 /* x30, lr */, .sp = 31, .fp = 29 /* x29 */,
    .code_align = 1, .data_align = -8, .entry_cfa = 0, .entry_ra = 0,
    .frame_cfa = 16, .frame_fp = 16, .frame_ra = 8,
    .brk = { 0x00, 0x00, 0x20, 0xd4 }, .brk_len = 4,            /* brk #0 */
};

const struct jh__arch *const jh__arch_list[] = { &jh__arch_x86_64, &jh__arch_arm64, NULL };

const struct jh__arch *jh__arch_by_machine(unsigned e_machine)
{
    for (size_t i = 0; jh__arch_list[i]; i++)
        if (jh__arch_list[i]->e_machine == e_machine)
            return jh__arch_list[i];
    return NULL;
}

const struct jh__arch *jh__arch_by_name(const char *log_name)
{
    for (size_t i = 0; log_name && jh__arch_list[i]; i++)
        if (!strcmp(jh__arch_list[i]->log_name, log_name))
            return jh__arch_list[i];
    return NULL;
}
