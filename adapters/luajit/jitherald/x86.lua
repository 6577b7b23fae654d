--[[
jitherald/x86.lua — what the LuaJIT adapter (jitherald.lua) reads from the machine code
LuaJIT emits on x86 and x64 (lj_asm_x86.h, vm_x64.dasc). Each architecture's module
answers the same questions (jitherald/arm64.lua):
  exit_branches(mc, addr, tr, nexit)  every guard, in offset order: { offset, end, exit }
  groups                              the exit stub groups to announce, or nil
  trace_frame(frame_at)               the frame a trace runs in: CFA at its entry, the
                                      registers saved there (nil: no unwind description)
  frame_steps(mc, parent_spadj, is_side, vm_cfa)   how the trace itself moves the CFA
  prologue_end                        where `break TRACE_n` stops when nothing else says
The machine code is read from tracemc's copy (a Lua string): interpreted cdata indexing
costs ~50 ns a byte, string.find skips to the candidates in C. Offsets are 0-based.
]]

local ffi = require("ffi")
local traceexitstub = require("jit.util").traceexitstub
local byte = string.byte

local X = {}

local function s32(mc, i)
  local a, b, c, d = byte(mc, i + 1, i + 4)
  local v = a + b * 256 + c * 65536 + d * 16777216
  return v >= 2147483648 and v - 4294967296 or v
end

-- `add rsp, imm` at offset i (48 83 c4 ib / 48 81 c4 id), ending by `limit`: its length
-- and immediate.
local function add_rsp(mc, i, limit)
  local a, b, c, d = byte(mc, i + 1, i + 4)
  if a == 0x48 and c == 0xc4 and i + 4 <= limit then
    if b == 0x83 then
      return 4, d >= 128 and d - 256 or d
    elseif b == 0x81 and i + 7 <= limit then
      return 7, s32(mc, i + 3)
    end
  end
  return nil
end

-- ---- exit stubs ----------------------------------------------------------------------

-- An exit stub group (lj_asm_x86.h, asm_exitstub_gen): 32 `push imm8` stubs chained by
-- short jumps, the group's own push, (not GC64: a mov), then `jmp lj_vm_exit_handler`.
local STUBS_PER_GROUP = 32
local STUB_GROUP_SIZE = ffi.abi("gc64") and 2 + 4 * 31 + 2 + 5 or 2 + 4 * 31 + 2 + 8 + 5

local function group_base(g)
  local a = traceexitstub(g * STUBS_PER_GROUP)
  return (a and a >= 65536) and a or nil       -- an absent group reads as a small number
end

X.groups = { per = STUBS_PER_GROUP, size = STUB_GROUP_SIZE, base = group_base }

-- The exit number a branch target is the stub of, or nil.
local function stub_exit(target, nexit, bases)
  for g, base in pairs(bases) do
    local d = target - base
    if d >= 0 and d < 4 * STUBS_PER_GROUP and d % 4 == 0 then
      local k = g * STUBS_PER_GROUP + d / 4
      if k < nexit then return k end
    end
  end
  return nil
end

-- Every jcc rel32 / jmp rel32 to an exit stub.
function X.exit_branches(mc, addr, _, nexit)
  local bases = {}
  for g = 0, math.floor((nexit - 1) / STUBS_PER_GROUP) do bases[g] = group_base(g) end
  local size = #mc
  local out, from = {}, 1
  while true do
    local at = mc:find("[\15\233]", from)
    if not at then break end
    local i, len = at - 1, nil
    local b = byte(mc, at)
    if b == 0x0f then
      local c = byte(mc, at + 1)
      if c and c >= 0x80 and c <= 0x8f and i + 6 <= size then len = 6 end
    elseif i + 5 <= size then
      len = 5
    end
    local k = len and stub_exit(addr + i + len + s32(mc, i + len - 4), nexit, bases)
    if k then
      out[#out + 1] = { i, i + len, k }
      from = at + len
    else
      from = at + 1
    end
  end
  return out
end

-- ---- unwinding -----------------------------------------------------------------------

-- The interpreter's frame, which a trace runs inside (x64 GC64 builds only), read once the
-- first exit stub group exists: its final jump goes to lj_vm_exit_handler, inside the
-- interpreter, whose frame frame_at reads from LuaJIT's .eh_frame (CFA offset and
-- { reg, cfa_offset } each). BC_JLOOP then enters a trace after `sub rsp,16`, with r12 at
-- the interpreter's lowest slot and r13 just below, which trace code may use.
function X.trace_frame(frame_at)
  local base = group_base(0)
  if not base or jit.arch ~= "x64" or not ffi.abi("gc64") or ffi.os == "Windows" then
    return nil
  end
  local jmp = ffi.cast("const uint8_t *", base + STUB_GROUP_SIZE - 5)
  if jmp[0] ~= 0xe9 then return nil end
  local rel = ffi.cast("const int32_t *", jmp + 1)[0]
  local cfa, regs = frame_at(base + STUB_GROUP_SIZE + tonumber(rel))
  if not cfa or #regs == 0 then return nil end
  regs[#regs + 1] = { 12, -cfa }
  regs[#regs + 1] = { 13, -cfa - 8 }
  return cfa + 16, regs
end

-- The trace's stack adjustment and the CFA steps that describe it, or nil when its code
-- is not the shape this reads (then the trace gets no unwind description). A root trace
-- starts with `add rsp,-N`; a side trace starts at its parent's adjustment and adds the
-- difference; a trace that does not loop ends with `add rsp,+N; jmp`.
function X.frame_steps(mc, parent_spadj, is_side, vm_cfa)
  if is_side and not parent_spadj then return nil end
  local size = #mc
  local steps, n, head = ffi.new("struct jh_cfa_step[2]"), 0, false
  local entry = parent_spadj or 0
  -- the tail of a trace that does not loop: add rsp,+N; jmp rel32
  local tail_imm
  if size >= 9 and byte(mc, size - 4) == 0xe9 then
    for _, back in ipairs({ 9, 12 }) do
      local l, v = add_rsp(mc, size - back, size - 5)
      if l and size - back + l == size - 5 and v > 0 then tail_imm = v end
    end
  end
  local spadj
  if not is_side then
    local l, v = add_rsp(mc, 0, size)
    if l and v < 0 then
      spadj = -v
      steps[n].offset, steps[n].cfa_offset = l, vm_cfa + spadj
      n = n + 1
      head = true
    else
      spadj = 0
    end
  else
    spadj = tail_imm or entry
    local delta = spadj - entry
    if delta < 0 then return nil end
    if delta > 0 then          -- `add rsp,-delta` somewhere in the head
      local found, from = nil, 1
      while not found do
        local at = mc:find("\72[\131\129]\196", from)
        if not at or at > 256 then break end
        local l, v = add_rsp(mc, at - 1, size)
        if l and v == -delta then found = at - 1 + l end
        from = at + 1
      end
      if not found then return nil end
      steps[n].offset, steps[n].cfa_offset = found, vm_cfa + spadj
      n = n + 1
      head = true
    end
  end
  if tail_imm then
    if tail_imm ~= spadj then return nil end
    steps[n].offset, steps[n].cfa_offset = size - 5, vm_cfa
    n = n + 1
  end
  return spadj, vm_cfa + entry, steps, n, head
end

return X
