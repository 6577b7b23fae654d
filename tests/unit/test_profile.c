/*
 * test_profile.c — the two halves of `jitherald log FILE profile` below the presenter:
 *  - which function held an address at a time (tools/lib/auditlog_when.h), on a log the
 *    auditlog channel wrote: a then b at one address, b moved away; lifetimes, the nearest
 *    one outside every lifetime, every function an address ever held;
 *  - which name perf shows for a perf map range named twice (tools/lib/perfmap_pick.h): the
 *    case tests/integration/auditlog_profile.sh checks against perf itself, the tree's first
 *    shapes, and on random lines that a name found always holds the address and that lines
 *    that do not overlap are always found.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"
#include "lib/auditlog_when.h"
#include "lib/perfmap_pick.h"

static const uint8_t body[16] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x5d, 0xc3 };

static uint64_t rec_time(const struct jhr_al *lf, enum jhr_al_kind k, int n)
{
    for (size_t i = 0; i < lf->nrecs; i++)
        if (lf->recs[i].kind == k && n-- == 0)
            return lf->recs[i].time;
    CHECK(!"record not found");
    return 0;
}

static void test_when(void)
{
    char dir[] = "/tmp/jh-test-profile.XXXXXX";
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    memcpy(code, body, sizeof body);
    memcpy(code + 64, body, sizeof body);
    jh_ctx *ctx = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir, .engine = "prof",
                            .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    struct jh_code a = { .sz = sizeof a, .name = "a", .start = code, .size = 16 };
    struct jh_code b = { .sz = sizeof b, .name = "b", .start = code, .size = 16 };
    uint64_t ida, idb;
    CHECK_EQ(jh_code_add(ctx, &a, &ida), 0);
    CHECK_EQ(jh_code_remove(ctx, ida), 0);
    CHECK_EQ(jh_code_add(ctx, &b, &idb), 0);
    CHECK_EQ(jh_code_move(ctx, idb, code + 64), 0);
    jh_close(ctx);

    char path[128], err[256];
    snprintf(path, sizeof path, "%s/prof-%d.jhlog", dir, (int)getpid());
    struct jhr_al lf;
    CHECK_EQ(jhr_al_open(&lf, path, err, sizeof err), 0);
    struct jhr_al_when w;
    CHECK_EQ(jhr_al_when_build(&w, &lf), 0);
    CHECK_EQ(w.nstays, 3);
    uint64_t x = (uint64_t)(uintptr_t)code + 4, y = x + 64;
    uint64_t t_add_a = rec_time(&lf, JHR_AL_CODE_ADD, 0), t_add_b = rec_time(&lf, JHR_AL_CODE_ADD, 1);
    uint64_t t_move = rec_time(&lf, JHR_AL_CODE_MOVE, 0);
    bool live;
    const struct jhr_al_fn *fn = jhr_al_when_fn(&w, x, t_add_a, &live);
    CHECK(fn && !strcmp(fn->name, "a") && live);
    fn = jhr_al_when_fn(&w, x, t_add_b, &live);
    CHECK(fn && !strcmp(fn->name, "b") && live);
    /* b has moved away: nothing lives at x; b left last, so it is the nearest */
    fn = jhr_al_when_fn(&w, x, UINT64_MAX, &live);
    CHECK(fn && !strcmp(fn->name, "b") && !live);
    fn = jhr_al_when_fn(&w, y, UINT64_MAX, &live);
    CHECK(fn && !strcmp(fn->name, "b") && live);
    fn = jhr_al_when_fn(&w, y, t_move, &live);
    CHECK(fn && !strcmp(fn->name, "b") && live);
    /* before the log: a, the first to come, is the nearest */
    fn = jhr_al_when_fn(&w, x, 0, &live);
    CHECK(fn && !strcmp(fn->name, "a") && !live);
    CHECK(jhr_al_when_fn(&w, x + 64 * 2, t_add_a, &live) == NULL);
    CHECK_EQ(jhr_al_when_rec(&w, 0), SIZE_MAX);
    CHECK_EQ(jhr_al_when_rec(&w, UINT64_MAX), lf.nrecs - 1);
    const struct jhr_al_fn *all[4];
    CHECK_EQ(jhr_al_when_all(&w, x, all, 4), 2);
    CHECK(!strcmp(all[0]->name, "a") && !strcmp(all[1]->name, "b"));
    CHECK_EQ(jhr_al_when_all(&w, x, all, 1), 2);    /* counts past max */
    jhr_al_when_free(&w);
    jhr_al_free(&lf);
    unlink(path);
    rmdir(dir);
    munmap(code, 4096);
}

static void test_pick(void)
{
    struct jhr_pmpick pk = { 0 };
    CHECK(jhr_pmpick_find(&pk, 0) == NULL);
    /* two lines, one range: the first is the root, and perf shows it */
    jhr_pmpick_add(&pk, 0x1000, 0x10, "first");
    jhr_pmpick_add(&pk, 0x1000, 0x10, "second");
    CHECK_STR(jhr_pmpick_find(&pk, 0x1008), "first");
    /* a third: the tree turns, the middle becomes the root */
    jhr_pmpick_add(&pk, 0x1000, 0x10, "third");
    CHECK_STR(jhr_pmpick_find(&pk, 0x1008), "second");
    CHECK(jhr_pmpick_find(&pk, 0x1010) == NULL);    /* end is exclusive */
    jhr_pmpick_free(&pk);
    /* minijit --recompile-from: what perf report showed (auditlog_profile.sh) */
    jhr_pmpick_add(&pk, 0x7f0000000000, 0xbb, "spin_a");
    jhr_pmpick_add(&pk, 0x7f00000000c0, 0x30, "main");
    jhr_pmpick_add(&pk, 0x7f0000000000, 0xbb, "spin_b");
    jhr_pmpick_add(&pk, 0x7f00000000c0, 0x3f, "main");
    CHECK_STR(jhr_pmpick_find(&pk, 0x7f000000006f), "spin_b");
    CHECK_STR(jhr_pmpick_find(&pk, 0x7f00000000c4), "main");
    jhr_pmpick_free(&pk);

    /* random lines, some overlapping, some not */
    static uint64_t start[4000], size[4000];
    srand(28);
    for (int i = 0; i < 4000; i++) {
        bool disjoint = i < 2000;           /* the first half: 64-byte slots, never shared */
        start[i] = disjoint ? (uint64_t)i * 64 : (uint64_t)(rand() % 128000);
        size[i] = disjoint ? 1 + (uint64_t)(rand() % 64) : (uint64_t)(rand() % 300);
        CHECK_EQ(jhr_pmpick_add(&pk, start[i], size[i], (const char *)&start[i]), 0);
    }
    int missed = 0;
    for (uint64_t ip = 0; ip < 130000; ip += 7) {
        const uint64_t *s = (const uint64_t *)jhr_pmpick_find(&pk, ip);
        if (s) {
            uint64_t sz = size[s - start];
            CHECK(ip >= *s && (ip - *s < sz || (ip == *s && !sz)));
        }
        /* in a line of the first half that no random line overlaps: must be found (one
         * nested in another can hide it from the walk, as in perf) */
        uint64_t i = ip / 64;
        if (ip < 2000 * 64 && ip % 64 < size[i] && !s) {
            bool overlapped = false;
            for (int k = 2000; k < 4000 && !overlapped; k++)
                overlapped = start[k] <= start[i] + size[i] && start[i] <= start[k] + size[k];
            missed += !overlapped;
        }
    }
    CHECK_EQ(missed, 0);
    jhr_pmpick_free(&pk);
}

int main(void)
{
    test_when();
    test_pick();
    return check_done();
}
