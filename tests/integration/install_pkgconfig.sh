#!/usr/bin/env bash
# `make install PREFIX=...` gives a user everything: the header, both libraries, the CLI
# and a pkg-config file with which a program compiles, links and runs (shared and static),
# and the LuaJIT adapter, which finds the installed library by itself.
. "$(dirname "$0")/lib.sh"
cd "$R"
make -s BUILD="${BUILD:-build}" install PREFIX="$T/prefix" >/dev/null
for f in include/jitherald.h lib/libjitherald.a lib/libjitherald.so lib/libjitherald.so.0 \
         lib/pkgconfig/jitherald.pc bin/jitherald share/lua/5.1/jitherald.lua; do
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
# the LuaJIT adapter, as `luajit -l jitherald` finds it under a prefix, with no
# JITHERALD_LIB: it loads the installed library and names the trace in the perf map
if command -v luajit >/dev/null; then
    printf 'local s = 0\nfor i = 1, 1000 do s = s + i end\nprint(s)\n' >"$T/loop.lua"
    env -u JITHERALD_LIB JITHERALD=perfmap LUA_PATH="$T/prefix/share/lua/5.1/?.lua;;" \
        sh -c "$PID_EXEC" "$T/lj.pid" luajit -l jitherald "$T/loop.lua" >"$T/lj.out" 2>&1 ||
        fail "luajit with the installed adapter: $(cat "$T/lj.out")"
    map=/tmp/perf-$(cat "$T/lj.pid").map
    at_exit "rm -f $map"
    grep -q ' TRACE_1 loop.lua:2$' "$map" || fail "the installed adapter named nothing: $(cat "$T/lj.out")"
else
    skip "luajit not installed: the LuaJIT adapter's install is not checked (the rest passed)"
fi
echo "install + pkg-config OK"
