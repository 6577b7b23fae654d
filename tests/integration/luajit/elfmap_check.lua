-- elfmap_check.lua — run a churn workload with the adapter (JITHERALD=elfmap), then check
-- from /proc/self/maps, without any jh_flush call, that every live trace is named by the
-- image mapped at its address with the very bytes that run there; then jit.flush() and
-- check that no mapping of an image file is left (LuaJIT unmapped the code; the images'
-- other mappings must go too). Prints "live N checked" and "after flush: M mappings".
--   luajit -l jitherald elfmap_check.lua FUNCTIONS ROUNDS FLUSHES
local jh = require("jitherald")
assert(jh.enabled, "the adapter is not enabled (JITHERALD?)")
local ffi = require("ffi")
local stress = assert(loadfile(os.getenv("JH_STRESS")))
arg = { [1] = arg[1], [2] = arg[2], [3] = arg[3] }
stress()

local function mappings()
  local m = {}
  for line in io.lines("/proc/self/maps") do
    local lo, hi, perms, off, path = line:match("^(%x+)-(%x+) (%S+) (%x+) %S+ %S+%s*(.*)$")
    m[#m + 1] = { lo = tonumber(lo, 16), hi = tonumber(hi, 16), perms = perms,
                  off = tonumber(off, 16), path = path }
  end
  return m
end

local function symbols(path, cache)
  if cache[path] then return cache[path] end
  local syms = {}
  local p = assert(io.popen("readelf -sW '" .. path .. "'"))
  for line in p:lines() do
    local value, size, name = line:match("^%s*%d+: (%x+)%s+(%d+) FUNC%s+%S+%s+%S+%s+%S+ (.+)$")
    if value then syms[tonumber(value, 16)] = { size = tonumber(size), name = name } end
  end
  p:close()
  cache[path] = syms
  return syms
end

-- nothing compiled from here on (this loop would be a trace, announced after the snapshot)
jit.off()
local traces = jh.live()
local maps, cache, checked, bad = mappings(), {}, 0, {}
for _, t in ipairs(traces) do
  local m
  for _, x in ipairs(maps) do
    if t.addr >= x.lo and t.addr < x.hi then m = x; break end
  end
  local why
  if not m or not m.path:match("%.elf$") then
    why = "not in an image: " .. (m and (m.path ~= "" and m.path or "anonymous") or "unmapped")
  else
    local s = symbols(m.path, cache)[t.addr]
    if not s or s.name ~= t.name or s.size ~= t.size then
      why = "symbol at its address: " .. (s and (s.name .. " size " .. s.size) or "none")
    else
      local f = assert(io.open(m.path, "rb"))
      f:seek("set", m.off + (t.addr - m.lo))
      local bytes = f:read(t.size)
      f:close()
      if bytes ~= ffi.string(ffi.cast("const void *", t.addr), t.size) then
        why = "bytes differ from the image"
      end
    end
  end
  if why then bad[#bad + 1] = string.format("%s at 0x%x: %s", t.name, t.addr, why) end
  checked = checked + 1
end
print(string.format("live %d checked", checked))
for _, b in ipairs(bad) do print("BAD " .. b) end

jit.flush()
local left = 0
for _, x in ipairs(mappings()) do
  if x.path:match("%.elf$") then
    left = left + 1
  end
end
print(string.format("after flush: %d mappings", left))
