/*
 * cmd_clean.c — `jitherald clean [DIR]`: remove the files that JIT tools leave behind about
 * processes of this user that are gone:
 *
 *     $ jitherald clean                  # $JITHERALD_DIR (else /tmp/jitherald-UID), and /tmp
 *     kept /tmp/jitherald-1000/jit-4242-1.elf: process 4250 maps it
 *     removed 412 files (9.8 MiB); kept 20 of running processes, 1 mapped by a running process
 *
 * What: in jitherald's directory (or DIR), elfmap images (jit-PID-N.elf, older
 * generations in jit-PID-gK/ directories), jitdump files (jit-PID.dump), audit logs
 * (ENGINE-PID.jhlog, ENGINE-PID-N.jhlog), the sockets of `jitherald attach` of processes
 * killed before they could remove them (attach-PID.sock), the jitted-PID-N.so files
 * `perf inject --jit`
 * writes beside a jitdump, and perf maps (perf-PID.map); in /tmp, when no DIR is given,
 * the perf maps (perf-PID.map: every VM writes its own there, and perf looks for it there),
 * and the jitdumps some VMs write there (PHP) with their jitted-PID-N.so.
 *
 * Why files outlive their process: `perf report` opens jit-PID-N.elf and the perf map,
 * and `perf inject --jit` reads jit-PID.dump, long after the run, so nothing deletes them
 * at exit; this command is how they go. The policy, in this order:
 *   - only regular files of ours (sockets for attach-PID.sock; never symlinks) with those names, in a directory of ours
 *     or in a sticky one (/tmp), or in a generation directory of ours (removed once empty);
 *   - a file whose process still runs is kept. "Still runs" means the pid exists and that
 *     process started before the file was last written (else the pid was reused);
 *   - a file some live process maps is kept, whatever its name says: a fork child runs on
 *     in its exited parent's image (jit-PARENT-N.elf), and perf could no longer name that
 *     code once the file is gone. Mappings are read from /proc/PID/maps (procs.c); a
 *     process of this user that started after the file was made and whose mappings cannot
 *     be read (it is not dumpable) might map it, so the file is kept and the command names
 *     that process;
 *   - with --age SECONDS, files written less than that ago are kept too (a profile taken
 *     today may still be reported); by default there is no such grace.
 * The size counted is what a file takes on disk (images are sparse).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "procs.h"

#define USAGE "usage: jitherald clean [--dry-run] [--age SECONDS] [DIR]"

/* The kinds of files, and which of them a directory may hold. */
enum {
    K_IMAGE = 1 << 0,           /* jit-PID-N.elf, jit-PID-N.elf.valgrind */
    K_DUMP = 1 << 1,            /* jit-PID.dump */
    K_LOG = 1 << 2,             /* ENGINE-PID.jhlog, ENGINE-PID-N.jhlog */
    K_JITTED = 1 << 3,          /* jitted-PID-N.so (perf inject --jit) */
    K_MAP = 1 << 4,             /* perf-PID.map */
    K_SOCK = 1 << 5,            /* attach-PID.sock (a socket, src/core/control.c) */
    K_ALL = 0x3f,
    K_TMP = K_DUMP | K_JITTED | K_MAP,  /* what /tmp holds */
};

/* "PREFIX<digits>" at s: the number, *end after it; 0 if none (or not a pid). */
static long num_after(const char *s, const char *prefix, const char **end)
{
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) || s[n] < '0' || s[n] > '9')
        return 0;
    char *e;
    long v = strtol(s + n, &e, 10);
    *end = e;
    return v > 0 && v <= INT_MAX ? v : 0;
}

/* "-<digits>" at s followed by exactly tail: true. */
static bool dash_num_then(const char *s, const char *tail)
{
    if (s[0] != '-' || s[1] < '0' || s[1] > '9')
        return false;
    char *e;
    strtoull(s + 1, &e, 10);
    return !strcmp(e, tail);
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

/* The kind of a file name among kinds, its pid (and a second candidate, for logs); 0. */
static int kind_of(const char *name, int kinds, long *pid, long *pid2)
{
    const char *e;
    *pid2 = 0;
    if ((*pid = num_after(name, "jit-", &e))) {
        if ((kinds & K_DUMP) && !strcmp(e, ".dump"))
            return K_DUMP;
        if ((kinds & K_IMAGE) && (dash_num_then(e, ".elf") || dash_num_then(e, ".elf.valgrind")))
            return K_IMAGE;
    } else if ((*pid = num_after(name, "jitted-", &e))) {
        if ((kinds & K_JITTED) && dash_num_then(e, ".so"))
            return K_JITTED;
    } else if ((*pid = num_after(name, "perf-", &e))) {
        if ((kinds & K_MAP) && !strcmp(e, ".map"))
            return K_MAP;
    } else if ((*pid = num_after(name, "attach-", &e))) {
        if ((kinds & K_SOCK) && !strcmp(e, ".sock"))
            return K_SOCK;
    } else if ((kinds & K_LOG) && (*pid = jhlog_pids(name, pid2))) {
        return K_LOG;
    }
    return 0;
}

/* A name this command may remove (a mapping's path is worth keeping for it). */
static bool any_kind(const char *name)
{
    long pid, pid2;
    return kind_of(name, K_ALL, &pid, &pid2) != 0;
}

/* "jit-PID-gK", a directory of older image generations: the pid, or 0. */
static long generation_dir(const char *name)
{
    const char *e;
    long pid = num_after(name, "jit-", &e);
    if (!pid || e[0] != '-' || e[1] != 'g' || e[2] < '0' || e[2] > '9')
        return 0;
    char *end;
    strtoull(e + 2, &end, 10);
    return *end ? 0 : pid;
}

/* When was the file made (statx's birth time)? 0 if the file system does not say. */
static time_t birth_time(int dfd, const char *name)
{
    struct statx sx;
    if (statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) != 0 ||
        !(sx.stx_mask & STATX_BTIME))
        return 0;
    return (time_t)sx.stx_btime.tv_sec;
}

struct tally {
    time_t now, btime;
    long long age;
    bool dry;
    struct jhc_mapped maps;
    bool scanned;               /* maps read (once, when the first file may go) */
    size_t removed, kept_running, kept_recent, kept_mapped, kept_unknown, failed;
    long unknown_pid;           /* one process that kept files kept_unknown */
    unsigned long long bytes;
};

/* Is DIR one we may clean in: ours, or sticky (others' files there are not ours to
 * remove, and ours cannot be swapped behind our back)? */
static bool may_clean_in(const struct stat *st)
{
    return st->st_uid == geteuid() || (st->st_mode & S_ISVTX);
}

/* The files of one directory (dfd, shown as dir; real: its absolute path, for
 * comparing with mapped paths) of the given kinds; only pid's if only. */
static void sweep(struct tally *t, int dfd, const char *dir, const char *real, int kinds,
                  long only)
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
        long pid, pid2;
        struct stat st;
        int kind = kind_of(de->d_name, kinds, &pid, &pid2);
        if (!kind || (only && pid != only) ||
            fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !(kind == K_SOCK ? S_ISSOCK(st.st_mode) : S_ISREG(st.st_mode)) ||
            st.st_uid != geteuid())
            continue;
        if (jhc_running(pid, st.st_mtime, t->btime) ||
            (pid2 && jhc_running(pid2, st.st_mtime, t->btime))) {
            t->kept_running++;
            continue;
        }
        if (t->now - st.st_mtime < t->age) {
            t->kept_recent++;
            continue;
        }
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", real, de->d_name);
        if (!t->scanned)
            jhc_mapped_scan(&t->maps, t->btime, any_kind);
        t->scanned = true;
        long by = jhc_mapped_by(&t->maps, &st, path);
        if (by) {
            printf("kept %s/%s: process %ld maps it\n", dir, de->d_name, by);
            t->kept_mapped++;
            continue;
        }
        if ((by = jhc_unread_may_map(&t->maps, birth_time(dfd, de->d_name)))) {
            if (by > 0)
                printf("kept %s/%s: process %ld may map it (its mappings cannot be read)\n",
                       dir, de->d_name, by);
            t->kept_unknown++;
            t->unknown_pid = by;
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

/* One directory: its files, then its generation directories (jit-PID-gK). dfd is
 * consumed. */
static void clean_dir(struct tally *t, int dfd, const char *dir, int kinds)
{
    char real[PATH_MAX], fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", dfd);
    ssize_t n = readlink(fdpath, real, sizeof real - 1);
    if (n <= 0)
        snprintf(real, sizeof real, "%s", dir);
    else
        real[n] = 0;
    sweep(t, dfd, dir, real, kinds, 0);
    DIR *d = (kinds & K_IMAGE) ? fdopendir(dfd) : NULL;
    if (!d) {
        close(dfd);
        return;
    }
    rewinddir(d);               /* sweep read it through a dup, which shares the offset */
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid = generation_dir(de->d_name);
        struct stat st;
        if (!pid || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        int gfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd < 0)
            continue;
        char sub[PATH_MAX + 256], realsub[PATH_MAX + 256];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        snprintf(realsub, sizeof realsub, "%s/%s", real, de->d_name);
        sweep(t, gfd, sub, realsub, K_IMAGE, pid);
        close(gfd);
        if (!t->dry)
            unlinkat(dfd, de->d_name, AT_REMOVEDIR);    /* once empty */
    }
    closedir(d);
}

/* Open dir for cleaning: an fd, or -errno (said on stderr, except a missing directory
 * when missing_ok). *st is its. */
static int open_dir(const char *dir, struct stat *st, bool missing_ok)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 || fstat(dfd, st) != 0) {
        int err = errno;
        if (!(missing_ok && err == ENOENT))
            fprintf(stderr, "jitherald clean: %s: %s\n", dir, strerror(err));
        if (dfd >= 0)
            close(dfd);
        return -err;
    }
    if (!may_clean_in(st)) {
        fprintf(stderr, "jitherald clean: %s is not ours; not touching it\n", dir);
        close(dfd);
        return -EPERM;
    }
    return dfd;
}

static int help(void)
{
    printf(USAGE "\n"
           "Remove the files JIT tools leave about processes of yours that are gone: elfmap\n"
           "images (jit-PID-N.elf, jit-PID-gK/), jitdump files (jit-PID.dump), audit logs\n"
           "(ENGINE-PID.jhlog), the jitted-PID-N.so files perf inject --jit writes beside a\n"
           "jitdump, perf maps (perf-PID.map) and attach sockets (attach-PID.sock). A file\n"
           "that a live process still maps (a fork child running in its parent's image) is\n"
           "kept. Only your own regular files (and sockets).\n"
           "DIR: where to clean (a directory of yours, or a sticky one such as /tmp); by\n"
           "default $JITHERALD_DIR, else /tmp/jitherald-UID, and in /tmp the perf maps,\n"
           "jitdumps and jitted-PID-N.so. A default directory that does not exist has nothing\n"
           "to clean (exit 0); a DIR given that does not exist is an error (exit 2).\n"
           "  -n, --dry-run     list what would be removed\n"
           "  --age SECONDS     keep files written less than SECONDS ago (default 0)\n"
           "  --all             the default: any age (for scripts written for --age)\n");
    return 0;
}

static int bad_usage(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "jitherald clean: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    return jhc_usage_error("clean", USAGE);
}

int jhc_cmd_clean(int argc, char **argv)
{
    const char *dir = NULL;
    bool dry = false;
    long long age = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n")) {
            dry = true;
        } else if (!strcmp(argv[i], "--all")) {
            age = 0;
        } else if (!strcmp(argv[i], "--age")) {
            if (i + 1 == argc)
                return bad_usage("--age needs a number of seconds%s%s", "", "");
            char *end;
            age = strtoll(argv[++i], &end, 10);
            if (*end || !*argv[i] || age < 0)
                return bad_usage("--age %s: not a number of seconds%s", argv[i], "");
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            return help();
        } else if (argv[i][0] == '-') {
            return bad_usage("unknown option %s%s", argv[i], "");
        } else if (dir) {
            return bad_usage("one DIR at a time (%s and %s)", dir, argv[i]);
        } else {
            dir = argv[i];
        }
    }
    struct tally t = { .now = time(NULL), .btime = jhc_boot_time(), .age = age, .dry = dry };
    struct stat dst, tst;
    if (dir) {
        int dfd = open_dir(dir, &dst, false);
        if (dfd < 0)
            return 2;
        clean_dir(&t, dfd, dir, K_ALL);
    } else {
        char def[PATH_MAX];
        jhr_dir(def, sizeof def);
        int dfd = open_dir(def, &dst, true);
        if (dfd == -ENOENT)
            printf("%s: nothing to clean\n", def);
        else if (dfd < 0)
            return 2;
        else
            clean_dir(&t, dfd, def, K_ALL);
        /* and the perf maps (and others' jitdumps) in /tmp, unless that is jitherald's
         * directory itself; sticky as it is, only our own files there are touched */
        int tfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd >= 0 && (fstat(tfd, &tst) != 0 || !may_clean_in(&tst) ||
                         (dfd >= 0 && tst.st_dev == dst.st_dev && tst.st_ino == dst.st_ino)))
            close(tfd);
        else if (tfd >= 0)
            clean_dir(&t, tfd, "/tmp", K_TMP);
    }
    if (t.kept_unknown && t.unknown_pid < 0)
        fprintf(stderr, "jitherald clean: out of memory reading which files processes map: "
                "kept %zu files\n", t.kept_unknown);
    else if (t.kept_unknown)
        fprintf(stderr, "jitherald clean: kept %zu files that process %ld%s may map: "
                "/proc/%ld/maps cannot be read\n", t.kept_unknown, t.unknown_pid,
                t.maps.nunread > 1 ? " (or another)" : "", t.unknown_pid);
    printf("%s %zu files (%.1f MiB); kept %zu of running processes, %zu mapped by a running "
           "process", dry ? "would remove" : "removed", t.removed, (double)t.bytes / 1048576.0,
           t.kept_running, t.kept_mapped);
    if (age)
        printf(", %zu younger than %llds", t.kept_recent, age);
    if (t.kept_unknown)
        printf(", %zu that a process may map", t.kept_unknown);
    printf("\n");
    jhc_mapped_free(&t.maps);
    return t.failed ? 1 : 0;
}
