/*
 * auditlog_dwarf_vm.c — a small "VM" (RaptorJIT-style) that logs its own structs to the
 * audit log as they evolve, for tests/integration/auditlog_dwarf.sh: `jitherald log show
 * ADDR --vm <this binary>` must decode each snapshot with this binary's DWARF types
 * (struct, typedef, enum, bit-field, array, union) and follow its pointers. Built with
 * -g -O0 (the types must be in the binary), linked with the shared library.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

enum state { IDLE, RECORDING, COMPILED };
typedef struct ir_buf { uint32_t nins; uint16_t ops[4]; } IRBuf;
struct trace {
    const char *name;
    struct trace *parent;
    IRBuf *ir;
    void *mcode;
    enum state state;
    unsigned hot : 3, looped : 1;
    char tag[8];
    union { double ratio; uint64_t bits; } u;
};

int main(void)
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .engine = "dwarfvm" };
    if (jh_open(&jh, &o) < 0)
        return 1;
    static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
    uint8_t *mc = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mc == MAP_FAILED)
        return 1;
    memcpy(mc, code, sizeof code);
    struct jh_code c = { .sz = sizeof c, .name = "trace_1", .start = mc, .size = sizeof code };
    if (jh_code_add(jh, &c, NULL) < 0)
        return 1;
    static char name[16] = "loop@12";
    static IRBuf ir = { 2, { 7, 9 } };
    static struct trace root = { .name = "root", .state = COMPILED, .tag = "r" };
    static struct trace t = { .name = name, .parent = &root, .ir = &ir, .state = RECORDING,
                              .hot = 5, .looped = 1, .tag = "abc", .u.ratio = 0.5 };
    jh_log_memory(jh, name, sizeof name, "char");
    jh_log_memory(jh, &root, sizeof root, "struct trace");
    jh_log_memory(jh, &ir, sizeof ir, "IRBuf");
    jh_log_memory(jh, &t, sizeof t, "struct trace");
    struct jh_attr a[] = { { "trace", JH_ATTR_ADDR, { .u = (uintptr_t)&t } } };
    jh_log_event(jh, "trace_start", a, 1);
    /* the trace evolves: more IR, compiled, renamed */
    ir.nins = 4;
    ir.ops[2] = 11;
    ir.ops[3] = 13;
    strcpy(name, "loop@12'");
    t.state = COMPILED;
    t.mcode = mc;
    jh_log_memory(jh, name, sizeof name, "char");
    jh_log_memory(jh, &ir, sizeof ir, "IRBuf");
    jh_log_memory(jh, &t, sizeof t, "struct trace");
    jh_log_event(jh, "trace_stop", a, 1);
    jh_close(jh);
    return 0;
}
