#!/usr/bin/env bash
# The LuaJIT adapter declares the public structs through the FFI, by hand: every field's
# offset and size, and every struct's size, must be what the C compiler makes of
# include/jitherald.h (tests/programs/luajit_abi.c prints that), or jh_code_add reads
# garbage. A field appended to the header and not to the adapter shows up here.
. "$(dirname "$0")/lib.sh"
luajit_adapter
P=$(program luajit_abi)
"$P" >"$T/c"
# the fields and structs the C program lists, looked up in the adapter's declarations
cat >"$T/abi.lua" <<'LUA'
require("jitherald")
local ffi = require("ffi")
for line in io.lines(arg[1]) do
  local s, f = line:match("^(%S+) (%S+)")
  if f == "-" then
    print(s .. " - " .. ffi.sizeof("struct " .. s))
  else
    print(s .. " " .. f .. " " .. tostring(ffi.offsetof("struct " .. s, f)))
  end
end
LUA
JITHERALD= luajit "$T/abi.lua" "$T/c" >"$T/lua" 2>&1 || fail "$(cat "$T/lua")"
diff -u "$T/c" "$T/lua" || fail "the adapter's FFI declarations disagree with jitherald.h"
echo "ok: $(grep -c . "$T/c") fields and structs agree"
