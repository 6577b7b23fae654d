/*
 * absent_win.c — the channels left out of the Windows build: perf map and jitdump (no perf
 * there), elfmap (ELF file mappings for perf and valgrind), gdb (WinDbg and Visual Studio
 * do not read the GDB JIT interface; a mingw gdb, whose BFD knows ELF, might, but nothing
 * here tests it). Their files are not built for Windows; these entries give the core their
 * names and bits, and no open hook (channel.h): asking for one by name is reported, "all"
 * means the others.
 */
#include "channels/channel.h"

#define STUB(U, l, w, r) STUB_##w(U, l)
#define STUB_0(U, l) const struct jh__channel_ops jh__##l##_ops = { .name = #l, .bit = JH_##U };
#define STUB_1(U, l)
JH__CHANNELS(STUB)
