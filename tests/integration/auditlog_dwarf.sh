#!/usr/bin/env bash
# RaptorJIT-style offline decoding: a small "VM" built with -g
# (tests/programs/auditlog_dwarf_vm.c) logs its own structs as they evolve.
# `jitherald log show ADDR --vm BINARY` decodes each snapshot with the binary's DWARF types
# (struct, typedef, enum, bit-field, array, union), and follows pointers into other logged
# memory as it stood at the chosen moment (--at): a char pointer shows the string, a struct
# pointer the struct, a code pointer the logged function.
. "$(dirname "$0")/lib.sh"
VM=$(program auditlog_dwarf_vm)
JITHERALD=auditlog JITHERALD_DIR=$T "$VM"
log=$(ls "$T"/dwarfvm-*.jhlog)
J="$CLI log $log"
$J events | tee "$T/events"
addr=$(sed -n 's/.*trace_start trace=\(0x[0-9a-f]*\).*/\1/p' "$T/events")
start=$(awk '/trace_start/ {print $1}' "$T/events")

# As it stood at trace_start (--at its record): recording, 2 IR instructions, old name.
$J show "$addr" --vm "$VM" --at "$start" | tee "$T/at_start"
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
$J show "$addr" --vm "$VM" | tee "$T/at_end"
grep -q "^  name = 0x[0-9a-f]* -> \"loop@12'\"$" "$T/at_end"
grep -q '^    nins = 4$' "$T/at_end"
grep -q '^    ops = \[7, 9, 11, 13\]$' "$T/at_end"
grep -q '^  mcode = 0x[0-9a-f]* -> trace_1+0x0$' "$T/at_end"
grep -q '^  state = 2 (COMPILED)$' "$T/at_end"

# A typedef'd hint decodes too.
irs=$($J list | awk '$4 == "memory" && $8 == "IRBuf" {print $5; exit}')
$J show "$irs" --vm "$VM" | tee "$T/ir"
grep -q '^struct ir_buf {$' "$T/ir"
echo PASS
