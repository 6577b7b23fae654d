/*
 * gather.c — what the "stop" handler (events.c, on_stop) reads of a trace from jit.util,
 * in one protected call: its machine code (tracemc), its snapshots (tracesnap, one table
 * each: their count is the exits') and where its exit stubs are (traceexitstub).
 *
 * Each of those was a lua_pcall of its own (~7.5 a trace on bench/luajit/stress.lua, ~330
 * instructions each before the function's work); now on_stop makes one, of gather, and
 * gather calls jit.util's C functions straight (lua_tocfunction's, as ir_count does with
 * traceir), with its own frame's stack as their arguments. tracemc's string and
 * tracesnap's tables are allocations, and an out-of-memory error there unwinds to that
 * one lua_pcall: what was read before it is kept in st->got (the code, then all the
 * snapshots or none, then the stub bases one by one), so a trace is announced as it was
 * when one of those calls failed on its own (with its start line only when the snapshots
 * were not all read). Where a function is not C (NULL in st->cf), lua_call of it.
 */
#include <errno.h>
#include <stdlib.h>

#include "events.h"

/* jit.util.<which>(a) or (a, b), its C function cf called straight (NULL: lua_call):
 * how many answers, the last that many values on the stack (gather's own arguments gone:
 * cf reads its own at 1 and 2). */
static int util(lua_State *L, jh_lua_cfn cf, int which, double a, int two, double b)
{
    A.settop(L, 0);
    if (!cf)
        fn(L, which);
    A.pushnumber(L, a);
    if (two)
        A.pushnumber(L, b);
    if (cf)
        return cf(L);
    A.call(L, two ? 2 : 1, -1);          /* LUA_MULTRET */
    return A.gettop(L);
}

/* Room for n snapshots in st->snap and st->slots. */
static int grow_snap(struct state *st, uint32_t n)
{
    if (n <= st->capsnap)
        return 0;
    uint32_t cap = st->capsnap ? st->capsnap : 64;
    while (cap < n)
        cap *= 2;
    int32_t *s = realloc(st->snap, sizeof *s * cap);
    if (s)
        st->snap = s;
    int32_t *f = s ? realloc(st->slots, sizeof *f * cap) : NULL;
    if (f)
        st->slots = f;
    if (!s || !f)
        return -ENOMEM;
    st->capsnap = cap;
    return 0;
}

/* Snapshot n of trace tr: its IR position and frame size; 0, or -1 where there is none
 * (tracesnap answers below LuaJIT's nsnap). Through lua_call with via_call. */
static int snap_at(lua_State *L, const struct state *st, uint32_t tr, int64_t n, int via_call,
                   int32_t *ref, int32_t *slots)
{
    int k = util(L, via_call ? NULL : st->cf[E_TRACESNAP], E_TRACESNAP, tr, 1, (double)n);
    if (k < 1 || A.type(L, -1) != LUA_TTABLE)
        return -1;
    A.rawgeti(L, -1, 0);
    A.rawgeti(L, -2, 1);
    *ref = (int32_t)A.tointeger(L, -2);
    *slots = (int32_t)A.tointeger(L, -1);
    return 0;
}

/* Trace tr's snapshots into st->snap and st->slots: how many (which is traceinfo's nexit,
 * found without its table of 6 fields); -1 where memory ran out. With st->verify, each
 * read through lua_call as well (stats: snaps_checked, snaps_differ). */
static int64_t read_snaps(lua_State *L, struct state *st, uint32_t tr)
{
    int64_t n = 0;
    for (;; n++) {
        if (grow_snap(st, (uint32_t)n + 1) < 0)
            return -1;
        if (snap_at(L, st, tr, n, 0, &st->snap[n], &st->slots[n]) < 0)
            break;
        if (st->verify && st->cf[E_TRACESNAP]) {
            int32_t ref = -1, slots = -1;
            snap_at(L, st, tr, n, 1, &ref, &slots);
            st->n.snaps_checked++;
            st->n.snaps_differ += ref != st->snap[n] || slots != st->slots[n];
        }
    }
    if (st->verify && st->cf[E_TRACESNAP]) {  /* and none after the last, either way */
        int32_t ref, slots;
        st->n.snaps_checked++;
        st->n.snaps_differ += snap_at(L, st, tr, n, 1, &ref, &slots) == 0;
    }
    return n;
}

/* Without the snapshots: how many of x86's exit stub groups (per exits each) trace tr's
 * exits reach, from tracesnap at each group's first exit past the first group (a nil
 * answer makes no table); the first group is always looked at (announced if it exists). */
static uint32_t groups_reached(lua_State *L, const struct state *st, uint32_t tr, uint32_t per)
{
    uint32_t g = 1;
    for (; g < MAX_GROUPS; g++) {
        int k = util(L, st->cf[E_TRACESNAP], E_TRACESNAP, tr, 1, (double)g * per);
        if (k < 1 || A.type(L, -1) != LUA_TTABLE)
            break;
    }
    return g;
}

/* One number from traceexitstub, 0 for none. */
static uint64_t stub(lua_State *L, const struct state *st, double a, int two, double b)
{
    int k = util(L, st->cf[E_EXITSTUB], E_EXITSTUB, a, two, b);
    return k >= 1 && A.type(L, -1) == LUA_TNUMBER ? (uint64_t)A.tonumber(L, -1) : 0;
}

int jh__lj_gather(lua_State *L)
{
    struct state *s = A.touserdata(L, UPV(1));
    uint32_t tr = (uint32_t)A.tointeger(L, 1);
    if (!s || !tr)
        return 0;
    if (!s->got.have) {
        int k = util(L, s->cf[E_TRACEMC], E_TRACEMC, tr, 0, 0);   /* mcode, addr, loop */
        if (k < 3 || A.type(L, -3) != LUA_TSTRING || A.type(L, -2) != LUA_TNUMBER)
            return 0;
        size_t size = 0;
        A.tolstring(L, -3, &size);
        /* the string is a copy of the code at addr: read there, where it stays (the
         * string is the collector's once this returns) */
        s->got.addr = (uint64_t)A.tonumber(L, -2);
        if (!s->got.addr && size)
            return 0;
        s->got.mcode = (const uint8_t *)(uintptr_t)s->got.addr;
        s->got.size = (uint32_t)size;
        s->got.loop = A.type(L, -1) == LUA_TNUMBER ? (uint32_t)A.tointeger(L, -1) : 0;
        s->got.have = 1;
    }
    if (s->got.snaps)
        s->got.nsnap = read_snaps(L, s, tr);
    uint32_t nexit = s->got.nsnap > 0 ? (uint32_t)s->got.nsnap : 0;
    uint32_t per = s->stubs_per ? s->stubs_per : 1;
    if (s->arch == JH_LJ_ARM64) {
        uint64_t b = nexit ? stub(L, s, tr, 1, 0) : 0;
        s->got.base[s->got.nbase++] = b;
        per = nexit ? nexit : 1;
    } else if (s->arch == JH_LJ_X86) {
        uint32_t ngroup = s->got.nsnap >= 0 ? (nexit + per - 1) / per
                        : groups_reached(L, s, tr, per);
        for (uint32_t g = 0; g < ngroup && g < MAX_GROUPS; g++) {
            uint64_t b = stub(L, s, (double)g * per, 0, 0);
            s->got.base[s->got.nbase++] = b >= 65536 ? b : 0;   /* absent: reads as small */
        }
    }
    s->got.per = per;
    return 0;
}
