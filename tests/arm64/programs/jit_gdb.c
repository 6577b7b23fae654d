/*
 * jit_gdb.c — an arm64 JIT for tests/arm64/gdb_a64.sh: two hand-encoded frame-record
 * functions with line tables, announced on the gdb channel (and unwind), jit_outer calling
 * jit_inner calling stop_here() in C. Run under `qemu-aarch64 -g PORT` with gdb-multiarch
 * attached: `break jit_inner` (pending until the code exists) stops in the JIT code and
 * `bt` names both JIT frames with a64.jit:LINE down to main. With "signed" (gdb_a64_pac.sh),
 * both functions sign their return address, and the JIT runs twice.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

enum { PACIASP = 0xd503233f, AUTIASP = 0xd50323bf, STP_FP_LR = 0xa9bf7bfd, MOV_FP_SP = 0x910003fd, LDP_FP_LR = 0xa8c17bfd,
       RET = 0xd65f03c0, BLR_X16 = 0xd63f0200, NOP = 0xd503201f };

__attribute__((noinline)) void stop_here(void) { __asm__ volatile("" ::: "memory"); }

typedef void jit_fn(void);
__attribute__((noinline)) static void call_jit(jit_fn *f)
{
    f();
    __asm__ volatile("" ::: "memory");
}

/* [pac;] stp; mov; ldr x16, lit; blr x16; ldp; [aut;] ret; [nop;] lit(target): 32 bytes,
 * 40 when signed (the return address signed with the A key while it is on the stack) */
static void emit(uint32_t *c, void *target, bool sign)
{
    uint32_t n = 0;
    if (sign)
        c[n++] = PACIASP;
    c[n++] = STP_FP_LR;
    c[n++] = MOV_FP_SP;
    uint32_t ldr = n++;
    c[n++] = BLR_X16;
    c[n++] = LDP_FP_LR;
    if (sign)
        c[n++] = AUTIASP;
    c[n++] = RET;
    if (n % 2)
        c[n++] = NOP;
    c[ldr] = 0x58000010u | (n - ldr) << 5;
    memcpy(&c[n], &target, 8);
}

static bool say_signed;

static int announce(jh_ctx *ctx, const char *name, uint32_t *code, uint32_t line, bool sign)
{
    static const char *files[] = { "a64.jit" };
    uint32_t d = sign ? 4 : 0;              /* where the unsigned code's offsets moved */
    struct jh_line rows[] = { { 0, line, 0, 0 }, { 8 + d, line + 1, 0, 0 },
                              { 16 + d, line + 2, 0, 0 } };
    const struct jh_epilogue epi = { 20 + d, 24 + 2 * d };
    const struct jh_range ra = { 4, 28 };   /* after paciasp .. after autiasp */
    struct jh_code c = { .sz = sizeof c, .name = name, .start = code, .size = 32 + 2 * d,
                         .files = files, .nfiles = 1, .lines = rows, .nlines = 3,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 4 + d,
                         .fp_set_end = 8 + d, .prologue_end = 8 + d, .nepilogues = 1,
                         .epilogues = &epi };
    if (sign && say_signed)
        c.ra_signed = &ra, c.nra_signed = 1, c.ra_key = JH_PAC_KEY_A;
    return jh_code_add(ctx, &c, NULL);
}

int main(int argc, char **argv)
{
    /* "signed": both functions sign their return address (A key) and say so; "unsaid":
     * they sign it without saying so (the control: a debugger cannot unwind them) */
    bool sign = argc > 1 && (!strcmp(argv[1], "signed") || !strcmp(argv[1], "unsaid"));
    say_signed = argc > 1 && !strcmp(argv[1], "signed");
    uint32_t *area = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (area == MAP_FAILED)
        return 1;
    uint32_t *inner = area, *outer = area + 16;
    emit(inner, (void *)stop_here, sign);
    emit(outer, (void *)inner, sign);
    __builtin___clear_cache((char *)area, (char *)area + 64);
    mprotect(area, 4096, PROT_READ | PROT_EXEC);
    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB | JH_UNWIND };
    if (jh_open(&ctx, &o) || jh_channels(ctx) != (JH_GDB | JH_UNWIND) ||
        announce(ctx, "jit_inner", inner, 10, sign) ||
        announce(ctx, "jit_outer", outer, 20, sign)) {
        fprintf(stderr, "jit_gdb: announcing failed\n");
        return 1;
    }
    call_jit((jit_fn *)(void *)outer);
    if (sign)                   /* again, for a debugger that now breaks at jit_inner's
                                   first instruction and steps through it */
        call_jit((jit_fn *)(void *)outer);
    jh_close(ctx);
    puts("jit_gdb: done");
    return 0;
}
