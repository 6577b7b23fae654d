/*
 * trace.c — a LuaJIT trace, as the event handlers gathered it (events.c), to jh_code_add
 * (trace.h): find every guard (a branch to an exit stub), match the guards of a
 * looping trace's loop part to the ones before the loop they copy, give each guard's code
 * the lines of the bytecodes its IR came from, and read how the trace moves the stack
 * pointer from its head and tail (x64: vm_x64.dasc, lj_asm_x86.h).
 *
 * Every byte read is of mcode within size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct branch { uint32_t off, end, exit; };

/* The exit whose stub target is, or -1. */
static int64_t stub_exit(const struct jh_lj_trace *t, uint64_t target)
{
    for (uint32_t g = 0; g < t->nstub_base; g++) {
        uint64_t base = t->stub_base[g];
        if (!base || target < base)
            continue;
        uint64_t d = target - base;
        if (d < 4ull * t->stubs_per && d % 4 == 0) {
            uint64_t k = (uint64_t)g * t->stubs_per + d / 4;
            if (k < t->nexit)
                return (int64_t)k;
        }
    }
    return -1;
}

static int32_t s32(const uint8_t *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return (int32_t)v;
}

/* The first offset from i on whose byte is 0x0f or 0xe9 (a jcc rel32's or a jmp rel32's
 * first), size if none: sixteen bytes at a time with SSE2 (x86-64's baseline), else
 * eight, where a byte at a time was ~5 instructions a byte of every trace's code (most of
 * derive_lines). It is called ~17 times a trace (0x0f begins many other instructions):
 * ~54 instructions a call eight bytes at a time, ~30 sixteen (bench/luajit stress.lua). */
static uint32_t next_jump(const uint8_t *mc, uint32_t i, uint32_t size)
{
#if defined(__SSE2__)
    const __m128i a = _mm_set1_epi8(0x0f), b = _mm_set1_epi8((char)0xe9);
    for (; i + 16 <= size; i += 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(mc + i));
        unsigned z = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(w, a),
                                                              _mm_cmpeq_epi8(w, b)));
        if (z)
            return i + (uint32_t)__builtin_ctz(z);
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; i + 8 <= size; i += 8) {
        uint64_t w, a, b;
        memcpy(&w, mc + i, 8);
        a = w ^ (0x0f * ones);
        b = w ^ (0xe9 * ones);
        /* a zero byte of a or b; the lowest set bit marks the first (a borrow can mark
         * bytes above it, never below) */
        uint64_t z = ((a - ones) & ~a & highs) | ((b - ones) & ~b & highs);
        if (z)
            return i + (uint32_t)__builtin_ctzll(z) / 8;
    }
#endif
    while (i < size && mc[i] != 0x0f && mc[i] != 0xe9)
        i++;
    return i;
}

/* x86: every jcc rel32 / jmp rel32 to an exit stub; a match resumes the scan after it. */
static uint32_t branches_x86(const struct jh_lj_trace *t, struct branch *out, uint32_t cap)
{
    const uint8_t *mc = t->mcode;
    uint32_t size = t->size, n = 0;
    for (uint32_t i = next_jump(mc, 0, size); i < size && n < cap; i = next_jump(mc, i, size)) {
        uint32_t len = 0;
        if (mc[i] == 0x0f) {
            if (i + 6 <= size && mc[i + 1] >= 0x80 && mc[i + 1] <= 0x8f)
                len = 6;
        } else if (mc[i] == 0xe9 && i + 5 <= size) {
            len = 5;
        }
        int64_t k = len ? stub_exit(t, t->addr + i + len + (int64_t)s32(mc + i + len - 4)) : -1;
        if (k >= 0) {
            out[n++] = (struct branch){ i, i + len, (uint32_t)k };
            i += len;
        } else {
            i++;
        }
    }
    return n;
}

/* arm64: b.cond, cbz/cbnz, tbz/tbnz and b to an exit stub, one instruction each. */
static uint32_t branches_arm64(const struct jh_lj_trace *t, struct branch *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i + 4 <= t->size && n < cap; i += 4) {
        uint32_t w = (uint32_t)s32(t->mcode + i), top = w >> 24, op = top & 0x7f;
        int64_t imm;
        if ((top == 0x54 && (w & 0x10) == 0) || op == 0x34 || op == 0x35)
            imm = (int64_t)((int32_t)(w << 8) >> 13);               /* imm19 at bit 5 */
        else if (op == 0x36 || op == 0x37)
            imm = (int64_t)((int32_t)(w << 13) >> 18);              /* imm14 at bit 5 */
        else if (top >= 0x14 && top <= 0x17)
            imm = (int64_t)((int32_t)(w << 6) >> 6);                /* imm26 */
        else
            continue;
        int64_t k = stub_exit(t, t->addr + i + (uint64_t)(imm * 4));
        if (k >= 0)
            out[n++] = (struct branch){ i, i + 4, (uint32_t)k };
    }
    return n;
}

/* The last record that began at or before ref, or -1. */
static int64_t rec_at(const struct jh_lj_trace *t, int64_t ref)
{
    int64_t lo = 0, hi = (int64_t)t->nrec - 1, best = -1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        if (t->rec[mid].nins <= ref) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

/* The first record that made IR in (s, e], or -1. */
static int64_t rec_first(const struct jh_lj_trace *t, int64_t s, int64_t e)
{
    if (e <= s)
        return -1;
    int64_t i = rec_at(t, s + 1);
    if (i < 0)
        i = 0;
    for (; i < (int64_t)t->nrec; i++) {
        int64_t a = t->rec[i].nins, b = i + 1 < (int64_t)t->nrec ? t->rec[i + 1].nins : INT64_MAX;
        if (a > e)
            return -1;
        if (b > a && b > s + 1 && a <= e)
            return i;
    }
    return -1;
}

struct rows { struct jh_line *out; uint32_t cap, n; struct jh_line last; };

/* A row at off for record i: none for an unknown line, none where the line does not
 * change; one at the same offset as the last replaces it (but the start line at 0). */
static void row(struct rows *r, uint32_t off, const struct jh_lj_trace *t, int64_t i)
{
    int32_t line = t->rec[i].line, file = t->rec[i].file;
    if (line <= 0 || file < 0)
        return;
    struct jh_line *last = &r->last;
    if (last->line == (uint32_t)line && last->file == (uint32_t)file)
        return;
    struct jh_line l = { off, (uint32_t)line, 0, (uint32_t)file };
    if (last->offset == off) {
        if (off == 0)
            return;
        r->n--;
    }
    if (r->n < r->cap)
        r->out[r->n] = l;
    r->n++;
    r->last = l;
}

/* The rows into out (cap of them); how many there are (more than cap: only cap written). */
static uint32_t derive_lines(const struct jh_lj_trace *t, struct jh_line *out, uint32_t cap)
{
    struct rows r = { out, cap, 0, { 0, t->line0, 0, 0 } };
    if (cap)
        out[0] = r.last;
    r.n = 1;
    if (t->nrec == 0 || t->nexit == 0)
        return r.n;

    /* a branch takes at least 4 bytes: the trace's size bounds how many there are */
    enum { MAXB = 4096 };
    struct branch b[MAXB];
    uint32_t cap_b = t->size / 4 + 1 < MAXB ? t->size / 4 + 1 : MAXB;
    uint32_t nb = t->arch == JH_LJ_ARM64 ? branches_arm64(t, b, cap_b) : branches_x86(t, b, cap_b);

    /* guards of the loop part copy earlier ones: matched in order by frame size, from
     * exit 1 on, as the Lua derivation this replaces did */
    int32_t copy_of[MAXB];
    uint32_t ncopy = t->nexit < MAXB ? t->nexit : MAXB;
    for (uint32_t k = 0; k < ncopy; k++)
        copy_of[k] = -1;
    if (t->loop > 0) {
        uint32_t cursor = 1;
        for (uint32_t x = 0; x < nb; x++) {
            uint32_t k = b[x].exit;
            if (b[x].off < t->loop || k >= ncopy || copy_of[k] >= 0)
                continue;
            int32_t rk = t->snap_ref[k], sk = t->snap_slots[k];
            uint32_t j = cursor;
            while (j < t->nexit && t->snap_ref[j] < rk && t->snap_slots[j] != sk)
                j++;
            if (j < t->nexit && t->snap_slots[j] == sk && t->snap_ref[j] < rk) {
                copy_of[k] = (int32_t)j;
                cursor = j + 1;
            }
        }
    }

    uint32_t from = 0;
    int64_t prev_ref = 0;
    for (uint32_t x = 0; x < nb; x++) {
        uint32_t e = b[x].exit;
        int copied = e < ncopy && copy_of[e] >= 0;
        uint32_t k = copied ? (uint32_t)copy_of[e] : e;
        int64_t ref = t->snap_ref[k];
        int64_t i = rec_at(t, ref);
        if (i >= 0) {
            int64_t first = copied ? -1 : rec_first(t, prev_ref, ref);
            if (first >= 0 && first != i) {
                row(&r, from, t, first);
                row(&r, b[x].off, t, i);
            } else {
                row(&r, from, t, i);
            }
        }
        from = b[x].end;
        prev_ref = ref;
    }
    return r.n;
}

/* ---- the trace's frame (x64) -------------------------------------------------------- */

/* `add rsp, imm` at offset i (48 83 c4 ib / 48 81 c4 id), ending by limit: its length
 * (0: none there) and *imm. */
static uint32_t add_rsp(const uint8_t *mc, int64_t i, int64_t limit, int32_t *imm)
{
    if (i < 0 || i + 4 > limit || mc[i] != 0x48 || mc[i + 2] != 0xc4)
        return 0;
    if (mc[i + 1] == 0x83) {
        *imm = (int8_t)mc[i + 3];
        return 4;
    }
    if (mc[i + 1] == 0x81 && i + 7 <= limit) {
        *imm = s32(mc + i + 3);
        return 7;
    }
    return 0;
}

struct frame { int32_t spadj; uint32_t cfa, nsteps, head_end; struct jh_cfa_step steps[2]; };

/* How the trace moves rsp (0 when its code is not the shape read here: then no unwind
 * description). A root trace starts with `add rsp,-N`; a side trace starts at its
 * parent's adjustment and adds the difference somewhere in its head; a trace that does
 * not loop ends with `add rsp,+N; jmp rel32`. */
static int frame_steps(const uint8_t *mc, uint32_t size, int32_t parent_spadj, int is_side,
                       uint32_t vm_cfa, struct frame *f)
{
    if (is_side && parent_spadj < 0)
        return 0;
    int32_t entry = is_side ? parent_spadj : 0, tail = 0, v;
    uint32_t n = 0;
    f->head_end = 0;
    if (size >= 9 && mc[size - 5] == 0xe9) {
        static const uint32_t back[] = { 9, 12 };
        for (int b = 0; b < 2; b++) {
            int64_t at = (int64_t)size - back[b];
            uint32_t l = add_rsp(mc, at, (int64_t)size - 5, &v);
            if (l && at + l == (int64_t)size - 5 && v > 0)
                tail = v;
        }
    }
    int32_t spadj = 0;
    if (!is_side) {
        uint32_t l = add_rsp(mc, 0, size, &v);
        if (l && v < 0) {
            spadj = -v;
            f->steps[n++] = (struct jh_cfa_step){ l, vm_cfa + (uint32_t)spadj };
            f->head_end = 1;
        }
    } else {
        spadj = tail ? tail : entry;
        int32_t delta = spadj - entry;
        if (delta < 0)
            return 0;
        if (delta > 0) {                    /* `add rsp,-delta` in the first 256 bytes */
            uint32_t found = 0;
            for (uint32_t i = 0; !found && i < 256 && i + 3 <= size; i++) {
                uint32_t l = mc[i] == 0x48 && (mc[i + 1] == 0x83 || mc[i + 1] == 0x81) &&
                             mc[i + 2] == 0xc4 ? add_rsp(mc, i, size, &v) : 0;
                if (l && v == -delta)
                    found = i + l;
            }
            if (!found)
                return 0;
            f->steps[n++] = (struct jh_cfa_step){ found, vm_cfa + (uint32_t)spadj };
            f->head_end = 1;
        }
    }
    if (tail) {
        if (tail != spadj)
            return 0;
        f->steps[n++] = (struct jh_cfa_step){ size - 5, vm_cfa };
    }
    f->spadj = spadj;
    f->cfa = vm_cfa + (uint32_t)entry;
    f->nsteps = n;
    return 1;
}

/* ---- the announcement --------------------------------------------------------------- */

int jh__luajit_add(jh_ctx *ctx, const struct jh_lj_trace *t, uint64_t *id)
{
    struct jh_code c = { .sz = sizeof c, .name = t->name, .symbol = t->symbol,
                         .start = (const void *)(uintptr_t)t->addr, .size = t->size };
    const struct jh_lj_frame *frame = t->frame;
    struct frame f;
    int framed = frame && frame->arch == JH_LJ_X86 && frame->vm_cfa &&
                 frame_steps(t->mcode, t->size, t->parent_spadj, t->is_side, frame->vm_cfa, &f);
    if (framed) {
        c.unwind = JH_UNWIND_FRAMELESS;
        c.cfa_offset = f.cfa;
        c.cfa_steps = f.steps;
        c.ncfa_steps = f.nsteps;
        c.saved_regs = frame->saved_regs;
        c.nsaved_regs = frame->nsaved_regs;
        c.personality = frame->personality;
    }
    struct jh_line small[256], *rows = small;
    if (t->files && t->nfiles) {
        uint32_t n = derive_lines(t, small, 256);
        if (n > 256) {
            if (!(rows = malloc(sizeof *rows * n)))
                return -ENOMEM;
            derive_lines(t, rows, n);
        }
        c.files = t->files;
        c.nfiles = t->nfiles;
        c.lines = rows;
        c.nlines = n;
        /* where `break` stops: the trace's frame is set up */
        c.prologue_end = framed && f.head_end && f.nsteps ? f.steps[0].offset
                       : t->prologue_end < t->size ? t->prologue_end : 0;
    }
    int err = jh_code_add(ctx, &c, id);
    if (rows != small)
        free(rows);
    return err < 0 ? err : framed ? 1 + f.spadj : 0;
}

int jh__lj_rows_same(const struct jh_lj_trace *t, const struct jh_lj_rec *rec, uint32_t nrec)
{
    struct jh_lj_trace u = *t;
    u.rec = rec;
    u.nrec = nrec;
    uint32_t n = derive_lines(t, NULL, 0);
    if (n != derive_lines(&u, NULL, 0))
        return 0;
    struct jh_line *a = malloc(sizeof *a * n * 2);
    if (!a)
        return -ENOMEM;
    derive_lines(t, a, n);
    derive_lines(&u, a + n, n);
    int same = !memcmp(a, a + n, sizeof *a * n);
    free(a);
    return same;
}
