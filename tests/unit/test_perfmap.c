/* test_perfmap.c — /tmp/perf-<pid>.map as perf reads it, refused where it would be unsafe,
 * and per process after fork. */
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

static char code[8192] __attribute__((aligned(64)));

static void path_for(pid_t pid, char *buf, size_t n) { snprintf(buf, n, "/tmp/perf-%d.map", (int)pid); }

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static jh_ctx *open_pm(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_PERFMAP, .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

static uint64_t add(jh_ctx *jh, const char *name, size_t off, size_t size)
{
    struct jh_code c = { .sz = sizeof c, .name = name, .start = code + off, .size = size };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    return id;
}

static void test_format(void)
{
    char path[64], want[256];
    path_for(getpid(), path, sizeof path);
    unlink(path);
    jh_ctx *jh = open_pm();
    CHECK_EQ(jh_channels(jh), JH_PERFMAP);
    uint64_t a = add(jh, "fib", 0, 0x40);
    add(jh, "evil\nname\rwith\tctl", 0x40, 0x10);
    add(jh, "with spaces (x.mini:3)", 0x50, 0x30);
    CHECK_EQ(jh_code_move(jh, a, code + 0x1000), 0);
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0600);
    char *s = slurp(path);
    CHECK(s != NULL);
    snprintf(want, sizeof want, "%lx 40 fib\n%lx 10 evil?name?with?ctl\n%lx 30 with spaces (x.mini:3)\n%lx 40 fib\n",
             (unsigned long)code, (unsigned long)(code + 0x40), (unsigned long)(code + 0x50),
             (unsigned long)(code + 0x1000));
    CHECK_STR(s, want);
    CHECK(strstr(s, "0x") == NULL);
    /* A second context in the same process appends to the same file. */
    jh_ctx *jh2 = open_pm();
    add(jh2, "other_engine_fn", 0x200, 8);
    jh_close(jh2);
    jh_close(jh);
    CHECK(strstr(slurp(path), "other_engine_fn") != NULL);
    unlink(path);
}

/* Each refusal: the channel does not start, the file is untouched, the context works. */
static void refuse(const char *what)
{
    char path[64];
    path_for(getpid(), path, sizeof path);
    jh_ctx *jh = open_pm();
    CHECK_EQ(jh_channels(jh), 0);
    add(jh, "fib", 0, 16);
    jh_close(jh);
    printf("refused %s as expected\n", what);
}

static void test_refusals(void)
{
    char path[64], victim[] = "/tmp/jh-victim-XXXXXX";
    path_for(getpid(), path, sizeof path);
    int vfd = mkstemp(victim);
    CHECK(vfd >= 0);
    close(vfd);

    unlink(path);
    CHECK_EQ(symlink(victim, path), 0);
    refuse("symlink");
    struct stat st;
    CHECK_EQ(stat(victim, &st), 0);
    CHECK_EQ(st.st_size, 0);
    unlink(path);

    CHECK_EQ(link(victim, path), 0);           /* hard link to a file of ours elsewhere */
    refuse("hard link");
    CHECK_EQ(stat(victim, &st), 0);
    CHECK_EQ(st.st_size, 0);
    unlink(path);

    CHECK_EQ(mkdir(path, 0700), 0);            /* not a regular file */
    refuse("directory");
    rmdir(path);

    if (geteuid() == 0) {                      /* a file owned by someone else */
        struct passwd *pw = getpwnam("nobody");
        CHECK(pw != NULL);
        int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0666);
        CHECK(fd >= 0);
        close(fd);
        CHECK_EQ(chown(path, pw->pw_uid, pw->pw_gid), 0);
        refuse("foreign owner");
        CHECK_EQ(stat(path, &st), 0);
        CHECK_EQ(st.st_size, 0);
        unlink(path);
    } else {
        SKIP_PART("not root: the foreign-owner case needs root to create such a file (CI "
                  "runs as root; the open itself always refuses a file whose owner is not us)");
    }
    unlink(victim);
}

static void test_fork(void)
{
    char path[64], cpath[64];
    path_for(getpid(), path, sizeof path);
    unlink(path);
    jh_ctx *jh = open_pm();
    add(jh, "parent_fn", 0x1000, 0x20);
    uint64_t gone = add(jh, "removed_before_fork", 0x1100, 0x20);
    CHECK_EQ(jh_code_remove(jh, gone), 0);
    pid_t pid = fork();
    if (pid == 0) {
        add(jh, "child_fn", 0x1200, 0x20);
        jh_close(jh);
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    add(jh, "parent_after", 0x1300, 0x20);
    path_for(pid, cpath, sizeof cpath);
    char *c = slurp(cpath);
    CHECK(c != NULL);
    if (c) {
        CHECK(strstr(c, "parent_fn") != NULL);      /* inherited, still live */
        CHECK(strstr(c, "child_fn") != NULL);
        CHECK(strstr(c, "removed_before_fork") == NULL);
        CHECK(strstr(c, "parent_after") == NULL);
    }
    char *p = slurp(path);
    CHECK(p && strstr(p, "parent_after") && !strstr(p, "child_fn"));
    jh_close(jh);
    unlink(cpath);
    unlink(path);
}

/* A map left by a dead process that had our pid (written before we began) is emptied at
 * open: perf would give its names to our code. One written since we began is another
 * runtime's in this process, or ours from an earlier context: kept. */
static void test_stale(void)
{
    char path[64];
    path_for(getpid(), path, sizeof path);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    const char *dead = "7f0000001000 40 dead_process_fn\n";
    CHECK_EQ(write(fd, dead, strlen(dead)), (ssize_t)strlen(dead));
    struct timespec old[2] = { { .tv_sec = time(NULL) - 3600 }, { .tv_sec = time(NULL) - 3600 } };
    CHECK_EQ(futimens(fd, old), 0);
    close(fd);
    jh_ctx *jh = open_pm();
    add(jh, "ours", 0, 0x40);
    jh_close(jh);
    char *s = slurp(path);
    CHECK(s && !strstr(s, "dead_process_fn") && strstr(s, " 40 ours\n"));
    /* written since we began (another runtime of ours): kept by the next open */
    fd = open(path, O_WRONLY | O_APPEND);
    const char *live = "7f0000002000 40 other_runtime_fn\n";
    CHECK(fd >= 0 && write(fd, live, strlen(live)) == (ssize_t)strlen(live));
    close(fd);
    jh = open_pm();
    add(jh, "ours_again", 0x40, 0x40);
    jh_close(jh);
    s = slurp(path);
    CHECK(s && strstr(s, " 40 ours\n") && strstr(s, "other_runtime_fn") && strstr(s, "ours_again"));
    unlink(path);
}

int main(void)
{
    test_stale();
    test_format();
    test_refusals();
    test_fork();
    return check_done();
}
