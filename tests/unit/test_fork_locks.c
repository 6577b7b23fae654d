/*
 * test_fork_locks.c — every lock jitherald takes has a fork path. Threads keep every kind
 * of call going — contexts opened and closed with every channel, code added, moved,
 * patched and removed, audit-log events — while the main thread forks again and again. Each
 * child must then use the library fully (a new context with every channel, a call on an
 * inherited context, an event) within a few seconds: a lock some thread held at fork()
 * and nobody released would hang it forever (issue 11, item 2: the perf map's lock, and a
 * context inside jh_open/jh_close, had no fork path; reproduced at fork 0, 42, 1212).
 *
 * Under AddressSanitizer the threads are paused between calls at each fork, and the first
 * fork waits until every thread is past its start-up: GCC 12's libasan has no fork path for
 * its own allocator's locks, and a child forked while another thread was inside malloc
 * (a call of ours, or libasan's own thread set-up) hangs in its first calloc (seen with
 * gdb: jh__reg_insert -> asan_calloc -> SizeClassAllocator64::GetFromAllocator, about 1
 * run in 3, mostly at fork 0). (The audit log starts no thread of its own, so the parent's
 * contexts keep it there too.) The lock test proper is the plain build's (make test) and
 * TSan's; the ASan run checks the child's memory use.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

enum { FORKS = 400, SLOTS = 64 };
static char dir[64];
static _Atomic int stop;
static uint8_t *code;
static jh_ctx *shared;

#ifdef __SANITIZE_ADDRESS__
#include <sched.h>
static _Atomic int paused, busy, started;
/* A thread's first call: it is past its start-up, in which libasan allocates too. */
#define STARTED()                                                                 \
    do {                                                                          \
        static _Thread_local bool once;                                           \
        if (!once)                                                                \
            (void)(once = true), atomic_fetch_add(&started, 1);                   \
    } while (0)
/* A worker's call: not while the main thread forks. */
#define CALL_BEGIN()                                                              \
    do {                                                                          \
        STARTED();                                                                \
        atomic_fetch_add(&busy, 1);                                               \
        while (atomic_load(&paused)) {                                            \
            atomic_fetch_sub(&busy, 1);                                           \
            while (atomic_load(&paused))                                          \
                sched_yield();                                                    \
            atomic_fetch_add(&busy, 1);                                           \
        }                                                                         \
    } while (0)
#define CALL_END() atomic_fetch_sub(&busy, 1)
static void fork_begin(void)
{
    while (atomic_load(&started) < 5)
        sched_yield();
    atomic_store(&paused, 1);
    while (atomic_load(&busy))
        sched_yield();
}
static void fork_end(void) { atomic_store(&paused, 0); }
#else
#define CALL_BEGIN() ((void)0)
#define CALL_END() ((void)0)
static void fork_begin(void) {}
static void fork_end(void) {}
#endif

static struct jh_options opts(unsigned channels)
{
    return (struct jh_options){ .sz = sizeof(struct jh_options), .channels = channels,
                                .dir = dir, .flags = JH_OPT_IGNORE_ENV };
}

static struct jh_code fn(int slot, const char *name)
{
    return (struct jh_code){ .sz = sizeof(struct jh_code), .name = name,
                             .start = code + slot * 64, .size = 48,
                             .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                             .fp_set_end = 4 };
}

/* arg: the channels. A perf-map-only context opened and closed in a loop opens and closes
 * /tmp/perf-PID.map under the perf map's lock each time: the window the issue hit. */
static void *opener(void *arg)
{
    while (!atomic_load(&stop)) {
        struct jh_options o = opts((unsigned)(uintptr_t)arg);
        jh_ctx *jh;
        CALL_BEGIN();
        if (jh_open(&jh, &o) == 0) {
            struct jh_code c = fn(SLOTS + 1, "opener");
            jh_code_add(jh, &c, NULL);
            jh_close(jh);
        }
        CALL_END();
    }
    return NULL;
}

static void *churner(void *arg)
{
    int base = (int)(intptr_t)arg;
    uint64_t ids[8] = { 0 };
    for (unsigned n = 0; !atomic_load(&stop); n++) {
        int k = n % 8;
        CALL_BEGIN();
        if (ids[k])
            jh_code_remove(shared, ids[k]);
        struct jh_code c = fn(base + k, "churn");
        ids[k] = 0;
        jh_code_add(shared, &c, &ids[k]);
        if (ids[k] && n % 3 == 0)
            jh_code_patched(shared, code + (base + k) * 64 + 4, 1);
        if (n % 16 == 0)
            jh_flush(shared);
        CALL_END();
    }
    return NULL;
}

static void *logger(void *arg)
{
    (void)arg;
    struct jh_attr a = { .key = "n", .kind = JH_ATTR_UINT };
    while (!atomic_load(&stop)) {
        a.v.u++;
        CALL_BEGIN();
        jh_log_event(shared, "tick", &a, 1);
        jh_log_memory(shared, &a, sizeof a, "struct jh_attr");
        CALL_END();
    }
    return NULL;
}

/* The child: everything must work, promptly. */
static int child(void)
{
    alarm(10);
    struct jh_options o = opts(JH_ALL);     /* a new audit log too: it starts no thread */
    jh_ctx *jh;
    if (jh_open(&jh, &o) != 0)
        return 1;
    struct jh_code c = fn(SLOTS + 2, "child");
    if (jh_code_add(jh, &c, NULL) != 0)
        return 2;
    jh_close(jh);
    struct jh_code d = fn(SLOTS + 3, "child-shared");
    uint64_t id;
    if (jh_code_add(shared, &d, &id) != 0 || jh_code_remove(shared, id) != 0)
        return 3;
    struct jh_attr a = { .key = "k", .kind = JH_ATTR_INT, .v.i = 1 };
    if (jh_log_event(shared, "child", &a, 1) != 0)
        return 4;
    jh_close(shared);
    return 0;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-forklocks-%d", (int)getpid());
    code = mmap(NULL, (SLOTS + 8) * 64, PROT_READ | PROT_WRITE | PROT_EXEC,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(code, 0xc3, (SLOTS + 8) * 64);
    /* Not the perf map (it would keep the file open: no open() under its lock) nor elfmap
     * (these RWX pages are never swapped). */
    struct jh_options o = opts(JH_ALL & ~(JH_ELFMAP | JH_PERFMAP));
    CHECK_EQ(jh_open(&shared, &o), 0);
    pthread_t t[5];
    pthread_create(&t[0], NULL, opener, (void *)(uintptr_t)JH_ALL);
    pthread_create(&t[1], NULL, opener, (void *)(uintptr_t)JH_PERFMAP);
    pthread_create(&t[2], NULL, churner, (void *)(intptr_t)0);
    pthread_create(&t[3], NULL, churner, (void *)(intptr_t)16);
    pthread_create(&t[4], NULL, logger, NULL);
    int hung = 0, failed = 0;
    for (int i = 0; i < FORKS; i++) {
        fork_begin();
        pid_t pid = fork();
        if (pid == 0)
            _exit(child());
        fork_end();
        int status;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
            if (!hung++)
                fprintf(stderr, "fork %d: the child hung (a lock held at fork)\n", i);
        } else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            if (!failed++)
                fprintf(stderr, "fork %d: child status %#x\n", i, status);
        }
        char path[64];
        snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
        unlink(path);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 5; i++)
        pthread_join(t[i], NULL);
    jh_close(shared);
    CHECK_EQ(hung, 0);
    CHECK_EQ(failed, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s /tmp/perf-%d.map", dir, (int)getpid());
    CHECK_EQ(system(cmd), 0);
    return check_done();
}
