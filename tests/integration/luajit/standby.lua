-- standby.lua PAUSE — compiles hot.lua's traces, writes its pid to PAUSE and waits until
-- PAUSE is gone (luajit_standby.sh attaches meanwhile), then runs the traces again.
local ffi = require("ffi")
ffi.cdef[[int getpid(void); int usleep(unsigned); int access(const char *, int);]]
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
for _ = 1, 20 do total = total + hot(100000) end
local f = assert(io.open(arg[1], "w"))
f:write(ffi.C.getpid())
f:close()
while ffi.C.access(arg[1], 0) == 0 do ffi.C.usleep(20000) end
for _ = 1, 20 do total = total + hot(100000) end
print("total", total > 0)
