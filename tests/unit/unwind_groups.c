/*
 * unwind_groups.c — the unwind channel's bookkeeping under churn, checked through the
 * unwinder itself: after every phase, _Unwind_Find_FDE(pc) for a pc inside every live
 * function must return that function's FDE (bases.func == its start), in whatever way the
 * FDEs were grouped, and after a flush none may be left for removed code. Phases: code
 * growing upwards (the binary counter), half removed at random, the holes refilled in
 * random order at the same addresses, code growing downwards, a move (found at its new
 * address, gone from its old one), everything removed. Then again with tiny limits so
 * that every merge path (by size, by number of runs) runs thousands of times. The
 * test_unwind_* programs choose the unwinder and the mode (unwind_groups.h).
 */
#include "unwind_groups.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"
#include "channels/unwind_stats.h"

static find_fde_fn *find_fde;
static proc_info_fn *unw_pi;
static void *unw_as;
static int forced;

#define SLOT 32
static uint8_t *area;           /* PROT_NONE: the code is described, never run */
static uint64_t *ids;           /* per slot, 0 = not registered */
static uint8_t *sizes;          /* per slot, as registered */
static size_t shrink;           /* add() registers slot_size(i) - shrink bytes */
static jh_ctx *jh;
static unsigned rng = 12345;
static uint64_t ops, last_ops, last_copied;

static unsigned rnd(void) { rng = rng * 1103515245u + 12345u; return rng >> 8; }

static size_t slot_size(size_t i) { return 8 + (i * 7) % 24; }

static int add(size_t i)
{
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = area + i * SLOT,
                         .size = slot_size(i) - shrink, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = 1, .fp_set_end = 4 };
    ops++;
    sizes[i] = (uint8_t)c.size;
    return jh_code_add(jh, &c, &ids[i]);
}

static int del(size_t i)
{
    ops++;
    int err = jh_code_remove(jh, ids[i]);
    ids[i] = 0;
    return err;
}

/* Every live function found with its own start; returns the number of misses. */
static size_t verify(size_t n, const char *phase, bool removed_too)
{
    size_t bad = 0, live = 0;
    for (size_t i = 0; i < n; i++) {
        struct eh_bases b = { 0 };
        uint8_t *pc = area + i * SLOT + (ids[i] ? sizes[i] : slot_size(i)) - 1;
        const void *fde = find_fde(pc, &b);
        uintptr_t pi[32] = { 0 };       /* unw_proc_info_t begins with start_ip, end_ip */
        int pr = unw_pi ? unw_pi(unw_as, (uintptr_t)pc, pi, NULL) : 0;
        if (ids[i]) {
            live++;
            if (!fde || b.func != area + i * SLOT) {
                if (bad++ < 5)
                    fprintf(stderr, "%s: slot %zu (%p): fde %p func %p\n", phase, i,
                            (void *)pc, fde, b.func);
            } else if (unw_pi && (pr || pi[0] != (uintptr_t)(area + i * SLOT))) {
                if (bad++ < 5)
                    fprintf(stderr, "%s: slot %zu: libunwind says %d, start %#lx\n", phase, i,
                            pr, (unsigned long)pi[0]);
            }
        } else if (removed_too && fde && b.func == area + i * SLOT) {
            if (bad++ < 5)
                fprintf(stderr, "%s: removed slot %zu still has an FDE\n", phase, i);
        } else if (removed_too && unw_pi && !pr && pi[0] == (uintptr_t)(area + i * SLOT)) {
            if (bad++ < 5)
                fprintf(stderr, "%s: removed slot %zu still known to libunwind\n", phase, i);
        }
    }
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    printf("%-28s live %6zu  runs %4zu  largest %6zu  dead %6zu  FDE copies/op %.1f\n", phase,
           live, st.segments, st.largest, st.dead,
           (double)(st.fdes_copied - last_copied) / (double)(ops - last_ops + 1));
    last_copied = st.fdes_copied;
    last_ops = ops;
    CHECK_EQ(st.live, live);
    return bad;
}

static void churn(size_t n, size_t max_runs)
{
    size_t err = 0;
    /* upwards */
    for (size_t i = 0; i < n / 2; i++)
        err += add(i) != 0;
    CHECK_EQ(err, 0);
    CHECK_EQ(verify(n, "grown upwards", false), 0);
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    if (forced != JH__UW_PERFN && forced != JH__UW_LLVM)
        CHECK(st.segments <= max_runs);

    /* half removed at random */
    for (size_t i = 0; i < n / 2; i++)
        if (rnd() & 1)
            err += del(i) != 0;
    CHECK_EQ(err, 0);
    CHECK_EQ(verify(n, "half removed", false), 0);

    /* holes refilled in random order: same addresses, inside existing runs */
    for (size_t k = 0; k < n / 2; k++) {
        size_t i = rnd() % (n / 2);
        if (!ids[i])
            err += add(i) != 0;
    }
    CHECK_EQ(err, 0);
    CHECK_EQ(verify(n, "holes refilled alike", false), 0);

    /* again, refilled with shorter functions: the runs must be rebuilt */
    for (size_t i = 0; i < n / 2; i++)
        if (ids[i] && rnd() & 1)
            err += del(i) != 0;
    shrink = 1;
    for (size_t k = 0; k < n / 2; k++) {
        size_t i = rnd() % (n / 2);
        if (!ids[i])
            err += add(i) != 0;
    }
    shrink = 0;
    CHECK_EQ(err, 0);
    CHECK_EQ(verify(n, "holes refilled, shorter", false), 0);

    /* downwards, above the first half */
    for (size_t i = n; i-- > n / 2;)
        err += add(i) != 0;
    CHECK_EQ(err, 0);
    CHECK_EQ(verify(n, "grown downwards", false), 0);

    /* a move into a free slot: after a flush the unwinders find it at its new address
     * only (verify checks both: the new slot live, the old one removed) */
    size_t from = n / 2 + 3, to = n / 2 + 5;
    CHECK_EQ(del(to), 0);
    CHECK_EQ(jh_code_move(jh, ids[from], area + to * SLOT), 0);
    ids[to] = ids[from];
    sizes[to] = sizes[from];
    ids[from] = 0;
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(verify(n, "moved, flushed", true), 0);

    /* every other one removed, flushed: no stale FDE left */
    for (size_t i = 0; i < n; i += 2)
        if (ids[i])
            err += del(i) != 0;
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(verify(n, "half removed, flushed", true), 0);

    for (size_t i = 0; i < n; i++)
        if (ids[i])
            err += del(i) != 0;
    CHECK_EQ(err, 0);
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(verify(n, "all removed", true), 0);
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.segments, 0);
    CHECK_EQ(st.dead, 0);
}

int unwind_groups_run(const struct unwind_groups *cfg)
{
    forced = cfg->force_mode;
    find_fde = cfg->find_fde;
    unw_pi = cfg->unw_proc_info;
    unw_as = cfg->unw_as;
    if (forced)
        CHECK_EQ(jh__unwind_force_mode(forced), 0);
    /* A superseded libunwind entry stays linked for walks under way (DYN_DELAY_NS): here
     * no walk runs concurrently, so a flush may unlink at once. */
    jh__unwind_tune_delays(0, JH__UNWIND_KEEP);
    size_t n = cfg->n;
    area = mmap(NULL, (n + 1) * SLOT, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ids = calloc(n, sizeof *ids);
    sizes = calloc(n, 1);
    CHECK(area != MAP_FAILED && ids && sizes);
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &o), 0);
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    printf("mode %d\n", st.mode);
    if (forced)
        CHECK_EQ(st.mode, forced);
    CHECK_EQ(st.libunwind, unw_pi != NULL);
    if (!find_fde)
        find_fde = (find_fde_fn *)dlsym(RTLD_DEFAULT, "_Unwind_Find_FDE");
    if (!find_fde) {    /* a C program: libgcc_s is loaded by the channel (as by backtrace()) */
        void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
        find_fde = h ? (find_fde_fn *)dlsym(h, "_Unwind_Find_FDE") : NULL;
    }
    CHECK(find_fde);
    if (!find_fde || !jh)
        return check_done();

    churn(n, 64);
    /* tiny limits: merges by size and by count on almost every call */
    jh__unwind_tune(16, 6);
    churn(n / 4, 6);
    jh__unwind_tune(8192, 64);

    /* a second context's code between the first one's: one process-wide set of runs */
    jh_ctx *jh2;
    CHECK_EQ(jh_open(&jh2, &o), 0);
    for (size_t i = 0; i < 64; i++) {
        jh_ctx *c = jh;
        jh = i & 1 ? jh2 : c;
        CHECK_EQ(add(i), 0);
        jh = c;
    }
    CHECK_EQ(verify(64, "two contexts interleaved", false), 0);
    /* jh2 announces code over jh's slot 2: its own registry cannot refuse it; the channel
     * must skip it and keep slot 2's FDE */
    uint64_t over;
    struct jh_code oc = { .sz = sizeof oc, .name = "over", .start = area + 2 * SLOT + 4,
                          .size = 8, .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                          .fp_set_end = 4 };
    CHECK_EQ(jh_code_add(jh2, &oc, &over), 0);
    if (!forced)                /* one registration per function: nothing to compare with */
        CHECK_EQ(verify(64, "overlap from another context", false), 0);
    CHECK_EQ(jh_code_remove(jh2, over), 0);

    /* code without unwind info: over a dead FDE it clears it at once (no flush); in a gap
     * between live functions it costs no rebuild */
    CHECK_EQ(del(10), 0);
    struct eh_bases eb = { 0 };
    if (!forced)                /* grouped: the dead FDE stays until something replaces it */
        CHECK(find_fde(area + 10 * SLOT + 1, &eb) && eb.func == area + 10 * SLOT);
    oc.start = area + 10 * SLOT;
    oc.size = 4;
    oc.unwind = JH_UNWIND_NONE;
    uint64_t none;
    CHECK_EQ(jh_code_add(jh, &oc, &none), 0);
    eb.func = NULL;
    CHECK(!find_fde(area + 10 * SLOT + 1, &eb) || eb.func != area + 10 * SLOT);
    struct jh__unwind_stats before, after;
    jh__unwind_get_stats(&before);
    oc.start = area + 12 * SLOT + 28;       /* the gap after slot 12 (its size is < 28) */
    CHECK(slot_size(12) < 28);
    uint64_t gap;
    CHECK_EQ(jh_code_add(jh, &oc, &gap), 0);
    jh__unwind_get_stats(&after);
    CHECK_EQ(after.rebuilds, before.rebuilds);
    CHECK_EQ(jh_code_remove(jh, gap), 0);
    CHECK_EQ(jh_code_remove(jh, none), 0);
    CHECK_EQ(verify(64, "code without unwind info", false), 0);
    jh_close(jh2);
    for (size_t i = 0; i < 64; i += 2)
        if (ids[i])
            CHECK_EQ(del(i), 0);
    for (size_t i = 1; i < 64; i += 2)
        ids[i] = 0;     /* closed with jh2 */
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(verify(64, "second context closed", true), 0);

    /* Runs an unwinder looked at wait out their grace period before they are freed (the
     * lookups above looked at all of them); once it is over, the next call frees them. */
    jh__unwind_get_stats(&st);
    CHECK(st.retired > 0);
    jh__unwind_tune_delays(JH__UNWIND_KEEP, 0);
    CHECK_EQ(jh_flush(jh), 0);
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.retired, 0);

    jh_close(jh);
    jh__unwind_get_stats(&st);
    CHECK_EQ(st.live, 0);
    CHECK_EQ(st.segments, 0);
    return check_done();
}
