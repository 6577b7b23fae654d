// test_a64_exceptions.cc — a C++ exception thrown by the host through arm64 JIT frames
// (a frame-record function that signs its return address with either key, calling a
// frameless one described by raw CFI, calling the host), under qemu-aarch64 -cpu max,
// with the unwind channel: the catch in the C++ caller gets it, a destructor in the frame
// between runs, and the JIT frames can be called again afterwards. Without the signing
// ranges the throw cannot get through (std::terminate: checked in a child, which judges only
// a run whose return address was signed with a nonzero code, else runs again: a64_pac.h).
// Where the CPU enforces BTI (qemu -cpu max) the code's page is PROT_BTI (the leaf lands on
// `bti c`, the signed functions on paciasp) and the elfmap channel swaps it for its image,
// guarded too: the throw crosses the image's pages.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "a64_llvm.h"
#include "a64_pac.h"
#include "check.h"
#include "jitherald.h"

namespace {

enum : uint32_t {
    PACIASP = 0xd503233f, AUTIASP = 0xd50323bf, PACIBSP = 0xd503237f, AUTIBSP = 0xd50323ff,
    STP_FP_LR = 0xa9bf7bfd, MOV_FP_SP = 0x910003fd, LDP_FP_LR = 0xa8c17bfd, RET = 0xd65f03c0,
    BLR_X16 = 0xd63f0200, STR_LR_PRE = 0xf81f0ffe, LDR_LR_POST = 0xf84107fe, BTI_C = 0xd503245f,
};
const int PROT_BTI_ = 0x10;
bool cpu_bti() { return getauxval(AT_HWCAP2) & (1UL << 17); }

// Is addr mapped from an elfmap image (a file whose name holds ".elf")?
bool from_image(const void *addr)
{
    FILE *f = std::fopen("/proc/self/maps", "r");
    char line[1024];
    bool r = false;
    while (f && std::fgets(line, sizeof line, f)) {
        unsigned long s, e;
        char path[512] = "";
        if (std::sscanf(line, "%lx-%lx %*s %*s %*s %*s %511s", &s, &e, path) >= 2 &&
            reinterpret_cast<uintptr_t>(addr) >= s && reinterpret_cast<uintptr_t>(addr) < e)
            r = std::strstr(path, ".elf") != nullptr;
    }
    if (f)
        std::fclose(f);
    return r;
}
uint32_t ldr_x16(uint32_t at, uint32_t lit) { return 0x58000010u | ((lit - at) / 4) << 5; }

int thrown, destroyed;
struct Guard {
    ~Guard() { destroyed++; }
};

const char *judge;     // the control's name while its child runs

void thrower()
{
    // the caller's caller (the leaf keeps x29) signed the return address
    if (judge && a64_inconclusive(A64_CALLER_RECORD(), false, judge))
        _exit(A64_INCONCLUSIVE);
    Guard g;
    thrown++;
    throw std::runtime_error("through the JIT");
}

typedef void jit_fn();
__attribute__((noinline)) int call_jit(jit_fn *f)
{
    try {
        f();
    } catch (const std::runtime_error &e) {
        return std::strcmp(e.what(), "through the JIT") == 0 ? 1 : 2;
    }
    return 0;
}

// bti c; str x30,[sp,#-16]!; ...: at 8 CFA = sp + 16, x30 at cfa - 16; at 16 CFA = sp
const uint8_t frameless_cfi[] = { 0x48, 0x0e, 16, 0x9e, 2, 0x48, 0x0e, 0, 0xde };

// the control's child: 0 when the throw was caught
int control_child(void *f)
{
    return call_jit(reinterpret_cast<jit_fn *>(f)) == 1 ? 0 : 3;
}

}  // namespace

int main()
{
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    A64_LLVM_CHECK();
    auto *c = static_cast<uint32_t *>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CHECK(c != MAP_FAILED);
    void (*target)() = thrower;
    /* frameless at 0: bti c; str x30; ldr x16; blr; ldr x30; ret; lit */
    uint32_t *leaf = c;
    leaf[0] = BTI_C, leaf[1] = STR_LR_PRE, leaf[2] = ldr_x16(8, 24), leaf[3] = BLR_X16;
    leaf[4] = LDR_LR_POST, leaf[5] = RET;
    std::memcpy(&leaf[6], &target, 8);
    /* signed frame-record functions at 64 (A) and 128 (B): pac; stp; mov; ldr; blr; ldp;
     * aut; ret; lit (the leaf) */
    uint32_t *fn[2] = { c + 16, c + 32 };
    for (int k = 0; k < 2; k++) {
        uint32_t *f = fn[k];
        f[0] = k ? PACIBSP : PACIASP, f[1] = STP_FP_LR, f[2] = MOV_FP_SP;
        f[3] = ldr_x16(12, 32), f[4] = BLR_X16, f[5] = LDP_FP_LR;
        f[6] = k ? AUTIBSP : AUTIASP, f[7] = RET;
        std::memcpy(&f[8], &leaf, 8);
    }
    __builtin___clear_cache(reinterpret_cast<char *>(c), reinterpret_cast<char *>(c) + 4096);
    const bool bti = cpu_bti();
    CHECK_EQ(mprotect(c, 4096, PROT_READ | PROT_EXEC | (bti ? PROT_BTI_ : 0)), 0);
    std::printf("BTI: %s\n", bti ? "the code's page is guarded, elfmap swaps it" : "none");

    char dir[] = "/tmp/jh-test-a64-exc.XXXXXX";
    CHECK(mkdtemp(dir) != nullptr);
    jh_ctx *ctx = nullptr;
    jh_options o{};
    o.sz = sizeof o;
    o.channels = JH_UNWIND | (bti ? JH_ELFMAP : 0);
    o.dir = dir;
    o.flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT | JH_OPT_CODE_BTI;
    CHECK_EQ(jh_open(&ctx, &o), 0);
    A64_LLVM_CHECK_FED();
    jh_code l{};
    l.sz = sizeof l, l.name = "leaf", l.start = leaf, l.size = 32;
    l.unwind = JH_UNWIND_CFI, l.cfi = frameless_cfi, l.cfi_len = sizeof frameless_cfi;
    CHECK_EQ(jh_code_add(ctx, &l, nullptr), 0);
    static const jh_range signed_ra = { 4, 28 };
    static const jh_epilogue epi = { 24, 32 };
    uint64_t ids[2];
    for (int k = 0; k < 2; k++) {
        jh_code f{};
        f.sz = sizeof f, f.name = k ? "signed_b" : "signed_a", f.start = fn[k], f.size = 40;
        f.unwind = JH_UNWIND_FRAME_POINTER, f.fp_push_end = 8, f.fp_set_end = 12;
        f.epilogues = &epi, f.nepilogues = 1;
        f.ra_signed = &signed_ra, f.nra_signed = 1, f.ra_key = k ? JH_PAC_KEY_B : JH_PAC_KEY_A;
        CHECK_EQ(jh_code_add(ctx, &f, &ids[k]), 0);
    }
    CHECK_EQ(jh_flush(ctx), 0);
    if (bti)
        CHECK(from_image(c));                   /* the throws cross the guarded image */
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 2; k++) {
            thrown = destroyed = 0;
            int r = call_jit(reinterpret_cast<jit_fn *>(reinterpret_cast<void *>(fn[k])));
            std::printf("key %c, round %d: %s, destructor %s\n", k ? 'B' : 'A', round,
                        r == 1 ? "caught" : "NOT caught", destroyed ? "ran" : "did not run");
            CHECK_EQ(r, 1);
            CHECK_EQ(thrown, 1);
            CHECK_EQ(destroyed, 1);
        }

    /* described without the ranges: the exception cannot pass the signed frame */
    CHECK_EQ(jh_code_remove(ctx, ids[0]), 0);
    jh_code f{};
    f.sz = sizeof f, f.name = "unsigned_said", f.start = fn[0], f.size = 40;
    f.unwind = JH_UNWIND_FRAME_POINTER, f.fp_push_end = 8, f.fp_set_end = 12;
    f.epilogues = &epi, f.nepilogues = 1;
    CHECK_EQ(jh_code_add(ctx, &f, nullptr), 0);
    judge = "without .ra_signed";
    int st = a64_fork_control(control_child, fn[0], judge);
    judge = nullptr;
    std::printf("without .ra_signed: %s\n", WIFSIGNALED(st) ? "the process died" :
                WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "caught" : "not caught");
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
    jh_close(ctx);
    CHECK_EQ(std::system(("rm -rf " + std::string(dir)).c_str()), 0);
    return check_done();
}
