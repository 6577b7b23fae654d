/*
 * events.h — between the LuaJIT adapter's event handlers (events.c), what they know of
 * each function (funcs.c) and what opens them from Lua (open.c): Lua's C API as the
 * adapter handed it over, the handlers' state, the environment table they read and how
 * they call jit.util (trace.h says what the adapter sees).
 */
#ifndef JH_LUAJIT_EVENTS_H
#define JH_LUAJIT_EVENTS_H

#include "trace.h"

#define LUA_TNIL 0
#define LUA_TBOOLEAN 1
#define LUA_TNUMBER 3
#define LUA_TSTRING 4
#define LUA_TTABLE 5
#define LUA_TFUNCTION 6
#define LUA_TUSERDATA 7
#define UPV(i) (-10002 - (i))            /* lua_upvalueindex (lua.h: LUA_GLOBALSINDEX - i) */

/* Lua's C API (jh_luajit_api; open.c) */
extern struct jh_lua_api jh__lj_api;
#define A jh__lj_api

#define NRECENT 8                        /* functions recorded lately, known in C */

/* The environment, upvalue 2 of every closure: integer keys, read per event. */
enum { E_TRACEIR = 1, E_TRACEMC, E_TRACESNAP, E_EXITSTUB, E_FUNCINFO, E_THEIRS,
       E_VMFRAME, E_CACHE,
       E_START,                          /* the trace's start function, while line_later */
       E_GATHER,                         /* the stop's reader of jit.util (gather.c) */
       /* theirs[event] for "trace" and "record" as theirs_changed() last found them */
       E_THEIRS_TRACE, E_THEIRS_RECORD,
       /* recent[i]'s function at E_RECENT + i, its cache at E_RECENT + NRECENT + i: held,
        * so no other function takes its address while it is there */
       E_RECENT, E_RECENT_END = E_RECENT + 2 * NRECENT - 1,
       /* the field names read per event, as Lua strings: lua_getfield would intern its
        * C string each time (a hash and a lookup) */
       E_K_TRACE, E_K_RECORD, E_K_CURRENTLINE, E_K_SOURCE, E_K_LOC,
       E_K_BYTECODES, E_N = E_K_BYTECODES,
       /* the recording trace's file names, files[k] at E_FILE0 + k: anchored here, not
        * only by the weak cache, while files[] points at them */
       E_FILE0 };
/* A function's cache (E_CACHE[func], weak keys): a full userdata, which LuaJIT never moves,
 * read by the handlers without a call into Lua (funcs.c). After line[n], where "record"
 * events are handled (state's lines): gap[pc], n bytes, the IR made from the record kept
 * at pc to the next one kept, when last seen (GAP_UNKNOWN: never); the count's probes
 * start there (events.c). Then the names, each ended by a NUL. */
struct lines { uint32_t n;               /* bytecode positions */
               uint32_t src, prefix;     /* where its source file's name and -jv's location
                                          * less ":line" (funcinfo's loc) are, from the
                                          * start; 0: none */
               uint32_t nprefix;
               int noline;               /* the location takes no line (builtin) */
               int32_t line[]; };        /* line[pc], -1: not known yet */
#define GAP_UNKNOWN 0xff
#define LINES_SIZE(n, gaps) (sizeof(struct lines) + (sizeof(int32_t) + !!(gaps)) * (size_t)(n))
static inline uint8_t *lines_gap(struct lines *ls) { return (uint8_t *)(ls->line + ls->n); }
static inline const char *lines_src(const struct lines *ls)
{
    return ls->src ? (const char *)ls + ls->src : NULL;
}
static inline const char *lines_prefix(const struct lines *ls)
{
    return ls->prefix ? (const char *)ls + ls->prefix : NULL;
}

#define LOC_LEN 96                       /* -jv's location, as funcinfo's loc (short) */
#define NAME_LEN 128
#define MAX_FILES 64
#define MAX_GROUPS 64

struct live { uint64_t id, addr; uint32_t size; int32_t spadj; uint8_t used, announced;
              uint8_t *code;             /* its bytes as last announced (malloc), or NULL */
              char name[NAME_LEN]; };
struct group { uint64_t id, addr; uint8_t announced; char name[48]; };

struct state {
    jh_ctx *ctx;
    int lines, events, debug, verify, closed;
    unsigned theirs;                     /* 1 << E_K_<event>: a handler of theirs to call */
    uint32_t arch, stubs_per, group_size, prologue_end;
    /* jit.util's C functions, by E_ index (traceir, tracemc, tracesnap, traceexitstub;
     * lua_tocfunction's), called straight; NULL: through lua_call */
    jh_lua_cfn cf[E_EXITSTUB + 1];
    const struct jh_lj_frame *frame;
    int frame_tried;
    struct live *live;                   /* by trace number */
    uint32_t nlive;
    struct group groups[MAX_GROUPS];
    /* the trace started (pend) and, when its lines are wanted, recording (rec) */
    uint32_t pend, rec_tr, parent;
    int side;
    int32_t line0, ni, last_fi;
    /* the start's line not known yet (line_later): the first record at start_pc in the
     * function of start_lines says it; loc: -jv's location waits for it (loc_line) */
    int line_later, loc_line;
    int32_t start_pc, start_check;
    struct lines *start_lines;
    /* the functions recorded lately (lua_topointer), so that a "record" event for one of
     * them makes no call into Lua: its lines, its source file (interned), the index of
     * that file in files[] for the trace recorded when it was found (gen) */
    struct recent { const void *fn; struct lines *lines; const char *src; int32_t fi;
                    uint32_t gen; } recent[NRECENT];
    uint32_t nextrecent, lastrecent, gen;   /* gen: one more at each trace recorded */
    struct lines *prev_lines;            /* the record kept last: its function's lines */
    int32_t prev_pc;                     /* (NULL when that function left recent[]), pc */
    char loc[LOC_LEN];
    size_t nloc;
    struct jh_lj_rec *rec;
    uint32_t nrec, caprec;
    const char *files[MAX_FILES];
    uint32_t nfiles;
    int32_t *snap, *slots;               /* per snapshot at the stop: IR position, frame */
    uint32_t capsnap;
    /* what the stop's one protected call into jit.util (gather) read, as far as it got:
     * the machine code (have), the snapshots if asked (snaps; nsnap -1: not all read),
     * the exit stubs' bases (x86: per group; arm64: the trace's) */
    struct { const uint8_t *mcode; uint64_t addr; uint32_t size, loop, nbase, per;
             int have, snaps; int64_t nsnap; uint64_t base[MAX_GROUPS]; } got;
    struct { uint64_t traces, patches, removed, groups, failed, no_unwind, checked, differ,
             records, merged, probes, rows_checked, rows_differ, guessed, counts_checked,
             counts_differ, direct, start_lines, snaps_checked, snaps_differ; } n;
};

/* ---- calling jit.util ------------------------------------------------------------------ */

/* Push env[fn]: the function a call() then calls, its arguments pushed after it. */
static inline void fn(lua_State *L, int which)
{
    A.rawgeti(L, UPV(2), which);
}

/* Push t[key] for the table at t (absolute), key one of the E_K_ names. */
static inline void field(lua_State *L, int t, int key)
{
    A.rawgeti(L, UPV(2), key);
    A.rawget(L, t);
}

/* Call what fn() pushed with its nargs arguments: nres results on the stack and 0, or -1
 * and nothing pushed (a Lua error: no answer). */
static inline int call(lua_State *L, int nargs, int nres)
{
    if (A.pcall(L, nargs, nres, 0) != 0) {
        A.settop(L, -2);
        return -1;
    }
    return 0;
}

/* ---- between events.c and funcs.c --------------------------------------------------- */

/* funcs.c: a function's cache (made on its first use, pushed), its lines, the line of one
 * of its bytecodes, the recent functions, a source file's index in the trace's files[] */
struct lines *jh__lj_func_cache(lua_State *L, int idx, int gaps, int hold);
int32_t jh__lj_line_at(lua_State *L, struct state *st, int idx, struct lines *ls, int32_t pc,
                       int rec);
struct recent *jh__lj_recent_of(lua_State *L, struct state *st, int idx);
int32_t jh__lj_file_index(lua_State *L, struct state *st, const struct recent *r);

/* The handlers (events.c): lua_CFunctions with upvalues state, env. */
int jh__lj_on_trace(lua_State *L);
int jh__lj_on_record(lua_State *L);
int jh__lj_gather(lua_State *L);        /* (tr): on_stop's, through lua_pcall */

#endif
