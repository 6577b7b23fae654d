/*
 * test_unwind_shadow.c — a batch asks whether its FDEs would shadow unwind information
 * already there by reading the loaded objects' .eh_frame_hdr tables itself
 * (unwind_shadow.c), not libgcc pc by pc: the answers must be libgcc's. Ranges laid over
 * this program's own mapping and libc's (functions with FDEs, padding and data without),
 * a few outside every object, in one sorted batch and in a shuffled one, each compared
 * with the answer one at a time. Then what a user sees: code in this program's text added
 * in a batch is left to the program's FDEs exactly where it is one at a time.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "channels/unwind.h"
#include "check.h"
#include "jitherald.h"

#define MAXN 40000

struct eh_bases { void *tbase, *dbase, *func; };
extern const void *_Unwind_Find_FDE(void *pc, struct eh_bases *bases);

static struct uw_fn fns[MAXN];
static struct uw_fn *ptr[MAXN];
static bool many[MAXN];

/* Ranges of len bytes every step bytes over [lo, hi). */
static size_t lay(size_t n, uintptr_t lo, uintptr_t hi, size_t step, size_t len)
{
    for (uintptr_t p = lo; p + len <= hi && n < MAXN; p += step, n++)
        fns[n] = (struct uw_fn){ .start = p, .end = p + len };
    return n;
}

/* Each of the n ranges in ptr[] asked in a batch and one at a time: how many differ;
 * *yes: how many are shadowed. */
static size_t compare(size_t n, size_t *yes)
{
    jh__lock(&jh__uw_lock);
    jh__uw_shadows_many(ptr, n, many);
    size_t bad = 0;
    *yes = 0;
    for (size_t i = 0; i < n; i++) {
        bool one = jh__uw_shadows(ptr[i]);
        *yes += one;
        if (one != many[i] && bad++ < 5)
            fprintf(stderr, "[%#lx, %#lx): batch says %d, one at a time %d\n",
                    (unsigned long)ptr[i]->start, (unsigned long)ptr[i]->end, many[i], one);
    }
    jh__unlock(&jh__uw_lock);
    return bad;
}

static void span_of(const void *pc, uintptr_t *lo, uintptr_t *hi)
{
#ifdef DLFO_STRUCT_HAS_EH_DBASE
    struct dl_find_object o;
    if (_dl_find_object((void *)pc, &o) == 0) {
        *lo = (uintptr_t)o.dlfo_map_start, *hi = (uintptr_t)o.dlfo_map_end;
        return;
    }
#endif
    Dl_info di;
    dladdr(pc, &di);
    *lo = (uintptr_t)di.dli_fbase, *hi = *lo + (1u << 20);
}

int main(void)
{
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND };
    jh_ctx *jh = NULL;
    CHECK_EQ(jh_open(&jh, &o), 0);
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    if (st.mode != JH__UW_LIST && st.mode != JH__UW_PERFN)
        SKIP("no libgcc unwinder to compare with");

    uintptr_t lo, hi, clo, chi;
    span_of((const void *)main, &lo, &hi);
    span_of((const void *)memcpy, &clo, &chi);
    uint8_t *anon = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(anon != MAP_FAILED);
    size_t pstep = (hi - lo) / 15000 | 1;
    size_t n = lay(0, lo, hi, pstep, pstep > 5 ? 5 : pstep);    /* this program */
    n = lay(n, (uintptr_t)anon, (uintptr_t)anon + 4096, 512, 16);   /* no object */
    size_t step = (chi - clo) / 12000 | 1;
    n = lay(n, clo, chi, step, step > 8 ? 8 : step);    /* libc */
    for (size_t i = 0; i < n; i++)
        ptr[i] = &fns[i];
    size_t yes;
    CHECK_EQ(compare(n, &yes), 0);
    printf("sorted: %zu ranges, %zu shadowed\n", n, yes);
    /* both answers are tested, many times each (their shares follow the build's layout:
     * under TSan this program's mapping is mostly the runtime's, 5% shadowed) */
    CHECK(yes >= 256 && n - yes >= 256);

    srand(7);
    for (size_t i = n - 1; i > 0; i--) {                /* not sorted: same answers */
        size_t j = (size_t)rand() % (i + 1);
        struct uw_fn *t = ptr[i];
        ptr[i] = ptr[j], ptr[j] = t;
    }
    CHECK_EQ(compare(n, &yes), 0);

    /* A user's view: code over this program's text (its functions have FDEs) and over
     * memory of its own, in a batch and one at a time, is left to the FDEs there alike. */
    static struct jh_code codes[64];
    static char names[64][16];
    uintptr_t text = (uintptr_t)main & ~(uintptr_t)63;
    for (int i = 0; i < 64; i++) {
        snprintf(names[i], sizeof names[i], "f%d", i);
        codes[i] = (struct jh_code){ .sz = sizeof codes[i], .name = names[i],
                                     .start = (void *)(i < 32 ? text + 64 * (uintptr_t)i
                                                       : (uintptr_t)anon + 8192 + 64 * (i - 32)),
                                     .size = 48, .unwind = JH_UNWIND_FRAME_POINTER,
                                     .fp_push_end = 1, .fp_set_end = 4 };
    }
    const void *own[32];
    struct eh_bases eb;
    for (int i = 0; i < 32; i++)
        own[i] = _Unwind_Find_FDE((void *)codes[i].start, &eb);
    jh__unwind_get_stats(&st);
    size_t before = st.shadowed;
    CHECK_EQ(jh_code_add_many(jh, codes, 64, NULL, NULL), 64);
    size_t right = 0;
    for (int i = 0; i < 64; i++) {     /* the program's FDEs still found; ours elsewhere */
        const void *f = _Unwind_Find_FDE((void *)codes[i].start, &eb);
        right += i < 32 && own[i] ? f == own[i] : f && eb.func == codes[i].start;
    }
    CHECK_EQ(right, 64);
    jh__unwind_get_stats(&st);
    size_t batch = st.shadowed - before;
    CHECK_EQ(jh_code_remove_range(jh, (void *)text, 64 * 32), 32);
    CHECK_EQ(jh_code_remove_range(jh, anon, 1 << 16), 32);
    jh_flush(jh);
    before = st.shadowed;
    for (int i = 0; i < 64; i++)
        CHECK_EQ(jh_code_add(jh, &codes[i], NULL), 0);
    jh__unwind_get_stats(&st);
    printf("left to the program's FDEs: %zu in a batch, %zu one at a time\n", batch,
           st.shadowed - before);
    CHECK_EQ(batch, st.shadowed - before);
    CHECK(batch >= 16 && batch <= 32);
    jh_close(jh);
    munmap(anon, 1 << 16);
    return check_done();
}
