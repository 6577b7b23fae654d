/*
 * bench/unwind.c — what a backtrace through one JIT frame costs with 1, 10k, 100k and 1M
 * JIT functions registered with the process's unwinder, jitherald's unwind channel beside
 * the naive way (one __register_frame per function, what most JITs do), in the same run.
 *
 * A hand-written JIT function (push rbp; mov rbp,rsp; call host; pop rbp; ret; on arm64
 * stp x29,x30,[sp,#-16]!; mov x29,sp; blr host; ldp x29,x30,[sp],#16; ret) calls the host, which times glibc's backtrace() from there: host, JIT frame, bench, main. The
 * other functions are described but never run: FDEs for 16..32-byte slots of a PROT_NONE
 * area around the real one (half below, half above it).
 *
 * Times are the best of 5 batches (the machine is shared). Columns: add/fn = jh_code_add
 * per function (core + channel; for the baseline,
 * __register_frame); 1st bt = the first backtrace after registering them all (libgcc sorts
 * what it has not seen yet then); bt = steady state; x1 = bt / bt with one function;
 * add+bt = one more function added, then one backtrace (the run it landed in is re-sorted
 * by libgcc: the cost of compiling code while something unwinds); hole+bt = a function in
 * the middle replaced by a different one, then one backtrace (its whole run is rebuilt and
 * re-sorted: the expensive case); rm/fn = removal.
 *   JH_BENCH_UNWIND_N="1,10000,50000,100000,1000000"   sizes to run
 *   JH_BENCH_UNWIND_NAIVE_MAX=50000   largest baseline run (100k: 11 s for its 1st bt)
 *   JH_BENCH_UNWIND_RUNS=64           the channel's budget of runs (jh__unwind_tune)
 *   JH_BENCH_UNWIND_LLVM=1            walk with LLVM's libunwind (dlopened) instead
 *   JH_BENCH_UNWIND_LIBUNWIND=1       walk with nongnu libunwind's unw_backtrace instead
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fmt/arch.h"
#include "fmt/cfi.h"
#include "bench.h"
#include "jitherald.h"
#include "channels/unwind_stats.h"

#define SLOT 32
#define MAXN 4000000

static const uint8_t code_x86_64[] = { 0x55, 0x48, 0x89, 0xe5,  /* push rbp; mov rbp,rsp */
                                0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, /* movabs rax, host */
                                0xff, 0xd0, 0x5d, 0xc3 };         /* call rax; pop rbp; ret */
static const uint8_t code_arm64[] = {
    0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91,     /* stp x29,x30,[sp,#-16]!; mov x29,sp */
    0x90, 0x00, 0x00, 0x58, 0x00, 0x02, 0x3f, 0xd6,     /* ldr x16, host (+16); blr x16 */
    0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6,     /* ldp x29,x30,[sp],#16; ret */
    0, 0, 0, 0, 0, 0, 0, 0 };                           /* host */
/* The host's code, where host's address goes in it, and its frame-pointer offsets. */
static const uint8_t *code = code_x86_64;
static size_t code_size = sizeof code_x86_64, host_at = 6;
static uint32_t push_end = 1, set_end = 4;
static uint8_t *area, *tramp;
static size_t area_slots, tramp_slot;
static int reps, depth, walked_jit;
static int llvm;                /* JH_BENCH_UNWIND_LLVM=1: LLVM libunwind's walker instead */
typedef int walk_fn(void **pcs, int max);
static walk_fn *walk = backtrace;
typedef int llvm_trace_fn(int (*)(void *, void *), void *);
static llvm_trace_fn *llvm_trace;
static uintptr_t (*llvm_getip)(void *);
struct collect { void **pcs; int n, max; };

static int llvm_step(void *uc, void *arg)
{
    struct collect *c = arg;
    if (c->n < c->max)
        c->pcs[c->n++] = (void *)llvm_getip(uc);
    return 0;
}

static int llvm_backtrace(void **pcs, int max)
{
    struct collect c = { pcs, 0, max };
    llvm_trace(llvm_step, &c);
    return c.n;
}
static double bt_ns;

static double now_ns(void) { return bench_now_ns(); }

/* The machine is shared: the best of 5 batches, not the mean, is what a backtrace costs. */
static int64_t host(int64_t x)
{
    void *pcs[64];
    int batch = reps >= 5 ? reps / 5 : 1;
    bt_ns = 1e300;
    for (int done = 0; done < reps; done += batch) {
        double t0 = now_ns();
        for (int i = 0; i < batch; i++)
            depth = walk(pcs, 64);
        double t = (now_ns() - t0) / batch;
        if (t < bt_ns)
            bt_ns = t;
    }
    walked_jit = 0;
    for (int i = 0; i + 1 < depth; i++)      /* the JIT frame and something above it */
        if ((uint8_t *)pcs[i] > tramp && (uint8_t *)pcs[i] <= tramp + code_size)
            walked_jit = 1;
    return x;
}

static int64_t (*jit)(int64_t);

__attribute__((noinline)) static double time_bt(int n)
{
    reps = n;
    jit(1);
    __asm__ volatile("" ::: "memory");
    return walked_jit ? bt_ns : -1;
}

/* Slot k of the n functions around the trampoline (which is slot n/2's neighbour). */
static uint8_t *slot(size_t k, size_t n)
{
    size_t first = tramp_slot - n / 2;
    size_t s = first + k;
    if (s >= tramp_slot)
        s += 4096 / SLOT;       /* skip the trampoline's page */
    return area + s * SLOT;
}

static size_t slot_size(size_t k) { return 16 + k % 16; }

struct row {
    size_t n;
    double add, first, bt, addbt, hole, rm;
    size_t runs;
};

static void ours(struct row *r, size_t n)
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    if (jh_open(&jh, &o)) {
        fprintf(stderr, "jh_open failed\n");
        exit(1);
    }
    uint64_t *ids = malloc((n + 200) * sizeof *ids);
    struct jh_code c = { .sz = sizeof c, .name = "tramp", .start = tramp, .size = code_size,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = push_end,
                         .fp_set_end = set_end };
    struct jh_code t = c;
    uint64_t tid;
    c.name = "f";
    /* the real function is announced halfway through (in address order too), so that no
     * unwinder finds it first by luck of a linear search */
    double t0 = now_ns(), tt = 0;
    for (size_t k = 0; k + 1 < n; k++) {
        if (k == n / 2) {
            double t1 = now_ns();
            jh_code_add(jh, &t, &tid);
            tt = now_ns() - t1;
        }
        c.start = slot(k, n);
        c.size = slot_size(k);
        if (jh_code_add(jh, &c, &ids[k])) {
            fprintf(stderr, "jh_code_add failed\n");
            exit(1);
        }
    }
    if (n == 1 || n / 2 == n - 1)
        jh_code_add(jh, &t, &tid);
    r->add = n > 1 ? (now_ns() - t0 - tt) / (double)(n - 1) : 0;
    r->first = time_bt(1);
    time_bt(200);
    r->bt = time_bt(llvm == 1 ? (n >= 100000 ? 5 : n >= 10000 ? 50 : 5000)
                              : n >= 100000 ? 2000 : 5000);
    /* one more function on top of the code, then a backtrace: 100 times */
    size_t extra = 0;
    t0 = now_ns();
    for (; extra < 100; extra++) {
        c.start = slot(n - 1 + extra, n);
        c.size = slot_size(n - 1 + extra);
        jh_code_add(jh, &c, &ids[n - 1 + extra]);
        time_bt(1);
    }
    r->addbt = (now_ns() - t0) / (double)extra;
    /* a function in the middle removed and a different one (1 byte shorter) added in its
     * place, then a backtrace: the run it sits in is rebuilt and re-sorted */
    t0 = now_ns();
    int holes = 20;
    for (int h = 0; h < holes; h++) {
        size_t k = (n - 1) / 4 + (size_t)h * 37 % (n > 80 ? n / 4 : 1);
        if (k + 1 >= n)
            break;
        jh_code_remove(jh, ids[k]);
        c.start = slot(k, n);
        c.size = slot_size(k) - 1 - h % 2;
        jh_code_add(jh, &c, &ids[k]);
        time_bt(1);
    }
    r->hole = n > 1 ? (now_ns() - t0) / holes : 0;
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    r->runs = st.segments;
    t0 = now_ns();
    for (size_t k = 0; k + 1 < n + extra; k++)
        jh_code_remove(jh, ids[k]);
    r->rm = n + extra > 1 ? (now_ns() - t0) / (double)(n + extra - 1) : 0;
    jh_close(jh);
    free(ids);
}

static void (*reg_frame)(void *);
static void (*dereg_frame)(void *);

static void naive(struct row *r, size_t n)
{
    uint8_t **runs = malloc((n + 100) * sizeof *runs);
    struct jh__cfi_opts o = { .ptr = JH__CFI_ABS };
    size_t total = n + 100;
    for (size_t k = 0; k < total; k++) {     /* encoding is not what is measured */
        struct jh__func f = { .start = (uintptr_t)(k + 1 == n ? tramp : slot(k, n)),
                                 .size = k + 1 == n ? code_size : slot_size(k),
                                 .unwind = JH_UNWIND_FRAME_POINTER,
                                 .fp_push_end = push_end, .fp_set_end = set_end };
        if (k + 1 > n)
            f.start = (uintptr_t)slot(k - 1, n), f.size = slot_size(k - 1);
        struct jh__buf b = { 0 };
        if (jh__cfi_eh_frame(&b, &o, &f, 1, NULL) != 1) {
            fprintf(stderr, "encoding failed\n");
            exit(1);
        }
        runs[k] = b.p;
    }
    double t0 = now_ns();
    for (size_t k = 0; k < n; k++)
        reg_frame(runs[k]);
    r->add = (now_ns() - t0) / (double)n;
    r->first = time_bt(1);
    r->bt = time_bt(n >= 100000 ? 5 : n >= 10000 ? 50 : 5000);
    int extra = 0;
    t0 = now_ns();
    for (; extra < (n >= 100000 ? 5 : 100); extra++) {
        reg_frame(runs[n + extra]);
        time_bt(1);
    }
    r->addbt = (now_ns() - t0) / extra;
    r->runs = n + extra;
    /* libgcc's list is sorted by descending address: deregister from the top, or each
     * call walks the whole list */
    t0 = now_ns();
    for (int k = extra; k-- > 0;)
        dereg_frame(runs[n + k]);
    for (size_t k = n - 1; k-- > n / 2;)
        dereg_frame(runs[k]);
    dereg_frame(runs[n - 1]);
    for (size_t k = n / 2; k-- > 0;)
        dereg_frame(runs[k]);
    r->rm = (now_ns() - t0) / (double)(n + extra);
    for (size_t k = 0; k < total; k++)
        free(runs[k]);
    free(runs);
}

static void us(char *b, double ns)
{
    if (ns < 0)
        snprintf(b, 16, "BROKEN");
    else if (ns < 10000)
        snprintf(b, 16, "%.2f", ns / 1000);
    else
        snprintf(b, 16, "%.0f", ns / 1000);
}

int main(void)
{
    size_t ns[16], nn = 0;
    const char *e = getenv("JH_BENCH_UNWIND_N");
    char *spec = strdup(e && *e ? e : "1,10000,50000,100000,1000000");
    for (char *t = strtok(spec, ","); t && nn < 16; t = strtok(NULL, ","))
        if (strtoull(t, NULL, 10) >= 1 && strtoull(t, NULL, 10) <= MAXN)
            ns[nn++] = strtoull(t, NULL, 10);
    size_t naive_max = 50000;
    if ((e = getenv("JH_BENCH_UNWIND_RUNS")) && *e)      /* the channel's run budget */
        jh__unwind_tune(0, strtoull(e, NULL, 10));
    if ((e = getenv("JH_BENCH_UNWIND_NAIVE_MAX")) && *e)
        naive_max = strtoull(e, NULL, 10);
    if ((e = getenv("JH_BENCH_UNWIND_LLVM")) && *e == '1') {
        void *lu = dlopen("libunwind.so.1", RTLD_NOW | RTLD_GLOBAL);
        *(void **)&llvm_trace = lu ? dlsym(lu, "_Unwind_Backtrace") : NULL;
        *(void **)&llvm_getip = lu ? dlsym(lu, "_Unwind_GetIP") : NULL;
        if (!llvm_trace || !llvm_getip) {
            printf("LLVM libunwind (libunwind.so.1) not found\n");
            return 0;
        }
        llvm = 1;
        walk = llvm_backtrace;
        naive_max = 0;          /* LLVM does not see libgcc's registrations */
        jh__unwind_force_mode(JH__UW_LLVM);
    }
    if ((e = getenv("JH_BENCH_UNWIND_LIBUNWIND")) && *e == '1') {
        void *lu = dlopen("libunwind.so.8", RTLD_NOW | RTLD_GLOBAL);
        *(void **)&walk = lu ? dlsym(lu, "unw_backtrace") : NULL;
        if (!walk) {
            printf("nongnu libunwind (libunwind.so.8) not found\n");
            return 0;
        }
        llvm = 2;
        naive_max = 0;          /* libunwind does not see libgcc's registrations */
    }
    size_t maxn = 1;
    for (size_t i = 0; i < nn; i++)
        if (ns[i] > maxn)
            maxn = ns[i];

    area_slots = maxn + 400 + 2 * 4096 / SLOT;
    area = mmap(NULL, area_slots * SLOT, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    tramp_slot = (area_slots / 2) & ~(size_t)(4096 / SLOT - 1);
    tramp = area + tramp_slot * SLOT;
    if (area == MAP_FAILED || mprotect(tramp, 4096, PROT_READ | PROT_WRITE)) {
        perror("mmap");
        return 1;
    }
    if (JH__ARCH_HOST == &jh__arch_arm64) {
        code = code_arm64, code_size = sizeof code_arm64, host_at = 24;
        push_end = 4, set_end = 8;
    }
    memcpy(tramp, code, code_size);
    int64_t (*h)(int64_t) = host;
    memcpy(tramp + host_at, &h, 8);
    __builtin___clear_cache((char *)tramp, (char *)tramp + code_size);
    if (mprotect(tramp, 4096, PROT_READ | PROT_EXEC)) {
        perror("mprotect");
        return 1;
    }
    *(void **)&jit = tramp;
    void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW);
    *(void **)&reg_frame = gcc ? dlsym(gcc, "__register_frame") : NULL;
    *(void **)&dereg_frame = gcc ? dlsym(gcc, "__deregister_frame") : NULL;

    struct row o[16], b[16];
    for (size_t i = 0; i < nn; i++) {
        ours(&o[i], ns[i]);
        b[i].n = 0;
        if (reg_frame && dereg_frame && ns[i] <= naive_max)
            naive(&b[i], ns[i]), b[i].n = ns[i];
    }
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    printf("%s through one JIT frame (4 frames + libc), times in microseconds\n",
           llvm == 1 ? "LLVM libunwind's _Unwind_Backtrace" :
           llvm == 2 ? "nongnu libunwind's unw_backtrace" : "backtrace()");
    printf("jitherald unwind channel, mode: %s\n",
           st.mode == JH__UW_LIST ? "libgcc list, grouped sorted runs" :
           st.mode == JH__UW_PERFN ? "libgcc b-tree, one run per function" :
           st.mode == JH__UW_LLVM ? "LLVM libunwind, one FDE per function" : "other");
    printf("%9s | %-52s | %-38s | %s\n", "", "jitherald", "naive: __register_frame per function",
           "naive/ours");
    printf("%9s | %6s %8s %6s %5s %7s %7s %5s %4s | %6s %8s %8s %5s %7s | %8s\n", "functions",
           "add/fn", "1st bt", "bt", "x1", "add+bt", "hole+bt", "rm/fn", "runs", "add/fn",
           "1st bt", "bt", "x1", "add+bt", "bt");
    for (size_t i = 0; i < nn; i++) {
        char a[16], f[16], t[16], ab[16], rm[16], ho[16];
        us(a, o[i].add), us(f, o[i].first), us(t, o[i].bt), us(ab, o[i].addbt), us(rm, o[i].rm);
        us(ho, o[i].hole);
        printf("%9zu | %6s %8s %6s %5.2f %7s %7s %5s %4zu | ", ns[i], a, f, t,
               o[i].bt / o[0].bt, ab, ho, rm, o[i].runs);
        if (b[i].n) {
            us(a, b[i].add), us(f, b[i].first), us(t, b[i].bt), us(ab, b[i].addbt);
            printf("%6s %8s %8s %5.0f %7s | %7.1fx\n", a, f, t, b[i].bt / b[0].bt, ab,
                   b[i].bt / o[i].bt);
        } else {
            printf("%6s %8s %8s %5s %7s | %8s\n", "-", "-", "-", "-", "-", "-");
        }
    }
    if (nn && ns[nn - 1] > naive_max)
        printf("baseline capped at %zu functions (JH_BENCH_UNWIND_NAIVE_MAX): every frame's "
               "lookup walks all registrations\n", naive_max);
    free(spec);
    return 0;
}
