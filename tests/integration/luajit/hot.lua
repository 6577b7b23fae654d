-- hot.lua — one hot loop with a branch that becomes hot later (a side trace, which patches
-- the root trace) and an FFI call from the trace into C. Used by the luajit_* tests.
local ffi = require("ffi")
ffi.cdef[[int getpid(void);]]
local function hot(n)
  local s = 0
  for i = 1, n do
    if i % 64 == 0 then
      s = s + ffi.C.getpid() % 7
    else
      s = s + i % 3
    end
  end
  return s
end
local total = 0
for r = 1, tonumber(arg and arg[1]) or 20 do total = total + hot(100000) end
print("total", total > 0)
