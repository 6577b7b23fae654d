/*
 * test_channels_set.c — channels switched on and off in a running process
 * (jh_channels_set, issue 27), seen as a debugger attaching at that moment sees them
 * (gdb_view.h) and, for elfmap, as /proc/self/maps and the code's bytes show them:
 *   - standby retains: a channel switched on later hears every live function once, at
 *     its current address, and no removed one; off unregisters everything; on again
 *     hears them all again;
 *   - a context that retained nothing says so and hears only what comes after;
 *   - elfmap switched off gives the pages back to anonymous memory, same bytes, r-x;
 *   - threads adding, moving and removing while another switches channels on and off
 *     (also under TSan: make tsan): at the end exactly the live functions, each once;
 *   - a fork child switches channels on its own; bad arguments are -EINVAL.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gdb_view.h"
#include "jitherald.h"

enum { FN = 64 };

static uint8_t *code_region(size_t n)
{
    uint8_t *p = mmap(NULL, n * FN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (size_t i = 0; i < n * FN; i++)
        p[i] = (uint8_t)(0xc3 ^ (i * 7));
    return p;
}

static uint64_t add_fn(jh_ctx *jh, const uint8_t *at, const char *name)
{
    struct jh_line lines[1] = { { .offset = 0, .line = 7 } };
    static const char *files[] = { "set.mini" };
    struct jh_code c = { .sz = sizeof c, .name = name, .start = at, .size = FN,
        .files = files, .nfiles = 1, .lines = lines, .nlines = 1,
        .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    return id;
}

static char said[1024];
static void log_fn(void *arg, int level, const char *msg)
{
    (void)arg;
    if (level <= JH_LOG_WARN)
        snprintf(said, sizeof said, "%s", msg);
}

static jh_ctx *open_ctx(unsigned channels, unsigned flags, const char *dir)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = channels, .engine = "set",
                            .flags = flags, .dir = dir,
                            .log = log_fn, .gdb_batch = 64 };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

static int named(const char *fmt, int i, uintptr_t at)
{
    char n[32];
    snprintf(n, sizeof n, fmt, i);
    return count_named(n, at);
}

static void test_standby(void)
{
    enum { N = 100 };
    uint8_t *code = code_region(2 * N);
    jh_ctx *jh = open_ctx(0, JH_OPT_STANDBY, NULL);
    uint64_t id[N];
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "sb_%d", i);
        id[i] = add_fn(jh, code + i * FN, name);
    }
    for (int i = 0; i < 30; i++)
        CHECK_EQ(jh_code_remove(jh, id[i]), 0);
    for (int i = 30; i < 40; i++)           /* moved to the region's second half */
        CHECK_EQ(jh_code_move(jh, id[i], code + (N + i) * FN), 0);
    CHECK_EQ(jh_channels(jh), 0u);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nimages, 0u);
    for (int round = 0; round < 2; round++) {
        CHECK_EQ(jh_channels_set(jh, JH_GDB), JH_GDB);
        CHECK_EQ(jh_channels(jh), (unsigned)JH_GDB);
        CHECK_EQ(snapshot(), 0);
        CHECK_EQ(nview, (size_t)(N - 30));
        /* the rundown is one batch: images of up to gdb_batch (64), not one per function
         * merged by fours and sixteens */
        CHECK(nimages <= 2);
        for (int i = 0; i < 30; i++)
            CHECK_EQ(named("sb_%d", i, 0), 0);
        for (int i = 30; i < 40; i++)
            CHECK_EQ(named("sb_%d", i, (uintptr_t)(code + (N + i) * FN)), 1);
        for (int i = 40; i < N; i++)
            CHECK_EQ(named("sb_%d", i, (uintptr_t)(code + i * FN)), 1);
        CHECK_EQ(jh_channels_set(jh, 0), 0);
        CHECK_EQ(snapshot(), 0);
        CHECK_EQ(nimages, 0u);              /* off: every image unregistered */
        CHECK_EQ(jh_channels(jh), 0u);
    }
    CHECK_EQ(jh_code_remove(jh, id[50]), 0);    /* removed while off: never heard again */
    CHECK_EQ(jh_channels_set(jh, JH_GDB), JH_GDB);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nview, (size_t)(N - 31));
    CHECK_EQ(named("sb_%d", 50, 0), 0);
    CHECK_EQ(said[0], 0);                   /* nothing to warn about */
    jh_close(jh);
    munmap(code, 2 * N * FN);
}

static void test_not_retained(void)
{
    uint8_t *code = code_region(4);
    jh_ctx *jh = open_ctx(0, 0, NULL);
    add_fn(jh, code, "before_0");
    said[0] = 0;
    CHECK_EQ(jh_channels_set(jh, JH_GDB), JH_GDB);
    CHECK(strstr(said, "retained nothing") != NULL);
    add_fn(jh, code + FN, "after_0");
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("before_0", 0), 0);
    CHECK_EQ(count_named("after_0", (uintptr_t)(code + FN)), 1);
    /* from now on it retains: off and on again hears after_0 */
    CHECK_EQ(jh_channels_set(jh, 0), 0);
    add_fn(jh, code + 2 * FN, "while_off_0");
    CHECK_EQ(jh_channels_set(jh, JH_GDB), JH_GDB);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("after_0", 0), 1);
    CHECK_EQ(count_named("while_off_0", 0), 1);
    jh_close(jh);
    munmap(code, 4 * FN);
    said[0] = 0;
}

/* Which file backs the page at p in /proc/self/maps ("" anonymous), and its protection. */
static void backing(const void *p, char *file, size_t n, char *prot)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    file[0] = prot[0] = 0;
    uintptr_t a = (uintptr_t)p;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char pr[8], path[400] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %399s", &lo, &hi, pr, path) < 3)
            continue;
        if (a >= lo && a < hi) {
            snprintf(file, n, "%s", path);
            snprintf(prot, 8, "%s", pr);
        }
    }
    if (f)
        fclose(f);
}

static void test_elfmap_off(void)
{
    char dir[] = "/tmp/jh-set-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    long pg = sysconf(_SC_PAGESIZE);
    size_t len = 4 * (size_t)pg;
    uint8_t *code = code_region(len / FN);
    uint8_t *copy = malloc(len);
    memcpy(copy, code, len);
    CHECK_EQ(mprotect(code, len, PROT_READ | PROT_EXEC), 0);
    jh_ctx *jh = open_ctx(JH_ELFMAP, JH_OPT_STANDBY, dir);
    if (!(jh_channels(jh) & JH_ELFMAP)) {
        SKIP_PART("elfmap could not start here");
        jh_close(jh);
        return;
    }
    char name[32], file[400], prot[8];
    for (size_t i = 0; i < len / FN; i++) {
        snprintf(name, sizeof name, "em_%zu", i);
        add_fn(jh, code + i * FN, name);
    }
    backing(code, file, sizeof file, prot);
    CHECK(strstr(file, ".elf") != NULL);
    CHECK_EQ(jh_channels_set(jh, 0), 0);
    for (size_t p = 0; p < len; p += (size_t)pg) {
        backing(code + p, file, sizeof file, prot);
        CHECK_STR(file, "");                /* anonymous again */
        CHECK(!strncmp(prot, "r-xp", 4));
    }
    CHECK_EQ(memcmp(code, copy, len), 0);   /* the same bytes */
    CHECK_EQ(jh_channels_set(jh, JH_ELFMAP), JH_ELFMAP);
    backing(code + len - 1, file, sizeof file, prot);
    CHECK(strstr(file, ".elf") != NULL);    /* named again */
    CHECK_EQ(memcmp(code, copy, len), 0);
    jh_close(jh);
    munmap(code, len);
    free(copy);
    CHECK_EQ(rm_tree(dir), 0);
}

/* ---- churn ---- */
enum { THREADS = 3, SLOTS = 64, ROUNDS = 3000 };
static jh_ctx *churn_ctx;
static atomic_bool churn_stop;
struct worker {
    int t;
    uint8_t *code;              /* 2 * SLOTS functions: a slot's place and its moved place */
    uint64_t id[SLOTS];
    bool live[SLOTS], moved[SLOTS];
};
static struct worker workers[THREADS];

static void *churn(void *arg)
{
    struct worker *w = arg;
    unsigned seed = (unsigned)w->t * 7919u + 1;
    char name[32];
    for (int r = 0; r < ROUNDS; r++) {
        int s = (int)(rand_r(&seed) % SLOTS);
        if (!w->live[s]) {
            snprintf(name, sizeof name, "ch%d_%d", w->t, s);
            w->id[s] = add_fn(churn_ctx, w->code + s * FN, name);
            w->live[s] = true;
            w->moved[s] = false;
        } else if (rand_r(&seed) % 3 == 0 && !w->moved[s]) {
            CHECK_EQ(jh_code_move(churn_ctx, w->id[s], w->code + (SLOTS + s) * FN), 0);
            w->moved[s] = true;
        } else {
            CHECK_EQ(jh_code_remove(churn_ctx, w->id[s]), 0);
            w->live[s] = false;
        }
    }
    return NULL;
}

static void *switcher(void *arg)
{
    (void)arg;
    int n = 0;
    while (!atomic_load(&churn_stop)) {
        unsigned want = n++ % 2 ? JH_GDB | JH_UNWIND : 0;
        CHECK_EQ(jh_channels_set(churn_ctx, want), (int)want);
        /* a pause between switches: a mutex is not fair, and a switcher that takes the
         * context's lock again at once starved the churners under TSan (a rundown holds
         * the lock for every live function): the test ran past its 300 s */
        nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
    }
    return NULL;
}

static void test_churn(void)
{
    churn_ctx = open_ctx(0, JH_OPT_STANDBY, NULL);
    pthread_t th[THREADS], sw;
    for (int t = 0; t < THREADS; t++) {
        workers[t].t = t;
        workers[t].code = code_region(2 * SLOTS);
    }
    pthread_create(&sw, NULL, switcher, NULL);
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, churn, &workers[t]);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    atomic_store(&churn_stop, true);
    pthread_join(sw, NULL);
    CHECK_EQ(jh_channels_set(churn_ctx, JH_GDB), JH_GDB);
    /* With no debugger listening the gdb channel leaves removed functions in their image
     * until jh_flush (or enough of them die): what a debugger attaching now reads. */
    CHECK_EQ(jh_flush(churn_ctx), 0);
    CHECK_EQ(snapshot(), 0);
    size_t live = 0;
    char name[32];
    for (int t = 0; t < THREADS; t++) {
        for (int s = 0; s < SLOTS; s++) {
            snprintf(name, sizeof name, "ch%d_%d", t, s);
            const struct worker *w = &workers[t];
            uintptr_t at = (uintptr_t)(w->code + ((w->moved[s] ? SLOTS : 0) + s) * FN);
            CHECK_EQ(count_named(name, 0), w->live[s] ? 1 : 0);     /* neither lost nor doubled */
            if (w->live[s])
                CHECK_EQ(count_named(name, at), 1);
            live += w->live[s];
        }
    }
    CHECK_EQ(nview, live);
    jh_close(churn_ctx);
    for (int t = 0; t < THREADS; t++)
        munmap(workers[t].code, 2 * SLOTS * FN);
}

static void test_fork(void)
{
    uint8_t *code = code_region(2);
    jh_ctx *jh = open_ctx(0, JH_OPT_STANDBY, NULL);
    add_fn(jh, code, "forked_0");
    pid_t p = fork();
    if (p == 0) {
        int ok = jh_channels_set(jh, JH_GDB) == JH_GDB && snapshot() == 0 &&
                 count_named("forked_0", (uintptr_t)code) == 1;
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("forked_0", 0), 0);    /* the parent switched nothing on */
    jh_close(jh);
    munmap(code, 2 * FN);
}

int main(void)
{
    /* No attach socket and no configuration from outside: jh_channels_set alone here
     * (tests/integration/attach_*.sh drive the socket). */
    unsetenv("JITHERALD");
    unsetenv("JITHERALD_DIR");
    unsetenv("JITHERALD_GDB_BATCH");
    unsetenv("JITHERALD_GDB_DEFER");
    setenv("JITHERALD_ATTACH", "0", 1);
    CHECK_EQ(jh_channels_set(NULL, JH_GDB), -EINVAL);
    jh_ctx *jh = open_ctx(0, JH_OPT_STANDBY, NULL);
    CHECK_EQ(jh_channels_set(jh, 1u << 12), -EINVAL);
    jh_close(jh);
    test_standby();
    test_not_retained();
    test_elfmap_off();
    test_churn();
    test_fork();
    return check_done();
}
