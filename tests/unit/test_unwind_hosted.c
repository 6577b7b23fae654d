/*
 * test_unwind_hosted.c — many functions announced inside one region the JIT registered its
 * own FDE over (as LuaJIT registers each machine-code area and places its traces from the
 * top down), with that FDE's personality: libgcc's list (GCC <= 12) only.
 *
 * Each function is `push rbp; mov rbp,rsp; call hook; pop rbp; ret` with a pad after it;
 * hook() either raises an exception of its own class (the area's personality catches it in
 * the function's frame and lands on the pad: the function returns 2) or walks the stack
 * with _Unwind_Backtrace (the walk must pass the function and reach call_at(), its caller).
 * Checked after 400 adds, after removing some, and after jh_flush:
 *   - libgcc's _Unwind_Find_FDE gives every live function an FDE of exactly its range, every
 *     gap between them a filler of exactly the gap, and code below the lowest one the area's;
 *   - exceptions and walks through the first, a middle and the last function announced;
 *   - the upper three quarters removed (emptied runs hand their range down), functions
 *     announced again there;
 *   - the adds copied O(n log n) FDEs in all, not one run rebuilt whole per add (what made
 *     an add cost O(traces since the last flush) under LuaJIT: issue 30);
 *   - once everything is removed, the area's own FDE alone again.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "unwind_abi.h"
#include "jitherald.h"
#include "channels/unwind_stats.h"
#include "fmt/cfi.h"

static struct {
    int (*raise)(struct uexc *);
    uintptr_t (*get_ip)(struct _Unwind_Context *);
    void (*set_ip)(struct _Unwind_Context *, uintptr_t);
    int (*backtrace)(int (*)(struct _Unwind_Context *, void *), void *);
    const uint8_t *(*find_fde)(void *, void *);
    void (*register_frame)(void *);
    void (*deregister_frame)(void *);
} uw;

#define AREA (64 * 1024)
#define SLOT 48                 /* a function every SLOT bytes, from the area's top down */
#define FN_SIZE 30              /* its code; the rest of the slot is a gap (a filler) */
#define RET_OFF 16              /* where hook() returns to; the pad is 7 bytes further */
#define N 400
static uint8_t *area;
static bool walk;               /* hook(): walk the stack instead of raising */
static uintptr_t seen_ip;       /* the function's pc the personality saw */
static struct uexc exc;
static struct { uintptr_t ip[64]; int n; } frames;

static int pers_area(int version, int actions, uint64_t exclass, struct uexc *ue,
                     struct _Unwind_Context *ctx)
{
    (void)version, (void)ue;
    if (exclass != exc.exclass)
        return URC_CONTINUE_UNWIND;
    seen_ip = uw.get_ip(ctx);
    if (actions & UA_SEARCH_PHASE)
        return URC_HANDLER_FOUND;
    if (actions & UA_HANDLER_FRAME) {
        uw.set_ip(ctx, seen_ip + 7);            /* the pad, after the function's ret */
        return URC_INSTALL_CONTEXT;
    }
    return URC_CONTINUE_UNWIND;
}

static int step(struct _Unwind_Context *ctx, void *arg)
{
    (void)arg;
    if (frames.n < 64)
        frames.ip[frames.n++] = uw.get_ip(ctx);
    return URC_NO_REASON;
}

__attribute__((noinline)) static void hook(void)
{
    if (walk) {
        frames.n = 0;
        CHECK_EQ(uw.backtrace(step, NULL), URC_END_OF_STACK);
        return;
    }
    memset(&exc, 0, sizeof exc);
    exc.exclass = 0x4a48484f53540000ull;        /* "JHHOST\0\0" */
    uw.raise(&exc);                             /* returns only when nobody caught */
}

static uintptr_t fn_at(int i)   /* the i-th function announced: the highest first */
{
    return (uintptr_t)area + AREA - (size_t)(i + 1) * SLOT;
}

/* Function i, announced with the area's personality (as the LuaJIT adapter does). */
static struct jh_code fn_code(int i)
{
    return (struct jh_code){ .sz = sizeof(struct jh_code), .name = "t",
                             .start = (void *)fn_at(i), .size = FN_SIZE,
                             .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                             .fp_set_end = 4, .personality = (const void *)pers_area };
}

static void emit(uintptr_t at)
{
    uint8_t *p = (uint8_t *)at;
    uintptr_t t = (uintptr_t)hook;
    static const uint8_t pro[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8 };
    static const uint8_t epi[] = { 0xff, 0xd0, 0xb8, 1, 0, 0, 0, 0x5d, 0xc3,   /* ret 1 */
                                   0xb8, 2, 0, 0, 0, 0x5d, 0xc3 };             /* pad: 2 */
    memcpy(p, pro, sizeof pro);
    memcpy(p + sizeof pro, &t, 8);
    memcpy(p + sizeof pro + 8, epi, sizeof epi);
}

__attribute__((noinline)) static int call_at(uintptr_t at, bool walking)
{
    walk = walking;
    seen_ip = 0;
    int r = ((int (*)(void))(void *)at)();
    __asm__ volatile("" ::: "memory");
    return r;
}

/* The range of the FDE libgcc finds for pc: [*lo, *hi). */
static bool fde_range(uintptr_t pc, uintptr_t *lo, uintptr_t *hi)
{
    /* libgcc searches the objects it has sorted first, and sorts the new ones only after a
     * miss there: what a walk's first frame (in the program, below the area) does. */
    void *bases[3];
    uw.find_fde((void *)(uintptr_t)hook, bases);
    const uint8_t *fde = uw.find_fde((void *)pc, bases);
    if (!fde)
        return false;
    uint64_t b, r;
    memcpy(&b, fde + 8, 8);     /* ours and the area's: absolute pointers */
    memcpy(&r, fde + 16, 8);
    *lo = (uintptr_t)b;
    *hi = (uintptr_t)(b + r);
    return true;
}

static void check_fde(uintptr_t pc, uintptr_t lo, uintptr_t hi)
{
    uintptr_t l = 0, h = 0;
    CHECK(fde_range(pc, &l, &h));
    CHECK_EQ(l, lo);
    CHECK_EQ(h, hi);
}

/* Exceptions and walks through function i. */
static void through(int i)
{
    uintptr_t f = fn_at(i);
    CHECK_EQ(call_at(f, false), 2);
    CHECK_EQ(seen_ip, f + RET_OFF);
    CHECK_EQ(call_at(f, true), 1);
    int k = 0;
    while (k < frames.n && frames.ip[k] != f + RET_OFF)
        k++;
    CHECK(k < frames.n);                        /* the walk passed the function */
    CHECK(k + 1 < frames.n && frames.ip[k + 1] > (uintptr_t)call_at &&
          frames.ip[k + 1] < (uintptr_t)call_at + 256);     /* ...to its caller */
}

/* Every live function its own FDE, every gap between two of them a filler, up to the
 * area's end too; below the lowest one ever announced the area's own FDE. */
static void check_all(const bool *live)
{
    for (int i = 0; i < N; i++)
        if (live[i])
            check_fde(fn_at(i) + 1, fn_at(i), fn_at(i) + FN_SIZE);
    for (int i = 1; i < N; i++)
        if (live[i] && live[i - 1])
            check_fde(fn_at(i) + FN_SIZE, fn_at(i) + FN_SIZE, fn_at(i - 1));
    if (live[0])
        check_fde(fn_at(0) + FN_SIZE, fn_at(0) + FN_SIZE, (uintptr_t)area + AREA);
    check_fde(fn_at(N - 1) - 1, (uintptr_t)area, (uintptr_t)area + AREA);
}

int main(void)
{
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW);
    CHECK(h != NULL);
    if (!h)
        return check_done();
    *(void **)&uw.raise = dlsym(h, "_Unwind_RaiseException");
    *(void **)&uw.get_ip = dlsym(h, "_Unwind_GetIP");
    *(void **)&uw.set_ip = dlsym(h, "_Unwind_SetIP");
    *(void **)&uw.backtrace = dlsym(h, "_Unwind_Backtrace");
    *(void **)&uw.find_fde = dlsym(h, "_Unwind_Find_FDE");
    *(void **)&uw.register_frame = dlsym(h, "__register_frame");
    *(void **)&uw.deregister_frame = dlsym(h, "__deregister_frame");
    CHECK(uw.raise && uw.get_ip && uw.set_ip && uw.backtrace && uw.find_fde &&
          uw.register_frame && uw.deregister_frame);
    area = mmap(NULL, AREA, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    CHECK(area != MAP_FAILED);
    if (area == MAP_FAILED)
        return check_done();
    for (int i = 0; i < N; i++)
        emit(fn_at(i));

    /* The JIT's own FDE over the area, with its personality, registered first. */
    struct jh__func whole = { .start = (uintptr_t)area, .size = AREA,
                              .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                              .fp_set_end = 4, .personality = (uintptr_t)pers_area };
    struct jh__cfi_opts o = { .ptr = JH__CFI_ABS, .personality = true };
    struct jh__buf fb = { 0 };
    CHECK_EQ(jh__cfi_eh_frame(&fb, &o, &whole, 1, NULL), 1);
    uw.register_frame(fb.p);

    jh_ctx *jh = NULL;
    struct jh_options opt = { .sz = sizeof opt, .channels = JH_UNWIND,
                              .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &opt), 0);
    struct jh__unwind_stats before, after;
    jh__unwind_get_stats(&before);
    if (before.mode != JH__UW_LIST) {
        jh_close(jh);
        SKIP("code is described inside a JIT's region only with libgcc's list (GCC <= 12)");
    }
    uint64_t id[N];
    bool live[N];
    for (int i = 0; i < N; i++) {
        struct jh_code c = fn_code(i);
        CHECK_EQ(jh_code_add(jh, &c, &id[i]), 0);
        live[i] = true;
    }
    jh__unwind_get_stats(&after);
    CHECK_EQ(after.hosted, before.hosted + N);
    CHECK_EQ(after.live, before.live + N);
    /* A binary counter copies each FDE (and filler) about log2(N) times; one run rebuilt
     * per add copied N * N. */
    printf("%d adds into one region: %llu FDE copies, %zu runs\n", N,
           (unsigned long long)(after.fdes_copied - before.fdes_copied),
           after.segments - before.segments);
    CHECK(after.fdes_copied - before.fdes_copied < 2 * 16 * N);
    CHECK(after.segments - before.segments <= 16);
    /* each add rebuilds a hosted run from a list of its functions and fillers: kept
     * between rebuilds, grown a few times, not allocated per rebuild */
    printf("%llu runs built, the fillers' lists grown %llu times\n",
           (unsigned long long)(after.rebuilds - before.rebuilds),
           (unsigned long long)(after.fill_grown - before.fill_grown));
    CHECK(after.rebuilds - before.rebuilds >= N);
    CHECK(after.fill_grown - before.fill_grown <= 16);
    check_all(live);
    through(0);
    through(N / 2);
    through(N - 1);

    /* Some removed, here and there, the lowest one included. */
    for (int i = N / 3; i < N; i += 3) {
        CHECK_EQ(jh_code_remove(jh, id[i]), 0);
        live[i] = false;
    }
    CHECK_EQ(jh_code_remove(jh, id[N - 1]), 0);
    live[N - 1] = false;
    check_all(live);
    through(0);
    through(N / 3 + 1);
    through(N - 2);
    CHECK_EQ(jh_flush(jh), 0);
    check_all(live);
    through(N - 2);

    /* The first three quarters gone, the upper runs emptied: their range goes to the run
     * below, a filler from the highest live function up to the area's end. Then functions
     * again where the first ones were: inside that range, so into the run that holds it. */
    const int keep = 3 * N / 4;                 /* the highest function left (live) */
    for (int i = 0; i < keep; i++)
        if (live[i]) {
            CHECK_EQ(jh_code_remove(jh, id[i]), 0);
            live[i] = false;
        }
    CHECK_EQ(jh_flush(jh), 0);
    check_all(live);
    check_fde(fn_at(keep) + FN_SIZE, fn_at(keep) + FN_SIZE, (uintptr_t)area + AREA);
    CHECK_EQ(call_at(fn_at(0), false), 2);      /* the filler's personality */
    through(keep);
    through(N - 2);
    for (int i = 0; i < N / 4; i++) {
        struct jh_code c = fn_code(i);
        CHECK_EQ(jh_code_add(jh, &c, &id[i]), 0);
        live[i] = true;
    }
    check_all(live);
    check_fde(fn_at(N / 4) + 1, fn_at(keep) + FN_SIZE, fn_at(N / 4 - 1));
    through(0);
    through(N / 4 - 1);
    through(N - 2);

    for (int i = 0; i < N; i++)
        if (live[i])
            CHECK_EQ(jh_code_remove(jh, id[i]), 0);
    CHECK_EQ(jh_flush(jh), 0);
    jh__unwind_get_stats(&after);
    CHECK_EQ(after.segments, before.segments);
    CHECK_EQ(after.live, before.live);
    check_fde(fn_at(0) + 1, (uintptr_t)area, (uintptr_t)area + AREA);
    CHECK_EQ(call_at(fn_at(0), false), 2);      /* the area's FDE again */
    jh_close(jh);
    uw.deregister_frame(fb.p);
    jh__buf_free(&fb);
    munmap(area, AREA);
    return check_done();
}
