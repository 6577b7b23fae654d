/*
 * test_a64_bti.c — elfmap keeps BTI (arm64 branch target identification), under
 * qemu-aarch64 -cpu max. A JIT maps its code PROT_BTI: an indirect call must land on a
 * `bti c` landing pad, or the CPU raises SIGILL. elfmap swaps the JIT's pages for a mapping
 * of its image file; that mapping must be PROT_BTI too, or every function of the JIT
 * becomes a valid target for a hijacked branch. Checked by calling through the image:
 *   - a function that starts with `bti c` still runs, after the swap and after the swap is
 *     undone (jh_code_remove gives the pages back to anonymous memory, still guarded);
 *   - a function without a landing pad still traps (in a child), at both moments.
 * The JIT says its pages are guarded with JH_OPT_CODE_BTI, as it must under qemu-user,
 * whose /proc/self/smaps is the host's (on a kernel, smaps' "bt" says it): the control
 * without the flag shows that the trap check notices a swap that drops the guard.
 * Then the unwinders through guarded code that elfmap has swapped: a frame-record function
 * that lands on `bti c` and one that signs its return address (paciasp is its own landing
 * pad), each calling a frameless function that lands on `bti jc`, calling C: libgcc's
 * _Unwind_Backtrace and glibc's backtrace() walk both JIT frames to main.
 * Last, jitdump's marker: perf needs the dump mapped executable, and that page holds
 * copies of the JIT's code; where BTI is enforced it is guarded, so a branch to a copy
 * traps (in a child that drops the guard first, the same copy runs: the trap was BTI's).
 */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "a64_jit.h"
#include "check.h"
#include "jitherald.h"

#ifndef PROT_BTI
#define PROT_BTI 0x10
#endif
#define HWCAP2_BTI_BIT (1UL << 17)

enum { BTI_C = 0xd503245f, BTI_JC = 0xd50324df, MOV_W0 = 0x52800000 };

typedef int fn_t(void);

/* Does calling f indirectly (blr) trap with SIGILL? In a child: the trap kills it; 0 when
 * it returns want. unguard: the child first makes f's page r-x without PROT_BTI. */
static int traps_as(fn_t *f, int want, bool unguard)
{
    pid_t pid = fork();
    if (pid == 0) {
        setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });  /* qemu would write a core */
        signal(SIGILL, SIG_DFL);
        if (unguard && mprotect((void *)((uintptr_t)f & ~(uintptr_t)4095), 4096,
                                PROT_READ | PROT_EXEC) != 0)
            _exit(3);
        _exit(f() == want ? 0 : 2);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGILL ? 1 : WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

static int traps(fn_t *f)
{
    return traps_as(f, 7, false);
}

/* The first mapping of /proc/self/maps at addr (addr NULL: whose path ends with suffix):
 * its start, and whether it is a file whose name holds ".elf" (an elfmap image). -1: none. */
static int find_map(const void *addr, const char *suffix, uintptr_t *start)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[1024];
    int r = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long s, e;
        char path[512] = "";
        size_t pl;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %511s", &s, &e, path) >= 2 &&
            (addr ? (uintptr_t)addr >= s && (uintptr_t)addr < e
                  : (pl = strlen(path)) >= strlen(suffix) &&
                    !strcmp(path + pl - strlen(suffix), suffix))) {
            r = strstr(path, ".elf") != NULL;
            *start = s;
            break;
        }
    }
    fclose(f);
    return r;
}

/* Is addr mapped from a file (an elfmap image) rather than anonymous memory? */
static int from_file(const void *addr)
{
    uintptr_t s;
    return find_map(addr, NULL, &s);
}

/* One JIT page with a guarded function (bti c; mov w0, 42; ret) and one without a landing
 * pad (mov w0, 7; ret), announced on elfmap; JH_OPT_CODE_BTI or not. */
static void run(const char *dir, bool say_bti)
{
    uint32_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    page[0] = BTI_C;
    page[1] = MOV_W0 | 42 << 5;
    page[2] = RET;
    page[4] = MOV_W0 | 7 << 5;
    page[5] = RET;
    __builtin___clear_cache((char *)page, (char *)(page + 8));
    CHECK_EQ(mprotect(page, 4096, PROT_READ | PROT_EXEC | PROT_BTI), 0);
    fn_t *pad = (fn_t *)(void *)page, *nopad = (fn_t *)(void *)(page + 4);
    CHECK_EQ(pad(), 42);
    CHECK_EQ(traps(nopad), 1);                  /* the guard, before jitherald */

    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir, .engine = "bti",
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT |
                                     (say_bti ? JH_OPT_CODE_BTI : 0) };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    uint64_t a, b;
    struct jh_code c = { .sz = sizeof c, .name = "guarded", .start = page, .size = 12 };
    CHECK_EQ(jh_code_add(ctx, &c, &a), 0);
    c.name = "unguarded";
    c.start = page + 4;
    c.size = 8;
    CHECK_EQ(jh_code_add(ctx, &c, &b), 0);
    CHECK_EQ(jh_flush(ctx), 0);
    CHECK_EQ(from_file(page), 1);               /* swapped: the image is mapped there */
    CHECK_EQ(pad(), 42);
    if (say_bti) {
        CHECK_EQ(traps(nopad), 1);              /* the image keeps the guard */
    } else {
        /* qemu's smaps cannot tell: the image is mapped without the guard, and the trap
         * check sees it (on a kernel, smaps' "bt" would keep the guard) */
        CHECK_EQ(traps(nopad), 0);
    }

    /* every function removed: the page is anonymous again, guarded as before */
    CHECK_EQ(jh_code_remove(ctx, a), 0);
    CHECK_EQ(jh_code_remove(ctx, b), 0);
    CHECK_EQ(from_file(page), 0);
    CHECK_EQ(pad(), 42);
    if (say_bti)
        CHECK_EQ(traps(nopad), 1);
    jh_close(ctx);
    munmap(page, 4096);
}

/* ---- unwinding through guarded code that elfmap swapped ------------------------------ */
static struct a64_walk uw;
static uintptr_t bips[64];
static int nbips, called;

static void callback(void)
{
    a64_unwind(&uw);
    void *bt[64];
    nbips = backtrace(bt, 64);
    for (int i = 0; i < nbips; i++)
        bips[i] = (uintptr_t)bt[i];
    called++;
}

/* bti jc; str x30,[sp,#-16]!; ldr x16,lit; blr x16; ldr x30,[sp],#16; ret; lit: a64_jit.h's
 * frameless function behind a landing pad (its CFI 4 bytes later) */
static const uint8_t pad_frameless_cfi[] = { 0x48, 0x0e, 16, 0x9e, 2, 0x48, 0x0e, 0, 0xde };

static void unwind_guarded(const char *dir)
{
    a64_area_init();
    uint32_t *leaf = place(FRAMELESS_SIZE);
    leaf[0] = BTI_JC;
    leaf[1] = STR_LR_PRE;
    leaf[2] = ldr_x16_literal(8, 24);
    leaf[3] = BLR_X16;
    leaf[4] = LDR_LR_POST;
    leaf[5] = RET;
    void (*target)(void) = callback;
    memcpy(&leaf[6], &target, 8);
    struct signed_fn fn[2];
    emit_fp_fn(&fn[0], leaf, A64_UNSIGNED, -1);
    fn[0].code[0] = BTI_C;                      /* where the unsigned layout has a nop */
    emit_fp_fn(&fn[1], leaf, A64_KEY_A, -1);
    uint32_t *nopad = place(8);
    nopad[0] = MOV_W0 | 7 << 5;
    nopad[1] = RET;
    a64_flush();
    CHECK_EQ(mprotect(area, 65536, PROT_READ | PROT_EXEC | PROT_BTI), 0);

    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND | JH_ELFMAP, .dir = dir,
                            .engine = "bti", .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT |
                                                      JH_OPT_CODE_BTI };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    struct jh_code l = { .sz = sizeof l, .name = "pad_frameless", .start = leaf,
                         .size = FRAMELESS_SIZE, .unwind = JH_UNWIND_CFI,
                         .cfi = pad_frameless_cfi, .cfi_len = sizeof pad_frameless_cfi };
    CHECK_EQ(jh_code_add(ctx, &l, NULL), 0);
    add_signed(ctx, &fn[0], false, false);
    add_signed(ctx, &fn[1], false, true);
    struct jh_code n = { .sz = sizeof n, .name = "nopad", .start = nopad, .size = 8 };
    CHECK_EQ(jh_code_add(ctx, &n, NULL), 0);
    CHECK_EQ(jh_flush(ctx), 0);
    CHECK_EQ(from_file(area), 1);               /* the walks run through the image */
    CHECK_EQ(traps((fn_t *)(void *)nopad), 1);  /* which is guarded */
    for (int k = 0; k < 2; k++) {
        char what[64];
        called = 0;
        call_jit((jit_fn *)(void *)fn[k].code);
        CHECK_EQ(called, 1);
        snprintf(what, sizeof what, "guarded, %s, _Unwind_Backtrace", k ? "key A" : "bti c");
        CHECK(walks(uw.ip, uw.n, fn[k].code, fn[k].size, leaf, FRAMELESS_SIZE, what));
        snprintf(what, sizeof what, "guarded, %s, backtrace()", k ? "key A" : "bti c");
        CHECK(walks(bips, nbips, fn[k].code, fn[k].size, leaf, FRAMELESS_SIZE, what));
    }
    jh_close(ctx);
    munmap(area, 65536);
}

/* ---- jitdump's marker page ------------------------------------------------------------ */
static void jitdump_marker(const char *dir)
{
    uint32_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    for (int k = 0; k < 8; k++) {
        page[4 * k] = MOV_W0 | 77 << 5;
        page[4 * k + 1] = RET;
    }
    __builtin___clear_cache((char *)page, (char *)(page + 32));
    CHECK_EQ(mprotect(page, 4096, PROT_READ | PROT_EXEC), 0);
    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_JITDUMP, .dir = dir, .engine = "bti",
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/jit-%d.dump", (int)getpid());
    uintptr_t marker = 0;
    /* a function more, its name a letter longer, until a copy lies 4-aligned in the file */
    const uint32_t *copy = NULL, want[2] = { MOV_W0 | 77 << 5, RET };
    char name[9] = "";
    for (int k = 0; k < 8 && !copy; k++) {
        name[k] = 'm';
        struct jh_code c = { .sz = sizeof c, .name = name, .start = page + 4 * k, .size = 8 };
        CHECK_EQ(jh_code_add(ctx, &c, NULL), 0);
        CHECK_EQ(jh_flush(ctx), 0);
        if (!marker && find_map(NULL, suffix, &marker) != 0)
            break;                                  /* the dump is not mapped */
        for (size_t off = 0; !copy && off + 8 <= 4096; off += 4)
            if (!memcmp((const void *)(marker + off), want, 8))
                copy = (const uint32_t *)(marker + off);
    }
    CHECK(marker != 0);
    CHECK(copy != NULL);
    if (copy) {
        printf("jitdump marker at %#lx, a copy of the code at +%#lx\n", (unsigned long)marker,
               (unsigned long)((uintptr_t)copy - marker));
        CHECK_EQ(traps_as((fn_t *)(void *)copy, 77, false), 1);    /* guarded */
        CHECK_EQ(traps_as((fn_t *)(void *)copy, 77, true), 0);     /* unguarded, it runs */
    }
    jh_close(ctx);
    munmap(page, 4096);
}

int main(void)
{
    if (!(getauxval(AT_HWCAP2) & HWCAP2_BTI_BIT))
        SKIP("this CPU has no BTI (qemu-aarch64 -cpu max has)");
    char dir[] = "/tmp/jh-test-bti.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    run(dir, true);
    run(dir, false);
    unwind_guarded(dir);
    jitdump_marker(dir);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
    return check_done();
}
