#!/usr/bin/env bash
# `make install PREFIX=...` gives a user everything: the header, both libraries, the CLI
# and a pkg-config file with which a program compiles, links and runs (shared and static).
. "$(dirname "$0")/lib.sh"
cd "$R"
make -s BUILD="${BUILD:-build}" install PREFIX="$T/prefix" >/dev/null
for f in include/jitherald.h lib/libjitherald.a lib/libjitherald.so lib/libjitherald.so.0 \
         lib/pkgconfig/jitherald.pc bin/jitherald; do
    [ -e "$T/prefix/$f" ] || fail "missing after install: $f"
done
"$T/prefix/bin/jitherald" --version | grep -q '^jitherald [0-9]'
# a user's program, built against the installed tree
user=$R/tests/programs/install_user.c
export PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig"
cc -o "$T/user" "$user" $(pkg-config --cflags --libs jitherald) -Wl,-rpath,"$T/prefix/lib"
"$T/user" | grep -q '^0\.[0-9.]* 0$'
cc -o "$T/user_static" "$user" $(pkg-config --cflags jitherald) \
   "$T/prefix/lib/libjitherald.a" $(pkg-config --libs-only-other --static jitherald) -lpthread -ldl
"$T/user_static" | grep -q ' 0$'
# Only jh_* and the GDB hooks are exported.
bad=$(nm -D --defined-only "$T/prefix/lib/libjitherald.so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' \
      | grep -v -e '^jh_' -e '^__jit_debug_' || true)
[ -z "$bad" ] || fail "unexpected exports: $bad"
echo "install + pkg-config OK"
