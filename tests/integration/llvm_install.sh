#!/usr/bin/env bash
# `make install` gives an LLVM JIT the adapter: <jitherald/llvm.h>, libjitherald-llvm
# (shared and static) and jitherald-llvm.pc, with which a program using LLJIT compiles,
# links and runs, and its JIT-compiled function reaches the perf map. Only jitherald::*
# leaves the installed shared library.
. "$(dirname "$0")/lib.sh"
program llvm_jit >/dev/null          # skips, saying why, where LLVM 14 is missing
cd "$R"
make -s BUILD="${BUILD:-build}" install PREFIX="$T/prefix" >/dev/null
for f in include/jitherald/llvm.h lib/libjitherald-llvm.a lib/libjitherald-llvm.so \
         lib/libjitherald-llvm.so.0 lib/pkgconfig/jitherald-llvm.pc; do
    [ -e "$T/prefix/$f" ] || fail "missing after install: $f"
done
export PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig"
c++ -std=c++17 -o "$T/user" "$R/tests/programs/llvm_install_user.cc" \
    $(pkg-config --cflags --libs jitherald-llvm) -Wl,-rpath,"$T/prefix/lib" ||
    fail "a program does not build with pkg-config jitherald-llvm"
read -r pid answer <<<"$(JITHERALD=perfmap "$T/user")"
at_exit "rm -f /tmp/perf-$pid.map"
[ "$answer" = 42 ] || fail "the JIT-compiled function returned '$answer'"
grep -Eq '^[0-9a-f]+ [0-9a-f]+ installed_answer$' "/tmp/perf-$pid.map" ||
    fail "installed_answer not in /tmp/perf-$pid.map"
bad=$(nm -D -C --defined-only "$T/prefix/lib/libjitherald-llvm.so" | awk '$2 != "A"' | cut -d' ' -f3- |
      grep -v '^jitherald::' || true)
[ -z "$bad" ] || fail "unexpected exports: $bad"
echo "PASS install + pkg-config jitherald-llvm: an LLJIT program builds, runs and is announced"
