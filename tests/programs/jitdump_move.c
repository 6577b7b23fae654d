/*
 * jitdump_move.c — jh_code_move seen by perf, for tests/integration/jitdump_move.sh: a
 * hand-assembled spin loop runs at A, is copied to B (512 KiB further, page-aligned both)
 * and announced moved, its old copy overwritten with int3, then runs at B. Prints "A B"
 * in hex. Needs JITHERALD=jitdump.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

int main(void)
{
    uint8_t *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* push rbp; mov rbp,rsp; mov ecx,200000000; L: dec rcx; jnz L; pop rbp; ret */
    static const uint8_t f[] = { 0x55, 0x48, 0x89, 0xe5, 0xb9, 0x00, 0xc2, 0xeb, 0x0b,
                                 0x48, 0xff, 0xc9, 0x75, 0xfb, 0x5d, 0xc3 };
    jh_ctx *c;
    uint64_t id;
    if (m == MAP_FAILED || jh_open(&c, NULL) || !(jh_channels(c) & JH_JITDUMP))
        return 1;
    memcpy(m, f, sizeof f);
    struct jh_code k = { .sz = sizeof k, .name = "spin_moved", .start = m, .size = sizeof f,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    if (jh_code_add(c, &k, &id))
        return 1;
    ((void (*)(void))m)();
    memcpy(m + 0x80000, f, sizeof f);
    if (jh_code_move(c, id, m + 0x80000))
        return 1;
    memset(m, 0xcc, sizeof f);
    ((void (*)(void))(m + 0x80000))();
    printf("%lx %lx\n", (unsigned long)m, (unsigned long)(m + 0x80000));
    jh_close(c);
    return 0;
}
