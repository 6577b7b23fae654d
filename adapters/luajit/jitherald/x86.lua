--[[
jitherald/x86.lua — what the LuaJIT adapter (jitherald.lua) reads from the machine code
LuaJIT emits on x86 and x64 (lj_asm_x86.h, vm_x64.dasc). Each architecture's module
answers the same questions (jitherald/arm64.lua):
  lj_arch                             how guards branch and where their exit stubs are,
                                      and how the trace's own frame is read
                                      (adapters/luajit/trace.h, enum jh_lj_arch)
  groups                              the exit stub groups to announce, or nil:
                                      { per =, size =, base = function(g) }
  trace_frame(frame_at)               the frame a trace runs in: CFA at its entry, the
                                      registers saved there (nil: no unwind description)
  prologue_end                        where `break TRACE_n` stops when nothing else says
The trace's own machine code and its exit stubs are read in C (adapters/luajit/events.c,
trace.c): LuaJIT runs the adapter's handlers interpreted.
]]

local ffi = require("ffi")
local traceexitstub = require("jit.util").traceexitstub

local X = {}

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

-- The guards: jcc rel32 / jmp rel32 to an exit stub, exit k's stub in group k / 32, each
-- group's base from traceexitstub(32 * g) (adapters/luajit/events.c asks it).
X.lj_arch = 1

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

return X
