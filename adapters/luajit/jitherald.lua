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
local format = string.format
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
[[int jh_code_patched(jh_ctx *ctx, const void *addr, size_t len);]],
[[int jh_flush(jh_ctx *ctx);]],
[[void jh_close(jh_ctx *ctx);]],
[[const char *jh_strerror(int err);]],
[[int jh_log_event(jh_ctx *ctx, const char *name, const struct jh_attr *attrs, size_t nattrs);]],
[[int jh_frame_at(const void *pc, struct jh_frame *out);]],
}
M._cdef = CDEF

local JH_PERFMAP, JH_JITDUMP, JH_GDB, JH_UNWIND, JH_ELFMAP, JH_AUDITLOG = 1, 2, 4, 8, 16, 32
local JH_UNWIND_NONE, JH_UNWIND_FRAMELESS = 0, 3

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
local arch = { exit_branches = function() return {} end }
local live = {}          -- trace number -> { id, addr, size, spadj }
local pending = {}       -- trace number -> what its start event said, and its records
local groups = {}        -- exit stub group -> { id, addr }
local counts = { traces = 0, patches = 0, removed = 0, groups = 0, failed = 0, no_unwind = 0 }
local want_lines, want_events = false, false
local vm_cfa
local saved_regs_c, nsaved
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

-- LuaJIT's personality routine for its machine code, from the FDE it registers over each
-- code area (a number; false if it has none: LuaJIT before 2.1's external unwinding).
-- Passed with each trace's unwind description, it asks the unwind channel to describe the
-- trace with it, the rest of the area left to LuaJIT's FDE: Lua errors thrown through a
-- trace still reach LuaJIT, and backtrace() walks through it.
local mc_personality

local function announce(name, addr, size, files, lines, nlines, cfa, steps, nsteps, pe, sym)
  ffi.fill(code, ffi.sizeof(code))
  code.sz = ffi.sizeof(code)
  code.name = name
  code.symbol = sym
  code.start = ffi.cast("const void *", addr)
  code.size = size
  if files then
    code.files = files.c
    code.nfiles = files.n
    code.lines = lines
    code.nlines = nlines
    code.prologue_end = pe or 0   -- where `break` stops: the trace's frame is set up
  end
  if cfa then
    code.unwind = JH_UNWIND_FRAMELESS
    code.cfa_offset = cfa
    code.cfa_steps = steps
    code.ncfa_steps = nsteps
    code.saved_regs = saved_regs_c
    code.nsaved_regs = nsaved
    if mc_personality == nil then
      local _, _, pers = frame_at(addr)
      mc_personality = pers or false
    end
    if mc_personality then code.personality = ffi.cast("const void *", mc_personality) end
  end
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
-- Records: the bytecodes LuaJIT recorded for the trace, in order (parallel arrays of func,
-- pc, and the IR count when each began: record i made IR [nins[i], nins[i+1])). A snapshot
-- at IR position ref was taken while recording the last record that began at or before
-- it. The code of a guard's region (from the previous exit branch to this one) computes
-- the IR between the two snapshots: it gets the line of the first record that made IR
-- there (a call's return address then has the call's line), the exit branch itself its
-- snapshot's line.

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

local function rec_loc(rec, i)
  return source_of(rec.func[i]), line_of(rec.func[i], rec.pc[i])
end

-- The last record that began at or before ref.
local function rec_at(rec, ref)
  local lo, hi, best = 1, rec.n, nil
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    if rec.nins[mid] <= ref then best = mid; lo = mid + 1 else hi = mid - 1 end
  end
  return best
end

-- The first record that made IR in (s, e], or nil.
local function rec_first(rec, s, e)
  if e <= s then return nil end
  local i = rec_at(rec, s + 1) or 1
  while i <= rec.n do
    local a, b = rec.nins[i], rec.nins[i + 1] or math.huge
    if a > e then return nil end
    if b > a and b > s + 1 and a <= e then return i end
    i = i + 1
  end
  return nil
end

local Cfiles = {}        -- interned C file-name arrays per set of names
local line_buf, line_cap = nil, 0

local function line_table(tr, st, mc, addr, loop, nexit)
  local src0 = source_of(st.func)
  local line0 = st.line
  if not src0 or not line0 then return nil end
  local files, fidx = { src0 }, { [src0] = 0 }
  local rows = { { 0, line0, 0 } }
  local function row(off, src, line)
    if not src or not line or line <= 0 then return end
    local f = fidx[src]
    if not f then
      files[#files + 1] = src
      f = #files - 1
      fidx[src] = f
    end
    local last = rows[#rows]
    if last[2] == line and last[3] == f then return end
    if last[1] == off then
      if off > 0 then rows[#rows] = { off, line, f } end      -- offset 0 keeps the start line
    else
      rows[#rows + 1] = { off, line, f }
    end
  end
  local rec = st.rec
  if rec and rec.n > 0 and nexit > 0 then
    local branches = arch.exit_branches(mc, addr, tr, nexit)
    -- per exit: the snapshot's IR position and frame size
    local ref, slots = {}, {}
    for k = 0, nexit - 1 do
      local s = tracesnap(tr, k)
      if s then ref[k], slots[k] = s[0], s[1] end
    end
    -- guards of the loop part copy earlier ones: matched in order by frame size
    local copy_of, cursor = {}, 1
    if loop and loop > 0 then
      for _, b in ipairs(branches) do
        if b[1] >= loop and not copy_of[b[3]] then
          local k, j = b[3], cursor
          local rk = ref[k] or 0
          while j < nexit and (ref[j] or 0) < rk and slots[j] ~= slots[k] do j = j + 1 end
          if j < nexit and slots[j] == slots[k] and (ref[j] or 0) < rk then
            copy_of[k] = j
            cursor = j + 1
          end
        end
      end
    end
    local from, prev_ref = 0, 0
    for _, b in ipairs(branches) do
      local k = copy_of[b[3]] or b[3]
      local r = ref[k] or 0
      local i = rec_at(rec, r)
      if i then
        local first = not copy_of[b[3]] and rec_first(rec, prev_ref, r)
        if first and first ~= i then row(from, rec_loc(rec, first)) end
        row(first and first ~= i and b[1] or from, rec_loc(rec, i))
      end
      from, prev_ref = b[2], r
    end
  end
  local key = table.concat(files, "\0")
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
  if #rows > line_cap then                      -- one buffer, reused: jh_code_add copies it
    line_cap = math.max(#rows, 2 * line_cap)
    line_buf = ffi.new("struct jh_line[?]", line_cap)
  end
  local lines = line_buf
  for i, r in ipairs(rows) do
    local l = lines[i - 1]
    l.offset, l.line, l.column, l.file = r[1], r[2], 0, r[3]
  end
  return cf, lines, #rows
end

-- ---- the events ----------------------------------------------------------------------

local function log_event(name, tr, extra)
  if not want_events then return end
  local attrs = ffi.new("struct jh_attr[2]")
  attrs[0].key = "trace"; attrs[0].kind = 1; attrs[0].v.u = tr
  local n = 1
  if extra then
    attrs[1].key = "what"; attrs[1].kind = 3; attrs[1].v.s = extra
    n = 2
  end
  lib.jh_log_event(ctx, name, attrs, n)
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
                  parent = side and otr or nil, exit = side and oex or nil,
                  rec = want_lines and { n = 0, func = {}, pc = {}, nins = {} } or nil }
end

-- The frame traces run in, read once (arch.trace_frame: x64 only so far).
local vm_tried = false
local function find_vm_frame()
  vm_tried = true
  local regs
  if arch.trace_frame then vm_cfa, regs = arch.trace_frame(frame_at) end
  if vm_cfa then
    nsaved = #regs
    saved_regs_c = ffi.new("struct jh_saved_reg[?]", nsaved)
    for i, r in ipairs(regs) do
      saved_regs_c[i - 1].reg = r[1]
      saved_regs_c[i - 1].cfa_offset = r[2]
    end
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
  if not vm_tried then find_vm_frame() end
  local name = format("TRACE_%d %s", tr, st.loc)
  local files, lines, nlines
  if want_lines then files, lines, nlines = line_table(tr, st, mcode, addr, loop, nexit) end
  local spadj, cfa, steps, nsteps, head_end
  if vm_cfa then
    local parent = st.parent and live[st.parent]
    spadj, cfa, steps, nsteps, head_end =
      arch.frame_steps(mcode, parent and parent.spadj, st.parent ~= nil, vm_cfa)
  end
  if not cfa then counts.no_unwind = counts.no_unwind + 1 end
  local pe = head_end and nsteps and nsteps > 0 and steps[0].offset or nil
  if not pe and arch.prologue_end and size > arch.prologue_end then pe = arch.prologue_end end
  local id = announce(name, addr, size, files, lines, nlines, cfa, steps, nsteps, pe,
                      format("TRACE_%d", tr))
  live[tr] = { id = id, addr = addr, size = size, spadj = spadj, name = name }
  counts.traces = counts.traces + 1
  -- the parent's exit branch now jumps here (lj_asm_patchexit rewrote it, and any other
  -- branch to that exit stub, somewhere in the parent's code)
  local parent = st.parent and live[st.parent]
  if parent and parent.id then
    lib.jh_code_patched(ctx, ffi.cast("const void *", parent.addr), parent.size)
    counts.patches = counts.patches + 1
  end
  log_event("trace_stop", tr, name)
end

local function on_flush()
  for tr, t in pairs(live) do remove(t.id); live[tr] = nil end
  for g, s in pairs(groups) do remove(s.id); groups[g] = nil end
  pending = {}
  log_event("trace_flush", 0)
end

local function on_trace(what, tr, func, pc, otr, oex)
  if what == "start" then on_start(tr, func, pc, otr, oex)
  elseif what == "stop" then on_stop(tr)
  elseif what == "abort" then
    pending[tr] = nil
    log_event("trace_abort", tr)
  elseif what == "flush" then on_flush() end
end

local function on_record(tr, func, pc)
  local st = pending[tr]
  local rec = st and st.rec
  if not rec or pc < 0 then return end
  local n = rec.n + 1
  local ni = n > 1 and rec.nins[n - 1] or 0
  while traceir(tr, ni + 1) do ni = ni + 1 end      -- the IR so far, without a table
  rec.n = n
  rec.func[n], rec.pc[n], rec.nins[n] = func, pc, ni
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
  if ch == 0 then
    lib.jh_close(ctx)
    ctx = nil
    return
  end
  M.channels = ch
  want_lines = band(ch, bor(JH_JITDUMP, JH_GDB, JH_ELFMAP, JH_AUDITLOG)) ~= 0 and
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
