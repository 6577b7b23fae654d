/*
 * test_auditlog.c — the audit-log channel written through the public API and read back by
 * the CLI's reader (tools/lib/auditlog_read.h, in the reader library): code records with
 * their bytes and line tables, memory snapshots, events with every attribute kind,
 * patch/move/remove, the size limit and its record, four threads at once, a fork child's
 * own log (also with threads, or a signal handler, logging while it is restarted), and
 * logs cut by SIGKILL or by a frame that was never finished.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "jitherald.h"
#include "lib/auditlog_read.h"

static char dir[256];

static jh_ctx *open_ctx(const char *engine, uint64_t limit)
{
    jh_ctx *ctx = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir, .engine = engine,
                            .flags = JH_OPT_IGNORE_ENV, .auditlog_limit = limit };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    CHECK_EQ(jh_channels(ctx), JH_AUDITLOG);
    return ctx;
}

static uint8_t *slurp(const char *engine, pid_t pid, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s-%d.jhlog", dir, engine, (int)pid);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);           /* every test below reads the log it expects */
    if (!f) {
        fprintf(stderr, "no log %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(len > 0 ? (size_t)len : 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

static const struct jhr_al_rec *nth(const struct jhr_al *lf, enum jhr_al_kind k, int n)
{
    for (size_t i = 0; i < lf->nrecs; i++)
        if (lf->recs[i].kind == k && n-- == 0)
            return &lf->recs[i];
    return NULL;
}

static const uint8_t fn_bytes[] = { 0x55, 0x48, 0x89, 0xe5, 0xb8, 0x2a, 0, 0, 0, 0x5d, 0xc3 };

struct thing { uint32_t a; uint64_t b; char name[8]; };

static void test_roundtrip(void)
{
    jh_ctx *ctx = open_ctx("rt", 0);
    uint8_t *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(code, fn_bytes, sizeof fn_bytes);
    const char *files[] = { "t.mini", "u.mini" };
    struct jh_line lines[] = { { 0, 3, 1, 0 }, { 4, 4, 0, 1 }, { 9, 5, 0, 0 } };
    struct jh_code c = { .sz = sizeof c, .name = "answer", .start = code, .size = sizeof fn_bytes,
                         .files = files, .nfiles = 2, .lines = lines, .nlines = 3,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    uint64_t id;
    CHECK_EQ(jh_code_add(ctx, &c, &id), 0);
    struct thing t = { 7, 1ull << 40, "thing" };
    CHECK_EQ(jh_log_memory(ctx, &t, sizeof t, "struct thing"), 0);
    CHECK_EQ(jh_log_memory(ctx, &t, 0, NULL), 0);
    struct jh_attr at[] = {
        { "i", JH_ATTR_INT, { .i = -5 } }, { "big", JH_ATTR_INT, { .i = INT64_MIN } },
        { "u", JH_ATTR_UINT, { .u = 300 } }, { "d", JH_ATTR_DOUBLE, { .d = 1.5 } },
        { "s", JH_ATTR_STR, { .s = "why not" } }, { "n", JH_ATTR_STR, { .s = NULL } },
        { "obj", JH_ATTR_ADDR, { .u = (uintptr_t)&t } },
    };
    CHECK_EQ(jh_log_event(ctx, "compile", at, 7), 0);
    CHECK_EQ(jh_log_event(ctx, "empty", NULL, 0), 0);
    struct jh_attr badk = { NULL, JH_ATTR_INT, { .i = 1 } };
    CHECK_EQ(jh_log_event(ctx, "bad", &badk, 1), -EINVAL);
    code[5] = 0x2b;
    CHECK_EQ(jh_code_patched(ctx, code + 5, 1), 0);
    memcpy(code + 4096, code, sizeof fn_bytes);
    CHECK_EQ(jh_code_move(ctx, id, code + 4096), 0);
    CHECK_EQ(jh_code_remove(ctx, id), 0);
    jh_close(ctx);

    size_t n;
    uint8_t *d = slurp("rt", getpid(), &n);
    CHECK(d != NULL);
    if (!d)
        return;
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
    CHECK_EQ(lf.version, 1);
    CHECK_EQ(lf.pid, getpid());
    CHECK_STR(lf.engine, "rt");
    CHECK(lf.closed);
    CHECK_EQ(lf.cut, 0);
    CHECK_EQ(lf.bad, 0);
    CHECK_EQ(lf.resyncs, 0);
    CHECK_EQ(lf.nfns, 1);
    /* header, add, 2 memory, 2 events, patched, move, remove, close */
    CHECK_EQ(lf.nrecs, 10);
    if (lf.nfns == 1) {
        const struct jhr_al_fn *fn = &lf.fns[0];
        CHECK_STR(fn->name, "answer");
        CHECK_EQ(fn->id, id);
        CHECK_EQ(fn->start, (uintptr_t)code);
        CHECK_EQ(fn->cur_start, (uintptr_t)code + 4096);
        CHECK_EQ(fn->size, sizeof fn_bytes);
        CHECK(!memcmp(fn->code, fn_bytes, sizeof fn_bytes));
        CHECK(fn->patched && fn->patched[5] == 0x2b);
        CHECK(fn->removed);
        CHECK_EQ(fn->nmoves, 1);
        CHECK_EQ(fn->nlines, 3);
        CHECK_EQ(fn->nfiles, 2);
        CHECK_STR(fn->unwind, "frame_pointer");
        CHECK_EQ(fn->fp_set_end, 4);
        uint32_t line = 0;
        CHECK_STR(jhr_al_fn_line(fn, 5, &line), "u.mini");
        CHECK_EQ(line, 4);
        CHECK(jhr_al_fn_at(&lf, (uintptr_t)code + 4096 + 3, SIZE_MAX) == fn);
        CHECK(jhr_al_fn_named(&lf, "answer") == fn);
    }
    CHECK_EQ(lf.nmems, 2);
    if (lf.nmems == 2) {
        CHECK_EQ(lf.mems[0].addr, (uintptr_t)&t);
        CHECK_EQ(lf.mems[0].size, sizeof t);
        CHECK(!memcmp(lf.mems[0].data, &t, sizeof t));
        CHECK_STR(lf.mems[0].hint, "struct thing");
        CHECK(lf.mems[1].hint == NULL);
        CHECK(jhr_al_mem_at(&lf, (uintptr_t)&t + 4, 4, SIZE_MAX) == &lf.mems[0]);
    }
    const struct jhr_al_rec *ev = nth(&lf, JHR_AL_EVENT, 0);
    CHECK(ev != NULL);
    if (ev) {
        struct jhr_mp attrs, v;
        CHECK_EQ(jhr_mp_get(&ev->map, "attrs", &attrs), 0);
        CHECK_EQ(attrs.n, 7);
        CHECK(jhr_mp_get(&attrs, "i", &v) == 0 && v.t == JHR_MP_INT && v.v.i == -5);
        CHECK(jhr_mp_get(&attrs, "big", &v) == 0 && v.t == JHR_MP_INT && v.v.i == INT64_MIN);
        CHECK(jhr_mp_get(&attrs, "u", &v) == 0 && v.t == JHR_MP_UINT && v.v.u == 300);
        CHECK(jhr_mp_get(&attrs, "d", &v) == 0 && v.t == JHR_MP_DOUBLE && v.v.d == 1.5);
        CHECK(jhr_mp_get(&attrs, "s", &v) == 0 && jhr_mp_str_eq(&v, "why not"));
        CHECK(jhr_mp_get(&attrs, "n", &v) == 0 && v.t == JHR_MP_NIL);
        uint64_t a = 0;
        CHECK(jhr_mp_get_u64(&attrs, "obj", &a) && a == (uintptr_t)&t);
        CHECK(ev->thread == (uint32_t)getpid());
        CHECK(ev->time >= lf.t0);
    }
    /* A frame whose first byte never got written (the writer died mid-record) is skipped
     * by its length, and everything after it still reads. */
    const struct jhr_al_rec *mem = nth(&lf, JHR_AL_MEMORY, 0);
    size_t total = lf.nrecs;
    if (mem) {
        size_t off = (size_t)mem->off;
        d[off] = 0;
        jhr_al_free(&lf);
        CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
        CHECK_EQ(lf.cut, 1);
        CHECK_EQ(lf.nrecs, total - 1);
        CHECK(lf.closed);
        /* ...also when even its length was never written: the reader resyncs. */
        memset(d + off, 0, 5);
        jhr_al_free(&lf);
        CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
        CHECK_EQ(lf.nrecs, total - 1);
        CHECK(lf.closed);
    }
    jhr_al_free(&lf);
    /* Truncated anywhere: never a crash, never a record past the cut. */
    for (size_t cut = 0; cut < n; cut += 7) {
        if (jhr_al_parse(&lf, d, cut, err, sizeof err) == 0)
            jhr_al_free(&lf);
    }
    free(d);
    munmap(code, 8192);
}

/* Code reused at the same address: lookups answer for the moment asked about. */
static void test_reuse(void)
{
    jh_ctx *ctx = open_ctx("reuse", 0);
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(code, fn_bytes, sizeof fn_bytes);
    struct jh_code c = { .sz = sizeof c, .name = "first", .start = code, .size = sizeof fn_bytes };
    uint64_t id;
    CHECK_EQ(jh_code_add(ctx, &c, &id), 0);
    static uint32_t obj = 1;
    CHECK_EQ(jh_log_memory(ctx, &obj, sizeof obj, "uint32_t"), 0);
    jh_log_event(ctx, "one", NULL, 0);
    CHECK_EQ(jh_code_remove(ctx, id), 0);
    c.name = "second";
    CHECK_EQ(jh_code_add(ctx, &c, &id), 0);
    obj = 2;
    CHECK_EQ(jh_log_memory(ctx, &obj, sizeof obj, "uint32_t"), 0);
    jh_log_event(ctx, "two", NULL, 0);
    jh_close(ctx);
    size_t n;
    uint8_t *d = slurp("reuse", getpid(), &n);
    if (!d)
        return;
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
    const struct jhr_al_rec *one = nth(&lf, JHR_AL_EVENT, 0), *two = nth(&lf, JHR_AL_EVENT, 1);
    CHECK(one && two);
    if (one && two) {
        size_t a = (size_t)(one - lf.recs), b = (size_t)(two - lf.recs);
        const struct jhr_al_fn *f1 = jhr_al_fn_at(&lf, (uintptr_t)code + 2, a);
        const struct jhr_al_fn *f2 = jhr_al_fn_at(&lf, (uintptr_t)code + 2, b);
        CHECK(f1 && !strcmp(f1->name, "first"));
        CHECK(f2 && !strcmp(f2->name, "second"));
        CHECK(jhr_al_fn_at(&lf, (uintptr_t)code + 2, 0) == NULL);     /* before any add */
        const struct jhr_al_mem *m1 = jhr_al_mem_at(&lf, (uintptr_t)&obj, 4, a);
        const struct jhr_al_mem *m2 = jhr_al_mem_at(&lf, (uintptr_t)&obj, 4, SIZE_MAX);
        CHECK(m1 && m1->data[0] == 1);
        CHECK(m2 && m2->data[0] == 2);
        CHECK(jhr_al_mem_at(&lf, (uintptr_t)&obj + 1, 4, SIZE_MAX) == NULL);   /* runs past it */
    }
    jhr_al_free(&lf);
    free(d);
    munmap(code, 4096);
}

static void test_limit(void)
{
    jh_ctx *ctx = open_ctx("lim", 64 << 10);
    static uint8_t blob[1000];
    int ok = 0;
    for (int i = 0; i < 200; i++)
        ok += jh_log_memory(ctx, blob, sizeof blob, "blob") == 0;
    ok += jh_log_event(ctx, "small", NULL, 0) == 0;     /* would fit, but the log has ended */
    CHECK_EQ(ok, 201);          /* the VM never sees an error for a full log */
    jh_close(ctx);
    size_t n;
    uint8_t *d = slurp("lim", getpid(), &n);
    if (!d)
        return;
    CHECK(n <= 64 << 10);
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
    CHECK(lf.limit_hit);
    CHECK(lf.closed);
    CHECK(lf.nmems > 50 && lf.nmems < 70);
    CHECK_EQ(lf.dropped, 200 + 1 - lf.nmems);
    /* The log ends at the limit: only `close` follows the `limit` record. */
    CHECK(lf.nrecs >= 2 && lf.recs[lf.nrecs - 2].kind == JHR_AL_LIMIT);
    uint64_t limit = 0, tail = 0;       /* it says which limit, and where the data ended */
    if (lf.nrecs >= 2) {
        CHECK(jhr_mp_get_u64(&lf.recs[lf.nrecs - 2].map, JH__AL_K_LIMIT, &limit));
        CHECK(jhr_mp_get_u64(&lf.recs[lf.nrecs - 2].map, JH__AL_K_TAIL, &tail));
    }
    CHECK_EQ(limit, (uint64_t)64 << 10);
    CHECK(tail > lf.recs[lf.nrecs - 3].off && tail <= lf.recs[lf.nrecs - 2].off);
    jhr_al_free(&lf);
    free(d);
}

#define NTHREADS 4
#define PER_THREAD 20000
static jh_ctx *tctx;
static void *worker(void *arg)
{
    for (int i = 0; i < PER_THREAD; i++) {
        struct jh_attr a[] = { { "w", JH_ATTR_UINT, { .u = (uintptr_t)arg } }, { "i", JH_ATTR_INT, { .i = i } } };
        jh_log_event(tctx, "tick", a, 2);
    }
    return NULL;
}

static void test_threads(void)
{
    tctx = open_ctx("thr", 0);
    pthread_t th[NTHREADS];
    for (uintptr_t i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    jh_close(tctx);
    size_t n;
    uint8_t *d = slurp("thr", getpid(), &n);
    if (!d)
        return;
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
    CHECK_EQ(lf.nrecs, NTHREADS * PER_THREAD + 2);
    CHECK_EQ(lf.cut + lf.bad + lf.resyncs, 0);
    /* Per thread, the events appear in the order that thread logged them. */
    int64_t last[NTHREADS] = { -1, -1, -1, -1 };
    int inorder = 1;
    for (size_t i = 0; i < lf.nrecs; i++) {
        struct jhr_mp attrs;
        uint64_t w;
        struct jhr_mp iv;
        if (lf.recs[i].kind != JHR_AL_EVENT || jhr_mp_get(&lf.recs[i].map, "attrs", &attrs) < 0 ||
            !jhr_mp_get_u64(&attrs, "w", &w) || w >= NTHREADS || jhr_mp_get(&attrs, "i", &iv) < 0)
            continue;
        int64_t v = iv.t == JHR_MP_UINT ? (int64_t)iv.v.u : iv.v.i;
        inorder &= v == last[w] + 1;
        last[w] = v;
    }
    CHECK(inorder);
    jhr_al_free(&lf);
    free(d);
}

/* kill -9 right after the last call: every record up to it is readable. */
static void test_killed(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        jh_ctx *ctx = open_ctx("kill", 0);
        for (int i = 0; i < 1000; i++) {
            struct jh_attr a = { "i", JH_ATTR_INT, { .i = i } };
            jh_log_event(ctx, "step", &a, 1);
        }
        raise(SIGKILL);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    size_t n;
    uint8_t *d = slurp("kill", pid, &n);
    if (!d)
        return;
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
    CHECK(!lf.closed);
    CHECK_EQ(lf.nrecs, 1001);   /* header + 1000 events, the last one included */
    CHECK_EQ(lf.cut, 0);
    jhr_al_free(&lf);
    free(d);
}

/* A segfault right after the last call: the same, and the VM's crash handler can still
 * log the fault itself. (Under ASan the sanitizer may report the fault and exit instead:
 * either way nothing closes the log.) */
__attribute__((no_sanitize("undefined"))) static void crash(void)
{
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
}

static jh_ctx *segv_ctx;

/* What a VM's crash handler does: log the fault, then die of it. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    struct jh_attr a[] = { { "signal", JH_ATTR_INT, { .i = sig } },
                           { "fault", JH_ATTR_ADDR, { .u = (uintptr_t)si->si_addr } } };
    jh_log_event(segv_ctx, "crash", a, 2);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
}

static void test_segfault(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        segv_ctx = open_ctx("segv", 0);
        static uint32_t state[16] = { 0xdeadbeef };
        jh_log_memory(segv_ctx, state, sizeof state, "struct vm_state");
        jh_log_event(segv_ctx, "about_to_crash", NULL, 0);
        struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
        sigaction(SIGSEGV, &sa, NULL);
        crash();
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) || (WIFEXITED(status) && WEXITSTATUS(status)));
    size_t n;
    uint8_t *d = slurp("segv", pid, &n);
    if (!d)
        return;
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
    CHECK(!lf.closed);
    CHECK(lf.nmems == 1 && lf.mems[0].size == 64 && lf.mems[0].data[0] == 0xef);
    const struct jhr_al_rec *ev = nth(&lf, JHR_AL_EVENT, 0);
    CHECK(ev && ev == &lf.recs[2]);
    /* Under a sanitizer the runtime may take the fault before our handler. */
    if (WIFSIGNALED(status)) {
        CHECK_EQ(lf.nrecs, 4);
        const struct jhr_al_rec *last = nth(&lf, JHR_AL_EVENT, 1);
        struct jhr_mp attrs;
        uint64_t fault = 1;
        CHECK(last && jhr_mp_get(&last->map, "attrs", &attrs) == 0 && jhr_mp_get_u64(&attrs, "fault", &fault) &&
              fault == 0);
    }
    jhr_al_free(&lf);
    free(d);
}

/* The file cannot grow (disk full, quota; here RLIMIT_FSIZE): the VM neither crashes
 * (no SIGBUS from an unbacked page) nor sees an error, and what fitted is readable. */
static void test_disk_full(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = { 3u << 20, 3u << 20 };
        setrlimit(RLIMIT_FSIZE, &rl);
        jh_ctx *ctx = open_ctx("full", 0);
        static uint8_t blob[1000];
        int bad = 0;
        for (int i = 0; i < 6000; i++)
            bad += jh_log_memory(ctx, blob, sizeof blob, "blob") != 0;
        jh_close(ctx);
        _exit(bad ? 3 : 0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t n;
    uint8_t *d = slurp("full", pid, &n);
    if (!d)
        return;
    CHECK(n <= 3u << 20);
    struct jhr_al lf;
    char err[256];
    CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
    CHECK(lf.nmems > 2000 && lf.nmems < 3200);
    CHECK_EQ(lf.bad, 0);
    jhr_al_free(&lf);
    free(d);
}

/* A fork child writes its own log, starting with the code that is live; the parent's log
 * never sees the child's records. */
static void test_fork(void)
{
    jh_ctx *ctx = open_ctx("fork", 0);
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(code, fn_bytes, sizeof fn_bytes);
    struct jh_code c = { .sz = sizeof c, .name = "inherited", .start = code, .size = sizeof fn_bytes };
    CHECK_EQ(jh_code_add(ctx, &c, NULL), 0);
    pid_t pid = fork();
    if (pid == 0) {
        jh_log_event(ctx, "in_child", NULL, 0);   /* first call after fork: no lock taken */
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    jh_log_event(ctx, "in_parent", NULL, 0);
    jh_close(ctx);
    size_t n;
    uint8_t *d = slurp("fork", pid, &n);
    struct jhr_al lf;
    char err[256];
    if (d) {
        CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
        CHECK_EQ(lf.parent_pid, getpid());
        CHECK_EQ(lf.nfns, 1);
        CHECK(lf.nfns == 1 && !strcmp(lf.fns[0].name, "inherited"));
        const struct jhr_al_rec *ev = nth(&lf, JHR_AL_EVENT, 0);
        CHECK(ev && jhr_mp_get_str(&ev->map, "event", &(const char *){ 0 }, &(uint32_t){ 0 }));
        CHECK(ev && ev->thread == (uint32_t)pid);
        jhr_al_free(&lf);
        free(d);
    }
    d = slurp("fork", getpid(), &n);
    if (d) {
        CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
        CHECK(lf.closed);
        const struct jhr_al_rec *ev = nth(&lf, JHR_AL_EVENT, 0);
        const char *s = "";
        uint32_t sl = 0;
        CHECK(ev && jhr_mp_get_str(&ev->map, "event", &s, &sl) && sl == 9 && !memcmp(s, "in_parent", 9));
        CHECK(nth(&lf, JHR_AL_EVENT, 1) == NULL);
        jhr_al_free(&lf);
        free(d);
    }
    munmap(code, 4096);
}

/* A fork child whose threads log at once: the first one restarts the log (al_forked: the
 * parent's mapping dropped, the child's file made, the live code recorded, under the
 * context lock); the others must wait for that, never write meanwhile through the
 * mapping of the parent's file (its log would get the child's records over its own) or
 * through one being unmapped (SIGSEGV). Many functions make the restart last. */
#define FT_FNS 4000
#define FT_THREADS 4
#define FT_EVENTS 3000
static jh_ctx *ftctx;
static _Atomic int ft_go;
static void *ft_worker(void *arg)
{
    while (!atomic_load(&ft_go))
        ;
    (void)arg;
    for (int i = 0; i < FT_EVENTS; i++)
        jh_log_event(ftctx, "child_thread", NULL, 0);
    return NULL;
}

/* FT_FNS functions of 16 bytes announced (what a fork child's restart logs again). */
static uint8_t *add_many(jh_ctx *ctx)
{
    uint8_t *code = mmap(NULL, FT_FNS * 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
    CHECK(code != MAP_FAILED);
    for (int i = 0; i < FT_FNS; i++) {
        memcpy(code + 16 * i, fn_bytes, sizeof fn_bytes);
        struct jh_code c = { .sz = sizeof c, .name = "f", .start = code + 16 * i, .size = 16 };
        CHECK_EQ(jh_code_add(ctx, &c, NULL), 0);
    }
    return code;
}

static size_t count_events(const struct jhr_al *lf, const char *name)
{
    size_t n = 0, len = strlen(name);
    for (size_t i = 0; i < lf->nrecs; i++) {
        const char *s = "";
        uint32_t sl = 0;
        if (lf->recs[i].kind == JHR_AL_EVENT && jhr_mp_get_str(&lf->recs[i].map, "event", &s, &sl) &&
            sl == len && !memcmp(s, name, len))
            n++;
    }
    return n;
}

static void test_fork_threads(void)
{
#ifdef __SANITIZE_THREAD__
    SKIP_PART("fork_threads: TSan cannot follow a thread started in a fork child (die_after_fork)");
    return;
#endif
    if (getenv("JH_QEMU_USER")) {
        SKIP_PART("fork_threads: qemu-user cannot start a thread in a fork child");
        return;
    }
    ftctx = open_ctx("forkthr", 64 << 20);
    uint8_t *code = add_many(ftctx);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_t th[FT_THREADS];
        for (uintptr_t i = 0; i < FT_THREADS; i++)
            pthread_create(&th[i], NULL, ft_worker, (void *)i);
        atomic_store(&ft_go, 1);
        jh_log_event(ftctx, "child_main", NULL, 0);     /* the first call: the restart */
        for (int i = 0; i < FT_THREADS; i++)
            pthread_join(th[i], NULL);
        jh_close(ftctx);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    jh_log_event(ftctx, "in_parent", NULL, 0);
    jh_close(ftctx);
    struct jhr_al lf;
    char err[256];
    size_t n;
    uint8_t *d = slurp("forkthr", getpid(), &n);
    if (d) {
        CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
        CHECK_EQ(count_events(&lf, "child_thread"), 0);     /* none of the child's */
        CHECK_EQ(count_events(&lf, "in_parent"), 1);
        CHECK_EQ(lf.cut + lf.bad + lf.resyncs, 0);
        CHECK_EQ(lf.nfns, FT_FNS);
        jhr_al_free(&lf);
        free(d);
    }
    d = slurp("forkthr", pid, &n);
    if (d) {
        CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
        CHECK_EQ(count_events(&lf, "child_thread"), FT_THREADS * FT_EVENTS);   /* all of them */
        CHECK_EQ(lf.cut + lf.bad + lf.resyncs, 0);
        CHECK(lf.closed);
        jhr_al_free(&lf);
        free(d);
    }
    munmap(code, FT_FNS * 16);
}

/* A signal handler that logs (a VM's profiler or crash handler) interrupting the fork
 * child's thread while that thread restarts the log under the context lock: the record is
 * dropped, the thread never waits on the lock it holds itself. The signal comes from the
 * restart's own fallocate (the new log's first stretch), so it lands inside the restart
 * every time: a timer could fire before the child's first call, and the handler would
 * then make the restart itself (malloc in a signal handler, which TSan reports). */
static jh_ctx *sig_ctx;
static volatile sig_atomic_t raise_in_fallocate, ticks;
static void on_tick(int sig)
{
    (void)sig;
    ticks++;
    jh_log_event(sig_ctx, "tick", NULL, 0);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
    if (raise_in_fallocate) {
        raise_in_fallocate = 0;
        raise(SIGALRM);
    }
    return (int)syscall(SYS_fallocate, fd, mode, off, len);
}

static void test_fork_signal(void)
{
    sig_ctx = open_ctx("forksig", 64 << 20);
    uint8_t *code = add_many(sig_ctx);
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction sa = { .sa_handler = on_tick, .sa_flags = SA_RESTART };
        sigaction(SIGALRM, &sa, NULL);
        raise_in_fallocate = 1;
        jh_log_event(sig_ctx, "child_main", NULL, 0);       /* the restart */
        jh_log_event(sig_ctx, "after", NULL, 0);
        jh_close(sig_ctx);
        _exit(ticks == 1 && !raise_in_fallocate ? 0 : 3);   /* it came, once */
    }
    int status;
    CHECK(wait_child(pid, 30, &status));           /* not hung */
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    jh_close(sig_ctx);
    size_t n;
    uint8_t *d = slurp("forksig", pid, &n);
    if (d) {
        struct jhr_al lf;
        char err[256];
        CHECK_EQ(jhr_al_parse(&lf, d, n, err, sizeof err), 0);
        CHECK_EQ(count_events(&lf, "child_main"), 1);
        CHECK_EQ(count_events(&lf, "after"), 1);
        CHECK_EQ(count_events(&lf, "tick"), 0);     /* inside the restart: dropped */
        CHECK_EQ(lf.cut + lf.bad + lf.resyncs, 0);
        CHECK(lf.closed);
        jhr_al_free(&lf);
        free(d);
    }
    munmap(code, FT_FNS * 16);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-test-auditlog.XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    test_roundtrip();
    test_reuse();
    test_limit();
    test_threads();
    test_killed();
    test_segfault();
    test_disk_full();
    test_fork();
    test_fork_threads();
    test_fork_signal();
    if (getenv("KEEP")) return check_done();
    rm_tree(dir);
    return check_done();
}
