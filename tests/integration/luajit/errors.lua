-- errors.lua — Lua errors thrown from C through trace frames, then checks that the VM is
-- healthy. The trace calls lj_buf_putstr_rep for string.rep; the huge count computed on
-- the last iteration (no branch: no side exit) makes it raise "not enough memory" from C,
-- inside the trace. LuaJIT unwinds that through its own .eh_frame for the machine-code
-- area, whose personality turns it into a trace exit; an FDE of jitherald's for the trace
-- would hide that one, and the VM would be corrupt after pcall.
local ffi = require("ffi")
local function fill(n)
  local s = 0
  for i = 1, n do
    local c = 3 + math.floor(i / n) * 0x7fffff00
    s = s + #string.rep("ab", c)
  end
  return s
end
for round = 1, 5 do
  local ok, err = pcall(fill, 300)
  print(round, ok, err)
end
collectgarbage()
collectgarbage()
local cb = ffi.cast("int (*)(int)", function(x) return x + 1 end)
print("callback", cb(41))
cb:free()
-- and traces still compile and run after all that
local t = {}
for i = 1, 1000 do t[i] = i * 2 end
print("sum", t[1000])
print("healthy")
