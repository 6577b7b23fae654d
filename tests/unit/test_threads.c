/* test_threads.c — 8 threads adding, moving, looking up and removing on one context with
 * the perf map on (run under TSan by `make tsan`), and a fork while they all run: each
 * worker has done some rounds before the fork and goes on until it is done. Every line
 * of the map must come out whole. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

enum { THREADS = 8, SLOTS = 64, ROUNDS = 3000 };
static char code[THREADS][SLOTS * 2][64] __attribute__((aligned(64)));
static char child_code[64] __attribute__((aligned(64)));   /* no worker's code lives here */
static jh_ctx *jh;
static _Atomic int errors, warmed_up, forked;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t ids[SLOTS] = { 0 };
    unsigned seed = (unsigned)t * 7919u + 1;
    char name[48];
    /* ROUNDS at least, and until the fork happened while every worker was in this loop */
    for (int r = 0; r < ROUNDS || !forked; r++) {
        if (r == 100)
            warmed_up++;
        int s = (int)(rand_r(&seed) % SLOTS);
        if (!ids[s]) {
            snprintf(name, sizeof name, "t%d_fn%d_r%d", t, s, r);
            struct jh_code c = { .sz = sizeof c, .name = name, .start = code[t][s], .size = 48 };
            if (jh_code_add(jh, &c, &ids[s]) != 0) errors++;
        } else if (r % 5 == 0) {
            if (jh_code_move(jh, ids[s], code[t][s + SLOTS]) != 0) errors++;
            if (jh_lookup(jh, code[t][s + SLOTS] + 3, NULL, NULL, NULL, NULL, 0) != 0) errors++;
            if (jh_code_remove(jh, ids[s]) != 0) errors++;
            ids[s] = 0;
        } else {
            if (jh_code_remove(jh, ids[s]) != 0) errors++;
            ids[s] = 0;
        }
        if (r % 500 == 0) jh_flush(jh);
    }
    for (int s = 0; s < SLOTS; s++)
        if (ids[s] && jh_code_remove(jh, ids[s]) != 0) errors++;
    return NULL;
}

static int check_map(pid_t pid, int *lines)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int bad = 0;
    *lines = 0;
    while (fgets(buf, sizeof buf, f)) {
        unsigned long a, n; int t, s, r; char nl;
        if (sscanf(buf, "%lx %lx t%d_fn%d_r%d%c", &a, &n, &t, &s, &r, &nl) != 6 || nl != '\n' || n != 48)
            bad++;
        (*lines)++;
    }
    fclose(f);
    unlink(path);
    return bad;
}

int main(void)
{
    struct jh_options o = { .sz = sizeof o, .channels = JH_PERFMAP, .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&jh, &o), 0);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    /* fork in the middle: the child must not deadlock on a lock a worker held. */
    while (warmed_up < THREADS)
        sched_yield();
    pid_t pid = fork();
    forked = 1;
    if (pid == 0) {
        struct jh_code c = { .sz = sizeof c, .name = "t0_fn0_r0", .start = child_code, .size = 48 };
        uint64_t id;
        int rc = jh_code_add(jh, &c, &id);
        _exit(rc == 0 ? 0 : 1);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(errors, 0);
    jh_close(jh);
    int lines = 0;
    CHECK_EQ(check_map(getpid(), &lines), 0);
    CHECK(lines > THREADS * ROUNDS / 3);
    int clines = 0;
    CHECK_EQ(check_map(pid, &clines), 0);
    CHECK(clines >= 1);
    printf("%d lines in the parent's map, %d in the child's\n", lines, clines);
    return check_done();
}
