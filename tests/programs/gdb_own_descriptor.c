/*
 * gdb_own_descriptor.c — a program with a JIT interface of its own, as PHP's executable
 * has: it defines the global __jit_debug_descriptor and __jit_debug_register_code itself
 * (never registering anything), and links libjitherald.so, whose gdb channel announces jh_fn.
 * For tests/integration/gdb_own_descriptor.sh; built with and without -rdynamic. gdb 13
 * used to read this program's empty descriptor when our hook fired (docs/gdb.md, "A program
 * with its own descriptor"). Exit status 0 only if our descriptor is not this one and
 * jitherald never touched this one nor called its hook. Needs JITHERALD=gdb.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "jitherald.h"

struct jit_code_entry;
struct jit_descriptor {
    uint32_t version, action_flag;
    struct jit_code_entry *relevant_entry, *first_entry;
};
struct jit_descriptor __jit_debug_descriptor = { 1, 0, NULL, NULL };
static volatile int own_hook_calls;

__attribute__((noinline)) void __jit_debug_register_code(void)
{
    own_hook_calls++;
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void stop_here(void *jh_code)
{
    printf("jh_fn=%p\n", jh_code);
    fflush(stdout);
}

int main(void)
{
    jh_ctx *jh;
    if (jh_open(&jh, NULL) < 0 || !(jh_channels(jh) & JH_GDB))
        return 2;
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
    if (code == MAP_FAILED)
        return 3;
#if defined(__x86_64__)
    static const unsigned char fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x5d, 0xc3 };
    enum { PUSH_END = 1, SET_END = 4 };
#elif defined(__aarch64__)
    static const unsigned char fn[] = { 0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91,
                                        0x1f, 0x20, 0x03, 0xd5, 0xfd, 0x7b, 0xc1, 0xa8,
                                        0xc0, 0x03, 0x5f, 0xd6 };
    enum { PUSH_END = 4, SET_END = 8 };
#endif
    memcpy(code, fn, sizeof fn);
    __builtin___clear_cache((char *)code, (char *)code + sizeof fn);
    if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
        return 3;
    struct jh_code jc = { .sz = sizeof jc, .name = "jh_fn", .start = code, .size = sizeof fn,
                          .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = PUSH_END,
                          .fp_set_end = SET_END };
    if (jh_code_add(jh, &jc, NULL) < 0)
        return 4;
    ((void (*)(void))(uintptr_t)code)();
    stop_here(code);
    jh_close(jh);
    void *ours = dlsym(RTLD_NEXT, "__jit_debug_descriptor");
    int bad = 0;
    if (!ours || ours == (void *)&__jit_debug_descriptor)
        bad = fprintf(stderr, "jitherald's descriptor is not a separate one\n");
    if (__jit_debug_descriptor.version != 1 || __jit_debug_descriptor.action_flag ||
        __jit_debug_descriptor.relevant_entry || __jit_debug_descriptor.first_entry ||
        own_hook_calls)
        bad = fprintf(stderr, "the program's own JIT interface was touched\n");
    return bad ? 5 : 0;
}
