/*
 * jit_gdb.c — an arm64 JIT for tests/arm64/gdb_a64.sh: two hand-encoded frame-record
 * functions with line tables, announced on the gdb channel (and unwind), jit_outer calling
 * jit_inner calling stop_here() in C. Run under `qemu-aarch64 -g PORT` with gdb-multiarch
 * attached: `break jit_inner` (pending until the code exists) stops in the JIT code and
 * `bt` names both JIT frames with a64.jit:LINE down to main.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

enum { STP_FP_LR = 0xa9bf7bfd, MOV_FP_SP = 0x910003fd, LDP_FP_LR = 0xa8c17bfd,
       RET = 0xd65f03c0, BLR_X16 = 0xd63f0200, NOP = 0xd503201f };

__attribute__((noinline)) void stop_here(void) { __asm__ volatile("" ::: "memory"); }

typedef void jit_fn(void);
__attribute__((noinline)) static void call_jit(jit_fn *f)
{
    f();
    __asm__ volatile("" ::: "memory");
}

/* stp; mov; ldr x16, lit; blr x16; ldp; ret; nop; lit(target): 32 bytes */
static void emit(uint32_t *c, void *target)
{
    c[0] = STP_FP_LR;
    c[1] = MOV_FP_SP;
    c[2] = 0x58000010u | ((24 - 8) / 4) << 5;
    c[3] = BLR_X16;
    c[4] = LDP_FP_LR;
    c[5] = RET;
    c[6] = NOP;
    memcpy(&c[6], &target, 8);
}

static int announce(jh_ctx *ctx, const char *name, uint32_t *code, uint32_t line)
{
    static const char *files[] = { "a64.jit" };
    struct jh_line rows[] = { { 0, line, 0, 0 }, { 8, line + 1, 0, 0 },
                              { 16, line + 2, 0, 0 } };
    static const struct jh_epilogue epi = { 20, 24 };
    struct jh_code c = { .sz = sizeof c, .name = name, .start = code, .size = 32,
                         .files = files, .nfiles = 1, .lines = rows, .nlines = 3,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 4,
                         .fp_set_end = 8, .prologue_end = 8, .nepilogues = 1,
                         .epilogues = &epi };
    return jh_code_add(ctx, &c, NULL);
}

int main(void)
{
    uint32_t *area = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (area == MAP_FAILED)
        return 1;
    uint32_t *inner = area, *outer = area + 8;
    emit(inner, (void *)stop_here);
    emit(outer, (void *)inner);
    __builtin___clear_cache((char *)area, (char *)area + 64);
    mprotect(area, 4096, PROT_READ | PROT_EXEC);
    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB | JH_UNWIND };
    if (jh_open(&ctx, &o) || jh_channels(ctx) != (JH_GDB | JH_UNWIND) ||
        announce(ctx, "jit_inner", inner, 10) || announce(ctx, "jit_outer", outer, 20)) {
        fprintf(stderr, "jit_gdb: announcing failed\n");
        return 1;
    }
    call_jit((jit_fn *)(void *)outer);
    jh_close(ctx);
    puts("jit_gdb: done");
    return 0;
}
