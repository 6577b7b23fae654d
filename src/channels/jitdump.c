/*
 * jitdump.c — the jitdump channel: jit-<pid>.dump for `perf inject --jit`: names, code bytes, source lines and
 * unwind tables of JIT code, turned by perf into one small ELF per function.
 *
 *     $ JITHERALD=jitdump perf record -k 1 -g ./minijit fib.mini
 *     $ perf inject --jit -i perf.data -o perf.jit.data
 *     $ perf report -i perf.jit.data --sort sym,srcline
 *         71.02%  [.] fib        fib.mini:4
 *     $ perf annotate -i perf.jit.data fib
 *
 * How perf finds the file: `perf record` sees our mmap() of it (PROT_READ|PROT_EXEC, and
 * PROT_BTI where arm64's CPU enforces BTI; MAP_PRIVATE; the mapping is kept until the file
 * is closed) in its MMAP events, and
 * `perf inject --jit` opens every mapped file whose basename is jit-<pid>.dump. -k 1 makes
 * perf use CLOCK_MONOTONIC, the clock of our timestamps; inject refuses the file otherwise.
 *
 * Per function we write [DEBUG_INFO][UNWINDING_INFO]LOAD (encoded by fmt/jitdump.c, which
 * holds perf's quirks) as one writev() under one process-wide lock: perf attaches the first
 * two to the next LOAD it reads, so nothing may come between them.
 *
 * One file per process and directory, shared by the contexts that use it; code_index is a
 * process-wide counter, never given to two functions. jh_code_remove writes nothing (the
 * format has no unload); jh_code_patched writes the function again under the index it has
 * (one row in perf report however often it is patched); jh_code_move writes MOVE. After fork() the child starts jit-<child pid>.dump and writes all live code again.
 * A write error (disk full...) cuts the partial unit off again, so the file stays valid up
 * to the last complete function; the channel then reports and switches off.
 *
 * Records are stored through a MAP_SHARED window of the file, not written: a writev per
 * function (and per patch) was most of this channel's cost (an ext4 write updates the
 * file's times under a journal handle each time: ~3 us a LuaJIT trace, issue 30). The
 * bytes are in the page cache when the store retires, so a crash of the process loses
 * nothing a write() would have kept. The file grows ahead of the records by a written
 * chunk of zeros (a full disk or a file-size limit fails that write, never a store:
 * SIGBUS), and the unit's first total_size is stored last: a reader of a file whose
 * process died finds 0 there and stops, as perf's reader does at a total_size below
 * the prefix (tools/perf/util/jitdump.c, jit_get_next_entry); the zeros past the last
 * record are trimmed at close. Where the file cannot be mapped, each unit is written.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/lock.h"
#include "base/os.h"
#include "channels/channel.h"
#include "channels/jitdump_stats.h"
#include "fmt/arch.h"
#include "fmt/jitdump.h"

struct jd_file {
    struct jd_file *next;
    char *dir;
    char path[PATH_MAX];
    struct jh__kfd fd;          /* base/files.h: checked before each use */
    void *marker;
    size_t marker_len;
    pid_t pid;
    int refs;
    int err;                    /* sticky: a write failed */
    uint64_t size;              /* bytes of whole records written */
    uint64_t alloc;             /* bytes the file holds: records, then zeros */
    uint8_t *win;               /* MAP_SHARED window of the file from win_off */
    uint64_t win_off;
    size_t win_len;
    bool nomap;                 /* the window cannot be mapped: units are written */
};

/* Guards the list, every jd_file and the index counter. Taken inside a context's lock. */
JH__LOCK_DEFINE(static, jd_lock, "jitdump")
static struct jd_file *jd_files;
static uint64_t jd_next_index;

/*
 * A patch writes its function's unit again (perf has no partial LOAD), and its records but
 * the timestamps and the code index come out byte for byte as before: the same description
 * (an entry changes only by a move), place, next function, process and thread. The last
 * units encoded are kept, direct-mapped by id (ids only grow: the last KEPT ids have a
 * slot each), so that a LuaJIT side trace's patch of its parent, a few traces later,
 * copies them (~5,700 instructions of encoding a unit, 0.7 patches a trace) and restamps.
 */
#define KEPT 64
struct jd_kept {
    uint64_t id, start, next;   /* id 0: empty */
    uint32_t pid, tid;
    struct jh__jd_unit u;       /* offsets from the unit's start */
    uint8_t *p;                 /* its records, timestamps and index 0 */
    size_t len, cap;
};

struct jitdump {
    const struct jh__chan_env *env;
    struct jd_file *f;
    struct jh__buf buf;
    struct jd_kept *kept;       /* KEPT, at the first unit; NULL: none */
};

static _Atomic uint64_t jd_reused;      /* units copied from kept ones (tests) */

uint64_t jh__jitdump_reused(void)
{
    return atomic_load_explicit(&jd_reused, memory_order_relaxed);
}

#define SLOT(jd, e) ((e)->slot[(jd)->env->slot])

/* ---- the file ------------------------------------------------------------------------ */

/* The process id, cached per thread and per fork (jh__fork_generation): it goes into every
 * record and decides whether the file is ours, and getpid() twice per record was a tenth
 * of this channel's system calls. */
static pid_t jd_pid(void)
{
    static _Thread_local pid_t pid;
    static _Thread_local unsigned gen;
    unsigned g = jh__fork_generation();
    if (!pid || gen != g) {
        pid = getpid();
        gen = g;
    }
    return pid;
}

/* jd_lock held. Create jit-<pid>.dump for the current process, header and marker. */
static int file_start(const struct jh__chan_env *env, struct jd_file *f)
{
    pid_t pid = jd_pid();
    int n = snprintf(f->path, sizeof f->path, "%s/jit-%d.dump", f->dir, (int)pid);
    if (n < 0 || (size_t)n >= sizeof f->path)
        return -ENAMETOOLONG;
    /* Checked before anything changes in it; the mmap needs read access, hence O_RDWR. */
    struct jh__kfd k;
    int fd = jh__kfd_keep(&k, jh__open_private(f->path, O_RDWR | O_CREAT, JH__OPEN_TRUNCATE));
    if (fd < 0) {
        jh__diag(env->diag, JH_LOG_ERROR, "jitdump: %s: %s%s", f->path, jh__file_error(fd),
                 jh__diag_file_fix(fd, 1));
        return fd;
    }
    struct jh__buf h = { 0 };
    jh__jd_header(&h, JH__ARCH_HOST, (uint32_t)pid, jh__now_ns());
    int err = h.err ? h.err : jh__write_all(fd, h.p, h.len);
    jh__buf_free(&h);
    void *m = MAP_FAILED;
    size_t mlen = (size_t)sysconf(_SC_PAGESIZE);
    if (!err) {
        /* perf only learns about the file from this mapping; exec permission is what puts
         * it in the MMAP events perf records (a noexec mount makes this fail). The page
         * holds copies of the JIT's code (LOAD records): where the CPU enforces BTI it is
         * guarded, so that it is no target for an indirect branch the JIT's own guarded
         * code would refuse; nothing ever runs there. */
        int guard = jh__arch_host_guard_prot();
        m = mmap(NULL, mlen, PROT_READ | PROT_EXEC | guard, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            err = -errno;
    }
    if (err) {
        jh__diag(env->diag, JH_LOG_ERROR, "jitdump: %s: %s%s", f->path, jh__file_error(err),
                 err == -EPERM || err == -EACCES ? "; perf needs it mapped executable: is "
                 "JITHERALD_DIR on a noexec file system? set JITHERALD_DIR elsewhere" :
                 jh__diag_file_fix(err, 1));
        close(fd);
        jh__unlink_private(f->path);
        return err;
    }
    f->fd = k;
    f->marker = m;
    f->marker_len = mlen;
    f->pid = pid;
    f->err = 0;
    f->size = f->alloc = JH__JD_HEADER_SIZE;
    f->win = NULL;
    f->win_off = 0;
    f->win_len = 0;
    f->nomap = false;
    return 0;
}

static void win_drop(struct jd_file *f)
{
    if (f->win)
        munmap(f->win, f->win_len);
    f->win = NULL;
    f->win_len = 0;
}

/* jd_lock held. In a fork child the inherited descriptor is the parent's file: leave it
 * untouched (no CLOSE record) and start our own. */
static int file_ready(const struct jh__chan_env *env, struct jd_file *f)
{
    if (f->pid == jd_pid() && (f->fd.fd >= 0 || f->err))
        return f->err;      /* the descriptor is checked where it is used: file_fd */
    if (f->fd.fd >= 0) {
        munmap(f->marker, f->marker_len);
        jh__kfd_close(&f->fd);
    }
    win_drop(f);                /* the parent's file: never stored into from here */
    return file_start(env, f);
}

/* jd_lock held. The program may have closed our descriptor: the same file is opened
 * again, or the channel stops (its file is gone), never a file of the program's written.
 * A store into the window needs no descriptor: only growing the file checks it. */
static int file_fd(struct jd_file *f)
{
    if (jh__kfd_get(&f->fd, f->path, O_RDWR) < 0)
        f->err = -EBADF;
    return f->err ? f->err : f->fd.fd;
}

/*
 * jd_lock held. The file holds zeros up to at least `need`, and the window covers them
 * (0), or the file cannot be mapped (1: f->nomap), or a negative errno.
 * The file grows by a quarter of what it holds (64 KiB to 1 MiB: a short run does not pay
 * for a megabyte of zeros), or by just `need` where that fails (a nearly full disk).
 */
#define JD_AHEAD_MIN ((uint64_t)64 << 10)
#define JD_AHEAD_MAX ((uint64_t)1 << 20)
#define JD_WIN ((size_t)4 << 20)
static int file_room(struct jd_file *f, uint64_t need)
{
    if (need <= f->alloc && f->win && need <= f->win_off + f->win_len)
        return 0;
    int fd = file_fd(f);
    if (fd < 0)
        return fd;
    if (need > f->alloc) {
        uint64_t ahead = f->alloc / 4 < JD_AHEAD_MIN ? JD_AHEAD_MIN
                       : f->alloc / 4 > JD_AHEAD_MAX ? JD_AHEAD_MAX : f->alloc / 4;
        uint64_t to = (need + ahead + 4095) & ~(uint64_t)4095, at = f->alloc;
        int err = 0;
        for (int exact = 0; at < need && exact < 2; exact++, to = need)
            err = jh__pwrite_zeros(fd, at, to, &at);
        if (at < need)
            return err ? err : -EIO;
        uint64_t from = f->alloc;
        f->alloc = at;
        if (f->win && at <= f->win_off + f->win_len) {
#ifdef MADV_POPULATE_WRITE
            /* the pages mapped now, in one call, not one fault each as records reach them */
            uintptr_t pg = (uintptr_t)(f->win + (from - f->win_off)) & ~(uintptr_t)4095;
            madvise((void *)pg, (uintptr_t)(f->win + (at - f->win_off)) - pg, MADV_POPULATE_WRITE);
#else
            (void)from;
#endif
        }
    }
    if (!f->win || need > f->win_off + f->win_len) {
        win_drop(f);
        uint64_t off = f->size & ~(uint64_t)4095;
        size_t len = need - off > JD_WIN ? (size_t)((need - off + 4095) & ~(uint64_t)4095) : JD_WIN;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
        if (m == MAP_FAILED) {
            f->nomap = true;        /* a file system without shared mappings: written */
            return 1;
        }
        f->win = m;
        f->win_off = off;
        f->win_len = len;
#ifdef MADV_POPULATE_WRITE
        madvise(m, f->alloc - off < len ? (size_t)(f->alloc - off) : len, MADV_POPULATE_WRITE);
#endif
    }
    return 0;
}

/* jd_lock held. Store (or write) one unit, and code_len bytes of code after it. */
static int file_write(struct jd_file *f, const struct jh__buf *b, const void *code,
                      size_t code_len)
{
    if (f->err)
        return f->err;
    uint64_t len = b->len + code_len;
    int err = 0;
    if (!f->nomap) {
        err = file_room(f, f->size + len);
        if (!err) {
            uint8_t *p = f->win + (f->size - f->win_off);
            memcpy(p, b->p, 4);                                 /* id */
            memcpy(p + 8, b->p + 8, b->len - 8);
            if (code_len)
                memcpy(p + b->len, code, code_len);
            atomic_signal_fence(memory_order_release);          /* a crash: see the top */
            memcpy(p + 4, b->p + 4, 4);                         /* total_size, the commit */
            f->size += len;
            return 0;
        }
        if (err > 0)
            err = 0;                        /* no window here (ENODEV...): written instead */
        else if (err == -EBADF)
            return err;
    }
    int fd = err ? -1 : file_fd(f);
    if (fd < 0 && !err)
        return fd;
    if (!err) {
        /* guarded (SIGXFSZ held under a file-size limit) and resumed after short writes */
        err = jh__pwrite_all(fd, b->p, b->len, f->size);
        if (!err && code_len)
            err = jh__pwrite_all(fd, code, code_len, f->size + b->len);
        if (!err) {
            f->size += len;
            if (f->alloc < f->size)
                f->alloc = f->size;
            return 0;
        }
    }
    /* Cut a partial unit and the zeros off, so the file stays well-formed up to the last
     * complete function; if even that fails, perf's reader stops at the torn record or at
     * the first zero total_size anyway. */
    f->err = err;
    win_drop(f);
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);
    int terr = ftruncate(f->fd.fd, (off_t)f->size) ? -errno : 0;
    jh__fsize_guard_end(&g, terr);
    return err;
}

/* jd_lock held: the file ends at its last record (the zeros ahead of it trimmed). */
static void file_trim(struct jd_file *f)
{
    win_drop(f);
    if (f->alloc <= f->size)
        return;
    struct jh__fsize_guard g;
    jh__fsize_guard_begin(&g);
    int terr = ftruncate(f->fd.fd, (off_t)f->size) ? -errno : 0;
    jh__fsize_guard_end(&g, terr);
    if (!terr)
        f->alloc = f->size;
}

/* ---- records ------------------------------------------------------------------------- */

/* Everything about one function, as one unit: under a new code_index, or (again: a patch)
 * under the one it has. */
static int encode(struct jitdump *jd, struct jh__entry *e, bool again, struct jh__jd_unit *u)
{
    struct jh__buf *b = &jd->buf;
    b->len = 0;
    b->err = 0;
    struct jh__entry *next = jh__view_ceil(jd->env, e->node.start + 1);
    uint64_t nx = next ? next->node.start : 0;
    uint32_t pid = (uint32_t)jd_pid(), tid = jh__thread_id();
    if (!jd->kept)
        jd->kept = calloc(KEPT, sizeof *jd->kept);      /* none: nothing kept */
    struct jd_kept *k = jd->kept ? &jd->kept[e->node.id % KEPT] : NULL;
    if (again && k && k->id == e->node.id && k->start == e->node.start && k->next == nx &&
        k->pid == pid && k->tid == tid) {
        jh__buf_put(b, k->p, k->len);
        *u = k->u;
        atomic_fetch_add_explicit(&jd_reused, 1, memory_order_relaxed);
        return b->err;
    }
    jh__entry_insns(e);         /* (encoded once for every channel) */
    int err = jh__jd_function(b, &e->fn, JH__ARCH_HOST, pid, tid, 0, 0, nx, u);
    if (err || !k)
        return err;
    k->id = 0;
    if (b->len > k->cap) {
        uint8_t *p = realloc(k->p, b->len);
        if (!p)
            return 0;
        k->p = p;
        k->cap = b->len;
    }
    memcpy(k->p, b->p, b->len);
    *k = (struct jd_kept){ e->node.id, e->node.start, nx, pid, tid, *u, k->p, b->len, k->cap };
    return 0;
}

static int emit_function(struct jitdump *jd, struct jh__entry *e, bool again)
{
    struct jh__buf *b = &jd->buf;
    struct jh__jd_unit u;
    int err = encode(jd, e, again, &u);
    if (err)
        return err;
    if (u.unwind_err)
        jh__diag(jd->env->diag, JH_LOG_DEBUG, "jitdump: %s: no unwinding info: %s",
                 e->fn.name, jh_strerror(u.unwind_err));
    uint64_t index, had = (uintptr_t)SLOT(jd, e);
    jh__lock(&jd_lock);
    err = file_ready(jd->env, jd->f);
    if (!err) {
        /* Stamped under the lock, so that file order and time order agree. */
        index = again && had ? had - 1 : jd_next_index++;
        jh__jd_restamp(b, &u, jh__now_ns(), index);
        err = file_write(jd->f, b, (const void *)e->node.start, e->node.size);
    }
    jh__unlock(&jd_lock);
    if (!err)
        SLOT(jd, e) = (void *)(uintptr_t)(index + 1);   /* 0: none yet */
    return err;
}

/* ---- channel hooks ------------------------------------------------------------------- */

static int jitdump_open(const struct jh__chan_env *env, void **state)
{
    const char *dir;
    int err = jh__chan_dir(env, &dir);
    if (err)
        return err;
    struct jitdump *jd = calloc(1, sizeof *jd);
    if (!jd)
        return -ENOMEM;
    jd->env = env;
    jh__lock(&jd_lock);
    struct jd_file *f;
    for (f = jd_files; f; f = f->next)
        if (!strcmp(f->dir, dir))
            break;
    if (!f) {
        f = calloc(1, sizeof *f);
        if (f && !(f->dir = strdup(dir))) {
            free(f);
            f = NULL;
        }
        if (!f) {
            err = -ENOMEM;
        } else {
            f->fd = JH__KFD_NONE;
            err = file_start(env, f);
            if (err) {
                free(f->dir);
                free(f);
            } else {
                f->next = jd_files;
                jd_files = f;
            }
        }
    } else {
        err = file_ready(env, f);
    }
    if (!err) {
        f->refs++;
        jd->f = f;
    }
    jh__unlock(&jd_lock);
    if (err) {
        free(jd);
        return err;
    }
    *state = jd;
    return 0;
}

static int jitdump_add(void *state, struct jh__entry *e)
{
    return emit_function(state, e, false);
}

static int jitdump_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct jitdump *jd = state;
    uintptr_t slot = (uintptr_t)SLOT(jd, e);
    if (!slot)
        return emit_function(jd, e, false);
    struct jh__buf *b = &jd->buf;
    b->len = 0;
    b->err = 0;
    jh__lock(&jd_lock);
    int err = file_ready(jd->env, jd->f);
    if (!err) {
        jh__jd_move(b, (uint32_t)jd_pid(), jh__thread_id(), old_start, e->node.start,
                    e->node.size, slot - 1, jh__now_ns());
        err = b->err ? b->err : file_write(jd->f, b, NULL, 0);
    }
    jh__unlock(&jd_lock);
    return err;
}

/* perf copies the bytes at LOAD time: patched code is announced again so perf annotate
 * shows the new bytes, under the index it already has. perf inject then writes the same
 * jitted-<pid>-<index>.so again (same name, same inode: O_TRUNC), so every sample of the
 * function, before and after the patch, lands in one DSO and one row of perf report: perf
 * merges rows by DSO base name, symbol offset and size (tools/perf/util/sort.c,
 * sort__sym_cmp). A new index per patch made one row per patch. */
static int jitdump_patched(void *state, struct jh__entry *e, uintptr_t addr, size_t len)
{
    (void)addr;
    (void)len;
    return emit_function(state, e, true);
}

static int jitdump_forked(void *state)
{
    struct jitdump *jd = state;
    jh__lock(&jd_lock);
    int err = file_ready(jd->env, jd->f);
    jh__unlock(&jd_lock);
    /* Code the JIT freed before telling us (jh_code_remove may come after the unmap) has no
     * bytes left to write: a LOAD needs them. */
    for (struct jh__entry *e = jh__view_ceil(jd->env, 0); e && !err; e = jh__view_next(jd->env, e))
        if (jh__mem_readable((const void *)e->node.start, e->node.size))
            err = emit_function(jd, e, false);
    return err;
}

static void jitdump_close(void *state)
{
    struct jitdump *jd = state;
    jh__lock(&jd_lock);
    struct jd_file *f = jd->f;
    if (--f->refs == 0) {
        if (f->fd.fd >= 0 && f->pid == jd_pid() &&
            jh__kfd_get(&f->fd, f->path, O_RDWR) >= 0) {
            if (!f->err) {
                struct jh__buf b = { 0 };
                jh__jd_close(&b, jh__now_ns());
                if (!b.err)
                    file_write(f, &b, NULL, 0);
                jh__buf_free(&b);
            }
            file_trim(f);
            munmap(f->marker, f->marker_len);
        }
        win_drop(f);
        jh__kfd_close(&f->fd);
        for (struct jd_file **p = &jd_files; *p; p = &(*p)->next)
            if (*p == f) {
                *p = f->next;
                break;
            }
        free(f->dir);
        free(f);
    }
    jh__unlock(&jd_lock);
    jh__buf_free(&jd->buf);
    for (size_t i = 0; jd->kept && i < KEPT; i++)
        free(jd->kept[i].p);
    free(jd->kept);
    free(jd);
}

const struct jh__channel_ops jh__jitdump_ops = {
    .name = "jitdump", .bit = JH_JITDUMP, .open = jitdump_open, .add = jitdump_add,
    .move = jitdump_move, .patched = jitdump_patched, .forked = jitdump_forked,
    .close = jitdump_close,
};
