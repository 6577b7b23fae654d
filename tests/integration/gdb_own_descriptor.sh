#!/usr/bin/env bash
# gdb_own_descriptor.sh — a program that defines its own __jit_debug_descriptor and
# __jit_debug_register_code, as PHP's executable does (tests/programs/gdb_own_descriptor.c,
# built with and without -rdynamic), running jitherald's gdb channel: gdb names jitherald's
# code (`info symbol`, a pending `break jh_fn` hits, bt from it), with the library as built
# and stripped; jitherald never touches the program's own descriptor or hook; the warning
# says what happens. Control: the same library with its descriptor's section not marked
# executable (as before the fix) is invisible to gdb: gdb 13 then reads the program's
# descriptor (docs/gdb.md, "A program with its own descriptor").
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
PLAIN=$(program gdb_own_descriptor)
RDYN=$(program gdb_own_descriptor_rdynamic)
LIB=$B/libjitherald.so.0

mkdir "$T/stripped" "$T/unmarked"
strip -o "$T/stripped/libjitherald.so.0" "$LIB"
! readelf -W -S "$T/stripped/libjitherald.so.0" | grep -q '\.symtab' || fail "strip left .symtab"

gdb_run() { # NAME BINARY [LIBDIR]: gdb's view at stop_here and in jh_fn
    local name=$1 bin=$2 dir=${3:-}
    env JITHERALD=gdb ${dir:+LD_LIBRARY_PATH=$dir} timeout 120 gdb -q -nx -batch \
        -ex 'set breakpoint pending on' -ex 'break jh_fn' -ex 'break stop_here' -ex run \
        -ex bt -ex 'info symbol $pc' -ex continue -ex 'info symbol jh_code' \
        -ex 'info sharedlibrary' -ex continue "$bin" > "$T/$name.gdb" 2>&1 || true
    cat "$T/$name.gdb"
}
for v in plain rdynamic; do
    bin=$PLAIN; [ $v = rdynamic ] && bin=$RDYN
    for lib in built stripped; do
        dir=; [ $lib = stripped ] && dir=$T/stripped
        gdb_run "$v.$lib" "$bin" "$dir"
        f=$T/$v.$lib.gdb
        [ $lib = built ] || grep -q "$T/stripped/libjitherald.so.0" "$f" ||
            fail "$v.$lib: gdb did not load the stripped library"
        grep -Eq '^Breakpoint 1, 0x[0-9a-f]+ in jh_fn \(\)' "$f" ||
            fail "$v.$lib: the pending breakpoint on jh_fn never hit"
        grep -Eq '^#0 +0x[0-9a-f]+ in jh_fn \(\)' "$f" || fail "$v.$lib: bt does not name jh_fn"
        grep -Eq '^#1 +0x[0-9a-f]+ in main \(\)' "$f" ||
            fail "$v.$lib: bt does not go from jh_fn to main"
        grep -Eq '^jh_fn( \+ [0-9]+)? in section \.text of <in-memory@0x' "$f" ||
            fail "$v.$lib: info symbol does not name jh_fn"
        grep -q 'also defines __jit_debug_descriptor and comes first: gdb names the code of both, lldb only that one'"'"'s' "$f" ||
            fail "$v.$lib: no warning, or not what happens"
        grep -q 'exited normally' "$f" ||
            fail "$v.$lib: the program's own descriptor or hook was touched (see its stderr)"
        echo "PASS $v, $lib library: gdb names jitherald's code next to the program's descriptor"
    done
done

# the unmarked control: SHF_EXECINSTR (4) cleared again in .jh_gdb_jit's sh_flags
cp "$LIB" "$T/unmarked/libjitherald.so.0"
unmark() { # FILE: the byte scripts/gdb-section.sh set, back to what ld wrote
    local f=$1 shoff shentsize idx at
    shoff=$(od -An -tu8 -j40 -N8 "$f" | tr -d ' ')
    shentsize=$(od -An -tu2 -j58 -N2 "$f" | tr -d ' ')
    idx=$(readelf -W -S "$f" | sed -n 's/^ *\[ *\([0-9]*\)\] \.jh_gdb_jit .*/\1/p')
    at=$((shoff + idx * shentsize + 8))
    printf '\003' | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
}
unmark "$T/unmarked/libjitherald.so.0"
readelf -W -S "$T/unmarked/libjitherald.so.0" | grep -Eq '\.jh_gdb_jit +PROGBITS .* WA ' ||
    fail "the control library is still marked"

for v in plain rdynamic; do
    bin=$PLAIN; [ $v = rdynamic ] && bin=$RDYN
    gdb_run "$v.unmarked" "$bin" "$T/unmarked"
    f=$T/$v.unmarked.gdb
    grep -q "$T/unmarked/libjitherald.so.0" "$f" || fail "$v.unmarked: not the control library"
    grep -q '^Breakpoint 2, stop_here ' "$f" || fail "$v.unmarked: the control did not run"
    ! grep -q '^Breakpoint 1, ' "$f" ||
        fail "$v.unmarked: gdb sees the code without the marked section: the control is wrong"
    echo "PASS $v, control: without the executable-marked section gdb reads the program's descriptor"
done
echo PASS
