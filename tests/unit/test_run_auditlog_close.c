/*
 * test_run_auditlog_close.c — jh_run_auditlog_close (base/run_close.h), what `jitherald
 * run` calls at exit: the audit log of a live context ends with its `close` record (so
 * `jitherald log` says the process ended), holding what was added before, while the
 * context and its other channel (unwind) go on taking code; a thread adding and removing
 * code meanwhile is served throughout (and TSan sees the close under the context lock);
 * the log is not switched on again afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/run_close.h"
#include "check.h"
#include "jitherald.h"
#include "lib/auditlog_read.h"

static char dir[256];
static uint8_t *code;
static atomic_bool stop;
static atomic_int churned;

static struct jh_code fn(const char *name, size_t slot)
{
    return (struct jh_code){ .sz = sizeof(struct jh_code), .name = name, .start = code + slot * 64,
                             .size = 32 };
}

/* a VM thread still running at exit: its code comes and goes */
static void *churn(void *arg)
{
    jh_ctx *ctx = arg;
    while (!atomic_load(&stop)) {
        struct jh_code c = fn("churn", 8);
        uint64_t id;
        if (jh_code_add(ctx, &c, &id) == 0 && jh_code_remove(ctx, id) == 0)
            atomic_fetch_add(&churned, 1);
    }
    return NULL;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-test-run-close.XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    jh_ctx *ctx = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG | JH_UNWIND, .dir = dir,
                            .engine = "rc", .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    CHECK_EQ(jh_channels(ctx), JH_AUDITLOG | JH_UNWIND);
    struct jh_code before = fn("before", 0), after = fn("after", 1);
    CHECK_EQ(jh_code_add(ctx, &before, NULL), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, churn, ctx), 0);
    while (atomic_load(&churned) < 100)
        sched_yield();

    CHECK_EQ(jh_run_auditlog_close(ctx), 1);
    CHECK_EQ(jh_channels(ctx), JH_UNWIND);
    CHECK_EQ(jh_run_auditlog_close(ctx), 0);            /* none open any more */
    /* asked for again (`jitherald attach --on auditlog` during exit): refused, so no log
     * is started that would never close; the other channel is kept */
    CHECK_EQ(jh_channels_set(ctx, JH_AUDITLOG | JH_UNWIND), -ESHUTDOWN);
    CHECK_EQ(jh_channels(ctx), JH_UNWIND);
    int seen = atomic_load(&churned);
    while (atomic_load(&churned) < seen + 100)          /* the thread goes on */
        sched_yield();
    CHECK_EQ(jh_code_add(ctx, &after, NULL), 0);
    char name[16];
    CHECK_EQ(jh_lookup(ctx, code + 64, NULL, NULL, NULL, name, sizeof name), 0);
    CHECK_STR(name, "after");
    atomic_store(&stop, true);
    pthread_join(t, NULL);

    /* the log, read while the context is still open: ended, not cut */
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/rc-%d.jhlog", dir, (int)getpid());
    struct jhr_al lf;
    CHECK_EQ(jhr_al_open(&lf, path, err, sizeof err), 0);
    CHECK(lf.closed);
    CHECK_EQ(lf.cut, 0);
    size_t n_before = 0, n_after = 0;
    for (size_t i = 0; i < lf.nfns; i++) {
        n_before += !strcmp(lf.fns[i].name, "before");
        n_after += !strcmp(lf.fns[i].name, "after");
    }
    CHECK_EQ(n_before, 1);
    CHECK_EQ(n_after, 0);                               /* added after the close */
    jhr_al_free(&lf);

    jh_close(ctx);
    CHECK_EQ(jh_run_auditlog_close(NULL), -EINVAL);
    unlink(path);
    rmdir(dir);
    return check_done();
}
