/*
 * procs.c — see procs.h. Which files processes map is read from /proc/PID/maps, the only
 * view of another process's mappings without ptrace (map_files/ needs CAP_SYS_ADMIN).
 * Reading it needs ptrace's read access: a non-dumpable process of ours (a setgid program,
 * a sandboxed renderer), or one with capabilities we lack, cannot be read; such a process
 * is remembered with its start time, and files it may map are kept (jhc_unread_may_map).
 */
#include "procs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

time_t jhc_boot_time(void)
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

/* A small file of /proc/PID into buf (NUL-terminated): its length, or -errno. */
static ssize_t read_proc(long pid, const char *what, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", pid, what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    int err = errno;
    close(fd);
    if (n < 0)
        return -err;
    buf[n] = 0;
    return n;
}

/* When did process pid start (seconds since the epoch)? 0 if unknown. */
static time_t start_time(long pid, time_t btime)
{
    char buf[1024];
    if (read_proc(pid, "stat", buf, sizeof buf) <= 0)
        return 0;
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

bool jhc_running(long pid, time_t mtime, time_t btime)
{
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return false;
    time_t st = start_time(pid, btime);
    /* started after the file was last written: the pid was reused (1 s of slack for the
     * coarse clocks) */
    return !(st && st > mtime + 1);
}

static void mapped_add(struct jhc_mapped *m, dev_t dev, ino_t ino, long pid, const char *path)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        struct jhc_mfile *v = realloc(m->v, cap * sizeof *v);
        if (!v) {
            m->incomplete = true;
            return;
        }
        m->v = v;
        m->cap = cap;
    }
    m->v[m->n++] = (struct jhc_mfile){ dev, ino, pid, path ? strdup(path) : NULL };
}

/* Could process pid, whose mappings we cannot read, hold a file of ours? Yes if any of
 * its user ids is ours: other users' processes cannot open a file in our 0700 directory
 * (root's can, but a root process that reads an image, such as perf report, does not
 * need its name any more), and a fork child keeps its parent's ids. */
static bool ours(long pid)
{
    char buf[4096];
    if (read_proc(pid, "status", buf, sizeof buf) <= 0)
        return false;
    const char *u = strstr(buf, "\nUid:");
    unsigned long id[4];
    if (!u || sscanf(u + 5, "%lu %lu %lu %lu", &id[0], &id[1], &id[2], &id[3]) != 4)
        return false;
    for (int k = 0; k < 4; k++)
        if (id[k] == (unsigned long)geteuid())
            return true;
    return false;
}

static void unreadable(struct jhc_mapped *m, long pid)
{
    if (!ours(pid))
        return;
    if (m->nunread == m->unread_cap) {
        size_t cap = m->unread_cap ? 2 * m->unread_cap : 8;
        struct jhc_unread *v = realloc(m->unread, cap * sizeof *v);
        if (!v) {
            m->incomplete = true;
            return;
        }
        m->unread = v;
        m->unread_cap = cap;
    }
    m->unread[m->nunread++] = (struct jhc_unread){ pid, start_time(pid, m->btime) };
}

/* One process's file mappings ("start-end perms offset MAJ:MIN inode path"). */
static void scan_process(struct jhc_mapped *m, long pid, bool (*keep_path)(const char *base))
{
    char path[64], line[PATH_MAX + 128];
    snprintf(path, sizeof path, "/proc/%ld/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == EACCES || errno == EPERM)
            unreadable(m, pid);
        return;             /* else gone meanwhile */
    }
    while (fgets(line, sizeof line, f)) {
        unsigned maj, min;
        unsigned long long ino;
        int at = 0;
        if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &maj, &min, &ino, &at) < 3 || !ino || !at)
            continue;
        char *p = line + at, *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        const char *base = strrchr(p, '/');
        mapped_add(m, makedev(maj, min), (ino_t)ino, pid, base && keep_path(base + 1) ? p : NULL);
    }
    if (ferror(f) && (errno == EACCES || errno == EPERM))
        unreadable(m, pid);
    fclose(f);
}

void jhc_mapped_scan(struct jhc_mapped *m, time_t btime, bool (*keep_path)(const char *base))
{
    *m = (struct jhc_mapped){ .btime = btime };
    DIR *d = opendir("/proc");
    struct dirent *de;
    long self = getpid();
    while (d && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (pid > 0 && !*end && pid != self)
            scan_process(m, pid, keep_path);
    }
    if (d)
        closedir(d);
}

long jhc_mapped_by(const struct jhc_mapped *m, const struct stat *st, const char *path)
{
    for (size_t i = 0; i < m->n; i++)
        if ((m->v[i].dev == st->st_dev && m->v[i].ino == st->st_ino) ||
            (m->v[i].path && !strcmp(m->v[i].path, path)))
            return m->v[i].pid;
    return 0;
}

/* Only a process started after the file was made can hold a mapping it inherited (a fork
 * child of its writer); one started before could only have opened it by name, as a
 * reader such as perf report does, which needs the name no more. 2 s of slack for the
 * clocks (boot time and birth time in seconds). */
long jhc_unread_may_map(const struct jhc_mapped *m, time_t birth)
{
    if (m->incomplete)
        return -1;
    for (size_t i = 0; i < m->nunread; i++)
        if (!birth || !m->btime || !m->unread[i].start || m->unread[i].start + 2 >= birth)
            return m->unread[i].pid;
    return 0;
}

void jhc_mapped_free(struct jhc_mapped *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    free(m->unread);
}

