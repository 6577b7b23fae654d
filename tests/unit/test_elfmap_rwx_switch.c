/*
 * test_elfmap_rwx_switch.c — RWX code (JH_OPT_CODE_RWX) and elfmap switched on and off
 * while the program runs (jh_channels_set, which `jitherald attach PID` calls from a thread
 * of its own, without the JIT's code lock). The JIT keeps its promise: it writes its RWX
 * pages only under its code lock. jh_channels_set does not hold that lock, so elfmap must
 * neither map its images over RWX pages nor give them back to anonymous memory there: a
 * page copied while the JIT writes it loses the write. A writer thread checks, under the
 * code lock, that each value it wrote is still there while another thread switches elfmap
 * on and off; RWX code live at a switch-on is left where it is, said once and clearly,
 * and mapped over at the JIT's next jh_code_add on that page (under the lock).
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"

typedef uint32_t fn_t(void);

static char dir[64] = "/tmp/jh-test-elfmap-rwx-switch-XXXXXX";
static char logbuf[8192];
static pthread_mutex_t logmu = PTHREAD_MUTEX_INITIALIZER;

static void logger(void *arg, int level, const char *msg)
{
    (void)arg; (void)level;
    pthread_mutex_lock(&logmu);
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", msg);
    pthread_mutex_unlock(&logmu);
}

static uint32_t call(const uint8_t *p)
{
    return ((fn_t *)(uintptr_t)p)();
}

static bool from_image(const void *addr)
{
    char perms[5], path[512];
    return ew_mapping_of(addr, perms, path, sizeof path) && !strncmp(path, dir, strlen(dir));
}

static jh_ctx *open_ctx(unsigned channels, unsigned flags)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = channels, .dir = dir, .log = logger,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_CODE_RWX | flags,
                            .engine = "rwx-switch" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

/* The JIT: its code lock, and a thread that writes a counter into its RWX code page
 * under that lock, checking each time that the last value it wrote is still there. */
static pthread_mutex_t code_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t *slot;
static atomic_bool stop;
static atomic_ulong lost, writes;

static void *writer(void *arg)
{
    (void)arg;
    uint64_t v = 0;
    while (!atomic_load(&stop)) {
        pthread_mutex_lock(&code_lock);
        if (*slot != v)
            atomic_fetch_add(&lost, 1);
        *slot = ++v;
        pthread_mutex_unlock(&code_lock);
        atomic_fetch_add(&writes, 1);
    }
    return NULL;
}

int main(void)
{
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);

    /* elfmap on from the start: the code is mapped over inside jh_code_add */
    jh_ctx *jh = open_ctx(JH_ELFMAP, 0);
    uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 0xcc, pg);
    ew_emit_ret(p, 1);
    slot = (volatile uint64_t *)(p + pg / 2);
    *slot = 0;
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = p, .size = 6 };
    pthread_mutex_lock(&code_lock);
    CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
    pthread_mutex_unlock(&code_lock);
    CHECK(from_image(p));

    /* switched off and on by another thread while the JIT writes: no write lost */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer, NULL) == 0);
    while (atomic_load(&writes) < 1000)
        sched_yield();
    for (int i = 0; i < 200; i++) {
        CHECK(jh_channels_set(jh, 0) >= 0);
        int on = jh_channels_set(jh, JH_ELFMAP);
        if (on < 0)
            fprintf(stderr, "switch-on %d: %s\n", i, jh_strerror(on));
        CHECK(on >= 0);
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    CHECK_EQ(atomic_load(&lost), 0);
    if (check_failures)
        fprintf(stderr, "%s", logbuf);
    CHECK_EQ(call(p), 1);
    jh_close(jh);

    /* RWX code live when elfmap is switched on: left as it is, said once, clearly; the
     * JIT's next jh_code_add on that page (under its lock) maps it over */
    logbuf[0] = 0;
    jh = open_ctx(0, JH_OPT_STANDBY);
    uint8_t *q = mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(q != MAP_FAILED);
    memset(q, 0xcc, pg);
    ew_emit_ret(q, 2);
    ew_emit_ret(q + 64, 3);
    struct jh_code cq = { .sz = sizeof cq, .name = "q", .start = q, .size = 6 };
    struct jh_code cr = { .sz = sizeof cr, .name = "r", .start = q + 64, .size = 6 };
    CHECK_EQ(jh_code_add(jh, &cq, NULL), 0);
    CHECK_EQ(jh_channels_set(jh, JH_ELFMAP), (int)JH_ELFMAP);
    CHECK(!from_image(q));
    CHECK(strstr(logbuf, "switched on") != NULL);
    CHECK(strstr(logbuf, "code lock") != NULL);
    CHECK_EQ(call(q), 2);
    CHECK_EQ(jh_code_add(jh, &cr, NULL), 0);
    CHECK(from_image(q));
    struct ew_fn wq = { q, 6, "q" }, wr = { q + 64, 6, "r" };
    CHECK_EQ(ew_check_one(&wq, NULL, 0), EW_OK);
    CHECK_EQ(ew_check_one(&wr, NULL, 0), EW_OK);
    CHECK_EQ(call(q), 2);
    CHECK_EQ(call(q + 64), 3);
    jh_close(jh);

    rm_tree(dir);
    return check_done();
}
