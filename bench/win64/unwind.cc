/*
 * unwind.cc — Windows x64 (run under Wine by bench/win64.sh): what crossing JIT frames
 * costs when many functions are registered, jitherald beside the usual way.
 *   jitherald     JH_UNWIND: one function-table callback per allocation of JIT code,
 *                 over its own sorted table
 *   per-function  one RtlAddFunctionTable per function (what a JIT does first), with the
 *                 same UNWIND_INFO bytes
 * With n functions registered (small leaves in one code area, then a chain of three JIT
 * frames registered last, as new code is), each operation goes through the chain:
 *   throw     a C++ exception thrown below the frames, caught above them
 *   longjmp   msvcrt's longjmp from below to above (it unwinds frame by frame)
 *   backtrace RtlCaptureStackBackTrace from below, 64 frames at most
 * Sizes: the chain alone (3 functions), 10,000 and 100,000 in all. Prints the median time
 * per operation in microseconds, and the ratio of jitherald's throw with 100,000 functions
 * to the chain alone (the goal: at most 3).
 *     bench_unwind.exe [REPEAT]
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

extern "C" {
#include "base/buf.h"
#include "fmt/unwind_info.h"
}
#include "jitherald.h"
#include "wjit.h"

static double now_us(void)
{
    static LARGE_INTEGER f;
    LARGE_INTEGER t;
    if (!f.QuadPart)
        QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t);
    return (double)t.QuadPart * 1e6 / (double)f.QuadPart;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct vm_error {
    int code;
};
static void cb_throw(uint64_t arg) { throw vm_error{ (int)arg }; }
static jmp_buf jb;
static void cb_longjmp(uint64_t arg) { longjmp(jb, (int)arg); }
static void *frames[64];
static void cb_backtrace(uint64_t arg)
{
    (void)arg;
    RtlCaptureStackBackTrace(0, 64, frames, NULL);
}

enum op { THROW, LONGJMP, BACKTRACE, NOP };
static const char *const op_name[NOP] = { "throw", "longjmp", "backtrace" };

__attribute__((noinline)) static void once(const struct wjit_chain *c, enum op op)
{
    switch (op) {
    case THROW:
        try {
            c->entry(1, cb_throw, NULL);
        } catch (const vm_error &) {
        }
        break;
    case LONGJMP:
        if (setjmp(jb) == 0)
            c->entry(1, cb_longjmp, NULL);
        break;
    case BACKTRACE:
        c->entry(1, cb_backtrace, NULL);
        break;
    default:
        break;
    }
}

static double measure(const struct wjit_chain *c, enum op op, int repeat)
{
    double t[201];
    if (repeat > 201)
        repeat = 201;
    for (int i = 0; i < 3; i++)
        once(c, op);
    for (int i = 0; i < repeat; i++) {
        double t0 = now_us();
        once(c, op);
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp);
    return t[repeat / 2];
}

/* ---- the peer: one RtlAddFunctionTable per function ------------------------------------ */
struct peer {
    RUNTIME_FUNCTION *rf;
    size_t n;
    uint8_t *info;                      /* UNWIND_INFO bytes, in the code area */
};

/* Both kinds of function wjit makes, encoded once, at the start of the code area (which
 * is the tables' base: their UNWIND_INFO must be within 4 GiB above it). */
static uint8_t *area_base, *fp_info, *saver_info;

static void peer_add(struct peer *p, const struct wjit_fn *f, const uint8_t *info)
{
    RUNTIME_FUNCTION *rf = &p->rf[p->n++];
    rf->BeginAddress = (DWORD)(f->code - area_base);
    rf->EndAddress = (DWORD)(f->code + f->size - area_base);
    rf->UnwindData = (DWORD)(info - area_base);
    RtlAddFunctionTable(rf, 1, (DWORD64)(uintptr_t)area_base);
}

static void encode_infos(void)
{
    static const uint8_t saver_cfi[] = { 0x41, 0x0e, 16, 0x83, 2, 0x41, 0x0e, 24, 0x84, 3,
                                         0x44, 0x0e, 64 };
    struct jh__func fp = {}, sv = {};
    fp.size = sv.size = 64;
    fp.unwind = JH_UNWIND_FRAME_POINTER;
    fp.fp_push_end = 1;
    fp.fp_set_end = 4;
    sv.unwind = JH_UNWIND_CFI;
    sv.cfi = saver_cfi;
    sv.cfi_len = sizeof saver_cfi;
    struct jh__buf b = {};
    int n = jh__uwi_encode(&b, &fp, NULL);
    int m = jh__uwi_encode(&b, &sv, NULL);
    uint8_t *p = wjit_here();
    memcpy(p, b.p, b.len);
    fp_info = p;
    saver_info = p + n;
    wjit_rewind(p + ((b.len + 63) & ~(size_t)63));
    (void)m;
    jh__buf_free(&b);
}

int main(int argc, char **argv)
{
    int repeat = argc > 1 ? atoi(argv[1]) : 51;
    static const int sizes[] = { 1, 10000, 100000 };
    if (wjit_init(16u << 20) < 0)
        return 1;
    area_base = wjit_here();
    encode_infos();
    uint8_t *start = wjit_here();
    double res[3][2][NOP];
    int sizes_shown[3];
    for (int s = 0; s < 3; s++) {
        int n = sizes[s];
        struct wjit_fn *f = (struct wjit_fn *)calloc((size_t)n, sizeof *f);
        /* jitherald */
        jh_ctx *jh;
        struct jh_options o = {};
        o.sz = sizeof o;
        o.channels = JH_UNWIND;
        o.flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT;
        if (jh_open(&jh, &o) < 0)
            return 1;
        wjit_rewind(start);
        int leaves = n > 3 ? n - 3 : 0, total = leaves + 3;
        double t0 = now_us();
        for (int i = 0; i < leaves; i++)
            wjit_leaf(jh, "leaf", 48, &f[i]);
        struct wjit_chain c;
        wjit_make_chain(jh, "bench", &c);
        double add_ns = (now_us() - t0) * 1000 / total;
        for (int op = 0; op < NOP; op++)
            res[s][0][op] = measure(&c, (enum op)op, repeat);
        jh_close(jh);
        /* per function */
        wjit_rewind(start);
        struct peer p = {};
        p.rf = (RUNTIME_FUNCTION *)calloc((size_t)total, sizeof *p.rf);
        for (int i = 0; i < leaves; i++) {
            wjit_leaf(NULL, "leaf", 48, &f[i]);
            peer_add(&p, &f[i], fp_info);
        }
        wjit_make_chain(NULL, "bench", &c);
        peer_add(&p, &c.fn[0], saver_info);
        peer_add(&p, &c.fn[1], fp_info);
        peer_add(&p, &c.fn[2], saver_info);
        for (int op = 0; op < NOP; op++)
            res[s][1][op] = measure(&c, (enum op)op, repeat);
        for (size_t i = 0; i < p.n; i++)   /* oldest first: Wine finds each at the head */
            RtlDeleteFunctionTable(&p.rf[i]);
        free(p.rf);
        free(f);
        printf("%7d functions: jitherald registered them at %.0f ns each\n", total, add_ns);
        sizes_shown[s] = total;
    }
    printf("\nthrough 3 JIT frames, median of %d, microseconds per operation\n", repeat);
    printf("%-10s %9s %12s %14s %8s\n", "operation", "functions", "jitherald",
           "per-function", "ratio");
    for (int op = 0; op < NOP; op++)
        for (int s = 0; s < 3; s++)
            printf("%-10s %9d %12.1f %14.1f %7.1fx\n", op_name[op], sizes_shown[s], res[s][0][op],
                   res[s][1][op], res[s][1][op] / res[s][0][op]);
    printf("\njitherald, throw with %d functions / with %d: %.2f (goal: at most 3)\n",
           sizes_shown[2], sizes_shown[0],
           res[2][0][THROW] / res[0][0][THROW]);
    return 0;
}
