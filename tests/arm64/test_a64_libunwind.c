/*
 * test_a64_libunwind.c — nongnu libunwind (Debian 12's libunwind8 1.6.2, arm64) walks
 * arm64 JIT code with `unw_backtrace`, under qemu-aarch64 -cpu max. The program is linked
 * with $JH_ARM64_DEBS's libunwind.so.8 (arm64.mk), as a user of unw_backtrace is; the
 * unwind channel then finds _U_dyn_register and gives it the same runs as libgcc
 * (REMOTE_TABLE, unwind.c).
 *   - an unsigned frame-record function (JH_UNWIND_FRAME_POINTER) calling a frameless one
 *     (raw CFI, JH_UNWIND_CFI) calling C: from the C callback, unw_backtrace must find both
 *     JIT frames in order, then call_jit and main; the same copy of the code left
 *     undescribed must not get there (so the pass is the channel's doing, not a frame-chain
 *     fallback);
 *   - the same function signing its return address (paciasp ... autiasp), described with
 *     .ra_signed: 1.6.2 does not know DW_CFA_AARCH64_negate_ra_state (0x2d), so the walk
 *     does not reach call_jit. Asserted as the documented limit (docs/arm64.md): when a
 *     libunwind that knows it arrives, this check fails and the doc must change with it.
 *     A run whose return address was signed with a code of 0 (the plain address, which
 *     the walk then passes) proves nothing and runs again lower on the stack (a64_pac.h);
 *     in a fork child, so that each try walks from the same state.
 * Skipped, saying why, when the program was built without libunwind.so.8 (arm64.mk links
 * it only when $JH_ARM64_DEBS held it then).
 */
#include <stdint.h>
#include <stdio.h>

#include "a64_jit.h"
#include "a64_pac.h"
#include "check.h"
#include "channels/unwind_stats.h"
#include "jitherald.h"

/* Weak: a build without libunwind.so.8 links, and skips. */
extern int unw_backtrace(void **, int) __attribute__((weak));

static void *bt[64];
static int nbt;
static int called;
/* While a signed run is judged, its name: a run whose code was 0 ends its child (the
 * callback's caller's caller, through the frameless function, signed the return address) */
static const char *judge;
static void callback(void)
{
    if (judge && a64_inconclusive(A64_CALLER_RECORD(), false, judge))
        _exit(A64_INCONCLUSIVE);
    nbt = unw_backtrace(bt, 64);
    called++;
}

/* Calls f and says whether unw_backtrace from the callback went through the frame-record
 * function s, the frameless one and call_jit to main. */
static bool run(const struct signed_fn *s, const uint32_t *leaf, const char *what)
{
    called = 0;
    nbt = 0;
    call_jit((jit_fn *)(void *)s->code);
    CHECK_EQ(called, 1);
    uintptr_t ips[64];
    for (int i = 0; i < nbt; i++)
        ips[i] = (uintptr_t)bt[i];
    return walks(ips, nbt, s->code, s->size, leaf, FRAMELESS_SIZE, what);
}

struct signed_run {
    const struct signed_fn *s;
    const uint32_t *leaf;
    const char *what;
};

/* A signed run, in a fork child: 0 when unw_backtrace stopped where docs/arm64.md says:
 * the callback, the frameless function, the signed one, nothing after it but that pc once
 * more, as unw_step reports it. Which of the two depends on the stack below call_jit (seen:
 * called from main, never the pc again; from a fork child's lowered frame, always). */
static int signed_child(void *arg)
{
    const struct signed_run *r = arg;
    bool reached = run(r->s, r->leaf, r->what);
    for (int i = 0; i < nbt; i++)
        printf("  #%d %p%s\n", i, bt[i], in((uintptr_t)bt[i], r->leaf, FRAMELESS_SIZE) ?
               " (frameless)" : in((uintptr_t)bt[i], r->s->code, r->s->size) ? " (signed)" : "");
    uintptr_t last = nbt == 4 ? (uintptr_t)bt[3] : 0;
    bool again = last == (uintptr_t)bt[2] || last + 1 == (uintptr_t)bt[2];
    bool stops = (nbt == 3 || (nbt == 4 && again)) &&
                 in((uintptr_t)bt[1], r->leaf, FRAMELESS_SIZE) &&
                 in((uintptr_t)bt[2], r->s->code, r->s->size);
    return called == 1 && !reached && stops ? 0 : 1;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!unw_backtrace)
        SKIP("nongnu libunwind for arm64 was not linked: $JH_ARM64_DEBS (default "
             "/opt/jitherald/arm64-debs) had no usr/lib/aarch64-linux-gnu/libunwind.so.8 when "
             "make test-arm64 built this; run scripts/install-deps.sh test (it runs "
             "scripts/arm64-debs.sh), then make test-arm64 again");
    a64_area_init();
    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.libunwind, 1);          /* _U_dyn_register found: it is fed */

    uint32_t *leaf = emit_frameless(callback);
    uint64_t leaf_id;
    CHECK_EQ(add_frameless(ctx, leaf, &leaf_id), 0);
    struct signed_fn s;
    emit_fp_fn(&s, leaf, A64_UNSIGNED, -1);
    a64_flush();
    uint64_t id = add_signed(ctx, &s, false, false);
    for (int round = 0; round < 2; round++)
        CHECK(run(&s, leaf, "unsigned, described: unw_backtrace"));

    /* The same code again, not described: the walk must not get through it. */
    uint32_t *leaf2 = emit_frameless(callback);
    struct signed_fn s2;
    emit_fp_fn(&s2, leaf2, A64_UNSIGNED, -1);
    a64_flush();
    CHECK(!run(&s2, leaf2, "unsigned, not described (must not reach call_jit)"));

    /* Signed: 1.6.2 ignores negate_ra_state and returns to the signed address. */
    for (int key = 0; key < 2; key++) {
        struct signed_fn p;
        emit_signed(&p, leaf, key, -1);
        a64_flush();
        uint64_t pid = add_signed(ctx, &p, key, true);
        char what[80];
        snprintf(what, sizeof what, "key %c signed, described: unw_backtrace (1.6.2: stops)",
                 key ? 'B' : 'A');
        struct signed_run r = { &p, leaf, what };
        judge = what;
        int ws = a64_fork_control(signed_child, &r, what);
        judge = NULL;
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        CHECK_EQ(jh_code_remove(ctx, pid), 0);
    }

    /* and the unsigned pair still walks after all that */
    CHECK(run(&s, leaf, "unsigned again: unw_backtrace"));
    CHECK_EQ(jh_code_remove(ctx, id), 0);
    CHECK_EQ(jh_code_remove(ctx, leaf_id), 0);
    jh_close(ctx);
    return check_done();
}
