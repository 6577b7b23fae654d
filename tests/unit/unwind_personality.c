/*
 * unwind_personality.c — see unwind_personality.h. The JIT function, hand-assembled:
 *
 *     f:   push rbp; mov rbp,rsp; mov rax,thrower; call rax
 *          mov eax,1; pop rbp; ret            <- thrower returned: nobody caught
 *     pad: mov eax,2; pop rbp; ret            <- the landing pad a personality chose
 *
 * thrower() raises an exception of its own class with _Unwind_RaiseException. Cases:
 *   1. no unwind info for f: the search ends at f (end of stack), f returns 1;
 *   2. f announced with a personality and an LSDA: the unwinder calls the personality for
 *      f's frame with that LSDA and a pc inside f, it catches, f returns 2;
 *   3. the same code covered first by a "foreign" FDE (as LuaJIT registers one over each
 *      machine-code area, with its personality), then announced without a personality:
 *      the channel leaves it to the foreign FDE, whose personality catches (f returns 2).
 *      Were the channel's FDE registered, it would be found first, and nothing would
 *      catch (f returns 1): what broke LuaJIT's error handling.
 *   4. (libgcc's list) a foreign FDE over a whole area with a personality and no LSDA (what
 *      LuaJIT registers), f announced with that same personality: the channel describes f
 *      (hosted) and the personality still catches in f; g, a copy of f above it in the
 *      area that nobody announced, still reaches the personality too (the run's filler),
 *      and so does g once f is gone; code announced there without the personality is
 *      left to the area's FDE.
 */
#include "unwind_personality.h"

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
    uintptr_t (*get_lsda)(struct _Unwind_Context *);
    void (*register_frame)(void *);
    void (*deregister_frame)(void *);
} uw;

static uint8_t *code;           /* f at code + F_OFF, a copy g at code + G_OFF */
#define F_OFF 64
#define G_OFF 160
#define F_SIZE 30
#define PAD_OFF 23
static const char lsda_mine[] = "mine", lsda_foreign[] = "foreign";

/* What the personalities saw. */
static struct {
    int calls;
    uintptr_t lsda, ip;
    int raise_rc;
} seen;

static int personality(uintptr_t want_lsda, int actions, struct _Unwind_Context *ctx)
{
    seen.calls++;
    seen.lsda = uw.get_lsda(ctx);
    seen.ip = uw.get_ip(ctx);
    if (actions & UA_SEARCH_PHASE)
        return seen.lsda == want_lsda ? URC_HANDLER_FOUND : URC_CONTINUE_UNWIND;
    if ((actions & UA_CLEANUP_PHASE) && (actions & UA_HANDLER_FRAME)) {
        uintptr_t fn = (uintptr_t)code + (seen.ip > (uintptr_t)code + G_OFF ? G_OFF : F_OFF);
        uw.set_ip(ctx, fn + PAD_OFF);
        return URC_INSTALL_CONTEXT;
    }
    return URC_CONTINUE_UNWIND;
}

static int pers_mine(int version, int actions, uint64_t exclass, struct uexc *ue,
                     struct _Unwind_Context *ctx)
{
    (void)version, (void)exclass, (void)ue;
    return personality((uintptr_t)lsda_mine, actions, ctx);
}

static int pers_foreign(int version, int actions, uint64_t exclass, struct uexc *ue,
                        struct _Unwind_Context *ctx)
{
    (void)version, (void)exclass, (void)ue;
    return personality((uintptr_t)lsda_foreign, actions, ctx);
}

static int pers_area(int version, int actions, uint64_t exclass, struct uexc *ue,
                     struct _Unwind_Context *ctx)
{
    (void)version, (void)exclass, (void)ue;
    return personality(0, actions, ctx);
}

static struct uexc exc;

__attribute__((noinline)) static void thrower(void)
{
    memset(&exc, 0, sizeof exc);
    exc.exclass = 0x4a48544553540000ull;        /* "JHTEST\0\0" */
    seen.raise_rc = uw.raise(&exc);             /* returns only when nobody caught */
}

static void emit(size_t off)
{
    uint8_t *p = code + off;
    uintptr_t t = (uintptr_t)thrower;
    size_t n = 0;
    p[n++] = 0x55;
    p[n++] = 0x48; p[n++] = 0x89; p[n++] = 0xe5;
    p[n++] = 0x48; p[n++] = 0xb8; memcpy(p + n, &t, 8); n += 8;
    p[n++] = 0xff; p[n++] = 0xd0;
    p[n++] = 0xb8; p[n++] = 1; p[n++] = 0; p[n++] = 0; p[n++] = 0;
    p[n++] = 0x5d; p[n++] = 0xc3;
    p[n++] = 0xb8; p[n++] = 2; p[n++] = 0; p[n++] = 0; p[n++] = 0;
    p[n++] = 0x5d; p[n++] = 0xc3;
}

static int call_at(size_t off)
{
    memset(&seen, 0, sizeof seen);
    int (*f)(void) = (int (*)(void))(void *)(code + off);
    int r = f();
    __asm__ volatile("" ::: "memory");
    return r;
}

static int call_f(void)
{
    return call_at(F_OFF);
}

static bool ip_in_f(void)
{
    return seen.ip > (uintptr_t)code + F_OFF && seen.ip <= (uintptr_t)code + F_OFF + F_SIZE;
}

static jh_ctx *open_unwind(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

static struct jh_code f_code(void)
{
    return (struct jh_code){ .sz = sizeof(struct jh_code), .name = "f", .start = code + F_OFF,
                             .size = F_SIZE, .unwind = JH_UNWIND_FRAME_POINTER,
                             .fp_push_end = 1, .fp_set_end = 4 };
}

/* A foreign registration over [code, code+128) with its own personality, the way a JIT
 * registers its code area before any function is in it: returns what to deregister. */
static uint8_t *foreign_register(const struct unwind_personality *cfg, struct jh__buf *b)
{
    struct jh__func area = { .start = (uintptr_t)code, .size = 128,
                             .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = F_OFF + 1,
                             .fp_set_end = F_OFF + 4, .personality = (uintptr_t)pers_foreign,
                             .lsda = (uintptr_t)lsda_foreign };
    struct jh__cfi_opts o = { .ptr = JH__CFI_ABS, .personality = true };
    struct jh__cfi_index idx;
    CHECK_EQ(jh__cfi_eh_frame(b, &o, &area, 1, &idx), 1);
    uint8_t *reg = cfg->llvm ? b->p + idx.off : b->p;    /* LLVM's takes one FDE */
    uw.register_frame(reg);
    return reg;
}

int unwind_personality_run(const struct unwind_personality *cfg)
{
    void *h = cfg->unwinder ? cfg->unwinder : dlopen("libgcc_s.so.1", RTLD_NOW);
    CHECK(h != NULL);
    if (!h)
        return check_done();
    *(void **)&uw.raise = dlsym(h, "_Unwind_RaiseException");
    *(void **)&uw.get_ip = dlsym(h, "_Unwind_GetIP");
    *(void **)&uw.set_ip = dlsym(h, "_Unwind_SetIP");
    *(void **)&uw.get_lsda = dlsym(h, "_Unwind_GetLanguageSpecificData");
    *(void **)&uw.register_frame =
        dlsym(h, cfg->llvm ? "__unw_add_dynamic_fde" : "__register_frame");
    *(void **)&uw.deregister_frame =
        dlsym(h, cfg->llvm ? "__unw_remove_dynamic_fde" : "__deregister_frame");
    CHECK(uw.raise && uw.get_ip && uw.set_ip && uw.get_lsda && uw.register_frame &&
          uw.deregister_frame);
    if (cfg->force_mode)
        jh__unwind_force_mode(cfg->force_mode);     /* -EBUSY if a test forced it before */
    code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    CHECK(code != MAP_FAILED);
    if (code == MAP_FAILED)
        return check_done();
    emit(F_OFF);
    emit(G_OFF);

    /* 1. No unwind info: nobody catches. */
    CHECK_EQ(call_f(), 1);
    CHECK_EQ(seen.calls, 0);
    CHECK_EQ(seen.raise_rc, URC_END_OF_STACK);

    /* 2. The JIT's personality and LSDA, through the channel. */
    jh_ctx *jh = open_unwind();
    struct jh_code c = f_code();
    c.personality = (const void *)pers_mine;
    c.lsda = lsda_mine;
    uint64_t id;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    CHECK_EQ(call_f(), 2);
    CHECK(seen.calls >= 2);                     /* search phase, then cleanup */
    CHECK_EQ(seen.lsda, (uintptr_t)lsda_mine);
    CHECK(ip_in_f());
    /* ...and without a personality the exception passes through the frame. */
    CHECK_EQ(jh_code_remove(jh, id), 0);
    c.personality = NULL;
    c.lsda = NULL;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    CHECK_EQ(call_f(), 1);
    CHECK_EQ(seen.calls, 0);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    jh_flush(jh);                               /* no dead FDE of ours left over f */

    /* 3. Foreign unwind info first: the channel must leave it alone. */
    struct jh__unwind_stats before, after;
    jh__unwind_get_stats(&before);
    struct jh__buf fb = { 0 };
    uint8_t *reg = foreign_register(cfg, &fb);
    CHECK_EQ(call_f(), 2);                      /* the foreign FDE alone works */
    CHECK_EQ(seen.lsda, (uintptr_t)lsda_foreign);
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    jh__unwind_get_stats(&after);
    CHECK_EQ(after.shadowed, before.shadowed + 1);
    CHECK_EQ(after.live, before.live);
    CHECK_EQ(call_f(), 2);
    CHECK_EQ(seen.lsda, (uintptr_t)lsda_foreign);
    CHECK(ip_in_f());
    CHECK_EQ(jh_code_remove(jh, id), 0);
    uw.deregister_frame(reg);
    jh__buf_free(&fb);

    /* Once the foreign registration is gone, the channel registers the code again. */
    c.personality = (const void *)pers_mine;
    c.lsda = lsda_mine;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    CHECK_EQ(call_f(), 2);
    CHECK_EQ(seen.lsda, (uintptr_t)lsda_mine);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    jh_flush(jh);

    /* 4. Hosted: see the top of this file. */
    jh__unwind_get_stats(&before);
    if (before.mode == JH__UW_LIST && !cfg->llvm) {
        struct jh__func area = { .start = (uintptr_t)code, .size = 256,
                                 .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = F_OFF + 1,
                                 .fp_set_end = F_OFF + 4, .personality = (uintptr_t)pers_area };
        struct jh__cfi_opts o = { .ptr = JH__CFI_ABS, .personality = true };
        CHECK_EQ(jh__cfi_eh_frame(&fb, &o, &area, 1, NULL), 1);
        uw.register_frame(fb.p);
        CHECK_EQ(call_at(G_OFF), 2);            /* the area's FDE alone */
        c.personality = (const void *)pers_area;
        c.lsda = NULL;
        CHECK_EQ(jh_code_add(jh, &c, &id), 0);
        jh__unwind_get_stats(&after);
        CHECK_EQ(after.hosted, before.hosted + 1);
        CHECK_EQ(after.live, before.live + 1);
        CHECK_EQ(call_f(), 2);
        CHECK(ip_in_f());
        CHECK_EQ(seen.lsda, 0);
        CHECK_EQ(call_at(G_OFF), 2);            /* the filler above f */
        CHECK(seen.ip > (uintptr_t)code + G_OFF);
        struct jh_code g = c;
        g.name = "g";
        g.start = code + G_OFF;
        g.personality = NULL;
        uint64_t gid;
        CHECK_EQ(jh_code_add(jh, &g, &gid), 0); /* without it: left to the area's FDE */
        jh__unwind_get_stats(&after);
        CHECK_EQ(after.shadowed, before.shadowed + 1);
        CHECK_EQ(after.live, before.live + 1);
        CHECK_EQ(call_at(G_OFF), 2);
        CHECK_EQ(jh_code_remove(jh, gid), 0);
        CHECK_EQ(jh_code_remove(jh, id), 0);
        jh_flush(jh);
        jh__unwind_get_stats(&after);
        CHECK_EQ(after.segments, before.segments);
        CHECK_EQ(call_at(G_OFF), 2);            /* the area's FDE again */
        CHECK_EQ(call_f(), 2);
        uw.deregister_frame(fb.p);
        jh__buf_free(&fb);
    }
    jh_close(jh);
    munmap(code, 4096);
    return check_done();
}
