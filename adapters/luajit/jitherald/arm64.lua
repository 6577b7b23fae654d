--[[
jitherald/arm64.lua — what the LuaJIT adapter (jitherald.lua) reads from the machine code
LuaJIT emits on arm64 (lj_asm_arm64.h); the questions are jitherald/x86.lua's. No unwind
description yet (no trace_frame): a trace runs in vm_arm64.dasc's frame, which nothing
here reads (docs/arm64.md).
]]

local A = {}

-- No exit stub groups: each trace's stubs follow its code, 4 bytes apart
-- (traceexitstub(tr, k)); a guard is a b.cond, cbz/cbnz, tbz/tbnz or (inverted) b to one,
-- which adapters/luajit/trace.c finds, given where exit 0's stub is (events.c asks it).
A.lj_arch = 2

-- A trace sets up no frame: its body starts at 0, which prologue_end cannot say (0 is "not
-- given", and gdb would stop at the first guard's line): its second instruction.
A.prologue_end = 4

return A
