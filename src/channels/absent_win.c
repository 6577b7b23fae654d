/*
 * absent_win.c — the channels left out of the Windows build: perf map and jitdump (no perf
 * there), elfmap (ELF file mappings for perf and valgrind), gdb (WinDbg and Visual Studio
 * do not read the GDB JIT interface; a mingw gdb, whose BFD knows ELF, might, but nothing
 * here tests it). Their files are not built for Windows; these entries give the core their
 * names and bits, and no open hook (channel.h): asking for one by name is reported, "all"
 * means the others.
 */
#include "channels/channel.h"

const struct jh__channel_ops jh__perfmap_ops = { .name = "perfmap", .bit = JH_PERFMAP };
const struct jh__channel_ops jh__jitdump_ops = { .name = "jitdump", .bit = JH_JITDUMP };
const struct jh__channel_ops jh__gdb_ops = { .name = "gdb", .bit = JH_GDB };
const struct jh__channel_ops jh__elfmap_ops = { .name = "elfmap", .bit = JH_ELFMAP };
