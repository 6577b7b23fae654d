/*
 * deepbind_jump.c — the exported dlopen of libjitherald-run.so (deepbind.c says why it is
 * interposed): a RTLD_DEEPBIND load goes to jhp_dlopen_deep, every other one jumps to
 * libc's dlopen with the program's own return address still on the stack, because libc
 * takes the caller from it (the caller's RUNPATH for a bare name, its namespace). A call
 * from C would make the preload the caller; a C tail call is not guaranteed (-O0,
 * sanitizers). One architecture's instructions each.
 */
#include <dlfcn.h>

_Static_assert(RTLD_DEEPBIND == 8, "the jump below tests bit 3 of dlopen's mode");

#if defined(__x86_64__)
#if defined(__CET__)
#define JHP_LANDING "endbr64\n"
#else
#define JHP_LANDING ""
#endif
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        ".cfi_startproc\n"
        JHP_LANDING
        "testl $8, %esi\n"                      /* RTLD_DEEPBIND */
        "jnz jhp_dlopen_deep\n"
        "movq jhp_next_dlopen(%rip), %rax\n"
        "testq %rax, %rax\n"
        "jz jhp_dlopen_deep\n"                  /* before our constructor ran */
        "jmp *%rax\n"
        ".cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define JHP_LANDING "bti c\n"
#else
#define JHP_LANDING ""
#endif
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, %function\n"
        "dlopen:\n"
        ".cfi_startproc\n"
        JHP_LANDING
        "tbz w1, #3, 1f\n"                      /* RTLD_DEEPBIND */
        "b jhp_dlopen_deep\n"
        "1: adrp x16, jhp_next_dlopen\n"
        "ldr x16, [x16, :lo12:jhp_next_dlopen]\n"
        "cbz x16, 2f\n"
        "br x16\n"
        "2: b jhp_dlopen_deep\n"
        ".cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
#else
#error "deepbind_jump.c: dlopen's jump is written for x86-64 and arm64"
#endif

