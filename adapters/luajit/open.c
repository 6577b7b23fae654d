/*
 * open.c — the LuaJIT adapter's handlers opened from Lua (trace.h: jh_luajit_api,
 * jh_luajit_open): their state, its environment table, and what the adapter reads back
 * (stats, the live traces).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

struct jh_lua_api jh__lj_api;            /* set once by jh_luajit_api */

static const char *const KEYS[] = { [E_K_TRACE] = "trace", [E_K_RECORD] = "record",
    [E_K_CURRENTLINE] = "currentline", [E_K_SOURCE] = "source",
    [E_K_LOC] = "loc", [E_K_BYTECODES] = "bytecodes" };

int jh_luajit_api(const struct jh_lua_api *api)
{
    if (!api)
        return -EINVAL;
    /* every field a pointer to a function, all of one size on the targets we build for */
    const void *const *p = (const void *const *)api;
    for (size_t i = 0; i < sizeof *api / sizeof *p; i++)
        if (!p[i])
            return -EINVAL;
    A = *api;
    return 0;
}

/* ---- stats, live, close, open -------------------------------------------------------- */

static void setnum(lua_State *L, const char *k, double v)
{
    A.pushnumber(L, v);
    A.setfield(L, -2, k);
}

static int stats(lua_State *L)
{
    struct state *st = A.touserdata(L, UPV(1));
    uint32_t live = 0;
    for (uint32_t i = 0; i < st->nlive; i++)
        live += st->live[i].used;
    A.createtable(L, 0, 19);
    setnum(L, "live", live);
    setnum(L, "traces", (double)st->n.traces);
    setnum(L, "patches", (double)st->n.patches);
    setnum(L, "removed", (double)st->n.removed);
    setnum(L, "groups", (double)st->n.groups);
    setnum(L, "failed", (double)st->n.failed);
    setnum(L, "no_unwind", (double)st->n.no_unwind);
    setnum(L, "lines_checked", (double)st->n.checked);
    setnum(L, "lines_differ", (double)st->n.differ);
    setnum(L, "records", (double)st->n.records);
    setnum(L, "records_merged", (double)st->n.merged);
    setnum(L, "ir_probes", (double)st->n.probes);
    setnum(L, "rows_checked", (double)st->n.rows_checked);
    setnum(L, "rows_differ", (double)st->n.rows_differ);
    setnum(L, "ir_counts_guessed", (double)st->n.guessed);
    setnum(L, "ir_counts_checked", (double)st->n.counts_checked);
    setnum(L, "ir_counts_differ", (double)st->n.counts_differ);
    setnum(L, "ir_probes_direct", (double)st->n.direct);
    setnum(L, "start_lines_recorded", (double)st->n.start_lines);
    setnum(L, "snaps_checked", (double)st->n.snaps_checked);
    setnum(L, "snaps_differ", (double)st->n.snaps_differ);
    return 1;
}

static void live_row(lua_State *L, int *k, const char *name, uint64_t addr, uint32_t size)
{
    A.createtable(L, 0, 3);
    A.pushstring(L, name);
    A.setfield(L, -2, "name");
    setnum(L, "addr", (double)addr);
    setnum(L, "size", size);
    A.rawseti(L, -2, ++*k);
}

static int live(lua_State *L)
{
    struct state *st = A.touserdata(L, UPV(1));
    int k = 0;
    A.createtable(L, 0, 0);
    for (uint32_t i = 0; i < st->nlive; i++)
        if (st->live[i].used && st->live[i].announced)
            live_row(L, &k, st->live[i].name, st->live[i].addr, st->live[i].size);
    for (uint32_t g = 0; g < MAX_GROUPS; g++)
        if (st->groups[g].announced)
            live_row(L, &k, st->groups[g].name, st->groups[g].addr, st->group_size);
    return 1;
}

/* theirs() after each change of the theirs table: which events have a handler of the
 * script's to call after ours, and which (chain() calls it from E_THEIRS_<event>) */
static int theirs(lua_State *L)
{
    struct state *st = A.touserdata(L, UPV(1));
    st->theirs = 0;
    A.rawgeti(L, UPV(2), E_THEIRS);
    for (int e = E_K_TRACE; e <= E_K_RECORD; e++) {
        A.rawgeti(L, UPV(2), e);
        A.rawget(L, -2);
        if (A.type(L, -1) == LUA_TFUNCTION) {
            st->theirs |= 1u << e;
        } else {
            A.settop(L, -2);
            A.pushnil(L);
        }
        A.rawseti(L, UPV(2), E_THEIRS_TRACE + (e - E_K_TRACE));
    }
    A.settop(L, -2);
    return 0;
}

static int close_(lua_State *L)
{
    struct state *st = A.touserdata(L, UPV(1));
    st->closed = 1;
    st->ctx = NULL;
    return 0;
}

static int gc(lua_State *L)
{
    struct state *st = A.touserdata(L, 1);
    if (st) {
        for (uint32_t i = 0; i < st->nlive; i++)
            free(st->live[i].code);
        free(st->live);
        free(st->rec);
        free(st->snap);
        free(st->slots);
        memset(st, 0, sizeof *st);
        st->closed = 1;
    }
    return 0;
}

static uint32_t field_u32(lua_State *L, int cfg, const char *k)
{
    A.getfield(L, cfg, k);
    uint32_t v = A.type(L, -1) == LUA_TNUMBER ? (uint32_t)A.tointeger(L, -1) : 0;
    A.settop(L, -2);
    return v;
}

static int field_bool(lua_State *L, int cfg, const char *k)
{
    A.getfield(L, cfg, k);
    int v = A.toboolean(L, -1);
    A.settop(L, -2);
    return v;
}

int jh_luajit_open(lua_State *L)
{
    if (!A.gettop)                       /* jh_luajit_api first: nothing to answer with */
        return 0;
    if (A.type(L, 1) != LUA_TNUMBER || A.type(L, 2) != LUA_TTABLE) {
        A.pushnil(L);
        A.pushstring(L, "open(ctx, config): ctx an address, config a table");
        return 2;
    }
    struct state *st = A.newuserdata(L, sizeof *st);
    memset(st, 0, sizeof *st);
    int ud = A.gettop(L);
    A.createtable(L, 0, 1);
    A.pushcclosure(L, gc, 0);
    A.setfield(L, -2, "__gc");
    A.setmetatable(L, ud);
    st->ctx = (jh_ctx *)(uintptr_t)A.tonumber(L, 1);
    st->lines = field_bool(L, 2, "lines");
    st->events = field_bool(L, 2, "events");
    st->debug = field_bool(L, 2, "debug");
    st->verify = field_bool(L, 2, "verify");
    st->arch = field_u32(L, 2, "arch");
    st->stubs_per = field_u32(L, 2, "stubs_per");
    st->group_size = field_u32(L, 2, "group_size");
    st->prologue_end = field_u32(L, 2, "prologue_end");
    static const char *const keys[] = { [E_TRACEIR] = "traceir",
        [E_TRACEMC] = "tracemc", [E_TRACESNAP] = "tracesnap",
        [E_EXITSTUB] = "traceexitstub", [E_FUNCINFO] = "funcinfo", [E_THEIRS] = "theirs",
        [E_VMFRAME] = "vm_frame" };
    A.createtable(L, E_N, 0);
    int env = A.gettop(L);
    for (int i = 1; i <= E_VMFRAME; i++) {
        A.getfield(L, 2, keys[i]);
        A.rawseti(L, env, i);
    }
    /* jit.util's own C functions (lua_tocfunction: NULL for one written in Lua), which the
     * handlers call straight (events.c: ir_count, gather) */
    A.getfield(L, 2, "tocfunction");
    if (A.type(L, -1) == LUA_TNUMBER) {
        jh_lua_cfn (*tocf)(lua_State *, int) =
            (jh_lua_cfn (*)(lua_State *, int))(uintptr_t)A.tonumber(L, -1);
        for (int i = E_TRACEIR; i <= E_EXITSTUB; i++) {
            A.rawgeti(L, env, i);
            st->cf[i] = A.type(L, -1) == LUA_TFUNCTION ? tocf(L, -1) : NULL;
            A.settop(L, -2);
        }
    }
    A.settop(L, -2);
    A.pushvalue(L, ud);                  /* the stop's reader, called protected */
    A.pushvalue(L, env);
    A.pushcclosure(L, jh__lj_gather, 2);
    A.rawseti(L, env, E_GATHER);
    A.createtable(L, 0, 0);              /* E_CACHE, weak keys: functions come and go */
    A.createtable(L, 0, 1);
    A.pushstring(L, "k");
    A.setfield(L, -2, "__mode");
    A.setmetatable(L, -2);
    A.rawseti(L, env, E_CACHE);
    for (int i = E_K_TRACE; i <= E_N; i++) {
        A.pushstring(L, KEYS[i]);
        A.rawseti(L, env, i);
    }
    static const jh_lua_cfn fns[] = { jh__lj_on_trace, jh__lj_on_record, stats, live, close_,
                                      theirs };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        A.pushvalue(L, ud);
        A.pushvalue(L, env);
        A.pushcclosure(L, fns[i], 2);
    }
    return (int)(sizeof fns / sizeof *fns);
}
