/*
 * test_files_hostile.c — every file a channel opens, met by what another user (or a
 * careless one) may have put at its path first. For each path — the perf map in /tmp, the
 * jitdump, the audit log, an elfmap image — and each plant:
 *   a FIFO         jh_open and jh_code_add return at once (open() used to block forever
 *                  holding the perf map's lock: issue 11, item 3);
 *   another user's file, a symlink to a file, a hard link to a file
 *                  the file is not written, not truncated (the audit log used to apply
 *                  O_TRUNC before its owner check: item 8), not deleted (elfmap used to
 *                  unlink() a name it found taken: item 9);
 * and in every case the channel is reported off (or, for elfmap, skips that image), the
 * others carry on, and the JIT's calls succeed. Each case runs in a child process with an
 * alarm, so a hang is a failure, not a stuck test run. "Another user" needs root
 * (chown to nobody); CI runs as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

enum plant { FIFO, FOREIGN, SYMLINK, HARDLINK, NPLANT };
static const char *const plant_name[] = { "a FIFO", "another user's file", "a symlink", "a hard link" };
static const char secret[] = "precious bytes that must survive\n";
static char dir[64], victim[128];

static int plant(const char *path, enum plant p)
{
    unlink(path);
    switch (p) {
    case FIFO:
        return mkfifo(path, 0666);
    case FOREIGN: {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 || write(fd, secret, sizeof secret - 1) < 0 || fchown(fd, 65534, 65534) < 0)
            return -1;
        return close(fd);
    }
    case SYMLINK:
        return symlink(victim, path);
    case HARDLINK:
        return link(victim, path);
    default:
        return -1;
    }
}

/* The planted thing is as it was: same type, and for files the same bytes. */
static int untouched(const char *path, enum plant p)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (p == FIFO)
        return S_ISFIFO(st.st_mode);
    if (p == SYMLINK && !S_ISLNK(st.st_mode))
        return 0;
    char buf[128] = { 0 };
    int fd = open(p == FOREIGN ? path : victim, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)(sizeof secret - 1) && !memcmp(buf, secret, sizeof secret - 1);
}

static void write_victim(void)
{
    FILE *f = fopen(victim, "w");
    fputs(secret, f);
    fclose(f);
}

/* In the child: plant, open the channel plus the perf map as a witness, add code, close.
 * Exit 0 when everything held; 10+ for what went wrong. */
static int child(unsigned channel, enum plant p)
{
    char path[256];
    pid_t me = getpid();
    switch (channel) {
    case JH_PERFMAP: snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)me); break;
    case JH_JITDUMP: snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)me); break;
    case JH_AUDITLOG: snprintf(path, sizeof path, "%s/hostile-%d.jhlog", dir, (int)me); break;
    default: snprintf(path, sizeof path, "%s/jit-%d-1.elf", dir, (int)me); break;
    }
    write_victim();
    if (plant(path, p) != 0)
        return 10;
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(code, 0xc3, 4096);
    mprotect(code, 4096, PROT_READ | PROT_EXEC);
    unsigned witness = channel == JH_PERFMAP ? JH_GDB : JH_PERFMAP;
    /* A perf map another user's process of the same pid left (a machine shared with other
     * users' runs) is rightly refused: then the gdb channel is the witness. */
    char pm[64];
    struct stat pst;
    snprintf(pm, sizeof pm, "/tmp/perf-%d.map", (int)me);
    if (witness == JH_PERFMAP && lstat(pm, &pst) == 0 && pst.st_uid != geteuid())
        witness = JH_GDB;
    struct jh_options o = { .sz = sizeof o, .channels = channel | witness, .dir = dir,
                            .engine = "hostile", .flags = JH_OPT_IGNORE_ENV };
    jh_ctx *jh;
    if (jh_open(&jh, &o) != 0)
        return 11;
    unsigned live = jh_channels(jh);
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = code, .size = 64 };
    if (jh_code_add(jh, &c, NULL) != 0)
        return 12;
    if (jh_flush(jh) != 0)
        return 13;
    live &= jh_channels(jh);
    jh_close(jh);
    int ok = untouched(path, p);
    unlink(path);
    if (p != FOREIGN && p != FIFO)
        unlink(victim);
    if (!ok)
        return 14;
    if (!(live & witness))
        return 15;
    /* elfmap skips one image and goes on; the others cannot use their one file */
    if (channel != JH_ELFMAP && (live & channel))
        return 16;
    return 0;
}

int main(void)
{
    if (geteuid() != 0)
        SKIP("needs root to plant another user's file (CI runs as root)");
    snprintf(dir, sizeof dir, "/tmp/jh-hostile-%d", (int)getpid());
    mkdir(dir, 0700);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    const unsigned channels[] = { JH_PERFMAP, JH_JITDUMP, JH_AUDITLOG, JH_ELFMAP };
    const char *const names[] = { "perfmap", "jitdump", "auditlog", "elfmap" };
    for (int c = 0; c < 4; c++) {
        for (int p = 0; p < NPLANT; p++) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                alarm(10);
                _exit(child(channels[c], p));
            }
            int status = 0;
            waitpid(pid, &status, 0);
            int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            if (rc)
                fprintf(stderr, "%s with %s at its path: child %s %d\n", names[c],
                        plant_name[p], WIFEXITED(status) ? "exited" : "killed by signal",
                        WIFEXITED(status) ? rc : WTERMSIG(status));
            CHECK_EQ(rc, 0);
            char path[256];
            snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
            unlink(path);
        }
    }
    unlink(victim);
    CHECK_EQ(rm_tree(dir), 0);
    return check_done();
}
