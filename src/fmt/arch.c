/*
 * arch.c — the architectures jitherald knows (see arch.h). e_machine values are spelled as
 * numbers: <elf.h> is not there on every platform the library builds for (mingw-w64).
 */
#include "fmt/arch.h"

#include <stddef.h>
#include <string.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

static const char *const x86_64_regs[] = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
    "r13", "r14", "r15", "rip",
};

static const char *const arm64_regs[] = {
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
    "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25",
    "x26", "x27", "x28", "x29", "x30", "sp",
};

#define NAMES(a) .reg_names = a, .nreg_names = sizeof a / sizeof a[0]

const struct jh__arch jh__arch_x86_64 = {
    .name = "x86-64", .log_name = "x86_64", .e_machine = 62 /* EM_X86_64 */, .ptr_size = 8,
    .ra = 16 /* rip */, .sp = 7 /* rsp */, .fp = 6 /* rbp */, NAMES(x86_64_regs),
    .code_align = 1, .data_align = -8, .entry_cfa = 8, .entry_ra = 8,
    .frame_cfa = 16, .frame_fp = 16, .frame_ra = 8,
    .brk = { 0xcc }, .brk_len = 1,                              /* int3 */
};

const struct jh__arch jh__arch_arm64 = {
    .name = "arm64", .log_name = "aarch64", .e_machine = 183 /* EM_AARCH64 */, .ptr_size = 8,
    .ra = 30 /* x30, lr */, .sp = 31, .fp = 29 /* x29 */, NAMES(arm64_regs),
    .code_align = 1, .data_align = -8, .entry_cfa = 0, .entry_ra = 0,
    .frame_cfa = 16, .frame_fp = 16, .frame_ra = 8,
    .brk = { 0x00, 0x00, 0x20, 0xd4 }, .brk_len = 4,            /* brk #0 */
    .pac = true, .prot_bti = 0x10 /* PROT_BTI */,
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

#if defined(__aarch64__) && defined(__linux__)
uint64_t jh__arch_host_pac_mask(void)
{
    /* XPACLRI strips x30 and is a hint: a no-op where there is no PAC. Given an address
     * with every bit but 55 set (a user address), it clears exactly the PAC field. */
    const uint64_t probe = ~(UINT64_C(1) << 55);
    register uint64_t x30 __asm__("x30") = probe;
    __asm__("hint #7" : "+r"(x30));                     /* xpaclri */
    return probe ^ x30;
}

bool jh__arch_host_bti(void)
{
    return getauxval(AT_HWCAP2) & (1UL << 17);          /* HWCAP2_BTI */
}
#else
uint64_t jh__arch_host_pac_mask(void)
{
    return 0;
}

bool jh__arch_host_bti(void)
{
    return false;
}
#endif

int jh__arch_host_guard_prot(void)
{
    return jh__arch_host_bti() ? (int)JH__ARCH_HOST->prot_bti : 0;
}
