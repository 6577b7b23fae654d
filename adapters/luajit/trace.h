/*
 * trace.h — what libjitherald carries for the LuaJIT adapter (jitherald.lua): LuaJIT's
 * "trace" and "record" events handled in C (events.c, through Lua's C API), and a trace
 * turned into jh_code_add (trace.c: its guards, its line table, its frame).
 *
 * LuaJIT runs event handlers with the JIT off: in interpreted Lua the same work cost
 * ~20 µs a trace (funcinfo tables, numbers formatted into strings and parsed back, FFI
 * field stores at ~50 ns each). libjitherald does not link against LuaJIT: the adapter
 * hands it the C API's functions (jh_luajit_api, from the FFI's ffi.C) and gets the
 * handlers through package.loadlib (jh_luajit_open).
 *
 * Not part of the public API (include/jitherald.h): the adapter declares these with
 * ffi.cdef and nothing else should call them.
 */
#ifndef JH_LUAJIT_TRACE_H
#define JH_LUAJIT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "jitherald.h"

/* How the trace's guards reach their exit stubs, and how its frame is read. */
enum jh_lj_arch {
    JH_LJ_X86 = 1,     /* jcc rel32 / jmp rel32 (lj_asm_x86.h); frames: x64 GC64 */
    JH_LJ_ARM64 = 2,   /* b.cond, cbz/cbnz, tbz/tbnz, b (lj_asm_arm64.h); no frames */
};

/* The interpreter's frame every trace runs in (set up once, jitherald/x86.lua's
 * trace_frame), and LuaJIT's personality routine for its code areas (NULL: none). */
struct jh_lj_frame {
    uint32_t arch;                /* enum jh_lj_arch: only JH_LJ_X86 frames are read */
    uint32_t vm_cfa;              /* CFA = rsp + vm_cfa when a trace is entered */
    uint32_t nsaved_regs;
    const struct jh_saved_reg *saved_regs;
    const void *personality;
};

/* The part of Lua 5.1's C API events.c uses (lua.h), as function pointers: the adapter
 * fills it from ffi.C (LuaJIT exports its API to C modules). */
typedef struct lua_State lua_State;
typedef int (*jh_lua_cfn)(lua_State *L);
/* lua.h's lua_Debug (Lua 5.1, LUA_IDSIZE 60), with room to spare after its private part */
struct jh_lua_debug {
    int event;
    const char *name, *namewhat, *what, *source;
    int currentline, nups, linedefined, lastlinedefined;
    char short_src[60];
    int i_ci;
    char spare[64];
};
struct jh_lua_api {
    int (*gettop)(lua_State *L);
    void (*settop)(lua_State *L, int idx);
    void (*pushvalue)(lua_State *L, int idx);
    void (*remove)(lua_State *L, int idx);
    int (*type)(lua_State *L, int idx);
    double (*tonumber)(lua_State *L, int idx);
    ptrdiff_t (*tointeger)(lua_State *L, int idx);
    int (*toboolean)(lua_State *L, int idx);
    const char *(*tolstring)(lua_State *L, int idx, size_t *len);
    int (*rawequal)(lua_State *L, int a, int b);
    void *(*touserdata)(lua_State *L, int idx);
    void (*pushnil)(lua_State *L);
    void (*pushinteger)(lua_State *L, ptrdiff_t n);
    void (*pushnumber)(lua_State *L, double n);
    void (*pushstring)(lua_State *L, const char *s);
    void (*pushcclosure)(lua_State *L, jh_lua_cfn fn, int n);
    void (*getfield)(lua_State *L, int idx, const char *k);
    void (*setfield)(lua_State *L, int idx, const char *k);
    void (*rawget)(lua_State *L, int idx);
    void (*rawset)(lua_State *L, int idx);
    void (*rawgeti)(lua_State *L, int idx, int n);
    void (*rawseti)(lua_State *L, int idx, int n);
    void (*createtable)(lua_State *L, int narr, int nrec);
    void *(*newuserdata)(lua_State *L, size_t size);
    int (*setmetatable)(lua_State *L, int idx);
    int (*pcall)(lua_State *L, int nargs, int nresults, int errfunc);
    void (*call)(lua_State *L, int nargs, int nresults);
    int (*getstack)(lua_State *L, int level, struct jh_lua_debug *ar);
    int (*getinfo)(lua_State *L, const char *what, struct jh_lua_debug *ar);
    const void *(*topointer)(lua_State *L, int idx);
};

/* Take the C API's functions (copied; all of them non-NULL, else -EINVAL). Once per
 * process is enough: every Lua state of a process has the same. */
JH_API int jh_luajit_api(const struct jh_lua_api *api);

/*
 * A lua_CFunction (package.loadlib(lib, "jh_luajit_open")): open(ctx, config) with ctx a
 * jh_ctx's address as a number and config a table of
 *   lines, events, debug, verify
 *                            booleans: per-guard line tables, audit-log events, messages,
 *                            each bytecode's line read from its frame checked against
 *                            funcinfo's (stats' lines_checked, lines_differ)
 *   arch, stubs_per, group_size, prologue_end
 *                            enum jh_lj_arch (0: none known: traces get their start line)
 *                            and what jitherald/<arch>.lua says of its exit stubs
 *   traceir, tracemc, tracesnap, traceexitstub, funcinfo    jit.util's
 *   tocfunction              lua_tocfunction's address (optional): traceir's C function
 *                            is then called straight, not through lua_call (events.c)
 *   theirs                   event -> the handler the script attached (read per event)
 *   vm_frame                 function(addr): a struct jh_lj_frame's address or nil,
 *                            called once, at the first trace; the adapter keeps it alive
 * Returns on_trace, on_record (for jit.attach: they call theirs[event] after their own
 * work), stats() (a table of counts), live() (the live traces and stub groups,
 * { name, addr, size } each), close() (the handlers do nothing after it; call it
 * before jh_close) and theirs_changed() (call it after each change of theirs: the
 * handlers look up theirs[event] only for the events that had one then). Lua errors: a
 * config that is not one.
 */
JH_API int jh_luajit_open(lua_State *L);

/* ---- between events.c and trace.c -------------------------------------------------- */

/* One recorded bytecode: the IR count when it began, its line and file (-1: unknown). */
struct jh_lj_rec { int32_t nins, line, file; };

/* A trace as the event handlers gathered it. */
struct jh_lj_trace {
    const char *name, *symbol;
    const uint8_t *mcode;
    uint32_t size, loop;               /* loop: its loop part's offset, 0 if none */
    uint64_t addr;
    uint32_t arch;                     /* enum jh_lj_arch, 0: none */
    /* lines (files NULL: none at all): line0 at offset 0 (file 0), then per guard */
    const char *const *files;
    uint32_t nfiles, line0;
    uint32_t nexit, stubs_per, nstub_base;
    const uint64_t *stub_base;         /* exit k's stub: stub_base[k / per] + 4 * (k % per) */
    const int32_t *snap_ref, *snap_slots;   /* per exit: its IR position, its frame size */
    uint32_t nrec;
    const struct jh_lj_rec *rec;
    /* frame (NULL: no unwind description) */
    const struct jh_lj_frame *frame;
    int32_t parent_spadj;              /* a side trace's parent's rsp adjustment, -1 unknown */
    int is_side;
    uint32_t prologue_end;             /* where `break` stops without a frame head, 0 none */
};

/*
 * Announce t: jh_code_add with its line table (per guard the line of the first bytecode
 * whose IR its code computes and the guard's own snapshot line) and its frame
 * (JH_UNWIND_FRAMELESS from its code: a root trace's `add rsp,-N`, a side trace's parent's
 * adjustment plus its own, the tail `add rsp,+N; jmp` of a trace that does not loop).
 * Returns a negative errno (jh_code_add's), or 0 when announced without an unwind
 * description, or 1 + its stack adjustment (what its side traces take as parent_spadj).
 */
int jh__luajit_add(jh_ctx *ctx, const struct jh_lj_trace *t, uint64_t *id);

/* Whether t's line rows are the same when derived from rec (nrec records) in place of
 * t->rec: 1 yes, 0 no, -ENOMEM (events.c's JITHERALD_LUAJIT_VERIFY check). */
int jh__lj_rows_same(const struct jh_lj_trace *t, const struct jh_lj_rec *rec, uint32_t nrec);

#endif
