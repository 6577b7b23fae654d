// test_a64_signal_throw.cc — a C++ exception thrown from a signal handler, out of a stop at
// every instruction of an arm64 JIT function that signs its return address (A and B
// keys), under qemu-aarch64 -cpu max with the unwind channel. The function is
//     pac*sp; stp x29, x30, [sp, #-16]!; mov x29, sp; ldr x16, =nop; blr x16;
//     ldp x29, x30, [sp], #16; aut*sp; ret
// with a `brk #0` put before one of its instructions: the SIGTRAP handler throws, and
// libgcc must unwind the signal frame, the JIT frame at the stop (return address unsigned
// in x30 before pac*sp, signed on the stack in the body, signed in x30 between ldp and
// aut*sp, unsigned again after it) and reach the catch in the C++ caller. The control:
// described without the signed range, a throw from a stop inside the body does not get
// through (checked in a child, which judges only a run whose return address was signed
// with a nonzero code, else runs again: a64_pac.h).
// A SIGILL stop too, where the CPU enforces BTI: in a PROT_BTI page the signed function's
// blr goes to a JIT function without a landing pad, which traps at its first instruction;
// the SIGILL handler's throw passes it (x30 still the return address) and the signed frame.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "a64_pac.h"
#include "check.h"
#include "jitherald.h"

namespace {

enum : uint32_t {
    PACIASP = 0xd503233f, AUTIASP = 0xd50323bf, PACIBSP = 0xd503237f, AUTIBSP = 0xd50323ff,
    STP_FP_LR = 0xa9bf7bfd, MOV_FP_SP = 0x910003fd, LDP_FP_LR = 0xa8c17bfd, RET = 0xd65f03c0,
    BLR_X16 = 0xd63f0200, NOP = 0xd503201f, BRK0 = 0xd4200000,
};

void nothing() { __asm__ volatile("" ::: "memory"); }

volatile sig_atomic_t last_sig;
const char *judge;     // the control's name while its child runs (a stop after mov x29, sp)
void on_trap(int sig, siginfo_t *, void *uc_)
{
    auto *uc = static_cast<ucontext_t *>(uc_);
    if (judge && a64_inconclusive(reinterpret_cast<const uintptr_t *>(uc->uc_mcontext.regs[29]),
                                  false, judge))
        _exit(A64_INCONCLUSIVE);
    last_sig = sig;
    throw std::runtime_error("from the stop");
}

typedef void jit_fn();
__attribute__((noinline)) int call_jit(jit_fn *f)
{
    try {
        f();
    } catch (const std::runtime_error &e) {
        return std::strcmp(e.what(), "from the stop") == 0 ? 1 : 2;
    }
    return 0;
}

jh_ctx *ctx;

// the control's child: 0 when the throw was caught
int control_child(void *f)
{
    return call_jit(reinterpret_cast<jit_fn *>(f)) == 1 ? 0 : 3;
}

// The function with brk #0 before instruction brk_at of the 8, at c; described (with or
// without its signed range) on the unwind channel. Returns its id.
uint64_t emit(uint32_t *c, bool b_key, int brk_at, bool describe_pac, void (*target)() = nothing)
{
    const uint32_t seq[] = { b_key ? PACIBSP : PACIASP, STP_FP_LR, MOV_FP_SP, 0, BLR_X16,
                             LDP_FP_LR, b_key ? AUTIBSP : AUTIASP, RET };
    uint32_t n = 0, off[9];
    for (int i = 0; i < 8; i++) {
        if (i == brk_at)
            c[n++] = BRK0;
        off[i] = 4 * n;
        c[n++] = seq[i];
    }
    off[8] = 4 * n;
    if (n % 2)
        c[n++] = NOP;
    uint32_t lit = 4 * n;
    c[off[3] / 4] = 0x58000010u | ((lit - off[3]) / 4) << 5;   // ldr x16, lit
    std::memcpy(&c[n], &target, 8);
    __builtin___clear_cache(reinterpret_cast<char *>(c), reinterpret_cast<char *>(c + n + 2));
    const jh_range ra = { off[0] + 4, off[6] + 4 };             // after pac .. after aut
    const jh_epilogue epi = { off[5] + 4, off[8] };             // after ldp .. after ret
    jh_code f{};
    f.sz = sizeof f, f.name = "signed_stop", f.start = c, f.size = lit + 8;
    f.unwind = JH_UNWIND_FRAME_POINTER, f.fp_push_end = off[1] + 4, f.fp_set_end = off[2] + 4;
    f.epilogues = &epi, f.nepilogues = 1;
    if (describe_pac)
        f.ra_signed = &ra, f.nra_signed = 1, f.ra_key = b_key ? JH_PAC_KEY_B : JH_PAC_KEY_A;
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(ctx, &f, &id), 0);
    return id;
}

}  // namespace

int main()
{
    setvbuf(stdout, nullptr, _IONBF, 0);
    struct sigaction sa {};
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;      // the handler never returns: keep SIGTRAP open
    sigaction(SIGTRAP, &sa, nullptr);
    auto *c = static_cast<uint32_t *>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CHECK(c != MAP_FAILED);
    jh_options o{};
    o.sz = sizeof o;
    o.channels = JH_UNWIND;
    o.flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT;
    CHECK_EQ(jh_open(&ctx, &o), 0);
    static const char *const where[] = { "first instruction", "after pac", "after stp",
                                         "after mov", "at the call", "after the call",
                                         "after ldp", "after aut" };
    for (int k = 0; k < 2; k++)
        for (int at = 0; at < 8; at++) {
            uint64_t id = emit(c, k, at, true);
            int r = call_jit(reinterpret_cast<jit_fn *>(reinterpret_cast<void *>(c)));
            std::printf("key %c, stop %s: %s\n", k ? 'B' : 'A', where[at],
                        r == 1 ? "caught" : "NOT caught");
            CHECK_EQ(r, 1);
            CHECK_EQ(jh_code_remove(ctx, id), 0);
        }

    if (getauxval(AT_HWCAP2) & (1UL << 17)) {              // HWCAP2_BTI
        sigaction(SIGILL, &sa, nullptr);
        auto *g = static_cast<uint32_t *>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        CHECK(g != MAP_FAILED);
        uint32_t *nopad = g + 512;                          // nop; ret: no landing pad
        nopad[0] = NOP, nopad[1] = RET;
        jh_code l{};
        l.sz = sizeof l, l.name = "no_landing_pad", l.start = nopad, l.size = 8;
        l.unwind = JH_UNWIND_FRAMELESS;                     // CFA = sp, ra in x30
        uint64_t lid = 0;
        CHECK_EQ(jh_code_add(ctx, &l, &lid), 0);
        for (int k = 0; k < 2; k++) {
            CHECK_EQ(mprotect(g, 4096, PROT_READ | PROT_WRITE), 0);
            uint64_t id = emit(g, k, -1, true, reinterpret_cast<void (*)()>(nopad));
            CHECK_EQ(mprotect(g, 4096, PROT_READ | PROT_EXEC | 0x10 /* PROT_BTI */), 0);
            last_sig = 0;
            int r = call_jit(reinterpret_cast<jit_fn *>(reinterpret_cast<void *>(g)));
            std::printf("key %c, SIGILL (BTI) in the function it calls: %s, signal %d\n",
                        k ? 'B' : 'A', r == 1 ? "caught" : "NOT caught", (int)last_sig);
            CHECK_EQ(r, 1);
            CHECK_EQ(last_sig, SIGILL);
            CHECK_EQ(jh_code_remove(ctx, id), 0);
        }
        CHECK_EQ(jh_code_remove(ctx, lid), 0);
        munmap(g, 4096);
    } else {
        SKIP_PART("this CPU has no BTI: no SIGILL stop (qemu-aarch64 -cpu max has)");
    }

    // without the signed range, a throw from inside the body (ra signed on the stack) dies
    emit(c, false, 3, false);
    judge = "without .ra_signed";
    int st = a64_fork_control(control_child, c, judge);
    judge = nullptr;
    std::printf("without .ra_signed: %s\n", WIFSIGNALED(st) ? "the process died" :
                WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "caught" : "not caught");
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
    jh_close(ctx);
    return check_done();
}
