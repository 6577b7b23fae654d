#!/usr/bin/env bash
# `make install PREFIX=...` gives a user everything: the header, both libraries, the CLI
# and a pkg-config file with which a program compiles, links and runs (shared and static,
# each way the README's install notes give), the man pages (man jitherald, man
# jh_code_add: what they say is man_pages.sh's), and the LuaJIT adapter, which finds the
# installed library by itself.
. "$(dirname "$0")/lib.sh"
cd "$R"
make -s BUILD="${BUILD:-build}" install PREFIX="$T/prefix" >/dev/null
for f in include/jitherald.h lib/libjitherald.a lib/libjitherald.so lib/libjitherald.so.0 \
         lib/pkgconfig/jitherald.pc bin/jitherald share/lua/5.1/jitherald.lua \
         share/lua/5.1/jitherald/x86.lua share/lua/5.1/jitherald/arm64.lua \
         share/man/man1/jitherald.1 share/man/man3/jitherald.3 share/man/man3/jh_code_add.3; do
    [ -e "$T/prefix/$f" ] || fail "missing after install: $f"
done
"$T/prefix/bin/jitherald" --version | grep -q '^jitherald [0-9]'
# a user's program, built against the installed tree
user=$R/tests/programs/install_user.c
export PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig"
cc -o "$T/user" "$user" $(pkg-config --cflags --libs jitherald) -Wl,-rpath,"$T/prefix/lib"
"$T/user" | grep -q '^0\.[0-9.]* 0$'
# without the rpath it does not start (README: "Otherwise it fails to start"), and each
# remedy the README gives makes it start
cc -o "$T/user_norpath" "$user" $(pkg-config --cflags --libs jitherald)
"$T/user_norpath" 2>"$T/norpath.err" && fail "a program without rpath found the library under a prefix"
grep -q 'libjitherald.so.0' "$T/norpath.err" || fail "no loader message: $(cat "$T/norpath.err")"
LD_LIBRARY_PATH=$(pkg-config --variable=libdir jitherald) "$T/user_norpath" | grep -q ' 0$' ||
    fail "LD_LIBRARY_PATH=\$(pkg-config --variable=libdir jitherald) does not help"
cc -o "$T/user_static" "$user" $(pkg-config --cflags jitherald) \
   "$T/prefix/lib/libjitherald.a" $(pkg-config --libs-only-other --static jitherald) -lpthread -ldl
"$T/user_static" | grep -q ' 0$'
# The installed man pages render with no warning, links (jh_NAME.3) included, and man
# finds them by name in the installed tree.
require_tool man man-db
for f in "$T"/prefix/share/man/man1/jitherald.1 "$T"/prefix/share/man/man3/*.3; do
    err=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null) || fail "man -l $f: $err"
    [ -z "$err" ] || fail "man -l $f: $err"
done
MANWIDTH=200 man -M "$T/prefix/share/man" 3 jh_code_add 2>&1 | grep -q 'int jh_code_add(jh_ctx \*ctx' ||
    fail "man jh_code_add does not show the API page"
MANWIDTH=200 man -M "$T/prefix/share/man" 1 jitherald 2>&1 | grep -q '^   jitherald run$' ||
    fail "man jitherald does not show the CLI page"
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
