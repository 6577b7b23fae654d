/*
 * perfmap.c — /tmp/perf-<pid>.map, the text file perf, bcc, bpftrace and samply read to
 * name code in anonymous executable memory:
 *
 *     $ JITHERALD=perfmap perf record -g ./minijit fib.mini
 *     $ perf report --stdio
 *         62.10%  minijit  perf-4242.map      [.] fib
 *
 * The line format is fmt/perfmap.h's. The format has no removal: lines are appended as
 * code is announced and stay, so samples taken while removed code was live keep their
 * names. When an address range is reused the file holds two lines for it; perf then shows
 * one of the names, whichever its duplicate fix-up keeps, and samply shows the last.
 * jh_code_move appends the new range.
 *
 * One file per process, shared by all contexts of the process; one write() per line so
 * concurrent writers (another JIT runtime in the process too) never tear lines. The path
 * is predictable and in /tmp, so it is opened the careful way (base/files.h): a symlink,
 * FIFO, another user's file or a hard link there is refused, never written through. A map
 * a dead process with our pid left there is emptied (forget_stale).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/lock.h"
#include "base/os.h"
#include "channels/channel.h"
#include "fmt/perfmap.h"

JH__LOCK_DEFINE(static, pm_lock, "perfmap")
static struct jh__kfd pm = { -1, 0, 0 };
static char pm_path[64];
static int pm_refs;
static unsigned pm_gen;         /* jh__fork_generation() when opened: no getpid() per line */

/* A map last written before this process began is a dead process's that had our pid
 * (perf maps outlive their process in /tmp): its names are not ours, and perf would give
 * them to our code. It is emptied. One written since is ours, or another runtime's in this
 * process: kept. (A dead process's write in the last 10 ms before we began, the start
 * time's resolution, is taken for ours.) */
static void forget_stale(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0)
        return;                 /* new (the usual case): /proc is not read */
    uint64_t start = jh__process_start_ns();
    if (!start)
        return;
    uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    if (mtime < start && ftruncate(fd, 0) != 0)
        return;                 /* kept as it is: what it held is only misleading */
}

/* pm_lock held. The file is (re)opened for the current pid: a fork child gets its own. A
 * program that closed our descriptor gets it opened again (the same file), never its own
 * file under our number written to (base/files.h, jh__kfd). */
static int perfmap_file(void)
{
    unsigned gen = jh__fork_generation();
    if (pm.fd >= 0 && pm_gen == gen) {
        int fd = jh__kfd_get(&pm, pm_path, O_WRONLY | O_APPEND);
        if (fd >= 0)
            return fd;
    }
    jh__kfd_close(&pm);
    snprintf(pm_path, sizeof pm_path, "/tmp/perf-%d.map", (int)getpid());
    int fd = jh__kfd_keep(&pm, jh__open_private(pm_path, O_WRONLY | O_CREAT | O_APPEND, 0));
    if (fd >= 0) {
        pm_gen = gen;
        forget_stale(fd);
    }
    return fd;
}

static int write_line(uint64_t start, uint64_t size, const char *name)
{
    char small[512];
    size_t n = jh__perfmap_line(small, sizeof small, start, size, name);
    char *line = small;
    if (n > sizeof small) {
        if (!(line = malloc(n)))
            return -ENOMEM;
        n = jh__perfmap_line(line, n, start, size, name);
    }
    jh__lock(&pm_lock);
    int fd = perfmap_file();
    int err = fd < 0 ? fd : jh__write_all(fd, line, n);
    jh__unlock(&pm_lock);
    if (line != small)
        free(line);
    return err;
}

static int perfmap_open(const struct jh__chan_env *env, void **state)
{
    jh__lock(&pm_lock);
    int fd = perfmap_file();
    if (fd >= 0)
        pm_refs++;
    jh__unlock(&pm_lock);
    if (fd < 0) {
        jh__diag(env->diag, JH_LOG_ERROR, "perfmap: /tmp/perf-%d.map: %s%s", (int)getpid(),
                 jh__file_error(fd), jh__diag_file_fix(fd, 0));
        return fd;
    }
    *state = (void *)env;
    return 0;
}

static int perfmap_add(void *state, struct jh__entry *e)
{
    (void)state;
    return write_line(e->fn.start, e->fn.size, e->fn.name);
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
    const struct jh__chan_env *env = state;
    for (struct jh__entry *e = jh__view_ceil(env, 0); e; e = jh__view_next(env, e)) {
        int err = perfmap_add(state, e);
        if (err < 0)
            return err;
    }
    return 0;
}

static void perfmap_close(void *state)
{
    (void)state;
    jh__lock(&pm_lock);
    if (--pm_refs <= 0) {
        jh__kfd_close(&pm);
        pm_refs = 0;
    }
    jh__unlock(&pm_lock);
}

const struct jh__channel_ops jh__perfmap_ops = {
    .name = "perfmap", .bit = JH_PERFMAP, .slotless = true, .open = perfmap_open, .add = perfmap_add,
    .move = perfmap_move, .forked = perfmap_forked, .close = perfmap_close,
};
