/*
 * gdb_grow_attach.c — a JIT that keeps compiling while a debugger attaches at a moment of
 * its own choosing (tests/integration/gdb_grow_attach.sh): with no debugger, the gdb
 * channel appends each function to one growing image (src/channels/gdb_grow.c), which the
 * debugger reads once, whenever it stops the process.
 *
 * Functions g0, g1, ... go top-down from the top of a region (as LuaJIT's traces), 64 bytes
 * apart, each with a line of grow.lua and a frame pointer:
 *     push rbp; mov rbp,rsp; mov rax,cb; call rax; pop rbp; ret
 * `added` counts those whose jh_code_add has returned: g<k> is at code_top - 64 (k + 1).
 * The pid goes to argv[1] once 2,000 are in; from then on a function every ~100 us, until
 * argv[2] exists (or 200,000 functions): then one more, "late", is added and called, and
 * the program prints "late ran" and exits. x86-64.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jitherald.h"

enum { FN = 64, MAX = 200000 };

volatile long added;
uint8_t *code_top;
static int calls;

__attribute__((noinline)) void cb(void)
{
    calls++;
    __asm__ volatile("" ::: "memory");
}

static void *emit(uint8_t *m)
{
    uintptr_t c = (uintptr_t)cb;
    size_t n = 0;
    static const uint8_t pre[] = { 0x55, 0x48, 0x89, 0xe5 };    /* push rbp; mov rbp,rsp */
    memcpy(m, pre, sizeof pre);
    n = sizeof pre;
    m[n++] = 0x48, m[n++] = 0xb8;
    memcpy(m + n, &c, 8);
    n += 8;
    m[n++] = 0xff, m[n++] = 0xd0;               /* call rax */
    m[n++] = 0x5d;                              /* pop rbp */
    m[n++] = 0xc3;
    while (n < FN)
        m[n++] = 0xcc;
    return m;
}

static int announce(jh_ctx *jh, uint8_t *at, const char *name, uint32_t line)
{
    static const char *files[] = { "grow.lua" };
    struct jh_line lines[] = { { 0, line, 0, 0 }, { 4, line + 1, 0, 0 } };
    struct jh_code c = { .sz = sizeof c, .name = name, .start = at, .size = 16,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    return jh_code_add(jh, &c, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t len = (size_t)(MAX + 1) * FN;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    code_top = m + len;
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .engine = "grow" };
    if (jh_open(&jh, &o))
        return 1;
    char name[32];
    long k = 0;
    for (; k < MAX - 1; k++) {
        snprintf(name, sizeof name, "g%ld", k);
        if (announce(jh, emit(code_top - FN * (k + 1)), name, (uint32_t)k + 1))
            return 1;
        added = k + 1;
        if (k == 2000) {
            FILE *f = fopen(argv[1], "w");
            if (!f)
                return 1;
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
        if (k > 2000) {
            if (access(argv[2], F_OK) == 0)
                break;
            usleep(100);
        }
    }
    uint8_t *late = emit(code_top - FN * (k + 2));
    if (announce(jh, late, "late", 100000000))
        return 1;
    ((void (*)(void))late)();
    printf("late ran, %ld functions before it, calls=%d\n", k + 1, calls);
    jh_close(jh);
    return 0;
}
