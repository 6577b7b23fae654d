-- stress.lua — LuaJIT under trace churn: many root traces, their side traces (each one a
-- patch of its parent), and full flushes. bench/luajit/run.sh runs it with and without
-- jitherald; the tests run a small instance of it.
--   luajit stress.lua [FUNCTIONS [ROUNDS [FLUSHES [count|- [ITERATIONS]]]]]
-- Prints "checksum C" (which does not depend on whether traces were compiled, so output
-- with and without jitherald compares equal); with "count", its own jit.attach handler
-- also counts the traces LuaJIT reports and prints them to stderr, with the CPU time the
-- process used so far (os.clock: loading jitherald included, closing it not) and the CPU
-- time LuaJIT spent from each trace's "start" event to its "stop" or "abort" (recording,
-- optimising, assembling: its own cost of compiling; measured where no other handler
-- runs before this one, i.e. without jitherald, whose handler runs first).
local nfun = tonumber(arg and arg[1]) or 300
local rounds = tonumber(arg and arg[2]) or 2
local nflush = tonumber(arg and arg[3]) or 4
local count = arg and arg[4] == "count"
local iterations = tonumber(arg and arg[5]) or 200

local traces, sides, flushes, started_side = 0, 0, 0, false
local compiling, t_start = 0, nil
local now = os.clock
if count then                  -- ns resolution: a trace compiles in a few µs
  local ffi = require("ffi")
  pcall(ffi.cdef, "struct jh_stress_ts { long s, ns; }; int clock_gettime(int, struct jh_stress_ts *);")
  local ts = ffi.new("struct jh_stress_ts")
  now = function()
    ffi.C.clock_gettime(3, ts)             -- CLOCK_THREAD_CPUTIME_ID
    return tonumber(ts.s) + tonumber(ts.ns) * 1e-9
  end
end
-- Count what LuaJIT reports, through jit.attach as any script might (jitherald must keep
-- working beside it, and this handler must keep receiving events).
if count then jit.attach(function(what, tr, func, pc, otr, oex)
  if what == "start" then
    started_side = otr and oex and oex >= 0
    t_start = now()
  elseif what == "stop" or what == "abort" then
    if t_start then compiling = compiling + (now() - t_start) end
    t_start = nil
    if what == "stop" then
      traces = traces + 1
      if started_side then sides = sides + 1 end
    end
  elseif what == "flush" then
    flushes = flushes + 1
  end
end, "trace") end

-- Each function: a hot loop (a root trace) with two branches that become hot at
-- different iterations (side traces, each patching its parent's exit) and a call.
local template = [[
local k = ...
local function helper(x) return x %% 7 end
return function(n)
  local s = 0
  for i = 1, n do
    if i %% 3 == 0 then
      s = s + helper(i) * k
    elseif i %% 5 == 0 then
      s = s - i
    else
      s = s + 1
    end
  end
  return s
end
]]

local fns = {}
for f = 1, nfun do
  fns[f] = assert(loadstring(string.format(template), "=stress" .. f))(f)
end

local sum = 0
-- nflush flushes spread over the run, none at the very end: code is live when it ends
local per_flush = math.max(1, math.floor(nfun * rounds / (nflush + 1)))
local calls, flushed = 0, 0
for r = 1, rounds do
  for f = 1, nfun do
    sum = (sum + fns[f](iterations + f % 7)) % 1000000007
    calls = calls + 1
    if flushed < nflush and calls % per_flush == 0 then
      jit.flush()
      flushed = flushed + 1
    end
  end
end
io.write(string.format("checksum %d\n", sum))
if count then
  io.stderr:write(string.format("traces %d side %d flushes %d cpu %.6f compiling %.6f\n",
                                traces, sides, flushes, os.clock(), compiling))
end
