/*
 * test_kept_fds.c — the descriptors the library keeps (perf map, jitdump, elfmap images and
 * /proc/self/maps, audit log) are proven ours before each use (issue 22, defect 6). A
 * program that closes what it did not open and gets the numbers back for files of its own
 * (here: its data file dup2'ed over each of our numbers, the worst case) must find its
 * file untouched — before the fix, a 4 KiB data file grew to ~70 MB of code and ELF
 * metadata — while every channel carries on with its own files, and jh_close must not
 * close the program's descriptors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"
#include "minijit.h"

static char dir[64], data_path[96], perfmap[64];
static unsigned char data[4096];

/* Is the file at path holding s? */
static int file_has(const char *path, const char *s)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    static char buf[4 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(buf + i, s, k))
            return 1;
    return 0;
}

/* Every descriptor of ours: to jitherald's directory, the perf map, /proc/PID/maps. */
static int our_fds(int *fds, int max)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    char procmaps[64];
    snprintf(procmaps, sizeof procmaps, "/proc/%d/maps", (int)getpid());
    for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
        char link[300], target[PATH_MAX];
        int fd = atoi(e->d_name);
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k <= 0 || fd == dirfd(d))
            continue;
        target[k] = 0;
        if (!strncmp(target, dir, strlen(dir)) || !strcmp(target, perfmap) ||
            !strcmp(target, procmaps))
            fds[n++] = fd;
    }
    if (d)
        closedir(d);
    return n;
}

static int data_intact(int fd)
{
    unsigned char now[sizeof data + 1];
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_size == (off_t)sizeof data &&
           pread(fd, now, sizeof now, 0) == (ssize_t)sizeof data && !memcmp(now, data, sizeof data);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-kfd-%d", (int)getpid());
    snprintf(data_path, sizeof data_path, "/tmp/jh-kfd-data-%d", (int)getpid());
    snprintf(perfmap, sizeof perfmap, "/tmp/perf-%d.map", (int)getpid());
    mkdir(dir, 0700);
    memset(data, 'D', sizeof data);

    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .flags = JH_OPT_IGNORE_ENV, .dir = dir,
        .engine = "kfd", .channels = JH_PERFMAP | JH_JITDUMP | JH_ELFMAP | JH_AUDITLOG };
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK_EQ(jh_channels(jh), JH_PERFMAP | JH_JITDUMP | JH_ELFMAP | JH_AUDITLOG);
    char err[256];
    mj_program *a = mj_compile("fn first(x) { return x + 1 }", "a.mini", jh, err, sizeof err);
    CHECK(a != NULL);

    int fds[64];
    int n = our_fds(fds, 64);
    CHECK(n >= 5);          /* perf map, jitdump, an image, the audit log, /proc/self/maps */
    for (int i = 0; i < n; i++)
        CHECK(fds[i] >= 1000);      /* out of the program's way, limits allowing */

    /* The program's own file, under every one of our numbers. */
    int df = open(data_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(df >= 0);
    CHECK_EQ(write(df, data, sizeof data), (long long)sizeof data);
    for (int i = 0; i < n; i++)
        CHECK_EQ(dup2(df, fds[i]), fds[i]);

    /* Every channel at work again: adds on new and on known pages, a patch, a removal. */
    mj_program *b = mj_compile("fn second(x) { return x * 2 }\nfn third(x) { return x - 3 }",
                               "b.mini", jh, err, sizeof err);
    CHECK(b != NULL);
    CHECK_EQ(mj_run(b, "second", (int64_t[]){ 21 }, 1), 42);
    const struct mj_function *t = mj_function_get(b, "third");
    CHECK(t != NULL);
    if (t)
        CHECK_EQ(jh_code_patched(jh, t->code, 1), 0);
    mj_free(a);
    CHECK_EQ(jh_flush(jh), 0);

    CHECK(data_intact(df));
    for (int i = 0; i < n; i++)
        CHECK(data_intact(fds[i]));
    /* ... and the channels carried on with their own files, opened again. */
    CHECK(file_has(perfmap, " second\n"));
    char dump[128], log[128];
    snprintf(dump, sizeof dump, "%s/jit-%d.dump", dir, (int)getpid());
    snprintf(log, sizeof log, "%s/kfd-%d.jhlog", dir, (int)getpid());
    CHECK(file_has(dump, "second"));
    CHECK(file_has(log, "second"));
    const struct mj_function *s = mj_function_get(b, "second");
    if (s) {
        struct ew_fn f = { s->code, s->code_size, "second" };
        char img[PATH_MAX];
        enum ew_verdict v = ew_check_one(&f, img, sizeof img);
        if (v != EW_OK)
            fprintf(stderr, "elfmap: %s (%s)\n", ew_verdict_str(v), img);
        CHECK_EQ(v, EW_OK);
        /* The image file moved away from its path while the program holds our numbers:
         * elfmap proves an image's descriptor only when a system call needs it (opening
         * the path again then finds no file of its own there: a new generation), and
         * stores through its mapping of the moved file meanwhile. New code and a patch
         * stay named by the image mapped at them, and the program's file is never
         * written. (Here minijit's new code lands in a window of its own; the window
         * whose file moved finds it lost at jh_close.) */
        char gone[PATH_MAX + 8];
        snprintf(gone, sizeof gone, "%s.gone", img);
        CHECK_EQ(rename(img, gone), 0);
        int m = our_fds(fds, 64);
        for (int i = 0; i < m; i++)
            CHECK_EQ(dup2(df, fds[i]), fds[i]);
        mj_program *c = mj_compile("fn fourth(x) { return x + 4 }\nfn fifth(x) { return x * 5 }",
                                   "c.mini", jh, err, sizeof err);
        CHECK(c != NULL);
        CHECK_EQ(mj_run(c, "fourth", (int64_t[]){ 38 }, 1), 42);
        const struct mj_function *u = mj_function_get(c, "fifth");
        if (u) {
            CHECK_EQ(jh_code_patched(jh, u->code, 1), 0);
            struct ew_fn g = { u->code, u->code_size, "fifth" };
            v = ew_check_one(&g, img, sizeof img);
            if (v != EW_OK)
                fprintf(stderr, "elfmap, its file moved: %s (%s)\n", ew_verdict_str(v), img);
            CHECK_EQ(v, EW_OK);
        }
        CHECK(data_intact(df));
        for (int i = 0; i < m; i++)
            CHECK(data_intact(fds[i]));
        mj_free(c);
    }

    mj_free(b);
    jh_close(jh);
    /* jh_close closed only its own descriptors: the program's are open, and intact. */
    for (int i = 0; i < n; i++)
        CHECK(fcntl(fds[i], F_GETFD) >= 0 && data_intact(fds[i]));
    CHECK(data_intact(df));

    unlink(data_path);
    unlink(perfmap);
    CHECK_EQ(rm_tree(dir), 0);
    return check_done();
}
