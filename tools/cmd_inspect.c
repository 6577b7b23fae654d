/*
 * cmd_inspect.c — `jitherald inspect FILE`: a jitdump or perf map printed record by record
 * (header, names, addresses, line tables, unwind rules), then checked as `jitherald check`
 * checks it (cmd_check.c): the listing stops at the first problem, which it names.
 *
 *     $ jitherald inspect /tmp/jitherald-1000/jit-4242.dump
 *     jitdump host-endian, version 1, header 40 bytes, elf_mach 62 (x86-64), pid 4242, ...
 *     0x00000028 DEBUG_INFO     ts 1724894979652 code 0x7f6d77e00000, 6 entries
 *           0x7f6d77e00000 (+0x0) calls.mini:5
 *     ...
 *     $ jitherald inspect /tmp/perf-4242.map
 */
#include "cli.h"

int jhc_cmd_inspect(int argc, char **argv) { return jhc_check_file("inspect", argc, argv, true); }
