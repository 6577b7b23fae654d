--[[
jitherald.lua — LuaJIT's traces in perf, gdb, lldb, valgrind and the audit log, with no
change to the script or to LuaJIT.

    $ JITHERALD=perfmap,gdb luajit -l jitherald script.lua
    $ perf report                 # TRACE_3 script.lua:12 instead of [JIT] tid 4242
    (gdb) break TRACE_3
    (gdb) bt                      # #1 TRACE_3 script.lua:12 () at script.lua:14 ... main

What each trace becomes (jh_code_add, when LuaJIT reports it finished):
  - name "TRACE_<n> <file>:<line>" (the trace's start, as -jv prints it), symbol
    TRACE_<n> for debuggers' `break` (what bt and -jv show);
  - a line table: the start line at offset 0, then per exit branch (a guard) the line of
    the bytecode its snapshot was taken at, from LuaJIT's "record" events (each gives the
    bytecode and, through traceir, the IR count when it began: a snapshot's IR position
    finds its bytecode; jit.util gives no snapshot's bytecode before LuaJIT 2.1 of 2026;
    the bytecode's line is read from its executing frame). Guards in the loop part of a
    looping trace are copies LuaJIT made of the guards before the loop; each gets the line
    of the one it copies, matched by frame size in order (approximate: LuaJIT drops the
    copies it can prove redundant);
  - how to unwind it (x64, GC64 builds): a trace runs inside the interpreter's frame. Its
    CFA, rsp + 80 there, and where rbp/rbx/r15/r14 are saved come from LuaJIT's own
    .eh_frame for lj_vm (read once, from the FDE of lj_vm_exit_handler, where the exit
    stubs jump, by the library: jh_frame_at); BC_JLOOP then enters a trace after
    `sub rsp,16`, with r12 and r13 saved in the frame's lowest slots (vm_x64.dasc), so a
    trace starts at CFA = rsp + 96. Each trace then moves rsp by its own amount, found in
    its machine code: a root trace starts with `add rsp,-N`, a side trace starts at its
    parent's adjustment and adds the difference, and a trace that does not loop ends with
    `add rsp,+N; jmp`. Code of
    another shape gets no unwind description (counted in stats().no_unwind). With it goes
    LuaJIT's personality routine, from LuaJIT's FDE for the code area: the unwind channel
    then describes the trace with it (Lua errors through the trace still reach LuaJIT,
    backtrace() walks through) and leaves the rest of the area to LuaJIT's FDE.
What differs per architecture is said by jitherald/x86.lua (x86 and x64: exit stub
groups, guards, the frame) and jitherald/arm64.lua (guards; no frame yet); the machine
code itself is read in C (adapters/luajit/trace.c).
Side traces: linking one patches its parent's exit branches (lj_asm_patchexit), reported as
jh_code_patched over the span of the parent that changed (events.c compares it with the
bytes it announced). x86's exit stub groups are announced as "LuaJIT exit stubs
0-31" and so on. jit.flush() and every flush LuaJIT does on its own remove everything (the
machine code is already unmapped by then); a trace number reused (its trace was flushed
alone, or collected) removes the old trace first.

The handlers are C (adapters/luajit/events.c, in libjitherald, given Lua's C API through
the FFI and turned into Lua functions by package.loadlib): LuaJIT runs event handlers with
the JIT off, where this work in Lua cost ~20 µs a trace. This module loads the library,
reads the interpreter's frame once and shares jit.attach.

jit.attach holds one handler per event: this module keeps its own handlers attached and
they call the script's (or -jv's, -jdump's) after their own work, whichever was attached
first, so both work. The library is found through $JITHERALD_LIB, else where `make
install` put it, else by the dynamic linker's search. Nothing happens when no channel is
switched on.
]]

local ffi = require("ffi")
local bit = require("bit")
local jit = require("jit")
local jutil = require("jit.util")

local band, bor = bit.band, bit.bor
local format = string.format

local M = { enabled = false }
local debug_on = os.getenv("JITHERALD_DEBUG") == "1"

local function say(level, msg)
  if level == "error" or debug_on then
    io.stderr:write("jitherald (luajit): ", msg, "\n")
  end
end

-- ---- the library ----------------------------------------------------------------------

-- The part of include/jitherald.h this module uses, field for field (checked against the
-- C compiler's layout by tests/integration/luajit_abi.sh). Declared in pieces: a script
-- that declared one of them itself does not stop the others.
local CDEF = {
[[typedef struct jh_ctx jh_ctx;
typedef void jh_log_fn(void *arg, int level, const char *msg);]],
[[struct jh_options {
  size_t sz; unsigned channels; const char *dir; const char *engine; unsigned flags;
  jh_log_fn *log; void *log_arg; uint32_t gdb_batch; uint64_t auditlog_limit;
  unsigned attach_channels;
};]],
[[struct jh_line { uint32_t offset, line, column, file; };]],
[[struct jh_cfa_step { uint32_t offset; uint32_t cfa_offset; };]],
[[struct jh_saved_reg { uint32_t reg; int32_t cfa_offset; };]],
[[struct jh_epilogue { uint32_t start, end; };]],
[[struct jh_range { uint32_t start, end; };]],
[[struct jh_code {
  size_t sz; const char *name; const void *start; size_t size;
  const char *const *files; uint32_t nfiles; const struct jh_line *lines; uint32_t nlines;
  int unwind; uint32_t fp_push_end, fp_set_end; const uint8_t *cfi; size_t cfi_len;
  const char *symbol; uint32_t prologue_end; uint32_t cfa_offset; uint32_t ncfa_steps;
  const struct jh_cfa_step *cfa_steps; const struct jh_saved_reg *saved_regs;
  uint32_t nsaved_regs; uint32_t nepilogues; const struct jh_epilogue *epilogues;
  const void *personality; const void *lsda;
  const uint8_t *eh_frame; size_t eh_frame_len; uintptr_t eh_frame_addr;
  uint32_t nra_signed; const struct jh_range *ra_signed; uint32_t ra_key;
};]],
[[struct jh_frame {
  size_t sz; uint32_t flags; uint32_t cfa_offset; struct jh_saved_reg *saved_regs;
  uint32_t nsaved_regs; const void *fde_start; size_t fde_size; const void *personality;
};]],
[[struct jh_attr {
  const char *key; int kind; union { int64_t i; uint64_t u; double d; const char *s; } v;
};]],
[[int jh_open(jh_ctx **ctx, const struct jh_options *opts);]],
[[unsigned jh_channels(const jh_ctx *ctx);]],
[[int jh_code_add(jh_ctx *ctx, const struct jh_code *code, uint64_t *id);]],
[[int jh_code_remove(jh_ctx *ctx, uint64_t id);]],
[[int jh_code_remove_range(jh_ctx *ctx, const void *start, size_t len);]],
[[int jh_code_patched(jh_ctx *ctx, const void *addr, size_t len);]],
[[int jh_flush(jh_ctx *ctx);]],
[[void jh_close(jh_ctx *ctx);]],
[[const char *jh_strerror(int err);]],
[[int jh_log_event(jh_ctx *ctx, const char *name, const struct jh_attr *attrs, size_t nattrs);]],
[[int jh_frame_at(const void *pc, struct jh_frame *out);]],
[[struct jh_lj_frame {
  uint32_t arch; uint32_t vm_cfa; uint32_t nsaved_regs; const struct jh_saved_reg *saved_regs;
  const void *personality;
};]],
[[typedef struct lua_State lua_State;]],
[[struct jh_lua_debug {
  int event; const char *name, *namewhat, *what, *source;
  int currentline, nups, linedefined, lastlinedefined; char short_src[60]; int i_ci;
  char spare[64];
};]],
[[struct jh_lua_api {
  int (*gettop)(lua_State *L); void (*settop)(lua_State *L, int idx);
  void (*pushvalue)(lua_State *L, int idx); void (*remove)(lua_State *L, int idx);
  int (*type)(lua_State *L, int idx); double (*tonumber)(lua_State *L, int idx);
  ptrdiff_t (*tointeger)(lua_State *L, int idx); int (*toboolean)(lua_State *L, int idx);
  const char *(*tolstring)(lua_State *L, int idx, size_t *len);
  int (*rawequal)(lua_State *L, int a, int b); void *(*touserdata)(lua_State *L, int idx);
  void (*pushnil)(lua_State *L); void (*pushinteger)(lua_State *L, ptrdiff_t n);
  void (*pushnumber)(lua_State *L, double n); void (*pushstring)(lua_State *L, const char *s);
  void (*pushcclosure)(lua_State *L, int (*fn)(lua_State *L), int n);
  void (*getfield)(lua_State *L, int idx, const char *k);
  void (*setfield)(lua_State *L, int idx, const char *k);
  void (*rawget)(lua_State *L, int idx); void (*rawset)(lua_State *L, int idx);
  void (*rawgeti)(lua_State *L, int idx, int n); void (*rawseti)(lua_State *L, int idx, int n);
  void (*createtable)(lua_State *L, int narr, int nrec);
  void *(*newuserdata)(lua_State *L, size_t size); int (*setmetatable)(lua_State *L, int idx);
  int (*pcall)(lua_State *L, int nargs, int nresults, int errfunc);
  void (*call)(lua_State *L, int nargs, int nresults);
  int (*getstack)(lua_State *L, int level, struct jh_lua_debug *ar);
  int (*getinfo)(lua_State *L, const char *what, struct jh_lua_debug *ar);
  const void *(*topointer)(lua_State *L, int idx);
};]],
[[int jh_luajit_api(const struct jh_lua_api *api);]],
}
M._cdef = CDEF

local JH_PERFMAP, JH_JITDUMP, JH_GDB, JH_UNWIND, JH_ELFMAP, JH_AUDITLOG = 1, 2, 4, 8, 16, 32

-- Lua's C API, as events.c takes it (struct jh_lua_api, field for field, lua.h's
-- prototypes): LuaJIT exports it to C modules, and so to the FFI's ffi.C.
local LUA_API = {
  "int lua_gettop(lua_State *L);", "void lua_settop(lua_State *L, int idx);",
  "void lua_pushvalue(lua_State *L, int idx);", "void lua_remove(lua_State *L, int idx);",
  "int lua_type(lua_State *L, int idx);", "double lua_tonumber(lua_State *L, int idx);",
  "ptrdiff_t lua_tointeger(lua_State *L, int idx);", "int lua_toboolean(lua_State *L, int idx);",
  "const char *lua_tolstring(lua_State *L, int idx, size_t *len);",
  "int lua_rawequal(lua_State *L, int a, int b);", "void *lua_touserdata(lua_State *L, int idx);",
  "void lua_pushnil(lua_State *L);", "void lua_pushinteger(lua_State *L, ptrdiff_t n);",
  "void lua_pushnumber(lua_State *L, double n);", "void lua_pushstring(lua_State *L, const char *s);",
  "void lua_pushcclosure(lua_State *L, int (*fn)(lua_State *L), int n);",
  "void lua_getfield(lua_State *L, int idx, const char *k);",
  "void lua_setfield(lua_State *L, int idx, const char *k);",
  "void lua_rawget(lua_State *L, int idx);", "void lua_rawset(lua_State *L, int idx);",
  "void lua_rawgeti(lua_State *L, int idx, int n);", "void lua_rawseti(lua_State *L, int idx, int n);",
  "void lua_createtable(lua_State *L, int narr, int nrec);",
  "void *lua_newuserdata(lua_State *L, size_t size);", "int lua_setmetatable(lua_State *L, int idx);",
  "int lua_pcall(lua_State *L, int nargs, int nresults, int errfunc);",
  "void lua_call(lua_State *L, int nargs, int nresults);",
  "int lua_getstack(lua_State *L, int level, struct jh_lua_debug *ar);",
  "int lua_getinfo(lua_State *L, const char *what, struct jh_lua_debug *ar);",
  "const void *lua_topointer(lua_State *L, int idx);",
}

-- The library and the name it was loaded by (package.loadlib takes the same).
local function load_library()
  local tried = {}
  -- `make install` replaces @LIBDIR@ (left as it is in the source tree: skipped)
  local names = { os.getenv("JITHERALD_LIB") or "", "@LIBDIR@/libjitherald.so.0",
                  "libjitherald.so.0" }
  for _, name in ipairs(names) do
    if name ~= "" and not name:find("@" .. "LIBDIR@", 1, true) then
      local ok, lib = pcall(ffi.load, name)
      if ok then return lib, name end
      tried[#tried + 1] = tostring(lib)
    end
  end
  return nil, table.concat(tried, "; ")
end

-- The handlers, C functions of libjitherald (events.c) opened with config: on_trace,
-- on_record, stats, live, close, theirs_changed; or nil and why.
local function open_handlers(lib, name, ctx, config)
  local api = ffi.new("struct jh_lua_api")
  local ok, err = pcall(function()
    for _, decl in ipairs(LUA_API) do
      pcall(ffi.cdef, decl)                    -- the script may have declared it already
      local f = decl:match("lua_([%w_]+)%(")
      api[f] = ffi.C["lua_" .. f]
    end
  end)
  if not ok then return nil, "Lua's C API is not visible to the FFI: " .. tostring(err) end
  if lib.jh_luajit_api(api) ~= 0 then return nil, "Lua's C API is incomplete" end
  local copen, lerr = package.loadlib(name, "jh_luajit_open")
  if not copen then return nil, "package.loadlib: " .. tostring(lerr) end
  local h = { copen(tonumber(ffi.cast("uintptr_t", ctx)), config) }
  -- nothing at all: the library package.loadlib opened is another copy than the FFI's
  if not h[1] then return nil, h[2] or ("jh_luajit_open in " .. name .. " has no C API") end
  return h
end

-- ---- the interpreter's frame ----------------------------------------------------------

local lib, ctx, handlers
-- What this architecture's machine code says (jitherald/x86.lua, jitherald/arm64.lua),
-- loaded by open(); elsewhere traces get their names and start lines.
local ARCH = { x86 = "jitherald.x86", x64 = "jitherald.x86", arm64 = "jitherald.arm64" }
local arch = {}

-- The frame the process's unwinder has at addr, read and translated by the library
-- (jh_frame_at: the same reader as every .eh_frame jitherald takes): CFA = rsp + N and
-- the saved registers ({ reg, cfa_offset } each) when the rules are that plain, and the
-- personality routine of the FDE (a number; nil if none). Nothing when no FDE covers it.
local function frame_at(addr)
  local regs = ffi.new("struct jh_saved_reg[16]")
  local f = ffi.new("struct jh_frame")
  f.sz = ffi.sizeof(f)
  f.saved_regs = regs
  f.nsaved_regs = 16
  local rc = lib.jh_frame_at(ffi.cast("const void *", addr), f)
  if rc ~= 0 then return nil end
  local pers = f.personality ~= nil and tonumber(ffi.cast("uintptr_t", f.personality)) or nil
  if band(f.flags, 1) == 0 then return nil, nil, pers end
  local out = {}
  for i = 0, f.nsaved_regs - 1 do out[#out + 1] = { regs[i].reg, regs[i].cfa_offset } end
  return f.cfa_offset, out, pers
end

-- The interpreter's frame traces run in and LuaJIT's personality routine for its machine
-- code (from the FDE it registers over each code area; none before 2.1's external
-- unwinding), one struct jh_lj_frame for the handlers (its address: they ask once, at the
-- first trace, whose code is at addr), or nil (no unwind descriptions). With the
-- personality, the unwind channel describes each trace with it, the rest of the area left
-- to LuaJIT's FDE: Lua errors thrown through a trace still reach LuaJIT, and backtrace()
-- walks through it. arch.trace_frame: x64 only so far.
local vm_frame, saved_regs_c
local function find_vm_frame(addr)
  local vm_cfa, regs
  if arch.trace_frame then vm_cfa, regs = arch.trace_frame(frame_at) end
  if not vm_cfa then
    say("debug", "interpreter frame not understood: traces get no unwind description")
    return nil
  end
  local nsaved = #regs
  saved_regs_c = ffi.new("struct jh_saved_reg[?]", nsaved)
  for i, r in ipairs(regs) do
    saved_regs_c[i - 1].reg = r[1]
    saved_regs_c[i - 1].cfa_offset = r[2]
  end
  vm_frame = ffi.new("struct jh_lj_frame")
  vm_frame.arch = arch.lj_arch or 0
  vm_frame.vm_cfa, vm_frame.nsaved_regs, vm_frame.saved_regs = vm_cfa, nsaved, saved_regs_c
  local _, _, pers = frame_at(addr)
  if pers then vm_frame.personality = ffi.cast("const void *", pers) end
  say("debug", format("trace frames: CFA = rsp + %d at entry, %d registers saved", vm_cfa,
                      nsaved))
  return tonumber(ffi.cast("uintptr_t", ffi.cast("const void *", vm_frame)))
end

-- ---- sharing jit.attach ----------------------------------------------------------------

local original_attach = jit.attach
local ours = {}          -- event -> our handler, attached to the VM
local theirs = {}        -- event -> the handler the script (or -jv, -jdump) attached

-- The handler attached to event before this module was loaded (-jv given before -l):
-- found in LuaJIT's registry of handlers, where ours takes its place.
local function take_over(event, fn)
  local reg = debug.getregistry()
  local before = {}
  local t = reg._VMEVENTS
  if type(t) == "table" then for k, v in pairs(t) do before[k] = v end end
  original_attach(fn, event)
  t = reg._VMEVENTS
  if type(t) == "table" then
    for k, v in pairs(t) do
      if v == fn and before[k] and before[k] ~= fn then theirs[event] = before[k] end
    end
  end
  handlers[6]()
end

local function install(event, handler)
  ours[event] = handler
  take_over(event, handler)
end

local function attach(fn, event)
  if type(fn) ~= "function" then return original_attach(fn, event) end  -- its own error
  if event == nil then
    for e, h in pairs(theirs) do if h == fn then theirs[e] = nil end end
    handlers[6]()
    return original_attach(fn)
  end
  if ours[event] then
    theirs[event] = fn
    handlers[6]()
    return
  end
  return original_attach(fn, event)
end

-- ---- open ----------------------------------------------------------------------------

local function close()
  if ctx ~= nil then
    for e, d in pairs(ours) do original_attach(d) end
    for e, h in pairs(theirs) do original_attach(h, e) end
    ours, theirs = {}, {}
    jit.attach = original_attach
    if handlers then handlers[5]() end
    lib.jh_close(ctx)
    ctx = nil
    M.enabled = false
  end
end

local function open()
  local err, libname
  lib, libname = load_library()
  if not lib then
    if os.getenv("JITHERALD") then say("error", "cannot load libjitherald: " .. libname) end
    return
  end
  for _, decl in ipairs(CDEF) do pcall(ffi.cdef, decl) end
  if not pcall(ffi.typeof, "struct jh_code") or ffi.sizeof("struct jh_code") ~= 208 then
    say("error", "struct jh_code is declared otherwise than this module expects")
    return
  end
  if ARCH[jit.arch] then
    local ok, a = pcall(require, ARCH[jit.arch])
    if ok then arch = a else say("error", "traces get no lines: " .. tostring(a)) end
  end
  local opts = ffi.new("struct jh_options")
  opts.sz = ffi.sizeof(opts)
  opts.engine = "luajit"
  local pctx = ffi.new("jh_ctx *[1]")
  local rc = lib.jh_open(pctx, opts)
  if rc ~= 0 then
    say("error", "jh_open: " .. ffi.string(lib.jh_strerror(rc)))
    return
  end
  ctx = pctx[0]
  local ch = lib.jh_channels(ctx)
  -- JITHERALD=standby: no channel now, but the library retains every trace for
  -- `jitherald attach` (docs/attach.md), so traces are described in full all the same.
  local standby = false
  for w in (os.getenv("JITHERALD") or ""):gmatch("[^,: ]+") do
    if w == "standby" then standby = true end
  end
  if ch == 0 and not standby then
    lib.jh_close(ctx)
    ctx = nil
    return
  end
  M.channels = ch
  M.standby = standby
  local want_lines = (standby or band(ch, bor(JH_JITDUMP, JH_GDB, JH_ELFMAP, JH_AUDITLOG)) ~= 0)
                     and os.getenv("JITHERALD_LUAJIT_LINES") ~= "0"
  local groups = arch.groups
  -- lua_tocfunction's address: the handlers call jit.util.traceir's C function straight
  -- from C (events.c, ir_count), not through lua_call; nil where the FFI cannot see it
  pcall(ffi.cdef, "int (*lua_tocfunction(lua_State *L, int idx))(lua_State *L);")
  local _, tocf = pcall(function()
    return tonumber(ffi.cast("uintptr_t", ffi.C.lua_tocfunction))
  end)
  handlers, err = open_handlers(lib, libname, ctx, {
    lines = want_lines, events = band(ch, JH_AUDITLOG) ~= 0, debug = debug_on,
    verify = os.getenv("JITHERALD_LUAJIT_VERIFY") == "1",
    arch = arch.lj_arch or 0, stubs_per = groups and groups.per or 0,
    group_size = groups and groups.size or 0, prologue_end = arch.prologue_end or 0,
    traceir = jutil.traceir, tracemc = jutil.tracemc,
    tracesnap = jutil.tracesnap, traceexitstub = jutil.traceexitstub,
    funcinfo = jutil.funcinfo, theirs = theirs, vm_frame = find_vm_frame,
    tocfunction = type(tocf) == "number" and tocf or nil })
  if not handlers then
    say("error", "traces are not announced: " .. err)
    lib.jh_close(ctx)
    ctx = nil
    return
  end
  install("trace", handlers[1])
  if want_lines then install("record", handlers[2]) end
  jit.attach = attach
  M.enabled = true
  -- closed when the Lua state is (before LuaJIT frees its machine code)
  M._gc = newproxy(true)
  getmetatable(M._gc).__gc = close
end

open()

M.close = close
local NO_STATS = { live = 0, traces = 0, patches = 0, removed = 0, groups = 0, failed = 0,
                   no_unwind = 0, lines_checked = 0, lines_differ = 0 }
function M.stats() return handlers and handlers[3]() or NO_STATS end
function M.flush() if ctx ~= nil then lib.jh_flush(ctx) end end
-- The live traces and exit stub groups: { name =, addr =, size = } each (for tests).
function M.live() return handlers and handlers[4]() or {} end

return M
