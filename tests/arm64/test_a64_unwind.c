/*
 * test_a64_unwind.c — arm64 JIT code, hand-encoded, through the unwind channel, under
 * `qemu-aarch64 -cpu max` (pointer authentication on, keys random per process):
 *   - a frame-record function (stp x29, x30; mov x29, sp) that signs its return address
 *     (paciasp ... autiasp, and pacibsp ... autibsp with the B key), described as
 *     JH_UNWIND_FRAME_POINTER with .ra_signed, calling
 *   - a frameless function that keeps x30 on the stack, described by raw CFI, calling C.
 * From the C callback, libgcc's _Unwind_Backtrace and glibc's backtrace() must walk both
 * JIT frames to call_jit and main. Then the signed function again with a `brk #0` at each
 * interesting place (before paciasp, right after it, in the body, after the frame is torn
 * down but before autiasp, after autiasp): the SIGTRAP handler's backtrace must pass the
 * JIT frame with the return address authenticated (or left alone where it is not signed)
 * and reach main. Without .ra_signed the signed address would be taken for a return
 * address: checked too, as the case the description exists for, and B-key code said to
 * be A-key code (the CIE's 'B' is what makes the B case work).
 */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ucontext.h>

#include "check.h"
#include "lib/auditlog_read.h"
#include "jitherald.h"

struct _Unwind_Context;
int _Unwind_Backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *);

enum { PACIASP = 0xd503233f, AUTIASP = 0xd50323bf, PACIBSP = 0xd503237f,
       AUTIBSP = 0xd50323ff, STP_FP_LR = 0xa9bf7bfd, MOV_FP_SP = 0x910003fd,
       LDP_FP_LR = 0xa8c17bfd, RET = 0xd65f03c0, BLR_X16 = 0xd63f0200, BRK0 = 0xd4200000,
       STR_LR_PRE = 0xf81f0ffe /* str x30, [sp, #-16]! */,
       LDR_LR_POST = 0xf84107fe /* ldr x30, [sp], #16 */, NOP = 0xd503201f };

static uint32_t ldr_x16_literal(uint32_t at, uint32_t lit) { return 0x58000010u | ((lit - at) / 4) << 5; }

static uintptr_t ips[64];
static int nips;
static int collect(struct _Unwind_Context *uc, void *arg)
{
    (void)arg;
    if (nips == 64)
        return 5;                       /* _URC_END_OF_STACK: a walk that loops ends */
    ips[nips++] = _Unwind_GetIP(uc);
    return 0;
}

static void *bt[64];
static int nbt;
static int called;
static void callback(void)
{
    nips = 0;
    _Unwind_Backtrace(collect, NULL);
    nbt = backtrace(bt, 64);
    called++;
}

typedef void jit_fn(void);
__attribute__((noinline)) static void call_jit(jit_fn *f)
{
    f();
    __asm__ volatile("" ::: "memory");
}

/* A return address is after its call: (lo, lo+n]; a signal's pc is where it stopped:
 * [lo, lo+n). */
static bool at_signal;
static bool in(uintptr_t ip, const void *lo, size_t n)
{
    return at_signal ? ip >= (uintptr_t)lo && ip < (uintptr_t)lo + n
                     : ip > (uintptr_t)lo && ip <= (uintptr_t)lo + n;
}

/* Which of the frames ips[0..n) are f (code [f, f+fsz)), g, call_jit and main, in order. */
static bool walks(const uintptr_t *ip, int n, const void *f, size_t fsz, const void *g,
                  size_t gsz, const char *what)
{
    int at_f = -1, at_g = -1, at_call = -1;
    for (int i = 0; i < n; i++) {
        if (g && in(ip[i], g, gsz) && at_g < 0)
            at_g = i;
        if (in(ip[i], f, fsz) && at_f < 0)
            at_f = i;
        if (ip[i] > (uintptr_t)call_jit && ip[i] < (uintptr_t)call_jit + 64 && at_call < 0)
            at_call = i;
    }
    bool ok = at_f >= 0 && at_call == at_f + 1 && (!g || at_g == at_f - 1) && n > at_call + 1;
    printf("%s: %d frames; JIT frames #%d #%d, call_jit #%d: %s\n", what, n, at_g, at_f,
           at_call, ok ? "ok" : "BROKEN");
    return ok;
}

/* ---- the code ------------------------------------------------------------------------- */
static uint8_t *area;
static size_t used;

static uint32_t *place(size_t bytes)
{
    uint32_t *p = (uint32_t *)(area + used);
    used += (bytes + 15) & ~(size_t)15;
    return p;
}

/* frameless: str x30,[sp,#-16]!; ldr x16,lit; blr x16; ldr x30,[sp],#16; ret; lit */
static const uint8_t frameless_cfi[] = {   /* code alignment 1: advances count bytes */
    0x44, 0x0e, 16,             /* at 4: CFA = sp + 16 */
    0x9e, 2,                    /* x30 at cfa - 16 */
    0x48, 0x0e, 0,              /* at 12: CFA = sp */
    0xde,                       /* x30 restored (the CIE's: in x30) */
};

static uint32_t *emit_frameless(void (*target)(void))
{
    uint32_t *c = place(32);
    c[0] = STR_LR_PRE;
    c[1] = ldr_x16_literal(4, 24);
    c[2] = BLR_X16;
    c[3] = LDR_LR_POST;
    c[4] = RET;
    c[5] = NOP;
    memcpy(&c[6], &target, 8);
    return c;
}

/* The signed frame-record function, with brk #0 before instruction `brk_at` (-1: none):
 * pac; stp; mov; ldr x16,lit; blr x16; ldp; aut; ret; lit. Fills the description. */
struct signed_fn {
    uint32_t *code;
    size_t size;
    struct jh_range signed_range;
    struct jh_epilogue epi;
    uint32_t push_end, set_end;
};

static void emit_signed(struct signed_fn *s, void *target, bool b_key, int brk_at)
{
    uint32_t seq[] = { b_key ? PACIBSP : PACIASP, STP_FP_LR, MOV_FP_SP, 0, BLR_X16,
                       LDP_FP_LR, b_key ? AUTIBSP : AUTIASP, RET };
    uint32_t *c = place(4 * 10 + 8);
    uint32_t n = 0, off[9];
    for (int i = 0; i < 8; i++) {
        if (i == brk_at)
            c[n++] = BRK0;
        off[i] = 4 * n;
        c[n++] = seq[i];
    }
    off[8] = 4 * n;                                     /* after ret */
    if (n % 2)
        c[n++] = NOP;                                   /* the literal 8-aligned */
    uint32_t lit = 4 * n;
    c[off[3] / 4] = ldr_x16_literal(off[3], lit);
    memcpy(&c[n], &target, 8);
    s->code = c;
    s->size = lit + 8;
    s->push_end = off[1] + 4;                           /* after stp */
    s->set_end = off[2] + 4;                            /* after mov */
    s->epi = (struct jh_epilogue){ off[5] + 4, off[8] };    /* after ldp .. after ret */
    s->signed_range = (struct jh_range){ off[0] + 4, off[6] + 4 };  /* pac .. aut */
}

static jh_ctx *ctx;

static uint64_t add_signed(const struct signed_fn *s, bool b_key, bool describe_pac)
{
    struct jh_code c = { .sz = sizeof c, .name = "signed_fn", .start = s->code,
                         .size = s->size, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = s->push_end, .fp_set_end = s->set_end,
                         .nepilogues = 1, .epilogues = &s->epi };
    if (describe_pac) {
        c.ra_signed = &s->signed_range;
        c.nra_signed = 1;
        c.ra_key = b_key ? JH_PAC_KEY_B : JH_PAC_KEY_A;
    }
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(ctx, &c, &id), 0);
    return id;
}

/* ---- stops at every interesting instruction ---------------------------------------- */
static volatile sig_atomic_t trapped;
static uintptr_t sig_ips[64];
static int nsig;

static int collect_sig(struct _Unwind_Context *uc, void *arg)
{
    (void)arg;
    if (nsig == 64)
        return 5;
    sig_ips[nsig++] = _Unwind_GetIP(uc);
    return 0;
}

static void on_trap(int sig, siginfo_t *si, void *uc_)
{
    (void)sig, (void)si;
    ucontext_t *uc = uc_;
    nsig = 0;
    _Unwind_Backtrace(collect_sig, NULL);
    uc->uc_mcontext.pc += 4;                            /* past the brk */
    trapped++;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    area = mmap(NULL, 65536, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    CHECK(area != MAP_FAILED);
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    CHECK_EQ(jh_channels(ctx), JH_UNWIND);

    /* frameless, by raw CFI, calling the C callback */
    uint32_t *leaf = emit_frameless(callback);
    struct jh_code fl = { .sz = sizeof fl, .name = "frameless_fn", .start = leaf, .size = 32,
                          .unwind = JH_UNWIND_CFI, .cfi = frameless_cfi,
                          .cfi_len = sizeof frameless_cfi };
    CHECK_EQ(jh_code_add(ctx, &fl, NULL), 0);

    for (int key = 0; key < 2; key++) {
        struct signed_fn s;
        emit_signed(&s, (void *)leaf, key, -1);
        __builtin___clear_cache((char *)area, (char *)area + used);
        uint64_t id = add_signed(&s, key, true);
        char what[64];
        snprintf(what, sizeof what, "key %c, libgcc", key ? 'B' : 'A');
        called = 0;
        call_jit((jit_fn *)(void *)s.code);
        CHECK_EQ(called, 1);
        CHECK(walks(ips, nips, s.code, s.size, leaf, 32, what));
        uintptr_t bips[64];
        for (int i = 0; i < nbt; i++)
            bips[i] = (uintptr_t)bt[i];
        snprintf(what, sizeof what, "key %c, backtrace()", key ? 'B' : 'A');
        CHECK(walks(bips, nbt, s.code, s.size, leaf, 32, what));
        CHECK_EQ(jh_code_remove(ctx, id), 0);
    }

    /* a stop at each place: before paciasp (0), after it (1), in the body after the
     * frame is set (3), after the ldp with x30 still signed (6), after autiasp (7) */
    struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
    sigaction(SIGTRAP, &sa, NULL);
    static const int stops[] = { 0, 1, 3, 6, 7 };
    for (int key = 0; key < 2; key++)
        for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
            struct signed_fn s;
            emit_signed(&s, (void *)leaf, key, stops[i]);
            __builtin___clear_cache((char *)area, (char *)area + used);
            uint64_t id = add_signed(&s, key, true);
            trapped = 0;
            call_jit((jit_fn *)(void *)s.code);
            CHECK_EQ(trapped, 1);
            char what[64];
            snprintf(what, sizeof what, "key %c, stop before instruction %d", key ? 'B' : 'A',
                     stops[i]);
            at_signal = true;
            CHECK(walks(sig_ips, nsig, s.code, s.size, NULL, 0, what));
            at_signal = false;
            CHECK_EQ(jh_code_remove(ctx, id), 0);
        }

    /* the same signed function described without .ra_signed: the signed return address
     * is taken as it is, and the walk never reaches call_jit — libgcc crashes on it (the
     * defect .ra_signed exists for), so in a child */
    struct signed_fn s;
    emit_signed(&s, (void *)callback, false, -1);
    __builtin___clear_cache((char *)area, (char *)area + used);
    uint64_t id = add_signed(&s, false, false);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);                      /* a walk that loops fails too */
        setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });  /* qemu would write a core */
        call_jit((jit_fn *)(void *)s.code);
        for (int i = 0; i < nips; i++)
            if (ips[i] > (uintptr_t)call_jit && ips[i] < (uintptr_t)call_jit + 64)
                _exit(0);
        _exit(3);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("without .ra_signed: the walk %s\n", WIFSIGNALED(st) ? "crashed the unwinder" :
           WIFEXITED(st) && WEXITSTATUS(st) == 3 ? "did not reach call_jit" : "reached call_jit");
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
    CHECK_EQ(jh_code_remove(ctx, id), 0);

    /* B-key code said to be signed with the A key: authenticated with the wrong key, the
     * return address is garbage (so the 'B' in the CIE is what made the B case work) */
    emit_signed(&s, (void *)callback, true, -1);
    __builtin___clear_cache((char *)area, (char *)area + used);
    id = add_signed(&s, false, true);
    if ((pid = fork()) == 0) {
        alarm(60);
        setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
        call_jit((jit_fn *)(void *)s.code);
        for (int i = 0; i < nips; i++)
            if (ips[i] > (uintptr_t)call_jit && ips[i] < (uintptr_t)call_jit + 64)
                _exit(0);
        _exit(3);
    }
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("B-key code described with the A key: the walk %s\n", WIFSIGNALED(st) ?
           "crashed the unwinder" : WIFEXITED(st) && WEXITSTATUS(st) == 3 ?
           "did not reach call_jit" : "reached call_jit");
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
    CHECK_EQ(jh_code_remove(ctx, id), 0);

    /* x86-64's refusal is checked on x86-64; here: a range past the code is refused */
    struct jh_range bad = { 4, 4096 };
    struct jh_code c = { .sz = sizeof c, .name = "bad", .start = s.code, .size = s.size,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = s.push_end,
                         .fp_set_end = s.set_end, .ra_signed = &bad, .nra_signed = 1 };
    CHECK_EQ(jh_code_add(ctx, &c, NULL), -EINVAL);
    jh_close(ctx);

    /* the audit log keeps the signed ranges and the key, and records the architecture */
    char dir[] = "/tmp/jh-test-a64.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct jh_options ol = { .sz = sizeof ol, .channels = JH_AUDITLOG, .dir = dir,
                             .engine = "a64", .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&ctx, &ol), 0);
    emit_signed(&s, (void *)callback, true, -1);
    add_signed(&s, true, true);
    jh_close(ctx);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/a64-%d.jhlog", dir, (int)getpid());
    struct jhr_al lf;
    CHECK_EQ(jhr_al_open(&lf, path, err, sizeof err), 0);
    CHECK_STR(lf.arch, "aarch64");
    CHECK_EQ(lf.nfns, 1);
    if (lf.nfns == 1) {
        const struct jhr_al_fn *f = &lf.fns[0];
        CHECK_EQ(f->nra_signed, 1);
        CHECK(f->ra_signed && f->ra_signed[0].start == s.signed_range.start &&
              f->ra_signed[0].end == s.signed_range.end);
        CHECK_EQ(f->ra_key, JH_PAC_KEY_B);
    }
    jhr_al_free(&lf);
    unlink(path);
    rmdir(dir);
    return check_done();
}
