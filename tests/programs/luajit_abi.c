/*
 * luajit_abi.c — the layout of the public structs the LuaJIT adapter declares through the
 * FFI, as the C compiler sees it: "struct field offset" per line, then "struct - size"
 * (tests/integration/luajit_abi.sh prints the same from LuaJIT's FFI and compares).
 */
#include <stddef.h>
#include <stdio.h>

#include "jitherald.h"
#include "../../adapters/luajit/trace.h"   /* the adapter's own: jh_lj_frame, jh_lua_api */

#define F(s, f) printf("%s %s %zu\n", #s, #f, offsetof(struct s, f))
#define S(s) printf("%s - %zu\n", #s, sizeof(struct s))

int main(void)
{
    F(jh_options, sz); F(jh_options, channels); F(jh_options, dir); F(jh_options, engine);
    F(jh_options, flags); F(jh_options, log); F(jh_options, log_arg); F(jh_options, gdb_batch);
    F(jh_options, auditlog_limit); F(jh_options, attach_channels); S(jh_options);
    F(jh_line, offset); F(jh_line, line); F(jh_line, column); F(jh_line, file); S(jh_line);
    F(jh_cfa_step, offset); F(jh_cfa_step, cfa_offset); S(jh_cfa_step);
    F(jh_saved_reg, reg); F(jh_saved_reg, cfa_offset); S(jh_saved_reg);
    F(jh_epilogue, start); F(jh_epilogue, end); S(jh_epilogue);
    F(jh_code, sz); F(jh_code, name); F(jh_code, start); F(jh_code, size); F(jh_code, files);
    F(jh_code, nfiles); F(jh_code, lines); F(jh_code, nlines); F(jh_code, unwind);
    F(jh_code, fp_push_end); F(jh_code, fp_set_end); F(jh_code, cfi); F(jh_code, cfi_len);
    F(jh_code, symbol); F(jh_code, prologue_end); F(jh_code, cfa_offset);
    F(jh_code, ncfa_steps); F(jh_code, cfa_steps); F(jh_code, saved_regs);
    F(jh_code, nsaved_regs); F(jh_code, nepilogues); F(jh_code, epilogues);
    F(jh_code, personality); F(jh_code, lsda); F(jh_code, eh_frame);
    F(jh_code, eh_frame_len); F(jh_code, eh_frame_addr); F(jh_code, nra_signed);
    F(jh_code, ra_signed); F(jh_code, ra_key); S(jh_code);
    F(jh_range, start); F(jh_range, end); S(jh_range);
    F(jh_frame, sz); F(jh_frame, flags); F(jh_frame, cfa_offset); F(jh_frame, saved_regs);
    F(jh_frame, nsaved_regs); F(jh_frame, fde_start); F(jh_frame, fde_size);
    F(jh_frame, personality); S(jh_frame);
    F(jh_attr, key); F(jh_attr, kind); F(jh_attr, v); S(jh_attr);
    F(jh_lj_frame, arch); F(jh_lj_frame, vm_cfa); F(jh_lj_frame, nsaved_regs);
    F(jh_lj_frame, saved_regs); F(jh_lj_frame, personality); S(jh_lj_frame);
    F(jh_lua_api, gettop); F(jh_lua_api, settop); F(jh_lua_api, pushvalue);
    F(jh_lua_api, remove); F(jh_lua_api, type); F(jh_lua_api, tonumber);
    F(jh_lua_api, tointeger); F(jh_lua_api, toboolean); F(jh_lua_api, tolstring);
    F(jh_lua_api, rawequal); F(jh_lua_api, touserdata); F(jh_lua_api, pushnil);
    F(jh_lua_api, pushinteger); F(jh_lua_api, pushnumber); F(jh_lua_api, pushstring);
    F(jh_lua_api, pushcclosure); F(jh_lua_api, getfield); F(jh_lua_api, setfield);
    F(jh_lua_api, rawget); F(jh_lua_api, rawset); F(jh_lua_api, rawgeti);
    F(jh_lua_api, rawseti); F(jh_lua_api, createtable); F(jh_lua_api, newuserdata);
    F(jh_lua_api, setmetatable); F(jh_lua_api, pcall); F(jh_lua_api, call);
    F(jh_lua_api, getstack); F(jh_lua_api, getinfo); S(jh_lua_api);
    F(jh_lua_debug, event); F(jh_lua_debug, name); F(jh_lua_debug, source);
    F(jh_lua_debug, currentline); F(jh_lua_debug, short_src); F(jh_lua_debug, i_ci);
    S(jh_lua_debug);
    return 0;
}
