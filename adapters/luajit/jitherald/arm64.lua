--[[
jitherald/arm64.lua — what the LuaJIT adapter (jitherald.lua) reads from the machine code
LuaJIT emits on arm64 (lj_asm_arm64.h); the questions are jitherald/x86.lua's. No unwind
description yet (no trace_frame): a trace runs in vm_arm64.dasc's frame, which nothing
here reads (docs/arm64.md).
]]

local traceexitstub = require("jit.util").traceexitstub
local byte, floor = string.byte, math.floor

local A = {}

-- No exit stub groups: each trace's stubs follow its code, 4 bytes apart
-- (traceexitstub(tr, k)); a guard is a b.cond, cbz/cbnz, tbz/tbnz or (inverted) b to one.
function A.exit_branches(mc, addr, tr, nexit)
  local out, s0 = {}, traceexitstub(tr, 0)
  if not s0 then return out end
  for i = 0, #mc - 4, 4 do
    local a, b, c, d = byte(mc, i + 1, i + 4)
    local w, imm, bits = ((d * 256 + c) * 256 + b) * 256 + a, nil, 19
    if (d == 0x54 and a % 32 < 16) or d % 128 == 0x34 or d % 128 == 0x35 then
      imm = floor(w / 32) % 524288
    elseif d % 128 == 0x36 or d % 128 == 0x37 then
      imm, bits = floor(w / 32) % 16384, 14
    elseif d >= 0x14 and d <= 0x17 then
      imm, bits = w % 67108864, 26
    end
    if imm then
      if imm >= 2 ^ (bits - 1) then imm = imm - 2 ^ bits end
      local k = (addr + i + imm * 4 - s0) / 4
      if k >= 0 and k < nexit then out[#out + 1] = { i, i + 4, k } end
    end
  end
  return out
end

-- A trace sets up no frame: its body starts at 0, which prologue_end cannot say (0 is "not
-- given", and gdb would stop at the first guard's line): its second instruction.
A.prologue_end = 4

return A
