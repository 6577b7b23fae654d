/*
 * test_diag.c — the one rule for diagnostics (src/base/diag.h): without a log callback,
 * errors and warnings reach stderr (JITHERALD_DEBUG=1 adds info and debug); a warning is
 * said once per cause, later cases at info; file errors come with their fix. Checked on the
 * helpers themselves and on a channel that leaves code out (elfmap and writable+executable
 * pages), through a callback and on the real stderr of a child process.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "base/diag.h"
#include "jitherald.h"

struct rec {
    int n, levels[16];
    char msgs[16][512];
};

static void record(void *arg, int level, const char *msg)
{
    struct rec *r = arg;
    if (r->n < 16) {
        r->levels[r->n] = level;
        snprintf(r->msgs[r->n], sizeof r->msgs[0], "%s", msg);
    }
    r->n++;
}

static int count_level(const struct rec *r, int level)
{
    int n = 0;
    for (int i = 0; i < r->n && i < 16; i++)
        n += r->levels[i] == level;
    return n;
}

static void test_helpers(void)
{
    CHECK_EQ(jh__diag_stderr_level(NULL), JH_LOG_WARN);
    CHECK_EQ(jh__diag_stderr_level(""), JH_LOG_WARN);
    CHECK_EQ(jh__diag_stderr_level("0"), JH_LOG_WARN);
    CHECK_EQ(jh__diag_stderr_level("1"), JH_LOG_DEBUG);

    struct rec r = { 0 };
    struct jh__diag d = { .fn = record, .arg = &r, .stderr_level = -1 };
    _Atomic unsigned said = 0;
    jh__diag_once(&d, &said, 3, JH_LOG_WARN, "first %d", 1);
    jh__diag_once(&d, &said, 3, JH_LOG_WARN, "again %d", 2);
    jh__diag_once(&d, &said, 4, JH_LOG_WARN, "another cause");
    jh__diag_once(&d, &said, 3, JH_LOG_ERROR, "an error stays an error");
    CHECK_EQ(r.n, 4);
    CHECK_EQ(r.levels[0], JH_LOG_WARN);
    CHECK_STR(r.msgs[0], "first 1");
    CHECK_EQ(r.levels[1], JH_LOG_INFO);         /* the same cause: said, at info */
    CHECK_STR(r.msgs[1], "again 2");
    CHECK_EQ(r.levels[2], JH_LOG_WARN);         /* a new cause: a warning again */
    CHECK_EQ(r.levels[3], JH_LOG_ERROR);

    CHECK_STR(jh__diag_file_fix(-EACCES, 1), "; set JITHERALD_DIR to a directory you can write");
    CHECK_STR(jh__diag_file_fix(-ENOENT, 1), "; set JITHERALD_DIR to a directory you can write");
    CHECK(strstr(jh__diag_file_fix(-EFBIG, 1), "ulimit -f"));
    CHECK(strstr(jh__diag_file_fix(-ENOSPC, 1), "free some space"));
    CHECK(strstr(jh__diag_file_fix(-ELOOP, 0), "remove it"));
    CHECK(!strstr(jh__diag_file_fix(-ELOOP, 0), "JITHERALD_DIR"));     /* /tmp's perf map */
    CHECK_STR(jh__diag_file_fix(-EIO, 1), "");
}

/* Two tiny functions, each on its own writable+executable page (as HotSpot, Mono and node
 * keep code), announced to elfmap; opts->log decides where the diagnostics go. */
static int announce_rwx(jh_ctx **jh, struct jh_options *o, void **pages)
{
    long pg = sysconf(_SC_PAGESIZE);
    *pages = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE | PROT_EXEC,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (*pages == MAP_FAILED)
        return -errno;
    int err = jh_open(jh, o);
    if (err)
        return err;
    for (int i = 0; i < 2; i++) {
        unsigned char *code = (unsigned char *)*pages + i * pg;
        memset(code, 0xc3, 16);                 /* ret */
        struct jh_code c = { .sz = sizeof c, .name = i ? "g" : "f", .start = code, .size = 16 };
        uint64_t id;
        if ((err = jh_code_add(*jh, &c, &id)))
            return err;
    }
    return 0;
}

static char dir[64];

static const char *find(const struct rec *r, const char *what)
{
    for (int i = 0; i < r->n && i < 16; i++)
        if (strstr(r->msgs[i], what))
            return r->msgs[i];
    return NULL;
}

/* Through the JIT's callback: one warning for two functions on writable pages. */
static void test_callback(void)
{
    struct rec r = { 0 };
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir, .engine = "t",
                            .flags = JH_OPT_IGNORE_ENV, .log = record, .log_arg = &r };
    jh_ctx *jh = NULL;
    void *pages = MAP_FAILED;
    CHECK_EQ(announce_rwx(&jh, &o, &pages), 0);
    CHECK_EQ(jh_channels(jh), JH_ELFMAP);        /* leaving code out is not a failure */
    CHECK_EQ(count_level(&r, JH_LOG_WARN), 1);
    CHECK_EQ(count_level(&r, JH_LOG_ERROR), 0);
    const char *w = find(&r, "the pages are writable");
    CHECK(w && strstr(w, "elfmap: code at 0x") && strstr(w, "left anonymous") &&
          strstr(w, "mprotect them PROT_READ|PROT_EXEC before jh_code_add"));
    if (!w)
        for (int i = 0; i < r.n && i < 16; i++)
            fprintf(stderr, "  said: %d %s\n", r.levels[i], r.msgs[i]);
    jh_close(jh);
    if (pages != MAP_FAILED)
        munmap(pages, 2 * (size_t)sysconf(_SC_PAGESIZE));
}

/* No callback: the same on the process's real stderr, one line; JITHERALD_DEBUG=1 adds
 * info lines and still one warning. */
static void test_stderr(const char *debug)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        if (debug)
            setenv("JITHERALD_DEBUG", debug, 1);
        else
            unsetenv("JITHERALD_DEBUG");
        struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir,
                                .engine = "t", .flags = JH_OPT_IGNORE_ENV };
        jh_ctx *jh = NULL;
        void *pages;
        int err = announce_rwx(&jh, &o, &pages);
        jh_close(jh);
        _exit(err ? 1 : 0);
    }
    close(p[1]);
    char out[8192];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof out - 1 && (got = read(p[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = 0;
    close(p[0]);
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int lines = 0, warnings = 0;
    for (char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        lines++;
        warnings += !strncmp(strchr(l, ' ') ? strchr(l, ' ') + 1 : l, "warning: ", 9);
    }
    CHECK_EQ(warnings, 1);
    CHECK(strstr(out, "] warning: elfmap: code at 0x") && strstr(out, "the pages are writable"));
    if (debug)
        CHECK(lines > 1 && strstr(out, "] info: elfmap: 0 swaps"));
    else
        CHECK_EQ(lines, 1);
    if (warnings != 1 || (!debug && lines != 1))
        fprintf(stderr, "stderr (JITHERALD_DEBUG=%s) was:\n%s", debug ? debug : "unset", out);
}

int main(void)
{
    test_helpers();
    snprintf(dir, sizeof dir, "/tmp/jh-diag-%d", (int)getpid());
    test_callback();
    test_stderr(NULL);
    test_stderr("1");
    CHECK_EQ(rm_tree(dir), 0);
    return check_done();
}
