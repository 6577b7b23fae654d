/*
 * jitdump.c — jit-<pid>.dump for `perf inject --jit`: names, code bytes, source lines and
 * unwind tables of JIT code, turned by perf into one small ELF per function.
 *
 *     $ JITHERALD=jitdump perf record -k 1 -g ./minijit fib.mini
 *     $ perf inject --jit -i perf.data -o perf.jit.data
 *     $ perf report -i perf.jit.data --sort sym,srcline
 *         71.02%  [.] fib        fib.mini:4
 *     $ perf annotate -i perf.jit.data fib
 *
 * How perf finds the file: `perf record` sees our mmap() of it (PROT_READ|PROT_EXEC,
 * MAP_PRIVATE; the mapping is kept until the file is closed) in its MMAP events, and
 * `perf inject --jit` opens every mapped file whose basename is jit-<pid>.dump. -k 1 makes
 * perf use CLOCK_MONOTONIC, the clock of our timestamps; inject refuses the file otherwise.
 *
 * Per function we write [DEBUG_INFO][UNWINDING_INFO]LOAD as one writev() under one
 * process-wide lock: perf attaches the first two to the next LOAD it reads, so nothing
 * may come between them. Layout details are in jitdump_format.h. Three perf quirks:
 *   - DEBUG_INFO addresses are absolute (perf subtracts code_addr itself; the "+0x40" some
 *     JITs add dates from perf's old synthetic layout), and perf ends the line program at
 *     the last entry's address, so we add an entry at the end of the code: otherwise the
 *     last source line covers no bytes at all.
 *   - UNWINDING_INFO is encoded for perf's synthetic ELF (.text at 0x80, .eh_frame right
 *     after the code), not for the process.
 *   - perf widens the LOAD's mapping by the unwind data's size; when that would cover code
 *     that is already announced right after this function, we leave the unwind data out
 *     rather than let perf's mapping hide our neighbour.
 *
 * One file per process and directory, shared by the contexts that use it; code_index is a
 * process-wide counter, never reused. jh_code_remove writes nothing (the format has no
 * unload); jh_code_patched writes the function again under a new index; jh_code_move writes
 * MOVE. After fork() the child starts jit-<child pid>.dump and writes all live code again.
 * A write error (disk full...) cuts the partial unit off again, so the file stays valid up
 * to the last complete function; the channel then reports and switches off.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cfi.h"
#include "internal.h"
#include "jitdump_format.h"

struct jd_file {
    struct jd_file *next;
    char *dir;
    char path[PATH_MAX];
    int fd;
    void *marker;
    size_t marker_len;
    pid_t pid;
    int refs;
    int err;                    /* sticky: a write failed */
    uint64_t size;              /* bytes of whole records written */
};

/* Guards the list, every jd_file and the index counter. Taken inside a context's lock.
 * Re-initialised in a fork child: the child has a single thread and restarts its files. */
static pthread_mutex_t jd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct jd_file *jd_files;
static uint64_t jd_next_index;
static pthread_once_t jd_once = PTHREAD_ONCE_INIT;

static void jd_atfork_child(void) { pthread_mutex_init(&jd_lock, NULL); }
static void jd_install_atfork(void) { pthread_atfork(NULL, NULL, jd_atfork_child); }

struct jitdump {
    jh_ctx *ctx;
    struct jd_file *f;
    struct jh__buf buf;
};

#if defined(__aarch64__)
#define JD_ELF_MACH JH__JD_EM_AARCH64
#else
#define JD_ELF_MACH JH__JD_EM_X86_64
#endif

static uint32_t jd_tid(void) { return (uint32_t)syscall(SYS_gettid); }

static void prefix(struct jh__buf *b, uint32_t id)
{
    jh__buf_u32(b, id);
    jh__buf_u32(b, 0);          /* total_size, set by finish() */
    jh__buf_u64(b, 0);          /* timestamp, set under the lock by stamp() */
}

static void finish(struct jh__buf *b, size_t at, size_t extra)
{
    jh__buf_set_u32(b, at + 4, (uint32_t)(b->len - at + extra));
}

/* ---- the file ------------------------------------------------------------------------ */

/* jd_lock held. Create jit-<pid>.dump for the current process, header and marker. */
static int file_start(jh_ctx *ctx, struct jd_file *f)
{
    pid_t pid = getpid();
    int n = snprintf(f->path, sizeof f->path, "%s/jit-%d.dump", f->dir, (int)pid);
    if (n < 0 || (size_t)n >= sizeof f->path)
        return -ENAMETOOLONG;
    /* No O_TRUNC: a file we may not own must be checked before anything changes in it.
     * The mmap needs read access, hence O_RDWR. */
    int fd = jh__open_private(f->path, O_RDWR | O_CREAT | O_APPEND);
    if (fd < 0) {
        jh__log(ctx, JH_LOG_ERROR, "jitdump: %s: %s", f->path, jh_strerror(fd));
        return fd;
    }
    int err = 0;
    if (ftruncate(fd, 0) != 0)
        err = -errno;
    struct jh__buf h = { 0 };
    jh__buf_u32(&h, JH__JD_MAGIC);
    jh__buf_u32(&h, JH__JD_VERSION);
    jh__buf_u32(&h, JH__JD_HEADER_SIZE);
    jh__buf_u32(&h, JD_ELF_MACH);
    jh__buf_u32(&h, 0);
    jh__buf_u32(&h, (uint32_t)pid);
    jh__buf_u64(&h, jh__now_ns());
    jh__buf_u64(&h, 0);
    if (!err)
        err = h.err ? h.err : jh__write_all(fd, h.p, h.len);
    jh__buf_free(&h);
    void *m = MAP_FAILED;
    size_t mlen = (size_t)sysconf(_SC_PAGESIZE);
    if (!err) {
        /* perf only learns about the file from this mapping; exec permission is what puts
         * it in the MMAP events perf records (a noexec mount makes this fail). */
        m = mmap(NULL, mlen, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            err = -errno;
    }
    if (err) {
        jh__log(ctx, JH_LOG_ERROR, "jitdump: %s: %s", f->path, jh_strerror(err));
        close(fd);
        unlink(f->path);
        return err;
    }
    f->fd = fd;
    f->marker = m;
    f->marker_len = mlen;
    f->pid = pid;
    f->err = 0;
    f->size = JH__JD_HEADER_SIZE;
    return 0;
}

/* jd_lock held. In a fork child the inherited descriptor is the parent's file: leave it
 * untouched (no CLOSE record) and start our own. */
static int file_ready(jh_ctx *ctx, struct jd_file *f)
{
    if (f->fd >= 0 && f->pid == getpid())
        return f->err;
    if (f->fd >= 0) {
        munmap(f->marker, f->marker_len);
        close(f->fd);
        f->fd = -1;
    }
    return file_start(ctx, f);
}

/* jd_lock held. Write one unit; the timestamps of every record in it and the LOAD's
 * index are filled in here so that file order, time order and index order agree. */
static int file_write(struct jd_file *f, struct jh__buf *b, const size_t *stamps, int nstamps,
                      size_t index_at, uint64_t *index, const void *code, size_t code_len)
{
    if (f->err)
        return f->err;
    uint64_t now = jh__now_ns();
    for (int i = 0; i < nstamps; i++)
        jh__buf_set_u64(b, stamps[i] + 8, now);
    if (index) {
        *index = jd_next_index++;
        jh__buf_set_u64(b, index_at, *index);
    }
    struct iovec iov[2] = { { b->p, b->len }, { (void *)code, code_len } };
    int err = jh__writev_all(f->fd, iov, code_len ? 2 : 1);
    if (err) {
        /* Cut a partial unit off, so the file stays well-formed up to the last complete
         * function; if even that fails, perf's reader stops at the torn record anyway. */
        f->err = err;
        if (ftruncate(f->fd, (off_t)f->size) != 0)
            return err;
        return err;
    }
    f->size += b->len + code_len;
    return 0;
}

/* ---- records ------------------------------------------------------------------------- */

static void put_debug_info(struct jh__buf *b, const struct jh__entry *e)
{
    size_t at = b->len;
    prefix(b, JH__JD_CODE_DEBUG_INFO);
    jh__buf_u64(b, e->start);
    jh__buf_u64(b, (uint64_t)e->nlines + 1);
    for (uint32_t i = 0; i < e->nlines; i++) {
        const struct jh_line *l = &e->lines[i];
        jh__buf_u64(b, e->start + l->offset);
        jh__buf_u32(b, l->line);
        jh__buf_u32(b, 0);
        jh__buf_str(b, l->file < e->nfiles ? e->files[l->file] : "?");
    }
    const struct jh_line *last = &e->lines[e->nlines - 1];
    jh__buf_u64(b, e->start + e->size);
    jh__buf_u32(b, last->line);
    jh__buf_u32(b, 0);
    jh__buf_str(b, last->file < e->nfiles ? e->files[last->file] : "?");
    finish(b, at, 0);
}

/* 1 if written, 0 if left out (no unwind info, or perf's widened mapping would cover a
 * neighbour), negative errno on an encoder error. */
static int put_unwinding_info(struct jh__buf *b, jh_ctx *ctx, const struct jh__entry *e)
{
    if (e->unwind == JH_UNWIND_NONE)
        return 0;
    struct jh__cfi_func fn;
    jh__cfi_func_from_entry(&fn, e);
    size_t at = b->len;
    prefix(b, JH__JD_CODE_UNWINDING_INFO);
    jh__buf_zeros(b, 24);
    size_t data = b->len, hdr = 0;
    int n = jh__cfi_perf_unwinding(b, &fn, JH__JD_PERF_TEXT_OFFSET, JH__CFI_HOST, &hdr);
    if (n <= 0) {
        if (!b->err)
            b->len = at;
        return n;
    }
    uint64_t usize = b->len - data, mapped = (usize + 7) & ~(uint64_t)7;
    uint64_t reach = ((e->size + 7) & ~(uint64_t)7) + mapped;
    struct jh__entry *next = jh__reg_ceil(&ctx->reg, e->start + 1);
    if (next && next->start - e->start < reach) {
        b->len = at;
        return 0;
    }
    jh__buf_set_u64(b, at + 16, usize);
    jh__buf_set_u64(b, at + 24, hdr);
    jh__buf_set_u64(b, at + 32, mapped);
    finish(b, at, 0);
    return 1;
}

/* Everything about one function, as one unit. */
static int emit_function(struct jitdump *jd, struct jh__entry *e)
{
    struct jh__buf *b = &jd->buf;
    size_t stamps[3];
    int ns = 0;
    b->len = 0;
    b->err = 0;
    if (e->nlines) {
        stamps[ns++] = b->len;
        put_debug_info(b, e);
    }
    size_t uat = b->len;
    int u = put_unwinding_info(b, jd->ctx, e);
    if (u < 0)
        jh__log(jd->ctx, JH_LOG_DEBUG, "jitdump: %s: no unwinding info: %s", e->name,
                jh_strerror(u));
    else if (u > 0)
        stamps[ns++] = uat;
    size_t at = b->len;
    stamps[ns++] = at;
    prefix(b, JH__JD_CODE_LOAD);
    jh__buf_u32(b, (uint32_t)getpid());
    jh__buf_u32(b, jd_tid());
    jh__buf_u64(b, e->start);
    jh__buf_u64(b, e->start);
    jh__buf_u64(b, e->size);
    size_t index_at = b->len;
    jh__buf_u64(b, 0);
    jh__buf_str(b, e->name);
    finish(b, at, e->size);
    if (b->err)
        return b->err;
    if (b->len - at + e->size > UINT32_MAX)
        return -EFBIG;          /* total_size is 32 bits: a 4 GiB function cannot be told */

    uint64_t index;
    pthread_mutex_lock(&jd_lock);
    int err = file_ready(jd->ctx, jd->f);
    if (!err)
        err = file_write(jd->f, b, stamps, ns, index_at, &index, (const void *)e->start,
                         e->size);
    pthread_mutex_unlock(&jd_lock);
    if (!err)
        e->chan[JH__CH_JITDUMP] = (void *)(uintptr_t)(index + 1);   /* 0: none yet */
    return err;
}

/* ---- channel hooks ------------------------------------------------------------------- */

static int jitdump_open(jh_ctx *ctx, void **state)
{
    const char *dir;
    int err = jh__ctx_dir(ctx, &dir);
    if (err)
        return err;
    pthread_once(&jd_once, jd_install_atfork);
    struct jitdump *jd = calloc(1, sizeof *jd);
    if (!jd)
        return -ENOMEM;
    jd->ctx = ctx;
    pthread_mutex_lock(&jd_lock);
    struct jd_file *f;
    for (f = jd_files; f; f = f->next)
        if (!strcmp(f->dir, dir))
            break;
    if (!f) {
        f = calloc(1, sizeof *f);
        if (f)
            f->dir = strdup(dir);
        if (!f || !f->dir) {
            if (f)
                free(f);
            err = -ENOMEM;
        } else {
            f->fd = -1;
            err = file_start(ctx, f);
            if (err) {
                free(f->dir);
                free(f);
            } else {
                f->next = jd_files;
                jd_files = f;
            }
        }
    } else {
        err = file_ready(ctx, f);
    }
    if (!err) {
        f->refs++;
        jd->f = f;
    }
    pthread_mutex_unlock(&jd_lock);
    if (err) {
        free(jd);
        return err;
    }
    *state = jd;
    return 0;
}

static int jitdump_add(void *state, struct jh__entry *e)
{
    return emit_function(state, e);
}

static int jitdump_move(void *state, struct jh__entry *e, uintptr_t old_start)
{
    struct jitdump *jd = state;
    uintptr_t slot = (uintptr_t)e->chan[JH__CH_JITDUMP];
    if (!slot)
        return emit_function(jd, e);
    struct jh__buf *b = &jd->buf;
    b->len = 0;
    b->err = 0;
    prefix(b, JH__JD_CODE_MOVE);
    jh__buf_u32(b, (uint32_t)getpid());
    jh__buf_u32(b, jd_tid());
    jh__buf_u64(b, e->start);
    jh__buf_u64(b, old_start);
    jh__buf_u64(b, e->start);
    jh__buf_u64(b, e->size);
    jh__buf_u64(b, slot - 1);
    finish(b, 0, 0);
    if (b->err)
        return b->err;
    size_t stamp = 0;
    pthread_mutex_lock(&jd_lock);
    int err = file_ready(jd->ctx, jd->f);
    if (!err)
        err = file_write(jd->f, b, &stamp, 1, 0, NULL, NULL, 0);
    pthread_mutex_unlock(&jd_lock);
    return err;
}

/* perf copies the bytes at LOAD time: patched code is announced again, under a new index,
 * so samples after this point disassemble the new bytes. */
static int jitdump_patched(void *state, struct jh__entry *e, uintptr_t addr, size_t len)
{
    (void)addr;
    (void)len;
    return emit_function(state, e);
}

static int jitdump_forked(void *state)
{
    struct jitdump *jd = state;
    pthread_mutex_lock(&jd_lock);
    int err = file_ready(jd->ctx, jd->f);
    pthread_mutex_unlock(&jd_lock);
    for (struct jh__entry *e = jh__reg_ceil(&jd->ctx->reg, 0); e && !err;
         e = jh__reg_next(&jd->ctx->reg, e))
        err = emit_function(jd, e);
    return err;
}

static void jitdump_close(void *state)
{
    struct jitdump *jd = state;
    if (!jd)
        return;
    pthread_mutex_lock(&jd_lock);
    struct jd_file *f = jd->f;
    if (--f->refs == 0) {
        if (f->fd >= 0 && f->pid == getpid()) {
            if (!f->err) {
                struct jh__buf b = { 0 };
                prefix(&b, JH__JD_CODE_CLOSE);
                finish(&b, 0, 0);
                size_t stamp = 0;
                if (!b.err)
                    file_write(f, &b, &stamp, 1, 0, NULL, NULL, 0);
                jh__buf_free(&b);
            }
            munmap(f->marker, f->marker_len);
        }
        if (f->fd >= 0)
            close(f->fd);
        for (struct jd_file **p = &jd_files; *p; p = &(*p)->next)
            if (*p == f) {
                *p = f->next;
                break;
            }
        free(f->dir);
        free(f);
    }
    pthread_mutex_unlock(&jd_lock);
    jh__buf_free(&jd->buf);
    free(jd);
}

const struct jh__channel_ops jh__jitdump_ops = {
    .name = "jitdump", .bit = JH_JITDUMP, .open = jitdump_open, .add = jitdump_add,
    .move = jitdump_move, .patched = jitdump_patched, .forked = jitdump_forked,
    .close = jitdump_close,
};
