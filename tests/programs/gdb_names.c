/*
 * gdb_names.c — one hand-assembled JIT function shaped like a LuaJIT trace's worst case for
 * a debugger: its display name has a space and a colon ("TRACE_1 x.lua:10"), and its body
 * is a loop whose head is the second row of the line table. Announced through $JITHERALD
 * (the gdb channel), run, and checked by tests/integration/gdb_break_names.sh:
 *
 *   f:    push rbp; mov rbp,rsp; push rbx; sub rsp,8    x.lua:10   (offsets 0-8)
 *         mov ebx,5                                     x.lua:10   prologue_end = 9
 *   loop: mov rax,cb; call rax                          x.lua:11   (offset 14: the head)
 *         dec ebx; jnz loop
 *         mov rbx,[rbp-8]; leave                        x.lua:12
 *         ret                                           the epilogue's tail
 *
 * Arguments (each turns one description off, for the test's controls): "no-prologue-end",
 * "no-epilogue". Prints "calls=5" at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

static int calls;
void *volatile jit_ret;         /* the address of f's ret, for `break *jit_ret` */

__attribute__((noinline)) void cb(void)
{
    calls++;
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void call_it(void (*f)(void))
{
    f();
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    int no_pe = 0, no_epi = 0;
    for (int i = 1; i < argc; i++) {
        no_pe |= !strcmp(argv[i], "no-prologue-end");
        no_epi |= !strcmp(argv[i], "no-epilogue");
    }
    uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    uintptr_t c = (uintptr_t)cb;
    size_t n = 0;
    static const uint8_t pre[] = { 0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xec, 0x08,
                                   0xbb, 5, 0, 0, 0 };
    memcpy(m, pre, sizeof pre);
    n = sizeof pre;                             /* 14: the loop head */
    m[n++] = 0x48; m[n++] = 0xb8; memcpy(m + n, &c, 8); n += 8;
    m[n++] = 0xff; m[n++] = 0xd0;               /* call rax */
    m[n++] = 0xff; m[n++] = 0xcb;               /* dec ebx */
    m[n++] = 0x75; m[n] = (uint8_t)(14 - (n + 1)); n++;     /* jnz loop */
    size_t row3 = n;
    m[n++] = 0x48; m[n++] = 0x8b; m[n++] = 0x5d; m[n++] = 0xf8;     /* mov rbx,[rbp-8] */
    m[n++] = 0xc9;                              /* leave */
    size_t ret = n;
    m[n++] = 0xc3;
    if (mprotect(m, 4096, PROT_READ | PROT_EXEC))
        return 1;
    jit_ret = m + ret;

    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .engine = "names" };
    if (jh_open(&jh, &o))
        return 1;
    static const char *files[] = { "x.lua" };
    struct jh_line lines[] = { { 0, 10, 0, 0 }, { 14, 11, 0, 0 }, { (uint32_t)row3, 12, 0, 0 } };
    struct jh_epilogue epi = { (uint32_t)ret, (uint32_t)n };
    struct jh_code code = {
        .sz = sizeof code, .name = "TRACE_1 x.lua:10", .start = m, .size = n,
        .files = files, .nfiles = 1, .lines = lines, .nlines = 3,
        .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4,
        .prologue_end = no_pe ? 0 : 9, .epilogues = no_epi ? NULL : &epi,
        .nepilogues = no_epi ? 0 : 1,
    };
    if (jh_code_add(jh, &code, NULL))
        return 1;
    call_it((void (*)(void))(void *)m);
    printf("calls=%d\n", calls);
    jh_close(jh);
    return 0;
}
