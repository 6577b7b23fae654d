#!/usr/bin/env bash
# `make install PREFIX=...` gives a user everything: the header, both libraries, the CLI
# and a pkg-config file with which a program compiles, links and runs (shared and static).
set -eu
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$JH_ROOT"
make -s BUILD="${BUILD:-build}" install PREFIX="$tmp/prefix" >/dev/null
for f in include/jitherald.h lib/libjitherald.a lib/libjitherald.so lib/libjitherald.so.0 \
         lib/pkgconfig/jitherald.pc bin/jitherald; do
    [ -e "$tmp/prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
"$tmp/prefix/bin/jitherald" --version | grep -q '^jitherald [0-9]'
cat > "$tmp/user.c" <<'C'
#include <jitherald.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_PERFMAP, .flags = JH_OPT_IGNORE_ENV };
    if (jh_open(&jh, &o)) return 1;
    static char code[32];
    struct jh_code c = { .sz = sizeof c, .name = "installed_fn", .start = code, .size = 32 };
    uint64_t id;
    int rc = jh_code_add(jh, &c, &id);
    jh_close(jh);
    printf("%s %d\n", jh_version(), rc);
    return rc;
}
C
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc -o "$tmp/user" "$tmp/user.c" $(pkg-config --cflags --libs jitherald) -Wl,-rpath,"$tmp/prefix/lib"
"$tmp/user" | grep -q '^0\.[0-9.]* 0$'
cc -o "$tmp/user_static" "$tmp/user.c" $(pkg-config --cflags jitherald) \
   "$tmp/prefix/lib/libjitherald.a" $(pkg-config --libs-only-other --static jitherald) -lpthread -ldl
"$tmp/user_static" | grep -q ' 0$'
# Only jh_* and the GDB hooks are exported.
bad=$(nm -D --defined-only "$tmp/prefix/lib/libjitherald.so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' \
      | grep -v -e '^jh_' -e '^__jit_debug_' || true)
[ -z "$bad" ] || { echo "unexpected exports: $bad"; exit 1; }
echo "install + pkg-config OK"
