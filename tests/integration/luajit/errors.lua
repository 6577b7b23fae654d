-- errors.lua — Lua errors thrown from C through trace frames, then checks that the VM is
-- healthy. The trace calls lj_buf_putstr_rep for string.rep; the huge count computed on
-- the last iteration (no branch: no side exit) makes it raise "not enough memory" from C,
-- inside the trace. The unwinder must reach LuaJIT's personality for the trace's frame,
-- which turns it into a trace exit: through LuaJIT's own FDE for the machine-code area,
-- or jitherald's for the trace, which carries the same personality (an FDE without it
-- hid LuaJIT's, and the VM was corrupt after pcall).
local ffi = require("ffi")
-- With "bt", first: backtrace() called through the FFI from inside a trace (LuaJIT aborts
-- in libgcc there on its own: its FDE for the code area has no CFA rule). Prints whether
-- frame 0 is in a trace, and where lua_pcall and main follow.
if arg[1] == "bt" then
  ffi.cdef[[int backtrace(void **buf, int size);
            char **backtrace_symbols(void *const *buf, int size); void free(void *);]]
  local jutil = require("jit.util")
  local buf = ffi.new("void *[64]")
  local n = 0
  local function walk(k)
    local s = 0
    for i = 1, k do
      s = s + i
      if i == k then n = ffi.C.backtrace(buf, 64) end
    end
    return s
  end
  for _ = 1, 100 do walk(100) end
  local pc, in_trace = tonumber(ffi.cast("uintptr_t", buf[0])), nil
  for tr = 1, 1000 do
    local mc, addr = jutil.tracemc(tr)
    if mc and pc >= addr and pc < addr + #mc then in_trace = tr end
  end
  local names = ffi.C.backtrace_symbols(buf, n)
  local pcall_at, main_at
  for i = 0, n - 1 do
    local s = ffi.string(names[i])
    if s:find("(lua_pcall+", 1, true) then pcall_at = pcall_at or i end
    if s:find("(main+", 1, true) then main_at = main_at or i end
  end
  ffi.C.free(names)
  print("backtrace", n, "frames; frame 0 in a trace:", in_trace ~= nil,
        "lua_pcall at", pcall_at, "main at", main_at)
end
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
