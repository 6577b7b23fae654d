/*
 * perfmap.c — /tmp/perf-<pid>.map, the text file perf, bcc, bpftrace and samply read to
 * name code in anonymous executable memory:
 *
 *     $ JITHERALD=perfmap perf record -g ./minijit fib.mini
 *     $ perf report --stdio
 *         62.10%  minijit  perf-4242.map      [.] fib
 *
 * Format: "START SIZE name\n", lowercase hex without 0x (older perf and blazesym reject
 * 0x), the name is the rest of the line. perf strips the last character of every line, so
 * every line ends in \n, and a name may not contain one: control characters become '?'.
 *
 * The format has no removal. Lines are appended as code is announced and stay: samples
 * taken while removed code was live keep their names. When an address range is reused,
 * the file holds two lines for it; perf then shows one of the names, whichever its
 * duplicate fix-up keeps, and samply shows the last. jh_code_move appends the new range.
 *
 * One file per process, shared by all contexts of the process; one write() per line so
 * concurrent writers (another JIT runtime in the process too) never tear lines.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static struct {
    pthread_mutex_t lock;
    int fd;
    int refs;
    unsigned fork_gen;          /* jh__fork_gen when opened: no getpid() per line */
} pm = { PTHREAD_MUTEX_INITIALIZER, -1, 0, 0 };

struct perfmap {
    jh_ctx *ctx;
};

/* Lock held. The file is (re)opened for the current pid: a fork child gets its own. */
static int perfmap_file(void)
{
    unsigned gen = atomic_load_explicit(&jh__fork_gen, memory_order_relaxed);
    if (pm.fd >= 0 && pm.fork_gen == gen)
        return pm.fd;
    pid_t pid = getpid();
    if (pm.fd >= 0)
        close(pm.fd);
    pm.fd = -1;
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
    int fd = jh__open_private(path, O_WRONLY | O_CREAT | O_APPEND);
    if (fd < 0)
        return fd;
    pm.fd = fd;
    pm.fork_gen = gen;
    return fd;
}

static int write_line(uintptr_t start, size_t size, const char *name)
{
    char small[512];
    size_t nlen = strlen(name);
    if (nlen > 4000)        /* perf's own symbol names top out well below this */
        nlen = 4000;
    size_t cap = nlen + 2 * 16 + 4;
    char *line = cap <= sizeof small ? small : malloc(cap);
    if (!line)
        return -ENOMEM;
    int n = snprintf(line, cap, "%lx %zx ", (unsigned long)start, size);
    for (size_t i = 0; i < nlen; i++) {
        unsigned char c = (unsigned char)name[i];
        line[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    line[n++] = '\n';
    pthread_mutex_lock(&pm.lock);
    int fd = perfmap_file();
    int err = fd < 0 ? fd : jh__write_all(fd, line, (size_t)n);
    pthread_mutex_unlock(&pm.lock);
    if (line != small)
        free(line);
    return err;
}

static int perfmap_open(jh_ctx *ctx, void **state)
{
    struct perfmap *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->ctx = ctx;
    pthread_mutex_lock(&pm.lock);
    int fd = perfmap_file();
    if (fd >= 0)
        pm.refs++;
    pthread_mutex_unlock(&pm.lock);
    if (fd < 0) {
        jh__log(ctx, JH_LOG_ERROR, "perfmap: /tmp/perf-%d.map: %s", (int)getpid(), jh_strerror(fd));
        free(p);
        return fd;
    }
    *state = p;
    return 0;
}

static int perfmap_add(void *state, struct jh__entry *e)
{
    (void)state;
    return write_line(e->start, e->size, e->name);
}

static int perfmap_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    (void)old_start;
    return perfmap_add(state, e);
}

/* A fork child starts its own file with what is live now: the child's samples in
 * inherited code get names too. */
static int perfmap_forked(void *state)
{
    struct perfmap *p = state;
    for (struct jh__entry *e = jh__reg_ceil(&p->ctx->reg, 0); e; e = jh__reg_next(&p->ctx->reg, e)) {
        int err = write_line(e->start, e->size, e->name);
        if (err < 0)
            return err;
    }
    return 0;
}

static void perfmap_close(void *state)
{
    pthread_mutex_lock(&pm.lock);
    if (--pm.refs <= 0 && pm.fd >= 0) {
        close(pm.fd);
        pm.fd = -1;
        pm.refs = 0;
    }
    pthread_mutex_unlock(&pm.lock);
    free(state);
}

const struct jh__channel_ops jh__perfmap_ops = {
    .name = "perfmap", .bit = JH_PERFMAP, .open = perfmap_open, .add = perfmap_add,
    .move = perfmap_move, .forked = perfmap_forked, .close = perfmap_close,
};
