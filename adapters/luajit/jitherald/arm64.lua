--[[
jitherald/arm64.lua — what the LuaJIT adapter (jitherald.lua) reads from the machine code
LuaJIT emits on arm64 (lj_asm_arm64.h); the questions are jitherald/x86.lua's. No unwind
description yet (no trace_frame): a trace runs in vm_arm64.dasc's frame, which nothing
here reads (docs/arm64.md).
]]

local traceexitstub = require("jit.util").traceexitstub

local A = {}

-- No exit stub groups: each trace's stubs follow its code, 4 bytes apart
-- (traceexitstub(tr, k)); a guard is a b.cond, cbz/cbnz, tbz/tbnz or (inverted) b to one,
-- which jh_luajit_add finds, given where exit 0's stub is (relative to addr).
A.lj_arch = 2
function A.stub_bases(tr, nexit, addr, out, at)
  local s0 = traceexitstub(tr, 0)
  out[at + 1] = s0 and s0 - addr or 0
  return 1, math.max(nexit, 1)
end

-- A trace sets up no frame: its body starts at 0, which prologue_end cannot say (0 is "not
-- given", and gdb would stop at the first guard's line): its second instruction.
A.prologue_end = 4

return A
