/*
 * test_attach_socket.c — the socket `jitherald attach` talks to (src/core/control.c), safe
 * to use at any moment: two clients switching channels at once while the program opens
 * and closes other contexts and keeps adding code; a malformed request answered and
 * ignored; a fork child answering on its own socket with its own channels. At the end the
 * standing context's code is there exactly once for a debugger attaching then.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gdb_view.h"
#include "jitherald.h"

enum { FN = 64, N = 64 };
static char dir[] = "/tmp/jh-attach-sock.XXXXXX";

/* One request, the whole answer into out; false if the socket could not be reached. */
static bool ask(pid_t pid, const char *req, char *out, size_t n)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s/attach-%d.sock", dir, (int)pid);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    size_t len = strlen(req), k = 0;
    bool ok = write(fd, req, len) == (ssize_t)len;
    for (ssize_t r; ok && k < n - 1 && (r = read(fd, out + k, n - 1 - k)) > 0;)
        k += (size_t)r;
    out[k] = 0;
    close(fd);
    return ok;
}

static bool ends_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 3 && !strcmp(s + n - 3, "ok\n");
}

static uint8_t *code;

static jh_ctx *standby(const char *engine)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .engine = engine, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STANDBY };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

static void add(jh_ctx *jh, int i, const char *prefix)
{
    char name[32];
    snprintf(name, sizeof name, "%s_%d", prefix, i);
    struct jh_code c = { .sz = sizeof c, .name = name, .start = code + i * FN, .size = FN };
    CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
}

static atomic_int bad_answers;
static void *client(void *arg)
{
    const char *const reqs[] = { "set gdb\n", "set none\n", "on unwind\n", "off gdb,unwind\n",
                                 "status\n" };
    int t = (int)(intptr_t)arg;
    char out[4096];
    for (int i = 0; i < 150; i++) {
        const char *r = reqs[(i + t) % 5];
        if (!ask(getpid(), r, out, sizeof out) || !ends_ok(out)) {
            if (atomic_fetch_add(&bad_answers, 1) < 3)
                fprintf(stderr, "client %d: %s -> %s\n", t, r, out);
        }
    }
    return NULL;
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    code = mmap(NULL, 2 * N * FN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(code, 0xc3, 2 * N * FN);
    jh_ctx *a = standby("standing");
    for (int i = 0; i < N; i++)
        add(a, i, "keep");
    char out[4096];
    CHECK(ask(getpid(), "status\n", out, sizeof out));
    CHECK(strstr(out, "context engine=standing live=none retained=64\n") != NULL);
    CHECK(ends_ok(out));

    /* two clients at once, while contexts come and go and code is added */
    pthread_t c[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&c[t], NULL, client, (void *)(intptr_t)t);
    for (int r = 0; r < 60; r++) {
        jh_ctx *b = standby("passing");
        for (int i = 0; i < N; i++)
            add(b, N + i, "tmp");
        jh_close(b);
    }
    for (int t = 0; t < 2; t++)
        pthread_join(c[t], NULL);
    CHECK_EQ(atomic_load(&bad_answers), 0);

    /* malformed: answered, nothing changed, the socket still serves */
    CHECK(ask(getpid(), "set gdb\n", out, sizeof out) && ends_ok(out));
    CHECK(ask(getpid(), "\x01\xfe reboot now\n", out, sizeof out));
    CHECK(!strncmp(out, "error not a request", 19));
    CHECK(ask(getpid(), "set gdb,frobnicate\n", out, sizeof out));
    CHECK(!strncmp(out, "error unknown channel 'frobnicate'", 34));
    CHECK(ask(getpid(), "status\n", out, sizeof out));
    CHECK(strstr(out, "engine=standing live=gdb retained=64\n") != NULL);
    CHECK_EQ(jh_flush(a), 0);
    CHECK_EQ(snapshot(), 0);
    int found = 0;
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "keep_%d", i);
        found += count_named(name, (uintptr_t)(code + i * FN));
    }
    CHECK_EQ(found, N);
    CHECK_EQ(count_named("tmp_0", 0), 0);

#ifndef __SANITIZE_THREAD__     /* TSan refuses a thread started in a fork child */
    /* a fork child: its own socket, its own channels (qemu-user, which the arm64 tier
     * runs under, asserts in its own code when a fork child of a threaded process starts
     * a thread: qemu 7.2 and 10.0 alike) */
    if (getenv("JH_QEMU_USER")) {
        SKIP_PART("the fork child's own socket: qemu-user cannot start a thread there");
        goto done;
    }
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        add(a, N, "child");                 /* its first call: its own socket */
        char o[4096];
        bool ok = ask(getpid(), "set none\n", o, sizeof o) && ends_ok(o) &&
                  jh_channels(a) == 0;
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(jh_channels(a), (unsigned)JH_GDB);     /* the parent's are its own */
done:
#endif
    jh_close(a);
    CHECK_EQ(rm_tree(dir), 0);
    return check_done();
}
