/*
 * control.c — where `jitherald attach PID` reaches a running process: a Unix socket,
 * <dir>/attach-<pid>.sock in the context's private directory (0700, ours: base/files.c),
 * served by one thread per process that sleeps in accept() and costs nothing until asked.
 *
 * Why this transport (docs/attach.md): a signal would be the program's to give (a VM may
 * use every one, and SIGQUIT is the JVM's), and a flag polled by jh_code_add would wait
 * for the JIT's next compile, which an idle service may not do for hours; .NET's
 * diagnostics server is the same design (a socket in the temporary directory and a thread).
 * Only the process's owner or root may switch channels: the directory keeps others out,
 * and each connection's SO_PEERCRED is checked as well. A request is one line:
 *     status | set CHANNELS | on CHANNELS | off CHANNELS
 * and the answer is one line per context, then "ok" or "error WHY". A malformed or refused
 * request is answered, reported once, and changes nothing.
 *
 * Started by the first context opened in standby (JH_OPT_STANDBY, or "standby" in
 * $JITHERALD, alone or with channels on from the start: JITHERALD=standby,gdb), unless
 * JITHERALD_ATTACH=0: a program that did not ask to be attachable gets no thread and no
 * socket. In a fork child, again at the child's first call: the socket is per process. The thread blocks every signal. The socket goes at exit.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/chanlist.h"
#include "core/control.h"
#include "core/core.h"

JH__LOCK_DEFINE(static, ctl_lock, "attach socket");
static unsigned ctl_gen = ~0u;          /* jh__fork_generation() when the socket was made */
static int ctl_fd = -1;
static pid_t ctl_pid;
static char ctl_path[sizeof ((struct sockaddr_un *)0)->sun_path];

/* One context's line of the answer; false for a context being closed (not listed). */
static bool describe(jh_ctx *ctx, char *out, size_t n)
{
    jh__ctx_lock(ctx);
    bool closing = ctx->closing;
    size_t count = ctx->reg.count;
    jh__ctx_unlock(ctx);
    char live[128];
    jh__channel_names(jh_channels(ctx), ",", live, sizeof live);
    snprintf(out, n, "context engine=%s live=%s retained=%zu%s\n", ctx->cfg.engine,
             live[0] ? live : "none", count,
             atomic_load(&ctx->unstored_from) != UINT64_MAX ? " (some code was added while "
             "nothing was retained: not in a rundown)" : "");
    return !closing;
}

struct request {
    enum { R_STATUS, R_SET, R_ON, R_OFF } verb;
    unsigned bits;
    unsigned masks;             /* every context's attach_channels, together */
    char reply[4096];
    size_t len;
    int err;
};

static void append(struct request *r, const char *s)
{
    size_t k = strlen(s);
    if (r->len + k < sizeof r->reply) {
        memcpy(r->reply + r->len, s, k + 1);
        r->len += k;
    }
}

static void apply(jh_ctx *ctx, void *arg)
{
    struct request *r = arg;
    unsigned now = jh_channels(ctx);
    unsigned want = r->verb == R_SET ? r->bits : r->verb == R_ON ? now | r->bits :
                    r->verb == R_OFF ? now & ~r->bits : now;
    unsigned mask = ctx->cfg.attach_mask;
    want = (want & mask) | (now & ~mask);   /* the others are not this context's to switch */
    r->masks |= mask;
    if (r->verb != R_STATUS) {
        int rc = jh_channels_set(ctx, want);
        if (rc == -ESHUTDOWN)
            return;                     /* being closed: not one to list */
        if (rc < 0 && !r->err)
            r->err = rc;
    }
    char line[512];
    if (describe(ctx, line, sizeof line))
        append(r, line);
}

static void unknown(void *arg, const char *name, size_t n)
{
    struct request *r = arg;
    char line[160];
    snprintf(line, sizeof line, "error unknown channel '%.*s'\n", (int)(n > 64 ? 64 : n), name);
    if (!r->err)
        append(r, line);
    r->err = -EINVAL;
}

/* 0, or -EINVAL with the reason in r->reply. */
static int parse(struct request *r, char *line)
{
    line[strcspn(line, "\r\n")] = 0;
    char *arg = line + strcspn(line, " ");
    if (*arg)
        *arg++ = 0;
    if (!strcmp(line, "status") && !*arg)
        r->verb = R_STATUS;
    else if (!strcmp(line, "set"))
        r->verb = R_SET;
    else if (!strcmp(line, "on") && *arg)
        r->verb = R_ON;
    else if (!strcmp(line, "off") && *arg)
        r->verb = R_OFF;
    else {
        append(r, "error not a request: status | set CHANNELS | on CHANNELS | off CHANNELS\n");
        return -EINVAL;
    }
    r->bits = jh__channels_parse(arg, jh__channels_all(), unknown, r);
    return r->err;
}

static void serve(int c)
{
    struct ucred cr;
    socklen_t cl = sizeof cr;
    struct request r = { 0 };
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
        (cr.uid != geteuid() && cr.uid != 0)) {
        static atomic_bool said;
        if (!atomic_exchange(&said, true))
            fprintf(stderr, "jitherald: attach refused to uid %u: only the process's owner "
                    "or root may switch channels\n", (unsigned)cr.uid);
        append(&r, "error refused: only the process's owner or root may switch channels\n");
        (void)!write(c, r.reply, r.len);
        return;
    }
    struct timeval tv = { 2, 0 };      /* a client that never writes cannot hold us */
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char line[512];
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t k = read(c, line + n, sizeof line - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        if (memchr(line, '\n', n))
            break;
    }
    line[n] = 0;
    if (parse(&r, line) == 0) {
        jh__ctx_each(apply, &r);
        unsigned none = r.verb == R_SET || r.verb == R_ON ? r.bits & ~r.masks : 0;
        char names[128], msg[256];
        jh__channel_names(none, ",", names, sizeof names);
        snprintf(msg, sizeof msg, "error %s: not switched on, this process allows it no "
                 "context (jitherald run: elfmap is chosen at start)\n", names);
        append(&r, none ? msg : r.err ? "error a channel could not start (the process's "
                          "stderr says why); the others are as listed\n" : "ok\n");
    } else {
        static atomic_bool said;
        if (!atomic_exchange(&said, true))
            fprintf(stderr, "jitherald: a malformed attach request was ignored\n");
    }
    (void)!write(c, r.reply, r.len);
}

static void *ctl_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
                errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                if (errno != EINTR && errno != ECONNABORTED)
                    sleep(1);
                continue;
            }
            return NULL;                /* the socket is gone */
        }
        serve(c);
        close(c);
    }
}

static void unlink_at_exit(void)
{
    if (ctl_fd >= 0 && getpid() == ctl_pid)
        unlink(ctl_path);
}

void jh__control_start(jh_ctx *ctx)
{
    const char *e = ctx->cfg.flags & JH_OPT_IGNORE_ENV ? NULL : getenv("JITHERALD_ATTACH");
    if (!ctx->cfg.standby || (e && !strcmp(e, "0")))
        return;
    jh__lock(&ctl_lock);
    if (ctl_gen == jh__fork_generation()) {
        jh__unlock(&ctl_lock);
        return;
    }
    ctl_gen = jh__fork_generation();
    if (ctl_fd >= 0)                    /* the parent's: its thread is not ours */
        close(ctl_fd);
    ctl_fd = -1;
    const char *dir;
    int err = jh__dir_get(&ctx->dir, &ctx->cfg.diag, &dir);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (!err && snprintf(a.sun_path, sizeof a.sun_path, "%s/attach-%d.sock", dir,
                         (int)getpid()) >= (int)sizeof a.sun_path)
        err = -ENAMETOOLONG;
    int fd = err ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!err && fd < 0)
        err = -errno;
    if (!err) {
        unlink(a.sun_path);             /* a socket of a dead process with our pid */
        if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0)
            err = -errno;
    }
    if (!err) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 64 << 10);
        err = -pthread_create(&t, &at, ctl_main, (void *)(intptr_t)fd);
        pthread_attr_destroy(&at);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!err) {
            pthread_setname_np(t, "jh-attach");
            static bool registered;
            if (!registered)
                registered = atexit(unlink_at_exit) == 0;
        } else {
            unlink(a.sun_path);
        }
    }
    if (err) {
        if (fd >= 0)
            close(fd);
        /* a warning where no channel is on (attaching is what standby is for); else the
         * channels that need the directory have said what is wrong with it */
        jh__diag(&ctx->cfg.diag, atomic_load(&ctx->live) ? JH_LOG_INFO : JH_LOG_WARN,
                 "attach: no socket (%s): `jitherald attach` cannot reach this process",
                 jh__file_error(err));
    } else {
        ctl_fd = fd;
        ctl_pid = getpid();
        memcpy(ctl_path, a.sun_path, sizeof ctl_path);
        jh__diag(&ctx->cfg.diag, JH_LOG_INFO, "attach: listening on %s", a.sun_path);
    }
    jh__unlock(&ctl_lock);
}
