/*
 * events.c — LuaJIT's "trace" and "record" events, handled in C (trace.h). jitherald.lua
 * attaches on_trace and on_record with jit.attach; LuaJIT calls them with the JIT off,
 * where the same work in Lua cost ~20 µs a trace (and a loop of traceir calls written in
 * Lua and called from here once cost more than the calls from C: docs/cost.md).
 * Per trace now: funcinfo once per bytecode position ever seen (each function's lines in
 * a C array, the last few functions known by their pointer: a record event on a line
 * seen before makes no call into Lua but lua_topointer), traceir ~2 times per recorded
 * bytecode whose line differs from the one before (the IR count there, probed from the
 * gap that span made when last recorded; a bytecode on the same line is not kept), and
 * at the stop one lua_pcall of gather.c's reader, which calls tracemc, a tracesnap per
 * snapshot and one more (their count is the exits'; traceinfo's table costs more than
 * that) and traceexitstub straight, then trace.c's derivation and one jh_code_add. Every
 * call into LuaJIT's API costs ~20-40 instructions, lua_call of a jit.util function ~350,
 * a table it makes ~600 more (docs/cost.md).
 *
 *     start   the trace's number, where it starts (its name) and its parent exit
 *     record  per bytecode recorded: its line and file, and the IR count where they change
 *     stop    the machine code, exits and snapshots -> jh__luajit_add; the parent's
 *             changed bytes patched (jh_code_patched); new exit stub groups announced
 *     abort   forgotten            flush   everything removed, one jh_code_remove_range
 *
 * The handlers never raise a Lua error of their own: a jit.util call that fails counts as
 * no answer. The handler the script attached (theirs[event]) is called after ours with the
 * same arguments; its errors are its own (LuaJIT prints them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

static void say(const struct state *st, const char *what, uint32_t tr, int err)
{
    if (st->debug)
        fprintf(stderr, "jitherald (luajit): %s %u: %s\n", what, tr, jh_strerror(err));
}

/* ---- names: built by hand, snprintf is a visible part of a trace's cost ---------------- */

/* Append s (len bytes) to buf (cap bytes, *at used, NUL kept), cut where it does not fit. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t len)
{
    if (len > cap - 1 - *at)
        len = cap - 1 - *at;
    memcpy(buf + *at, s, len);
    *at += len;
    buf[*at] = 0;
}

static void put_int(char *buf, size_t cap, size_t *at, int64_t v)
{
    char d[24], *p = d + sizeof d;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    put(buf, cap, at, p, (size_t)(d + sizeof d - p));
}

/* ---- live traces and exit stub groups ------------------------------------------------ */

static struct live *live_at(struct state *st, uint32_t tr)
{
    if (tr >= st->nlive) {
        uint32_t n = st->nlive ? st->nlive : 256;
        while (n <= tr)
            n *= 2;
        struct live *l = realloc(st->live, sizeof *l * n);
        if (!l)
            return NULL;
        memset(l + st->nlive, 0, sizeof *l * (n - st->nlive));
        st->live = l;
        st->nlive = n;
    }
    return &st->live[tr];
}

static void forget(struct state *st, uint32_t tr)
{
    if (tr < st->nlive && st->live[tr].used) {
        if (st->live[tr].announced) {
            jh_code_remove(st->ctx, st->live[tr].id);
            st->n.removed++;
        }
        st->live[tr].used = 0;
        free(st->live[tr].code);
        st->live[tr].code = NULL;
    }
}

/* The span of the parent's code that a side trace's link rewrote (lj_asm_patchexit: the
 * jumps to one exit stub, anywhere in the parent), found by comparing with the bytes last
 * announced; *len 0 when nothing changed. Without a copy, the whole parent. Announcing
 * the span, not the parent, is what the channels that copy patched bytes (auditlog's
 * code_patched record, elfmap's file) then copy: a few bytes, not the whole trace again. */
static uint64_t patched_span(struct live *p, size_t *len)
{
    const uint8_t *now = (const uint8_t *)(uintptr_t)p->addr;
    size_t lo = 0, hi = p->size;
    if (p->code) {
        /* eight bytes at a time to the first and last that differ (a byte at a time was
         * ~1,100 instructions a side trace, the parent's whole code compared) */
        uint64_t a, b;
        while (hi - lo >= 8 && (memcpy(&a, p->code + lo, 8), memcpy(&b, now + lo, 8), a == b))
            lo += 8;
        while (lo < hi && p->code[lo] == now[lo])
            lo++;
        while (hi - lo >= 8 && (memcpy(&a, p->code + hi - 8, 8), memcpy(&b, now + hi - 8, 8),
                                a == b))
            hi -= 8;
        while (hi > lo && p->code[hi - 1] == now[hi - 1])
            hi--;
        memcpy(p->code + lo, now + lo, hi - lo);
    }
    *len = hi - lo;
    return p->addr + lo;
}

/* Exit stub group g at base (x86: LuaJIT's shared groups of stubs_per, gather.c reads
 * where), announced when new or moved. */
static void group_seen(struct state *st, uint32_t g, uint64_t base)
{
    if (!base || g >= MAX_GROUPS || !st->group_size)
        return;
    struct group *gr = &st->groups[g];
    if (gr->addr != base) {
        if (gr->announced) {
            jh_code_remove(st->ctx, gr->id);
            st->n.removed++;
        }
        uint32_t first = g * st->stubs_per;
        snprintf(gr->name, sizeof gr->name, "LuaJIT exit stubs %u-%u", first,
                 first + st->stubs_per - 1);
        struct jh_code c = { .sz = sizeof c, .name = gr->name,
                             .start = (const void *)(uintptr_t)base, .size = st->group_size };
        int rc = jh_code_add(st->ctx, &c, &gr->id);
        gr->announced = rc == 0;
        gr->addr = base;
        if (rc != 0) {
            st->n.failed++;
            say(st, "exit stub group", g, rc);
        }
        st->n.groups++;
    }
}

static void log_event(struct state *st, const char *name, uint32_t tr, const char *what)
{
    if (!st->events)
        return;
    struct jh_attr a[2] = { { .key = "trace", .kind = JH_ATTR_UINT, .v.u = tr },
                            { .key = "what", .kind = JH_ATTR_STR, .v.s = what } };
    jh_log_event(st->ctx, name, a, what ? 2 : 1);
}

/* ---- the events ---------------------------------------------------------------------- */

/* The state raw (upvalue 1) when the handlers still announce: not closed. */
static struct state *state_of(struct state *raw)
{
    return raw && !raw->closed && raw->ctx ? raw : NULL;
}

/* The start's line is known now (line0): -jv's location gets it (loc_line). With
 * st->verify, against funcinfo's (asked at the start: stats' lines_checked, differ). */
static void start_line(struct state *st, int32_t line)
{
    if (st->verify && st->line_later) {
        st->n.checked++;
        if (line != st->start_check) {
            st->n.differ++;
            if (st->debug)
                fprintf(stderr, "jitherald (luajit): start at bytecode %d: line %d from its "
                        "record, %d from funcinfo\n", st->start_pc, line, st->start_check);
        }
    }
    st->line0 = line;
    st->line_later = 0;
    if (st->loc_line) {
        size_t at = st->nloc;
        put(st->loc, sizeof st->loc, &at, ":", 1);
        put_int(st->loc, sizeof st->loc, &at, line);
        st->nloc = at;
        st->loc_line = 0;
    }
}

/* start(tr, func, pc, otr, oex) */
static void on_start(lua_State *L, struct state *st)
{
    uint32_t tr = (uint32_t)A.tointeger(L, 2);
    int32_t pc = (int32_t)A.tointeger(L, 4);
    if (!tr)
        return;
    forget(st, tr);                      /* the number reused: flushed alone, or collected */
    st->pend = tr;
    st->rec_tr = 0;
    st->side = A.type(L, 5) == LUA_TNUMBER && A.type(L, 6) == LUA_TNUMBER &&
               A.tointeger(L, 6) >= 0;
    st->parent = st->side ? (uint32_t)A.tointeger(L, 5) : 0;
    st->line0 = 0;
    st->line_later = st->loc_line = 0;
    st->loc[0] = '?';
    st->loc[1] = 0;
    st->nloc = 1;
    if (A.type(L, 3) != LUA_TFUNCTION)
        return;
    /* the start's function among the recent ones, as the records' are (funcs.c) */
    struct recent *fr = jh__lj_recent_of(L, st, 3);
    if (!fr)
        return;
    struct lines *ls = fr->lines;
    if (st->lines && fr->src) {
        st->rec_tr = tr;
        st->nrec = 0;
        st->ni = 0;
        st->files[0] = fr->src;
        st->nfiles = 1;
        A.rawgeti(L, UPV(2), E_RECENT + NRECENT + (int)(fr - st->recent));
        A.rawseti(L, UPV(2), E_FILE0);   /* its cache, where the name is: held */
        st->gen++;                       /* files[] anew: the recent functions' fi too */
        st->prev_lines = NULL;
    }
    /* A line not seen yet: where "record" events follow, the first one at pc (the
     * trace records its start first) reads it from the executing frame (on_rec), as it
     * does every recorded bytecode's; funcinfo, a table of 16 fields (~4,800 instructions
     * with the call), is asked at the stop only if none did. The frame at this event is
     * not at pc yet (its line is the bytecode's before, JITHERALD_LUAJIT_VERIFY shows). */
    if (st->rec_tr == tr && ls && pc >= 0 && (uint32_t)pc < ls->n && ls->line[pc] < 0) {
        st->line_later = 1;
        st->start_pc = pc;
        st->start_lines = ls;
        A.pushvalue(L, 3);
        A.rawseti(L, UPV(2), E_START);   /* (held for the stop's funcinfo) */
        if (st->verify)                  /* (not kept in ls: the record reads the frame) */
            st->start_check = jh__lj_line_at(L, st, 3, NULL, pc, 0);
    } else {
        st->line0 = jh__lj_line_at(L, st, 3, ls, pc, 0);
    }
    if (ls && ls->prefix) {
        size_t at = 0;
        put(st->loc, sizeof st->loc, &at, lines_prefix(ls), ls->nprefix);
        st->nloc = at;
        if (!ls->noline) {
            st->loc_line = 1;
            if (!st->line_later)
                start_line(st, st->line0);
        }
    }
}

/* Trace tr's IR count now, from ni on (less than ni: ni): the least count >= ni at which
 * jit.util.traceir answers nothing for count + 1 (numbers in: it raises no error). Probed
 * one by one from the gap this span made the last time it was recorded (2 probes where it
 * made as much again, 1 where none): side traces record the same code again and again;
 * 2.6 -> 2.1 probes a kept record on bench/luajit/stress.lua.
 *
 * Each probe calls traceir's own C function straight (direct: st->cf[E_TRACEIR], which
 * lua_tocfunction gave), with the handler's stack as its arguments: (tr, k) at 1 and 2,
 * as lua_call would give them, its answers over them and after them (5, or none). The handler's
 * own arguments are gone then (the caller keeps them where a handler of the script's gets
 * them next). lua_call of it cost ~330 instructions a probe of ~500 (docs/cost.md);
 * traceir is LuaJIT's C (lib_jit.c), reads only its two arguments, allocates nothing, and
 * its one error (arguments that are not numbers) cannot arise. Without direct: lua_call of
 * the function (pushed here at base + 1). */
static int32_t ir_count(lua_State *L, struct state *st, uint32_t tr, int base, int32_t ni,
                        uint8_t guess, int direct)
{
    int32_t lo = ni, hi = INT32_MAX;     /* the count is in [lo, hi] */
    int32_t k = guess != GAP_UNKNOWN && guess > 0 ? ni + guess : ni + 1;
    if (!direct)
        fn(L, E_TRACEIR);
    while (lo < hi) {
        int answered;
        if (direct) {
            A.settop(L, 0);
            A.pushnumber(L, tr);
            A.pushnumber(L, k);
            answered = st->cf[E_TRACEIR](L) > 0;
            st->n.direct++;
        } else {
            A.pushvalue(L, base + 1);
            A.pushnumber(L, tr);
            A.pushnumber(L, k);
            A.call(L, 2, 1);
            answered = A.type(L, -1) != LUA_TNIL;
            A.settop(L, base + 1);
        }
        st->n.probes++;
        if (answered)
            lo = k;
        else
            hi = k - 1;
        k = lo + 1;
    }
    if (!direct)                         /* (direct: the stack is left as the last probe
                                          * made it; the handler reads it no more) */
        A.settop(L, base);
    return lo;
}

/* record(tr, func, pc, depth): the IR count, line and file of the bytecode to record */
static void on_rec(lua_State *L, struct state *st)
{
    /* numbers from LuaJIT (lua_type not asked: 2 calls an event); not one, 0: no trace */
    uint32_t tr = (uint32_t)A.tointeger(L, 1);
    int32_t pc = (int32_t)A.tointeger(L, 3);
    if (!tr || tr != st->rec_tr || pc < 0)
        return;
    struct recent *fr = jh__lj_recent_of(L, st, 2);
    if (!fr)
        return;
    if (fr->gen != st->gen) {
        fr->fi = jh__lj_file_index(L, st, fr);
        fr->gen = st->gen;
    }
    st->last_fi = fr->fi;
    const struct lines *ls = fr->lines;  /* (a line seen before: no call) */
    int32_t line = ls && (uint32_t)pc < ls->n && ls->line[pc] >= 0 ? ls->line[pc]
                 : jh__lj_line_at(L, st, 2, fr->lines, pc, 1);
    if (st->line_later && pc == st->start_pc && fr->lines == st->start_lines) {
        start_line(st, line);            /* the trace's start (on_start) */
        st->n.start_lines++;
    }
    st->n.records++;
    /* the same line and file as the record before: a guard whose snapshot falls in either
     * gets the same row (trace.c), so this one is not kept and its IR count (the traceir
     * probes below, most of this handler's cost) not needed. With st->verify every record
     * is kept and the stop compares the rows both ways (stats: rows_checked, rows_differ). */
    if (st->nrec && st->rec[st->nrec - 1].line == line &&
        st->rec[st->nrec - 1].file == st->last_fi) {
        st->n.merged++;
        if (!st->verify)
            return;
    }
    /* (the stack as LuaJIT gave it: recent_of, file_index and line_at leave it so) */
    int base = A.gettop(L);
    struct lines *pl = st->prev_lines;
    uint8_t *gap = pl && (uint32_t)st->prev_pc < pl->n ? &lines_gap(pl)[st->prev_pc] : NULL;
    /* with st->verify, the count probed one by one from the last, through lua_call (before
     * a direct probe takes the stack) */
    int32_t plain = st->verify ? ir_count(L, st, tr, base, st->ni, GAP_UNKNOWN, 0) : 0;
    /* traceir called straight, unless a handler of the script's gets this event's
     * arguments after ours (chain) */
    int direct = st->cf[E_TRACEIR] && !(st->theirs & (1u << E_K_RECORD));
    int32_t ni = ir_count(L, st, tr, base, st->ni, gap ? *gap : GAP_UNKNOWN, direct);
    st->n.guessed += gap && *gap != GAP_UNKNOWN;
    if (st->verify) {
        st->n.counts_checked++;
        if (plain != ni) {
            st->n.counts_differ++;
            if (st->debug)
                fprintf(stderr, "jitherald (luajit): trace %u: IR count %d, %d from the "
                        "gap guessed\n", tr, plain, ni);
        }
    }
    if (gap)
        *gap = ni - st->ni < GAP_UNKNOWN ? (uint8_t)(ni - st->ni) : GAP_UNKNOWN;
    st->ni = ni;
    st->prev_lines = fr->lines;
    st->prev_pc = pc;
    if (st->nrec == st->caprec) {
        uint32_t n = st->caprec ? st->caprec * 2 : 256;
        struct jh_lj_rec *r = realloc(st->rec, sizeof *r * n);
        if (!r) {
            st->rec_tr = 0;              /* no memory: this trace gets its start line only */
            return;
        }
        st->rec = r;
        st->caprec = n;
    }
    st->rec[st->nrec++] = (struct jh_lj_rec){ ni, line, st->last_fi };
}

/* With st->verify: t's rows from every record, as on_rec keeps them then, against those
 * from the records it keeps otherwise (none that repeats the line and file before it). */
static void verify_rows(struct state *st, const struct jh_lj_trace *t)
{
    struct jh_lj_rec *kept = malloc(sizeof *kept * t->nrec);
    if (!kept)
        return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->nrec; i++)
        if (!n || kept[n - 1].line != t->rec[i].line || kept[n - 1].file != t->rec[i].file)
            kept[n++] = t->rec[i];
    int same = jh__lj_rows_same(t, kept, n);
    free(kept);
    if (same < 0)
        return;
    st->n.rows_checked++;
    if (!same) {
        st->n.rows_differ++;
        if (st->debug)
            fprintf(stderr, "jitherald (luajit): %s: its rows differ without the records "
                    "that repeat a line\n", t->name);
    }
}

/* stop(tr): announce it */
static void on_stop(lua_State *L, struct state *st)
{
    uint32_t tr = (uint32_t)A.tointeger(L, 2);
    if (tr != st->pend || !tr)
        return;
    st->pend = 0;
    int lines = st->rec_tr == tr;
    st->rec_tr = 0;
    int base = A.gettop(L);
    if (st->line_later) {                /* no record at the start's bytecode: funcinfo */
        A.rawgeti(L, UPV(2), E_START);
        start_line(st, jh__lj_line_at(L, st, base + 1, st->start_lines, st->start_pc, 0));
        A.settop(L, base);
    }
    /* jit.util's answers, in one lua_pcall (gather.c); with lines, the snapshots, whose
     * count is nexit; where reading them failed, the trace gets its start line only, and
     * its stub groups are found without them */
    memset(&st->got, 0, sizeof st->got);
    st->got.nsnap = -1;
    st->got.snaps = lines && st->arch;
    A.rawgeti(L, UPV(2), E_GATHER);
    A.pushnumber(L, tr);
    if (call(L, 1, 0) < 0 && st->got.have && st->got.snaps && st->got.nsnap < 0) {
        st->got.snaps = 0;
        st->got.nbase = 0;
        A.rawgeti(L, UPV(2), E_GATHER);
        A.pushnumber(L, tr);
        call(L, 1, 0);
    }
    A.settop(L, base);
    if (!st->got.have)
        return;
    const uint8_t *mcode = st->got.mcode;
    size_t size = st->got.size;
    uint64_t addr = st->got.addr;
    uint32_t loop = st->got.loop;
    int64_t nsnap = st->got.nsnap;
    uint32_t nexit = nsnap > 0 ? (uint32_t)nsnap : 0;
    /* where the exit stubs are: x86's shared groups (announced here), arm64's per trace */
    const uint64_t *bases = st->got.base;
    uint32_t nbase = st->got.nbase, per = st->got.per;
    if (st->arch == JH_LJ_X86)
        for (uint32_t g = 0; g < nbase; g++)
            group_seen(st, g, bases[g]);
    if (!st->frame_tried && addr) {
        st->frame_tried = 1;
        fn(L, E_VMFRAME);
        A.pushnumber(L, (double)addr);
        if (call(L, 1, 1) == 0) {
            if (A.type(L, -1) == LUA_TNUMBER)
                st->frame = (const struct jh_lj_frame *)(uintptr_t)A.tonumber(L, -1);
            A.settop(L, -2);
        }
    }
    struct live *parent = st->side && st->parent < st->nlive && st->live[st->parent].used
                        ? &st->live[st->parent] : NULL;
    char name[NAME_LEN], symbol[24];
    size_t nsym = 0, nname;
    put(symbol, sizeof symbol, &nsym, "TRACE_", 6);
    put_int(symbol, sizeof symbol, &nsym, tr);
    memcpy(name, symbol, nsym);
    nname = nsym;
    put(name, sizeof name, &nname, " ", 1);
    put(name, sizeof name, &nname, st->loc, st->nloc);
    struct jh_lj_trace t = {
        .name = name, .symbol = symbol, .mcode = mcode, .size = (uint32_t)size, .loop = loop,
        .addr = addr, .arch = st->arch, .frame = st->frame,
        .parent_spadj = parent ? parent->spadj : -1, .is_side = st->side,
        .prologue_end = st->prologue_end,
    };
    if (lines) {
        t.files = st->files;
        t.nfiles = st->nfiles;
        t.line0 = (uint32_t)st->line0;
        if (st->arch && nexit && nbase && nsnap >= 0) {
            t.nexit = nexit;
            t.stubs_per = per;
            t.nstub_base = nbase;
            t.stub_base = bases;
            t.snap_ref = st->snap;
            t.snap_slots = st->slots;
            t.nrec = st->nrec;
            t.rec = st->rec;
        }
    }
    if (st->verify && t.nrec)
        verify_rows(st, &t);
    uint64_t id = 0;
    int rc = jh__luajit_add(st->ctx, &t, &id);
    uint8_t *copy = rc >= 0 && size ? malloc(size) : NULL;
    if (copy)
        memcpy(copy, mcode, size);      /* what its patches are compared with */
    struct live *l = live_at(st, tr);
    if (rc < 0) {
        st->n.failed++;
        say(st, "trace", tr, rc);
    }
    if (rc <= 0)
        st->n.no_unwind++;
    if (l) {
        l->used = 1;
        l->announced = rc >= 0;
        l->id = id;
        l->addr = addr;
        l->size = (uint32_t)size;
        l->spadj = rc > 0 ? rc - 1 : -1;
        free(l->code);
        l->code = copy;
        memcpy(l->name, name, nname + 1);
    } else {
        free(copy);
        if (rc >= 0)
            jh_code_remove(st->ctx, id); /* no memory to remember it: not kept */
    }
    st->n.traces++;
    /* the parent's exit branch now jumps here (lj_asm_patchexit rewrote it, and any other
     * branch to that exit stub, somewhere in the parent's code) */
    parent = st->side && st->parent < st->nlive && st->live[st->parent].used
           ? &st->live[st->parent] : NULL;      /* again: live_at may have moved the array */
    size_t plen = 0;
    uint64_t pat = parent && parent->announced ? patched_span(parent, &plen) : 0;
    if (plen) {
        jh_code_patched(st->ctx, (const void *)(uintptr_t)pat, plen);
        st->n.patches++;
    }
    log_event(st, "trace_stop", tr, name);
}

/* Everything goes: one jh_code_remove_range over all this context announced, so a channel
 * settles once (gdb rebuilds each image once, not as each quarter of it dies). */
static void on_flush(struct state *st)
{
    int n = jh_code_remove_range(st->ctx, NULL, (size_t)1 << 63);
    if (n > 0)
        st->n.removed += (uint64_t)n;
    for (uint32_t i = 0; i < st->nlive; i++)
        free(st->live[i].code);
    if (st->live)
        memset(st->live, 0, sizeof *st->live * st->nlive);
    memset(st->groups, 0, sizeof st->groups);
    st->pend = st->rec_tr = 0;
    log_event(st, "trace_flush", 0, NULL);
}

/* Call theirs[event] with this event's arguments (none: st->theirs, open.c's theirs()). */
static int chain(lua_State *L, const struct state *st, int event)
{
    if (!st || !(st->theirs & (1u << event)))
        return 0;
    int n = A.gettop(L);
    A.rawgeti(L, UPV(2), E_THEIRS_TRACE + (event - E_K_TRACE));
    if (A.type(L, -1) != LUA_TFUNCTION) {
        A.settop(L, n);
        return 0;
    }
    for (int i = 1; i <= n; i++)
        A.pushvalue(L, i);
    A.call(L, n, 0);
    return 0;
}

int jh__lj_on_trace(lua_State *L)
{
    struct state *raw = A.touserdata(L, UPV(1)), *st = state_of(raw);
    /* "flush" comes alone; the others with the trace's number */
    if (st && A.type(L, 1) == LUA_TSTRING) {
        const char *what = A.tolstring(L, 1, NULL);
        if (!strcmp(what, "start")) {
            on_start(L, st);
        } else if (!strcmp(what, "stop")) {
            on_stop(L, st);
        } else if (!strcmp(what, "abort")) {
            uint32_t tr = (uint32_t)A.tointeger(L, 2);
            if (st->pend == tr)
                st->pend = 0;
            if (st->rec_tr == tr)
                st->rec_tr = 0;
            log_event(st, "trace_abort", tr, NULL);
        } else if (!strcmp(what, "flush")) {
            on_flush(st);
        }
    }
    return chain(L, raw, E_K_TRACE);
}

int jh__lj_on_record(lua_State *L)
{
    struct state *raw = A.touserdata(L, UPV(1)), *st = state_of(raw);
    if (st)
        on_rec(L, st);
    return chain(L, raw, E_K_RECORD);
}
