#!/usr/bin/env bash
# The LLVM adapter under gdb and lldb: LLJIT runs C compiled to IR by clang-14 -g -O1
# (tests/programs/llvm/), the adapter alone tells the debuggers (no LLVM GDB listener):
# `break leaf` before `run` hits in the JIT-compiled C function, and `bt` shows the C
# file:line of every JIT frame (two of them frameless: only the object's CFI unwinds them)
# down to the host's main. Through JITLink (the ORC plugin) and RuntimeDyld (the listener),
# and in gdb's deferred mode (JITHERALD_GDB_DEFER=1: one debugger stop per object).
# Control: the same runs without the adapter never stop in leaf.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
JIT=$(program llvm_jit)
IR=$B/tests/programs/llvm
SRC=$R/tests/programs/llvm
RUN=("$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 10)
line() { grep -n -F -- "$2" "$SRC/$1" | head -1 | cut -d: -f1; }  # FILE TEXT -> its line
L_OPEN=$(line chain.c 'long leaf(long n)'); L_OPEN=$((L_OPEN + 1))  # leaf's '{'
L_BODY=$(line chain.c 'host_callback(n);')                          # after its prologue
L_MIDDLE=$(line chain.c 'leaf(n + 1)')
L_ENTRY=$(line entry.c 'middle(n)')

gdb_run() { # linker...
    JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'set breakpoint pending on' -ex 'break leaf' \
        -ex run -ex bt --args "$JIT" "$@" "${RUN[@]}" 2>&1 | grep -v '^\[' || true
}

# (--rtdyld twice: the second time in gdb's deferred mode, where code reaches the debugger
# at jh_flush(), which the adapter calls after each object)
for linker in --jitlink --rtdyld --rtdyld-deferred; do
    if [ $linker = --rtdyld-deferred ]; then
        JITHERALD_GDB_DEFER=1 gdb_run --rtdyld > "$T/gdb$linker"
    else
        gdb_run "$linker" > "$T/gdb$linker"
    fi
    cat "$T/gdb$linker"
    grep -Eq "^Breakpoint 1, leaf \(.*\) at /.*/chain\.c:($L_OPEN|$L_BODY)$" "$T/gdb$linker" ||
        fail "$linker: gdb did not stop in leaf at chain.c:$L_OPEN or $L_BODY"
    # frames in order, each JIT frame with its file:line, then the host down to main
    awk -v m="$L_MIDDLE" -v e="$L_ENTRY" '
        /^#0 +leaf \(.*\) at \/.*\/chain\.c:/ { s = 1; next }
        s == 1 && $0 ~ "^#1 +0x[0-9a-f]+ in middle \\(.*\\) at /.*/chain\\.c:" m "$" { s = 2; next }
        s == 2 && $0 ~ "^#2 +0x[0-9a-f]+ in jit_entry \\(.*\\) at /.*/entry\\.c:" e "$" { s = 3; next }
        s == 3 && /^#[0-9]+ .*main \(argc=/ { s = 4 }
        END { exit s == 4 ? 0 : 1 }' "$T/gdb$linker" ||
        fail "$linker: bt is not leaf <- middle (chain.c:$L_MIDDLE) <- jit_entry (entry.c:$L_ENTRY) <- ... main"
    echo "PASS gdb $linker: break leaf, bt with file:line down to main"
done

# C++: the debuggers get the object's mangled symbol (`break deep` finds it, as gdb
# demangles it) and the demangled name in the DWARF, which bt shows
L_DEEP=$(line guards.cc 'host_throw(n);')
L_GUARDED=$(line guards.cc 'return deep(n) + 1;')
JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'set breakpoint pending on' -ex 'break deep' \
    -ex run -ex bt --args "$JIT" --catch --jitlink "$IR/guards.ll" -- cxx_entry 4 2>&1 |
    grep -v '^\[' > "$T/gdb-cxx" || true
cat "$T/gdb-cxx"
awk -v d="$L_DEEP" -v g="$L_GUARDED" '
    $0 ~ "^#0 +deep\\(long\\) .* at /.*/guards\\.cc:" d "$" { s = 1; next }
    s == 1 && $0 ~ "^#1 +0x[0-9a-f]+ in guarded\\(long\\) .* at /.*/guards\\.cc:" g "$" { s = 2; next }
    s == 2 && /^#2 +0x[0-9a-f]+ in cxx_entry / { s = 3; next }
    s == 3 && /^#[0-9]+ .*main \(argc=/ { s = 4 }
    END { exit s == 4 ? 0 : 1 }' "$T/gdb-cxx" ||
    fail "C++: no break deep, or bt is not deep(long) (guards.cc:$L_DEEP) <- guarded(long) (guards.cc:$L_GUARDED) <- cxx_entry <- ... main"
echo "PASS gdb C++: break deep, bt with the demangled names and file:line down to main"

gdb_run --jitlink --no-jitherald > "$T/gdb-control"
! grep -q '^Breakpoint 1, leaf' "$T/gdb-control" || fail "control: gdb stops in leaf without the adapter"
echo "PASS control: without the adapter gdb never stops in leaf"

# lldb (-b stops at the first failing command: bt is the last one)
require_tool lldb lldb
for linker in --jitlink --rtdyld; do
    JITHERALD=gdb timeout 120 lldb --no-lldbinit -b -o 'b leaf' -o run -o bt -- "$JIT" "$linker" \
        "${RUN[@]}" 2>&1 | grep -v -e '^Traceback' -e '^  File "<string>"' -e '^ModuleNotFoundError' \
        -e '^NameError' > "$T/lldb$linker" || true
    cat "$T/lldb$linker"
    grep -Eq 'stop reason = breakpoint 1\.1' "$T/lldb$linker" || fail "$linker: lldb did not stop in leaf"
    grep -Eq "frame #0: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)\`leaf at chain\.c:($L_OPEN|$L_BODY):" "$T/lldb$linker"
    grep -Eq "frame #1: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)\`middle at chain\.c:$L_MIDDLE:" "$T/lldb$linker"
    grep -Eq "frame #2: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)\`jit_entry at entry\.c:$L_ENTRY:" "$T/lldb$linker"
    grep -Eq 'frame #[0-9]+: 0x[0-9a-f]+ llvm_jit`main\(argc=' "$T/lldb$linker"
    echo "PASS lldb $linker: b leaf, bt with file:line down to main"
done
