/*
 * funcs.c — what the LuaJIT adapter's handlers (events.c) know of each function a trace
 * records: its cache (E_CACHE[func], a userdata: source file, -jv's location, each
 * bytecode's line in a C array), the few recorded lately (known by lua_topointer, so that
 * a "record" event on a line seen before makes no call into Lua), and the trace's source
 * files.
 */
#include <stdio.h>
#include <string.h>

#include "events.h"

/* ---- a function's cache: source file, location, lines ------------------------------- */

/* ":<v>" into buf (24 bytes at least): its length. (snprintf's ~650 instructions were a
 * tenth of a function's first sight.) */
static int colon_int(char *buf, int64_t v)
{
    char d[24], *p = d + sizeof d;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    *--p = ':';
    int n = (int)(d + sizeof d - p);
    memcpy(buf, p, (size_t)n);
    return n;
}

/* The cache of the function at idx (absolute), made on its first use (funcinfo); with
 * gaps, its lines have room for each record's gap (events.h). With hold, it is stored at
 * env[hold] as well (what keeps it and its names alive while the handlers point at them).
 * It is one userdata, the names copied in: a table holding the lines, the source and the
 * location as Lua values cost ~2,000 instructions more at a function's first sight and
 * ~130 each time it was looked at again. */
struct lines *jh__lj_func_cache(lua_State *L, int idx, int gaps, int hold)
{
    A.rawgeti(L, UPV(2), E_CACHE);
    int t = A.gettop(L);
    A.pushvalue(L, idx);
    A.rawget(L, t);
    struct lines *ls = A.type(L, -1) == LUA_TUSERDATA ? A.touserdata(L, -1) : NULL;
    if (!ls) {
        A.settop(L, t);
        fn(L, E_FUNCINFO);               /* funcinfo(func): its source, -jv's loc, size */
        A.pushvalue(L, idx);
        int fi = call(L, 1, 1) == 0 ? A.gettop(L) : 0;
        int nbc = 0;
        const char *src = NULL, *loc = NULL;
        size_t nsrc = 0, k = 0;
        int noline = 0;
        if (fi) {
            field(L, fi, E_K_BYTECODES);
            nbc = A.type(L, -1) == LUA_TNUMBER ? (int)A.tointeger(L, -1) : 0;
            A.settop(L, -2);
            field(L, fi, E_K_SOURCE);    /* (these three stay on the stack while copied) */
            size_t len = 0;
            src = A.type(L, -1) == LUA_TSTRING ? A.tolstring(L, -1, &len) : NULL;
            if (src && len && (src[0] == '@' || src[0] == '='))
                src++;
            nsrc = src ? strlen(src) : 0;
            field(L, fi, E_K_LOC);
            field(L, fi, E_K_CURRENTLINE);
            if (A.type(L, -2) == LUA_TSTRING) {
                /* lj_debug_pushloc: "<name>:<line>", or "builtin:<name>" with no line */
                loc = A.tolstring(L, -2, &len);
                char suffix[24];
                int n = A.type(L, -1) == LUA_TNUMBER
                      ? colon_int(suffix, (int)A.tointeger(L, -1)) : 0;
                k = len;
                if (n > 0 && (size_t)n <= len && !memcmp(loc + len - n, suffix, (size_t)n))
                    k = len - (size_t)n;
                else
                    noline = 1;
                if (k > LOC_LEN - 1)
                    k = LOC_LEN - 1;
                const char *z = memchr(loc, 0, k);   /* (as a C string: to its NUL) */
                if (z)
                    k = (size_t)(z - loc);
            }
        }
        /* a line per bytecode position, in C: the "record" handler reads it with no call */
        uint32_t nl = nbc > 0 && nbc < (1 << 20) ? (uint32_t)nbc : 0;
        size_t at = LINES_SIZE(nl, gaps), size = at + (src ? nsrc + 1 : 0) + (loc ? k + 1 : 0);
        ls = A.newuserdata(L, size);
        memset(ls, 0, sizeof *ls);
        ls->n = nl;
        memset(ls->line, 0xff, at - sizeof *ls);   /* -1s, unknown gaps */
        if (src) {
            ls->src = (uint32_t)at;
            memcpy((char *)ls + at, src, nsrc + 1);
            at += nsrc + 1;
        }
        if (loc) {
            ls->prefix = (uint32_t)at;
            ls->nprefix = (uint32_t)k;
            ls->noline = noline;
            memcpy((char *)ls + at, loc, k);
            ((char *)ls)[at + k] = 0;
        }
        A.pushvalue(L, idx);
        A.pushvalue(L, -2);
        A.rawset(L, t);
    }
    if (hold)
        A.rawseti(L, UPV(2), hold);
    A.settop(L, t - 1);
    return ls;
}

/* In a "record" event: the line of the function at idx executing below the handler, at
 * the bytecode being recorded (lua_getinfo reads it from the frame; no table made), or -1
 * when that frame is not the function's. */
static int32_t line_on_stack(lua_State *L, int idx)
{
    struct jh_lua_debug ar;
    if (!A.getstack(L, 1, &ar) || !A.getinfo(L, "fl", &ar))
        return -1;
    int same = A.rawequal(L, -1, idx);
    A.settop(L, -2);
    return same && ar.currentline > 0 ? ar.currentline : -1;
}

/* The line of bytecode pc in the function at idx whose lines are ls; 0: unknown. In a
 * "record" event (rec) the executing frame says it, else funcinfo (a table of 16 fields
 * and a string, ~1 us with what the collector then does). With st->verify both are asked
 * and compared (stats: checked, differ; tests/integration/luajit_lines.sh). */
int32_t jh__lj_line_at(lua_State *L, struct state *st, int idx, struct lines *ls, int32_t pc,
                       int rec)
{
    int known = ls && pc >= 0 && (uint32_t)pc < ls->n;
    int32_t line = known ? ls->line[pc] : -1;
    if (line >= 0)
        return line;
    int32_t seen = rec ? line_on_stack(L, idx) : -1;
    line = seen;
    if (seen < 0 || st->verify) {
        line = 0;
        fn(L, E_FUNCINFO);
        A.pushvalue(L, idx);
        A.pushnumber(L, pc);
        if (call(L, 2, 1) == 0) {
            field(L, A.gettop(L), E_K_CURRENTLINE);
            if (A.type(L, -1) == LUA_TNUMBER)
                line = (int32_t)A.tointeger(L, -1);
            A.settop(L, -3);
        }
        if (rec && st->verify) {
            st->n.checked++;
            if (seen != line) {
                st->n.differ++;
                if (st->debug)
                    fprintf(stderr, "jitherald (luajit): bytecode %d: line %d from the frame, "
                            "%d from funcinfo\n", pc, seen, line);
            }
        }
    }
    if (known)
        ls->line[pc] = line;
    return line;
}

/* The function at idx among the recent ones, made so (its cache read) if it is not; NULL
 * where idx is not a function. */
struct recent *jh__lj_recent_of(lua_State *L, struct state *st, int idx)
{
    const void *f = A.topointer(L, idx);
    if (st->recent[st->lastrecent].fn == f && f)   /* (mostly the one the event before had) */
        return &st->recent[st->lastrecent];
    for (uint32_t i = 0; i < NRECENT; i++)
        if (st->recent[i].fn == f && f) {
            st->lastrecent = i;
            return &st->recent[i];
        }
    if (A.type(L, idx) != LUA_TFUNCTION)  /* (only functions are ever made recent) */
        return NULL;
    uint32_t i = st->nextrecent;
    st->nextrecent = (i + 1) % NRECENT;
    st->lastrecent = i;
    struct recent *r = &st->recent[i];
    if (r->lines && r->lines == st->prev_lines)
        st->prev_lines = NULL;           /* no longer held: not written to again */
    /* the cache held at E_RECENT + NRECENT + i: src and lines stay while r points there */
    struct lines *ls = jh__lj_func_cache(L, idx, st->lines, E_RECENT + NRECENT + (int)i);
    r->lines = ls;
    r->src = lines_src(ls);
    r->fn = f;
    r->gen = st->gen - 1;
    A.pushvalue(L, idx);
    A.rawseti(L, UPV(2), E_RECENT + (int)i);
    return r;
}

/* The source file of recent function r, its index in the recorded trace's files[], added
 * there when new; -1: none (no name, or MAX_FILES already). */
int32_t jh__lj_file_index(lua_State *L, struct state *st, const struct recent *r)
{
    const char *src = r->src;
    if (!src)
        return -1;
    for (uint32_t i = 0; i < st->nfiles; i++)   /* (each function has its copy of a name) */
        if (st->files[i] == src || !strcmp(st->files[i], src))
            return (int32_t)i;
    if (st->nfiles >= MAX_FILES)
        return -1;
    int32_t fi = (int32_t)st->nfiles;
    st->files[st->nfiles++] = src;
    /* its function's cache, where the name is: held while files[] points there */
    A.rawgeti(L, UPV(2), E_RECENT + NRECENT + (int)(r - st->recent));
    A.rawseti(L, UPV(2), E_FILE0 + fi);
    return fi;
}
