#!/usr/bin/env bash
# RaptorJIT-style offline decoding: a small "VM" built with -g logs its own structs as they
# evolve. `jitherald log show ADDR --vm BINARY` decodes each snapshot with the binary's DWARF
# types (struct, typedef, enum, bit-field, array, union), and follows pointers into other
# logged memory as it stood at the chosen moment (--at): a char pointer shows the string,
# a struct pointer the struct, a code pointer the logged function.
set -eu
B=$JH_BUILD; R=$JH_ROOT
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cat > "$T/vm.c" <<'C'
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
    if (jh_open(&jh, &o) < 0) return 1;
    static uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
    uint8_t *mc = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(mc, code, sizeof code);
    struct jh_code c = { .sz = sizeof c, .name = "trace_1", .start = mc, .size = sizeof code };
    jh_code_add(jh, &c, NULL);
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
    ir.nins = 4; ir.ops[2] = 11; ir.ops[3] = 13;
    strcpy(name, "loop@12'");
    t.state = COMPILED; t.mcode = mc;
    jh_log_memory(jh, name, sizeof name, "char");
    jh_log_memory(jh, &ir, sizeof ir, "IRBuf");
    jh_log_memory(jh, &t, sizeof t, "struct trace");
    jh_log_event(jh, "trace_stop", a, 1);
    jh_close(jh);
    return 0;
}
C
cc -g -O0 -I"$R/include" -o "$T/vm" "$T/vm.c" -L"$B" -ljitherald -Wl,-rpath,"$B"
JITHERALD=auditlog JITHERALD_DIR=$T "$T/vm"
log=$(ls "$T"/dwarfvm-*.jhlog)
J="$B/jitherald log $log"
$J events | tee "$T/events"
addr=$(sed -n 's/.*trace_start trace=\(0x[0-9a-f]*\).*/\1/p' "$T/events")
start=$(awk '/trace_start/ {print $1}' "$T/events")

# As it stood at trace_start (--at its record): recording, 2 IR instructions, old name.
$J show "$addr" --vm "$T/vm" --at "$start" | tee "$T/at_start"
grep -q '^  name = 0x[0-9a-f]* -> "loop@12"$' "$T/at_start"
grep -q '^  parent = 0x[0-9a-f]* -> struct trace {$' "$T/at_start"
grep -q '^    name = 0x[0-9a-f]* (string not logged)$' "$T/at_start"   # root's name: never logged
grep -q '^    state = 2 (COMPILED)$' "$T/at_start"
grep -q '^  ir = 0x[0-9a-f]* -> struct ir_buf {$' "$T/at_start"
grep -q '^    nins = 2$' "$T/at_start"
grep -q '^    ops = \[7, 9, 0, 0\]$' "$T/at_start"
grep -q '^  mcode = 0x0$' "$T/at_start"
grep -q '^  state = 1 (RECORDING)$' "$T/at_start"
grep -q '^  hot = 5$' "$T/at_start"
grep -q '^  looped = 1$' "$T/at_start"
grep -q '^  tag = "abc"$' "$T/at_start"
grep -q '^    ratio = 0.5$' "$T/at_start"

# At the end: compiled, 4 IR instructions, the new name, the code pointer resolved.
$J show "$addr" --vm "$T/vm" | tee "$T/at_end"
grep -q "^  name = 0x[0-9a-f]* -> \"loop@12'\"$" "$T/at_end"
grep -q '^    nins = 4$' "$T/at_end"
grep -q '^    ops = \[7, 9, 11, 13\]$' "$T/at_end"
grep -q '^  mcode = 0x[0-9a-f]* -> trace_1+0x0$' "$T/at_end"
grep -q '^  state = 2 (COMPILED)$' "$T/at_end"

# A typedef'd hint decodes too.
irs=$($J list | awk '$4 == "memory" && $8 == "IRBuf" {print $5; exit}')
$J show "$irs" --vm "$T/vm" | tee "$T/ir"
grep -q '^struct ir_buf {$' "$T/ir"
echo PASS
