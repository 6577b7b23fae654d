/*
 * symbol.h — names a debugger can break on. gdb's linespec reads `break TRACE_1 x.lua:10`
 * as a function followed by junk and keeps the breakpoint pending forever; lldb splits at
 * the colon. A JIT's display name ("TRACE_1 x.lua:10", "<lambda> at foo.py:3") therefore
 * gets a symbol beside it, for symbol tables: every run of bytes other than [A-Za-z0-9_]
 * becomes one '_' ("TRACE_1_x_lua_10"), a leading digit gets a '_' before it. Pure.
 */
#ifndef JH__FMT_SYMBOL_H
#define JH__FMT_SYMBOL_H

#include <stdbool.h>
#include <stddef.h>

/* Is name already a symbol (non-empty, [A-Za-z0-9_], not starting with a digit)? */
bool jh__symbol_is_safe(const char *name);

/* The symbol for name, in out[0..cap) NUL-terminated (cut if cap is too small); returns
 * its length without the NUL, which is at most strlen(name) + 1. */
size_t jh__symbol_from_name(char *out, size_t cap, const char *name);

/* The same where out has room for the longest symbol (strlen(name) + 2 bytes): its length;
 * *changed (if not NULL) whether it differs from name, which is exactly when name is not
 * a symbol already (!jh__symbol_is_safe): found on the one walk that derives it. */
size_t jh__symbol_derive(char *out, const char *name, bool *changed);

#endif
