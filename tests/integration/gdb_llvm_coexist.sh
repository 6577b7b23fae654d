#!/usr/bin/env bash
# Two JIT interfaces in one process: LLVM 14 ORC with its GDB listener (its own
# __jit_debug_descriptor@@LLVM_14) and jitherald's gdb channel. gdb finds a descriptor in
# every objfile, so it names the code of both JITs; we never touch LLVM's list. When
# libLLVM comes first in the link order, jh_open warns that lldb will watch LLVM's
# interface only; when libjitherald comes first, lldb names our code. Statically linked,
# LLVM's listener shares our list; we say so.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
# tests/programs/gdb_coexist.c, linked three ways (tests/programs/programs.mk)
LLVM_FIRST=$(program gdb_coexist_llvm_first)
JH_FIRST=$(program gdb_coexist_jh_first)
STATIC=$(program gdb_coexist_static)

for prog in llvm_first jh_first; do
    bin=$LLVM_FIRST; [ $prog = jh_first ] && bin=$JH_FIRST
    JITHERALD=gdb JITHERALD_DEBUG=1 timeout 120 gdb -q -nx -batch -ex 'break stop_here' -ex run \
        -ex 'info symbol llvm_code' -ex 'info symbol jh_code' "$bin" > "$T/$prog.gdb" 2>&1 || true
    cat "$T/$prog.gdb"
    grep -Eq '^llvm_fn in section \.text of <in-memory@0x' "$T/$prog.gdb"
    grep -Eq '^jh_fn in section \.text of <in-memory@0x' "$T/$prog.gdb"
    echo "PASS gdb sees both JITs ($prog)"
done
grep -q 'also defines __jit_debug_descriptor and comes first' "$T/llvm_first.gdb"
! grep -q 'also defines __jit_debug_descriptor' "$T/jh_first.gdb" ||
    fail "the warning is given when libjitherald comes first"
echo "PASS the warning names the case where lldb would not see us"

# Static: LLVM 14's static GDB listener only references the two symbols, so it resolves
# them to ours and edits our list (under its own lock). Both JITs are named; jitherald warns.
{
    JITHERALD=gdb JITHERALD_DEBUG=1 timeout 120 gdb -q -nx -batch -ex 'break stop_here' -ex run \
        -ex 'info symbol llvm_code' -ex 'info symbol jh_code' "$STATIC" > "$T/static.gdb" 2>&1 || true
    cat "$T/static.gdb"
    grep -Eq '^llvm_fn in section \.text of <in-memory@0x' "$T/static.gdb"
    grep -Eq '^jh_fn in section \.text of <in-memory@0x' "$T/static.gdb"
    grep -q "another JIT adds entries to jitherald's __jit_debug_descriptor list" "$T/static.gdb"
    echo "PASS static link: one shared list, both named, the hazard reported"
}

# the same through lldb: a skip (loud) where lldb is missing, never a silent pass
require_tool lldb lldb
JITHERALD=gdb timeout 120 lldb --no-lldbinit -b -o 'b stop_here' -o run -o 'frame variable jh_code' \
    -o 'image lookup -a jh_code' -- "$JH_FIRST" > "$T/lldb" 2>&1 || true
cat "$T/lldb"
grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`jh_fn' "$T/lldb"
echo "PASS lldb names our code when we come first"
