#!/usr/bin/env bash
# jh_code_move keeps gdb's and lldb's view right: a small C program announces two
# functions, copies one elsewhere and calls jh_code_move, then stops. The debugger names
# the new address (with its line) and no longer the old one; the other function is
# untouched. Then the moved function is removed: its name is gone after jh_flush.
set -eu
B=$JH_BUILD; R=$JH_ROOT
command -v gdb >/dev/null || { echo "SKIP gdb not installed"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cat > "$T/move.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "jitherald.h"

__attribute__((noinline)) void stop_here(void *old_code, void *new_code, void *other)
{
    printf("old=%p new=%p other=%p\n", old_code, new_code, other);
    fflush(stdout);
}

int main(void)
{
    jh_ctx *jh;
    if (jh_open(&jh, NULL) < 0 || !(jh_channels(jh) & JH_GDB))
        return 2;
    unsigned char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    static const unsigned char fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x5d, 0xc3 };
    memcpy(page, fn, sizeof fn);
    memcpy(page + 64, fn, sizeof fn);
    const char *files[] = { "move.src" };
    struct jh_line lines[] = { { .offset = 0, .line = 10 }, { .offset = 4, .line = 11 } };
    struct jh_code c = { .sz = sizeof c, .name = "wanderer", .start = page, .size = sizeof fn,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    uint64_t id, other;
    if (jh_code_add(jh, &c, &id) < 0)
        return 3;
    c.name = "stayer";
    c.start = page + 64;
    if (jh_code_add(jh, &c, &other) < 0)
        return 3;
    memcpy(page + 4096, fn, sizeof fn);
    if (jh_code_move(jh, id, page + 4096) < 0)
        return 4;
    stop_here(page, page + 4096, page + 64);
    jh_code_remove(jh, id);
    jh_flush(jh);
    stop_here(page, page + 4096, page + 64);
    jh_close(jh);
    return 0;
}
C
cc -g -O0 -I"$R/include" "$T/move.c" -o "$T/move" -L"$B" -ljitherald -Wl,-rpath,"$B"
JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'break stop_here' -ex run \
    -ex 'echo MOVED\n' -ex 'info symbol new_code' -ex 'info symbol old_code' \
    -ex 'info line *(new_code+4)' -ex 'info symbol other' -ex continue \
    -ex 'echo REMOVED\n' -ex 'info symbol new_code' -ex 'info symbol other' \
    "$T/move" > "$T/gdb" 2>&1 || true
cat "$T/gdb"
sed -n '/^MOVED/,/^REMOVED/p' "$T/gdb" > "$T/moved"
grep -Eq '^wanderer in section \.text of <in-memory@0x' "$T/moved"
grep -q '^No symbol matches old_code\.' "$T/moved"
grep -Eq '^Line 11 of "move\.src" starts at address 0x[0-9a-f]+ <wanderer\+4>' "$T/moved"
grep -Eq '^stayer in section \.text of <in-memory@0x' "$T/moved"
sed -n '/^REMOVED/,$p' "$T/gdb" > "$T/removed"
grep -q '^No symbol matches new_code\.' "$T/removed"
grep -Eq '^stayer in section \.text of <in-memory@0x' "$T/removed"
echo "PASS gdb"

if command -v lldb >/dev/null; then
    JITHERALD=gdb timeout 120 lldb --no-lldbinit -b -o 'b stop_here' -o run \
        -o 'image lookup -a new_code' -o 'image lookup -a other' -- "$T/move" > "$T/lldb" 2>&1 || true
    cat "$T/lldb"
    grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`wanderer at move\.src:10' "$T/lldb"
    grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`stayer at move\.src:10' "$T/lldb"
    echo "PASS lldb"
fi
