/*
 * test_unwind_memo.c — functions with the same frame shape (node's builtins: a few prologue shapes
 * for 2,200 functions) get each its FDE copied from one already encoded, with its own
 * pc_begin and pc_range (unwind.c: memo). What an unwinder reads must be what the encoder
 * writes for that function alone: for every function, libgcc's _Unwind_Find_FDE at its last
 * byte gives an FDE equal, byte for byte, to jh__cfi_eh_frame's for it (the CIE pointer
 * aside: runs are regrouped) under an equal CIE. The functions come one at a time and in a
 * batch, in four shapes (a frame pointer's, as the preload describes V8's builtins; CFI;
 * CFI with a personality and an LSDA), with sizes that vary and go down (a smaller size
 * than one encoded is encoded again, not copied).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "channels/unwind_stats.h"
#include "check.h"
#include "fmt/cfi.h"
#include "jitherald.h"

struct eh_bases { void *tbase, *dbase, *func; };
extern const void *_Unwind_Find_FDE(void *pc, struct eh_bases *bases);

#define N 300
#define SLOT 64

/* push rbp; mov rbp, rsp: the preload's guess for V8's builtins (tools/lib/prologue.c) */
static const uint8_t fp_frame[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06 };
/* push rbx at 0 */
static const uint8_t push_rbx[] = { 0x41, 0x0e, 0x10, 0x83, 0x02 };
static int personality_fn(void) { return 0; }
static const char lsda[16];
static char names[N][16];

static struct jh_code code_at(uint8_t *area, size_t i)
{
    snprintf(names[i], sizeof names[i], "fn_%zu", i);
    struct jh_code c = { .sz = sizeof c, .name = names[i], .start = area + i * SLOT,
                         .size = 8 + (i * 13) % 50, .unwind = JH_UNWIND_CFI };
    if (i % 4 == 3) {                           /* what the preload says of V8's builtins */
        c.unwind = JH_UNWIND_FRAME_POINTER, c.fp_push_end = 1, c.fp_set_end = 4;
    } else if (i % 4 == 0) {
        c.cfi = fp_frame, c.cfi_len = sizeof fp_frame;
    } else if (i % 4 == 1) {
        c.cfi = push_rbx, c.cfi_len = sizeof push_rbx;
    } else {
        c.cfi = fp_frame, c.cfi_len = sizeof fp_frame;
        c.personality = (void *)(uintptr_t)personality_fn, c.lsda = lsda;
    }
    return c;
}

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Does what libgcc finds for code i equal the encoder's run for it alone? */
static bool same_as_encoder(uint8_t *area, size_t i)
{
    struct jh_code c = code_at(area, i);
    struct jh__func f = { .start = (uintptr_t)c.start, .size = c.size, .name = c.name,
                          .unwind = c.unwind, .cfi = c.cfi, .cfi_len = c.cfi_len,
                          .fp_push_end = c.fp_push_end, .fp_set_end = c.fp_set_end,
                          .personality = (uintptr_t)c.personality, .lsda = (uintptr_t)c.lsda };
    struct jh__cfi_opts o = { .ptr = JH__CFI_ABS, .personality = true };
    struct jh__cfi_index idx;
    struct jh__buf b = { 0 };
    struct eh_bases eb = { 0 };
    const uint8_t *fde = _Unwind_Find_FDE((uint8_t *)c.start + c.size - 1, &eb);
    bool ok = jh__cfi_eh_frame(&b, &o, &f, 1, &idx) == 1 && fde && eb.func == c.start;
    if (ok) {
        const uint8_t *want = b.p + idx.off;
        size_t len = 4 + rd32(want);
        const uint8_t *want_cie = want + 4 - rd32(want + 4), *cie = fde + 4 - rd32(fde + 4);
        ok = rd32(fde) == rd32(want) && !memcmp(fde + 8, want + 8, len - 8) &&
             rd32(cie) == rd32(want_cie) && !memcmp(cie, want_cie, 4 + rd32(want_cie));
    }
    if (!ok)
        fprintf(stderr, "%s at %p (size %zu): FDE %p of %p differs from the encoder's\n",
                c.name, c.start, c.size, (const void *)fde, eb.func);
    jh__buf_free(&b);
    return ok;
}

static uint64_t reused(void)
{
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    return st.fdes_reused;
}

int main(void)
{
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND };
    jh_ctx *jh = NULL;
    CHECK_EQ(jh_open(&jh, &o), 0);
    uint8_t *a = mmap(NULL, 2 * N * SLOT + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED);
    uint8_t *b = a + N * SLOT;

    uint64_t r0 = reused();
    for (size_t i = 0; i < N; i++) {            /* one at a time */
        struct jh_code c = code_at(a, i);
        CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    }
    static struct jh_code codes[N];
    for (size_t i = 0; i < N; i++)
        codes[i] = code_at(b, i);
    CHECK_EQ(jh_code_add_many(jh, codes, N, NULL, NULL), N);      /* in a batch */
    uint64_t copies = reused() - r0;
    printf("FDEs copied from one encoded alike: %llu of %d\n", (unsigned long long)copies, 2 * N);
    CHECK(copies >= 2 * N - 40);                /* most: four shapes, sizes going down */
    CHECK(copies < 2 * N);                      /* not all: a smaller size is encoded */

    size_t bad = 0;
    for (size_t i = 0; i < N; i++)
        bad += !same_as_encoder(a, i) + !same_as_encoder(b, i);
    CHECK_EQ(bad, 0);

    /* code without unwind information: no FDE (the encoder is not asked), none found */
    struct jh_code none = code_at(a, 0);
    none.start = b + N * SLOT + 64, none.size = 16, none.unwind = JH_UNWIND_NONE;
    none.cfi = NULL, none.cfi_len = 0, none.personality = NULL, none.lsda = NULL;
    struct jh__func fnone = { .start = (uintptr_t)none.start, .size = 16, .name = "none" };
    struct jh__cfi_opts co = { .ptr = JH__CFI_ABS, .personality = true };
    struct jh__buf eb = { 0 };
    CHECK_EQ(jh__cfi_eh_frame(&eb, &co, &fnone, 1, NULL), 0);
    jh__buf_free(&eb);
    CHECK_EQ(jh_code_add(jh, &none, NULL), 0);
    struct eh_bases nb = { 0 };
    CHECK(_Unwind_Find_FDE((uint8_t *)none.start + 8, &nb) == NULL);

    /* a CFI whose advance goes past the code: refused, as it always was */
    struct jh_code tiny = code_at(a + 2 * N * SLOT - SLOT, 0);
    tiny.start = (uint8_t *)a - 4096 + 64;
    tiny.size = 2;
    CHECK(jh_code_add(jh, &tiny, NULL) < 0);
    jh_close(jh);
    return check_done();
}
