/*
 * cmd_clean.c — `jitherald clean [DIR]`: remove the elfmap images (jit-PID-N.elf, and older
 * generations in jit-PID-gK/ directories), jitdump files (jit-PID.dump) and audit logs
 * (ENGINE-PID.jhlog, ENGINE-PID-N.jhlog) of processes that are gone, once nobody is likely
 * to need them:
 *
 *     $ jitherald clean                  # $JITHERALD_DIR, else /tmp/jitherald-UID
 *     removed 412 files (9.8 MiB); kept 20 of running processes, 2 younger than 86400s
 *
 * Why files outlive their process: `perf report` opens jit-PID-N.elf (the mapping's path
 * in perf.data) and `perf inject --jit` reads jit-PID.dump long after the run, so the
 * channels never delete them. The policy, in this order:
 *   - only regular files of ours with those name patterns (never symlinks), in a
 *     directory of ours, or in a generation directory of ours (jit-PID-gK, removed once
 *     empty); an image's size is what it takes on disk (they are sparse);
 *   - a file whose process still runs is kept. "Still runs" means the pid exists and that
 *     process started before the file was last written (else the pid was reused);
 *   - of the others, files written less than --age ago (default 1 day) are kept, so a
 *     profile taken today still reports; --all removes them whatever their age.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lib/files.h"

/* "jit-PID-N.elf" (also ".elf.valgrind", a copy elfmap deletes at once unless it died),
 * "jit-PID.dump", or with dirs "jit-PID-gK" (a generation directory): the pid, or 0. */
static long pid_of(const char *name, bool dirs)
{
    if (strncmp(name, "jit-", 4))
        return 0;
    char *end;
    long pid = strtol(name + 4, &end, 10);
    if (pid <= 0 || end == name + 4)
        return 0;
    if (dirs) {
        if (end[0] != '-' || end[1] != 'g' || end[2] < '0' || end[2] > '9')
            return 0;
        strtoull(end + 2, &end, 10);
        return *end ? 0 : pid;
    }
    if (!strcmp(end, ".dump"))
        return pid;
    if (*end != '-' || end[1] < '0' || end[1] > '9')
        return 0;
    strtoull(end + 1, &end, 10);
    return !strcmp(end, ".elf") || !strcmp(end, ".elf.valgrind") ? pid : 0;
}

/* "ENGINE-PID.jhlog" or "ENGINE-PID-N.jhlog" (src/channels/auditlog.c): the engine name
 * may itself end in "-digits", so "vm-12-3.jhlog" is pid 12 or pid 3: both candidates are
 * returned (b = 0 when there is one), and the log is kept if either runs. */
static long jhlog_pids(const char *name, long *b)
{
    size_t n = strlen(name);
    *b = 0;
    if (n < 6 || strcmp(name + n - 6, ".jhlog"))
        return 0;
    long num[2] = { 0, 0 };
    size_t end = n - 6;
    for (int k = 0; k < 2; k++) {
        size_t i = end;
        while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
            i--;
        if (i == end || i < 2 || name[i - 1] != '-' || end - i > 9)
            break;
        num[k] = strtol(name + i, NULL, 10);
        end = i - 1;
    }
    if (num[1] > 0)
        *b = num[1];
    return num[0];
}

static time_t boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    long long bt = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &bt) == 1)
            break;
    if (f)
        fclose(f);
    return (time_t)bt;
}

/* When did process pid start (seconds since the epoch)? 0 if unknown. */
static time_t start_time(long pid, time_t btime)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* Field 22, counted after the ")" that ends the command name (which may hold spaces). */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long ticks = 0;
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " "))
        if (++field == 22) {
            ticks = strtoull(tok, NULL, 10);
            break;
        }
    long hz = sysconf(_SC_CLK_TCK);
    return btime && hz > 0 ? btime + (time_t)(ticks / (unsigned long long)hz) : 0;
}

/* Is the process that wrote a file at mtime still running? */
static bool running(long pid, time_t mtime, time_t btime)
{
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return false;
    time_t st = start_time(pid, btime);
    /* started after the file was last written: the pid was reused (1 s of slack for the
     * coarse clocks) */
    return !(st && st > mtime + 1);
}

struct tally {
    time_t now, btime;
    long long age;
    bool dry;
    size_t removed, kept_running, kept_recent, failed;
    unsigned long long bytes;
};

/* The files of one directory (only pid's if pid). */
static void sweep(struct tally *t, int dfd, const char *dir, long only)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid = pid_of(de->d_name, false), pid2 = 0;
        if (!pid && !only)
            pid = jhlog_pids(de->d_name, &pid2);
        struct stat st;
        if (!pid || (only && pid != only) ||
            fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (running(pid, st.st_mtime, t->btime) ||
            (pid2 && running(pid2, st.st_mtime, t->btime))) {
            t->kept_running++;
            continue;
        }
        if (t->now - st.st_mtime < t->age) {
            t->kept_recent++;
            continue;
        }
        if (t->dry) {
            printf("would remove %s/%s\n", dir, de->d_name);
        } else if (unlinkat(dfd, de->d_name, 0) != 0) {
            fprintf(stderr, "jitherald clean: %s/%s: %s\n", dir, de->d_name, strerror(errno));
            t->failed++;
            continue;
        }
        t->removed++;
        t->bytes += (unsigned long long)st.st_blocks * 512;
    }
    closedir(d);
}

static int usage(FILE *f)
{
    fprintf(f, "usage: jitherald clean [--dry-run] [--all | --age SECONDS] [DIR]\n"
            "Remove elfmap images (jit-PID-N.elf, jit-PID-gK/), jitdump files (jit-PID.dump)\n"
            "and audit logs (ENGINE-PID.jhlog) of processes that are gone and that were last\n"
            "written more than --age seconds ago (default 86400; --all: any age). Only your\n"
            "own regular files in your own DIR. DIR: $JITHERALD_DIR, else /tmp/jitherald-UID;\n"
            "when that default does not exist there is nothing to clean (exit 0), a DIR\n"
            "given that does not exist is an error (exit 2).\n"
            "  -n, --dry-run     list what would be removed\n");
    return f == stdout ? 0 : 2;
}

int jhc_cmd_clean(int argc, char **argv)
{
    const char *dir = NULL;
    bool dry = false;
    long long age = 86400;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n")) {
            dry = true;
        } else if (!strcmp(argv[i], "--all")) {
            age = 0;
        } else if (!strcmp(argv[i], "--age")) {
            if (i + 1 == argc) {
                fprintf(stderr, "jitherald clean: --age needs a number of seconds\n");
                return usage(stderr);
            }
            char *end;
            age = strtoll(argv[++i], &end, 10);
            if (*end || age < 0) {
                fprintf(stderr, "jitherald clean: --age %s: not a number of seconds\n", argv[i]);
                return usage(stderr);
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            return usage(stdout);
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "jitherald clean: unknown option %s\n", argv[i]);
            return usage(stderr);
        } else if (dir) {
            fprintf(stderr, "jitherald clean: one DIR at a time (%s and %s)\n", dir, argv[i]);
            return usage(stderr);
        } else {
            dir = argv[i];
        }
    }
    char def[4096];
    bool given = dir != NULL;
    if (!dir) {
        jhr_dir(def, sizeof def);
        dir = def;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat dst;
    if (dfd < 0 || fstat(dfd, &dst) != 0) {
        if (errno == ENOENT && !given) {
            printf("%s: nothing to clean\n", dir);
            return 0;
        }
        fprintf(stderr, "jitherald clean: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    if (dst.st_uid != geteuid()) {
        fprintf(stderr, "jitherald clean: %s is not ours; not touching it\n", dir);
        close(dfd);
        return 2;
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 2;
    }
    struct tally t = { .now = time(NULL), .btime = boot_time(), .age = age, .dry = dry };
    sweep(&t, dfd, dir, 0);
    rewinddir(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid = pid_of(de->d_name, true);
        struct stat st;
        if (!pid || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        int gfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd < 0)
            continue;
        char sub[8192];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        sweep(&t, gfd, sub, pid);
        close(gfd);
        if (!dry)
            unlinkat(dfd, de->d_name, AT_REMOVEDIR);    /* once empty */
    }
    closedir(d);
    printf("%s %zu files (%.1f MiB); kept %zu of running processes, %zu younger than %llds\n",
           dry ? "would remove" : "removed", t.removed, (double)t.bytes / 1048576.0,
           t.kept_running, t.kept_recent, age);
    return t.failed ? 1 : 0;
}
