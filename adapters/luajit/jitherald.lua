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
    the bytecode its snapshot was taken at, from LuaJIT's "record" events. Guards in the
    loop part of a looping trace are copies LuaJIT made of the guards before the loop; each
    gets the line of the one it copies, matched by frame size in order (approximate: LuaJIT
    drops the copies it can prove redundant);
  - how to unwind it (x64, GC64 builds): a trace runs inside the interpreter's frame. Its
    CFA, rsp + 80 there, and where rbp/rbx/r15/r14 are saved come from LuaJIT's own
    .eh_frame for lj_vm (read once, from the FDE of lj_vm_exit_handler, where the exit
    stubs jump, by the library: jh_frame_at); BC_JLOOP then enters a trace after `sub rsp,16`, with r12 and r13 saved
    in the frame's lowest slots (vm_x64.dasc), so a trace starts at CFA = rsp + 96. Each
    trace then moves rsp by its own amount, found in its machine code: a root trace starts
    with `add rsp,-N`, a side trace starts at its parent's adjustment and adds the
    difference, and a trace that does not loop ends with `add rsp,+N; jmp`. Code of
    another shape gets no unwind description (counted in stats().no_unwind). With it goes
    LuaJIT's personality routine, from LuaJIT's FDE for the code area: the unwind channel
    then describes the trace with it (Lua errors through the trace still reach LuaJIT,
    backtrace() walks through) and leaves the rest of the area to LuaJIT's FDE.
The machine code is read by one module per architecture: jitherald/x86.lua (x86 and x64:
exit stub groups, guards, the frame) and jitherald/arm64.lua (guards; no frame yet).
Side traces: linking one patches its parent's exit branches (lj_asm_patchexit), reported as
jh_code_patched over the parent. x86's exit stub groups are announced as "LuaJIT exit stubs
0-31" and so on. jit.flush() and every flush LuaJIT does on its own remove everything (the
machine code is already unmapped by then); a trace number reused (its trace was flushed
alone, or collected) removes the old trace first.

jit.attach holds one handler per event: this module keeps its own handlers attached and
calls the script's (or -jv's, -jdump's) from them, whichever was attached first, so both
work. The library is found through $JITHERALD_LIB, else where `make install` put it, else
by the dynamic linker's search. Nothing happens when no channel is switched on.
]]

local ffi = require("ffi")
local bit = require("bit")
local jit = require("jit")
local jutil = require("jit.util")

local band, bor = bit.band, bit.bor
local format, concat = string.format, table.concat
local funcinfo, traceinfo, tracemc = jutil.funcinfo, jutil.traceinfo, jutil.tracemc
local tracesnap, traceir = jutil.tracesnap, jutil.traceir

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
[[int jh_luajit_add(jh_ctx *ctx, const char *name, const char *symbol, const char *mcode,
  uint32_t size, uint64_t addr, uint32_t loop, const char *lines, size_t lines_len,
  const char *const *files, uint32_t nfiles, const struct jh_lj_frame *frame,
  int32_t parent_spadj, int is_side, uint32_t prologue_end, uint64_t *id);]],
}
M._cdef = CDEF

local JH_PERFMAP, JH_JITDUMP, JH_GDB, JH_UNWIND, JH_ELFMAP, JH_AUDITLOG = 1, 2, 4, 8, 16, 32

local function load_library()
  local tried = {}
  -- `make install` replaces @LIBDIR@ (left as it is in the source tree: skipped)
  local names = { os.getenv("JITHERALD_LIB") or "", "@LIBDIR@/libjitherald.so.0",
                  "libjitherald.so.0" }
  for _, name in ipairs(names) do
    if name ~= "" and not name:find("@" .. "LIBDIR@", 1, true) then
      local ok, lib = pcall(ffi.load, name)
      if ok then return lib end
      tried[#tried + 1] = tostring(lib)
    end
  end
  return nil, table.concat(tried, "; ")
end

-- ---- state ---------------------------------------------------------------------------

local lib, ctx
-- What this architecture's machine code says (jitherald/x86.lua, jitherald/arm64.lua),
-- loaded by open(); elsewhere traces get their names and start lines.
local ARCH = { x86 = "jitherald.x86", x64 = "jitherald.x86", arm64 = "jitherald.arm64" }
local arch = {}
local live = {}          -- trace number -> { id, addr, size, spadj }
local pending = {}       -- trace number -> what its start event said, and its records
local groups = {}        -- exit stub group -> { id, addr }
local counts = { traces = 0, patches = 0, removed = 0, groups = 0, failed = 0, no_unwind = 0 }
local want_lines, want_events = false, false
local sources = setmetatable({}, { __mode = "k" })     -- func -> source file name

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

local function source_of(func)
  local s = sources[func]
  if s == nil then
    local fi = funcinfo(func)
    s = fi.source or false
    if s then
      local c = s:sub(1, 1)
      if c == "@" or c == "=" then s = s:sub(2) end
    end
    sources[func] = s
  end
  return s or nil
end

local id_out = ffi.new("uint64_t[1]")
local code                -- one struct jh_code, reused (made once the type is declared)

-- The interpreter's frame traces run in and LuaJIT's personality routine for its machine
-- code (from the FDE it registers over each code area; none before 2.1's external
-- unwinding), one struct jh_lj_frame for jh_luajit_add, or nil (no unwind descriptions).
-- With the personality, the unwind channel describes each trace with it, the rest of the
-- area left to LuaJIT's FDE: Lua errors thrown through a trace still reach LuaJIT, and
-- backtrace() walks through it.
local vm_frame

-- Anything but a trace (the exit stub groups): a name, an address and a size.
local function announce(name, addr, size)
  ffi.fill(code, ffi.sizeof(code))
  code.sz = ffi.sizeof(code)
  code.name = name
  code.start = ffi.cast("const void *", addr)
  code.size = size
  local rc = lib.jh_code_add(ctx, code, id_out)
  if rc ~= 0 then
    counts.failed = counts.failed + 1
    say("debug", format("%s at 0x%x: %s", name, addr, ffi.string(lib.jh_strerror(rc))))
    return nil
  end
  return id_out[0]
end

local function remove(id)
  if id then
    lib.jh_code_remove(ctx, id)
    counts.removed = counts.removed + 1
  end
end

-- ---- exit stubs ----------------------------------------------------------------------

local function announce_groups(nexit)
  local gs = arch.groups
  if not gs then return end
  for g = 0, math.floor((nexit - 1) / gs.per) do
    local base = gs.base(g)
    local known = groups[g]
    if base and (not known or known.addr ~= base) then
      if known then remove(known.id) end
      local first = g * gs.per
      local name = format("LuaJIT exit stubs %d-%d", first, first + gs.per - 1)
      groups[g] = { id = announce(name, base, gs.size), addr = base, name = name }
      counts.groups = counts.groups + 1
    end
  end
end

-- ---- lines ---------------------------------------------------------------------------
-- Records: the bytecodes LuaJIT recorded for the trace, in order, each with the IR count
-- when it began (record i made IR [nins[i], nins[i+1])) and its file and line, written by
-- on_record straight into C arrays (one trace records at a time). A snapshot at IR
-- position ref was taken while recording the last record that began at or before it. The
-- code of a guard's region (from the previous exit branch to this one) computes the IR
-- between the two snapshots: it gets the line of the first record that made IR there (a
-- call's return address then has the call's line), the exit branch itself its snapshot's
-- line. jh_luajit_lines (adapters/luajit/lines.c) finds the guards and derives the rows:
-- LuaJIT runs these handlers interpreted, where the same work cost ~15 µs a trace.

-- The line of func's bytecode pc, cached (funcinfo builds a table of 15 fields a call).
local line_cache = setmetatable({}, { __mode = "k" })
local function line_of(func, pc)
  local c = line_cache[func]
  if not c then
    c = {}
    line_cache[func] = c
  end
  local l = c[pc]
  if not l then
    l = funcinfo(func, pc).currentline or 0
    c[pc] = l
  end
  return l
end

local rec_tr               -- the trace being recorded, if its lines are wanted
local rec, rec_k, rec_ni = {}, 0, 0   -- its records: IR count, line, file index each
local rec_files, rec_fidx  -- its files (1-based; 0 for C is the start's) and indexes
local rec_func, rec_fi     -- the last record's function and its file index

local function rec_begin(tr, src0)
  rec_tr, rec_k, rec_ni = tr, 0, 0
  rec_files, rec_fidx = { src0 }, { [src0] = 0 }
  rec_func, rec_fi = nil, nil
end

local Cfiles = {}        -- interned C file-name arrays per set of names
local head = {}          -- the data before the records, reused

-- What jh_luajit_add takes to derive the trace's lines (trace.h): a string of numbers,
-- which table.concat builds in C (every FFI store from here costs ~50 ns), and the files.
local function lines_data(tr, st, addr, nexit)
  local line0 = st.line
  if rec_tr ~= tr or not line0 then return nil end
  rec_tr = nil
  local h, n = head, 2
  h[1], h[2] = arch.lj_arch or 0, line0
  if arch.stub_bases and nexit > 0 then
    local nb, per = arch.stub_bases(tr, nexit, addr, h, n + 2)
    h[n + 1], h[n + 2] = per, nb
    n = n + 3 + nb
    h[n] = nexit
    for k = 0, nexit - 1 do
      local s = tracesnap(tr, k)
      if s then h[n + 1], h[n + 2] = s[0], s[1] else h[n + 1], h[n + 2] = 0, -1 end
      n = n + 2
    end
    n = n + 1
    h[n] = rec_k / 3
  else
    h[3], h[4], h[5], h[6] = 1, 0, 0, 0
    n = 6
  end
  local data = concat(h, " ", 1, n)
  if rec_k > 0 and n > 6 then data = data .. " " .. concat(rec, " ", 1, rec_k) end
  local files = rec_files
  local key = #files == 1 and files[1] or concat(files, "\0")
  local cf = Cfiles[key]
  if not cf then
    local c = ffi.new("const char *[?]", #files)
    local keep = {}
    for i, f in ipairs(files) do
      keep[i] = f
      c[i - 1] = f
    end
    cf = { c = c, n = #files, keep = keep }
    Cfiles[key] = cf
  end
  return data, cf
end

-- ---- the events ----------------------------------------------------------------------

-- One attribute array, its keys set once: each FFI store costs ~50 ns in the handler.
local attrs, attr_tr, attr_what
local KEY_TRACE, KEY_WHAT = "trace", "what"   -- the keys' bytes, alive with this module
local function log_event(name, tr, extra)
  if not want_events then return end
  if not attrs then
    attrs = ffi.new("struct jh_attr[2]")
    attrs[0].key, attrs[0].kind, attrs[1].key, attrs[1].kind = KEY_TRACE, 1, KEY_WHAT, 3
    attr_tr, attr_what = attrs[0].v, attrs[1].v
  end
  attr_tr.u = tr
  if extra then attr_what.s = extra end
  lib.jh_log_event(ctx, name, attrs, extra and 2 or 1)
end

local function on_start(tr, func, pc, otr, oex)
  local old = live[tr]
  if old then             -- the number is reused: its trace was flushed alone, or collected
    remove(old.id)
    live[tr] = nil
  end
  local fi = funcinfo(func, pc)
  local side = otr and oex and oex >= 0
  pending[tr] = { func = func, line = fi.currentline, loc = fi.loc or "?",
                  parent = side and otr or nil, exit = side and oex or nil }
  rec_tr = nil
  local src0 = want_lines and source_of(func)
  if src0 then rec_begin(tr, src0) end
end

-- The frame traces run in, read once (arch.trace_frame: x64 only so far), with LuaJIT's
-- personality routine from the FDE over the first trace's code area.
local vm_tried, saved_regs_c = false, nil
local function find_vm_frame(addr)
  vm_tried = true
  local vm_cfa, regs
  if arch.trace_frame then vm_cfa, regs = arch.trace_frame(frame_at) end
  if vm_cfa then
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
  else
    say("debug", "interpreter frame not understood: traces get no unwind description")
  end
end

local function on_stop(tr)
  local st = pending[tr]
  pending[tr] = nil
  if not st then return end
  local mcode, addr, loop = tracemc(tr)
  if not mcode or not addr then return end
  local size = #mcode
  local info = traceinfo(tr)
  local nexit = info and info.nexit or 0
  announce_groups(nexit)
  if not vm_tried then find_vm_frame(addr) end
  local name = format("TRACE_%d %s", tr, st.loc)
  local data, files
  if want_lines then data, files = lines_data(tr, st, addr, nexit) end
  local parent = st.parent and live[st.parent]
  local rc = lib.jh_luajit_add(ctx, name, format("TRACE_%d", tr), mcode, size, addr, loop or 0,
                               data, data and #data or 0, files and files.c, files and files.n or 0,
                               vm_frame, parent and parent.spadj or -1, st.parent and 1 or 0,
                               arch.prologue_end or 0, id_out)
  local id, spadj
  if rc < 0 then
    counts.failed = counts.failed + 1
    say("debug", format("%s at 0x%x: %s", name, addr, ffi.string(lib.jh_strerror(rc))))
  else
    id = id_out[0]
    if rc > 0 then spadj = rc - 1 end
  end
  if not spadj then counts.no_unwind = counts.no_unwind + 1 end
  live[tr] = { id = id, addr = addr, size = size, spadj = spadj, name = name }
  counts.traces = counts.traces + 1
  -- the parent's exit branch now jumps here (lj_asm_patchexit rewrote it, and any other
  -- branch to that exit stub, somewhere in the parent's code)
  if parent and parent.id then
    lib.jh_code_patched(ctx, ffi.cast("const void *", parent.addr), parent.size)
    counts.patches = counts.patches + 1
  end
  log_event("trace_stop", tr, name)
end

-- Everything goes: one jh_code_remove_range over all this context announced, so a channel
-- settles once (gdb rebuilds each image once, not as each quarter of it dies).
local function on_flush()
  local n = lib.jh_code_remove_range(ctx, nil, 2 ^ 63)
  if n > 0 then counts.removed = counts.removed + n end
  live, groups = {}, {}
  pending = {}
  rec_tr = nil
  log_event("trace_flush", 0)
end

local function on_trace(what, tr, func, pc, otr, oex)
  if what == "start" then on_start(tr, func, pc, otr, oex)
  elseif what == "stop" then on_stop(tr)
  elseif what == "abort" then
    pending[tr] = nil
    if rec_tr == tr then rec_tr = nil end
    log_event("trace_abort", tr)
  elseif what == "flush" then on_flush() end
end

local function on_record(tr, func, pc)
  if tr ~= rec_tr or pc < 0 then return end
  local ni = rec_ni
  while traceir(tr, ni + 1) do ni = ni + 1 end      -- the IR so far, without a table
  local fi = rec_fi
  if func ~= rec_func then
    local src = source_of(func)
    fi = -1
    if src then
      fi = rec_fidx[src]
      if not fi then
        rec_files[#rec_files + 1] = src
        fi = #rec_files - 1
        rec_fidx[src] = fi
      end
    end
    rec_func, rec_fi = func, fi
  end
  local k = rec_k
  rec[k + 1], rec[k + 2], rec[k + 3] = ni, line_of(func, pc), fi
  rec_k, rec_ni = k + 3, ni
end

-- ---- sharing jit.attach ----------------------------------------------------------------

local original_attach = jit.attach
local ours = {}          -- event -> our dispatcher, attached to the VM
local theirs = {}        -- event -> the handler the script (or -jv, -jdump) attached

local function dispatcher(event, handler)
  return function(...)
    local ok, err = pcall(handler, ...)
    if not ok then say("error", format("%s event: %s", event, tostring(err))) end
    local h = theirs[event]
    if h then return h(...) end
  end
end

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
end

local function install(event, handler)
  local d = dispatcher(event, handler)
  ours[event] = d
  take_over(event, d)
end

local function attach(fn, event)
  if type(fn) ~= "function" then return original_attach(fn, event) end  -- its own error
  if event == nil then
    for e, h in pairs(theirs) do if h == fn then theirs[e] = nil end end
    return original_attach(fn)
  end
  if ours[event] then
    theirs[event] = fn
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
    lib.jh_close(ctx)
    ctx = nil
    M.enabled = false
  end
end

local function open()
  local err
  lib, err = load_library()
  if not lib then
    if os.getenv("JITHERALD") then say("error", "cannot load libjitherald: " .. err) end
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
  code = ffi.new("struct jh_code")
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
  want_lines = (standby or band(ch, bor(JH_JITDUMP, JH_GDB, JH_ELFMAP, JH_AUDITLOG)) ~= 0) and
               os.getenv("JITHERALD_LUAJIT_LINES") ~= "0"
  want_events = band(ch, JH_AUDITLOG) ~= 0
  install("trace", on_trace)
  if want_lines then install("record", on_record) end
  jit.attach = attach
  M.enabled = true
  -- closed when the Lua state is (before LuaJIT frees its machine code)
  M._gc = newproxy(true)
  getmetatable(M._gc).__gc = close
end

open()

M.close = close
function M.stats()
  local n = 0
  for _ in pairs(live) do n = n + 1 end
  return { live = n, traces = counts.traces, patches = counts.patches,
           removed = counts.removed, groups = counts.groups, failed = counts.failed,
           no_unwind = counts.no_unwind }
end
function M.flush() if ctx ~= nil then lib.jh_flush(ctx) end end
-- The live traces and exit stub groups: { name =, addr =, size = } each (for tests).
function M.live()
  local out = {}
  for tr, t in pairs(live) do
    if t.id then out[#out + 1] = { name = t.name, addr = t.addr, size = t.size } end
  end
  for g, s in pairs(groups) do
    if s.id then out[#out + 1] = { name = s.name, addr = s.addr, size = arch.groups.size } end
  end
  return out
end

return M
