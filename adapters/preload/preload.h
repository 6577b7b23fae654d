/*
 * preload.h — libjitherald-run.so, the preload library behind `jitherald run` (preload.c
 * has the session it makes work). The VM is heard in its own threads, as it writes: no
 * thread of ours, no descriptor of ours, nothing read after the fact.
 *   preload.c   loading, configuration (read once, at start), the contexts, fork, exit;
 *   hear.c      the VM's calls that open, close and cut files, interposed: which files are
 *               its perf map and jitdump (hear.h: what it shares with writes.c);
 *   writes.c    the VM's calls that write them, interposed: the bytes it hands them,
 *               through write(2) or through stdio before any flush, reach stream.c
 *               before the call returns;
 *   stream.c    a heard file's bytes as they come: complete perf-map lines and jitdump
 *               records, each an announcement (stream.h: the stream, and the path every
 *               write takes, inline in the wrappers);
 *   format.c    the printf family's text, for the formats perf map writers use, printed
 *               here (V8's map line with its fields kept: not parsed back);
 *   announce.c  announcing through the public API, in the writing thread: readable first,
 *               old code in the way removed, the frame guess, debuggers told before the
 *               code can run; protection keys opened for reading while it runs;
 *   guard.c     the VM's mmap/munmap/mremap/mprotect/pkey_mprotect/madvise, interposed:
 *               kept apart from elfmap's page swaps without a lock held across the VM's
 *               call; code the VM unmaps or frees is removed.
 *   deepbind.c  dlopen, interposed: a library loaded with RTLD_DEEPBIND (PHP's opcache)
 *               has its calls of the above bound to ours, as LD_PRELOAD binds the rest.
 * Names here start with jhp_.
 */
#ifndef JHP_PRELOAD_H
#define JHP_PRELOAD_H

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/clock.h"
#include "jitherald.h"

#define JHP_TLS __thread __attribute__((tls_model("initial-exec")))

/* Times in nanoseconds, in a histogram of eighths of powers of two (values within 9%):
 * p50, p99 and max at exit. */
struct jhp_hist {
    uint64_t n, max, sum, bucket[48 * 8];
};
void jhp_hist_add(struct jhp_hist *h, uint64_t ns);
uint64_t jhp_hist_pct(const struct jhp_hist *h, unsigned pct);   /* upper bound, ns */

/* What a run did, for JITHERALD_RUN_STATS and the debug summary. Updated under the
 * announcement lock (jhp_lock), read at exit. */
struct jhp_stats {
    uint64_t map_lines, dump_loads, dump_moves, dump_debug;
    uint64_t announced, replaced, same, moved, with_lines, with_cfi, realigned;
    uint64_t cfi_refused;       /* unwinding info that could not be handed on */
    uint64_t fp_frames;         /* without CFI: a frame-pointer prologue proven (prologue.h) */
    uint64_t no_frame;          /* without CFI: none proven, described as where unwinding ends */
    uint64_t unreadable;        /* code not mapped readable when its line was heard */
    uint64_t malformed;         /* lines and records that could not be read */
    uint64_t rewrites;          /* a heard file started again (truncated, opened anew) */
    uint64_t failed;            /* jh_code_add refused the description */
    uint64_t forgotten;         /* functions removed because the VM unmapped or freed them */
    uint64_t no_swap;           /* elfmap skipped: a VM call on those pages did not end */
    uint64_t keyed;             /* elfmap skipped: the VM tagged the pages with a pkey */
    uint64_t file_text;         /* elfmap skipped: code in a loaded object's own text */
    uint64_t batches;           /* batches of code in a loaded object's text (announce.c) */
    uint64_t records;           /* map lines and jitdump loads/moves handed to announce.c */
    /* Per record, over the writes that made it (a jitdump record may take several, and
     * its debug record too): the time the VM's thread spent in us, and in its own calls
     * (write, fprintf...) that wrote it. */
    struct jhp_hist in_jh, vm_write;
};

/* ---- preload.c ---- */
struct jhp_config {
    unsigned channels;          /* JITHERALD_RUN; 0: nothing is heard (standby: every
                                   channel run adds, each context retaining) */
    unsigned asked;             /* the channels on from the start (standby: maybe none) */
    bool standby;               /* "standby" in JITHERALD_RUN: contexts in standby, for
                                   `jitherald attach` (gdb, unwind, auditlog) */
    bool debug;                 /* JITHERALD_DEBUG */
    bool guess_fp;              /* JITHERALD_RUN_FP != 0: frames from the code's bytes */
    bool library_rule;          /* JITHERALD is set: the library chooses, one context */
    char stats[1024];           /* JITHERALD_RUN_STATS, or "" */
    bool timed;                 /* stats or debug: the writes heard are timed */
};
extern struct jhp_config jhp_cfg;
/* A write heard is timed (the VM's call, and ours) only when someone reads the times
 * (JITHERALD_RUN_STATS, JITHERALD_DEBUG): node writes its jitdump a byte at a time
 * through fputc, and three clock reads a byte were 2% of its start-up. 0 otherwise. */
static inline uint64_t jhp_now(void)
{
    return jhp_cfg.timed ? jh__now_ns() : 0;
}
extern struct jhp_stats jhp_st;
extern pid_t jhp_pid;           /* getpid(), kept current across fork */
/* The contexts, opened when the VM opens its map or jitdump (jhp_open): the tools that
 * need no page touched and the record (gdb, unwind, auditlog: one store of every
 * function; JIT code told to debuggers at once, code in a file the loader mapped in
 * batches, announce.c; the record alone closed at exit); elfmap alone (its calls are the
 * ones the guard keeps apart from the VM's page changes, and can be skipped one at a
 * time). With JITHERALD set, one context: tools. Either may be NULL. */
extern jh_ctx *jhp_tools, *jhp_elf;
bool jhp_open(void);
__attribute__((format(printf, 1, 2))) void jhp_warn(const char *fmt, ...);
/* This thread is inside jitherald: the interposed calls it makes (the library's own
 * mmap, write...) go straight to libc. */
extern JHP_TLS unsigned jhp_inside;

/* The announcement lock: one announcement, one stream's bytes at a time. Taken by hear.c
 * around feeding a stream, and by fork (preload.c). A futex word (0 free, 1 held, 2 held
 * and waited for: Drepper's "Futexes Are Tricky", mutex 2), not a pthread mutex: it is
 * taken for every write the VM makes to its map or jitdump (node: ~27,000 at its start,
 * most a few bytes), where glibc's mutex cost 63 instructions a write; inline, this costs
 * ~6 when no one waits. Leaves errno as it was. */
extern atomic_int jhp_ann;
void jhp_lock_wait(int seen);
void jhp_unlock_wake(void);
static inline void jhp_lock(void)
{
    int c = 0;
    if (!atomic_compare_exchange_strong_explicit(&jhp_ann, &c, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        jhp_lock_wait(c);
}
static inline void jhp_unlock(void)
{
    if (atomic_exchange_explicit(&jhp_ann, 0, memory_order_release) == 2)
        jhp_unlock_wake();
}

/* errno as the VM's call left it, put back when the enclosing block ends: what we do after
 * the VM's call (a probe, a file of ours) must not change what the VM reads there. */
static inline void jhp_errno_back(const int *e) { errno = *e; }
#define JHP_KEEP_ERRNO int jhp_errno_ __attribute__((cleanup(jhp_errno_back))) = errno

/* This process heard a map or a jitdump (preload.c: said at the run's end if none did). */
void jhp_heard_something(void);

/* ---- deepbind.c (and deepbind_jump.c, the exported dlopen) ---- */
extern void *jhp_next_dlopen;   /* libc's dlopen, once known */
/* A RTLD_DEEPBIND load: done, then the object's calls bound to ours. */
void *jhp_dlopen_deep(const char *file, int mode);

/* ---- announce.c ---- */
enum jhp_kind { JHP_MAP = 1, JHP_DUMP = 2 };
struct jhp_fn {
    const char *name;           /* name_len bytes, not NUL-terminated, none of them NUL
                                   (the map's reader refuses such a line; a LOAD's name
                                   ends at its first) */
    size_t name_len;
    uint64_t start, size;
    const struct jh_line *lines;
    uint32_t nlines;
    const char *const *files;
    uint32_t nfiles;
    const uint8_t *eh_frame;    /* jh_code.eh_frame (JH_UNWIND_EH_FRAME), or NULL */
    size_t eh_frame_len;
    uint64_t eh_frame_addr;
    int from;                   /* JHP_MAP or JHP_DUMP: the file that said it */
};
/* Announce f to every context (jhp_lock held): the VM has just written it. */
void jhp_announce(const struct jhp_fn *f);
/* A jitdump MOVE (jhp_lock held). */
void jhp_announce_move(uint64_t old_start, uint64_t new_start, uint64_t size);
/* The VM is unmapping, replacing or freeing [start, start+len): what was announced there
 * goes. Any thread; takes no lock of ours. */
void jhp_forget(uint64_t start, uint64_t len);
/* Could [start, start+len) hold announced code? (A cheap test on the range every
 * announcement so far spans.) */
bool jhp_maybe_code(uint64_t start, uint64_t len);
/* The functions held for a batch handed over (at exit). */
void jhp_flush_all(void);

/* ---- stream.c ---- */
struct jhp_stream;
/* The stream of a file the VM opened (JHP_MAP, JHP_DUMP), with no state yet; NULL when
 * all are taken (reported once). */
struct jhp_stream *jhp_stream_get(enum jhp_kind kind, const char *path);
/* The file starts again (opened with truncation, or shrunk): state from the start. */
void jhp_stream_reset(struct jhp_stream *s);
/* (jhp_stream_feed, n more bytes the VM wrote to it: stream.h) */
/* A whole perf map line the VM printed with a format VMs print their map with (V8's "%lx
 * %x %.*s\n"), printed by jhp_format_map_line: its fields, and its text as written, which
 * is exactly "START SIZE NAME\n" (lowercase hex), the name inside it. */
struct jhp_map_line {
    uint64_t start, size;
    const char *name;           /* name_len bytes, none of them NUL (%s ends at the first) */
    size_t name_len;
    const char *text;
    size_t n;
};
/* l as the next line of s, from its fields rather than parsed back from its text
 * (jhp_lock held): what the map's reader makes of that text, announced. false, and
 * nothing done, when s is not a map, holds part of a line, or the name has a newline (two
 * lines of text): the caller feeds the text then. */
bool jhp_stream_map_line(struct jhp_stream *s, const struct jhp_map_line *l);
/* Bytes the file held before it was heard (a jitdump found by its mmap): read once. */
void jhp_stream_catch_up(struct jhp_stream *s, int fd);
const char *jhp_stream_path(const struct jhp_stream *s);
/* Does the file end at off, as far as what was heard tells? (pwrite at its end) */
bool jhp_stream_at(const struct jhp_stream *s, uint64_t off);


/* ---- hear.c ---- */
/* Is basename(path) perf-<pid>.map or jit-<pid>.dump of this process? The kind, or 0. */
enum jhp_kind jhp_kind_of(const char *path);
/* A descriptor the VM mapped PROT_EXEC (perf's way of finding a jitdump): heard from now
 * on if it is our jitdump and was not already. */
void jhp_hear_mapped(int fd);

/* ---- format.c ---- */
/* fmt with ap's arguments (read from a copy: ap is left as it was) into out (cap bytes,
 * NUL-terminated), the same bytes glibc's vsnprintf gives: their length. -1 when fmt has
 * anything but the plain conversions perf map writers use (%d %u %x %lx %s %.*s %p %c %%
 * ...: format.c says which) or the text needs more than cap bytes: vsnprintf's job then. */
int jhp_format(char *out, size_t cap, const char *fmt, va_list ap);
/* The same for the formats VMs print their perf map with ("%lx %x %.*s\n", V8's, and "%lx
 * %lx %s\n"), and the line's fields in *l (text: out): its length. -1 for any other
 * format, a NULL name, or a line longer than cap: jhp_format's or vsnprintf's job. */
int jhp_format_map_line(char *out, size_t cap, const char *fmt, va_list ap,
                        struct jhp_map_line *l);

/* ---- guard.c ---- */
extern atomic_bool jhp_guard_on;    /* elfmap is on: the VM's page calls are kept apart */
/* Around an elfmap call that may replace or restore pages in [lo, hi): waits for the VM's
 * page calls in flight there to end (bounded); false if they did not (skip elfmap). */
bool jhp_swap_begin(uint64_t lo, uint64_t hi);
void jhp_swap_end(void);
void jhp_guard_child(void);     /* fork child: the other threads' calls are gone */
/* Did the VM tag pages of [lo, hi) with a protection key (pkey_mprotect)? */
bool jhp_keyed(uint64_t lo, uint64_t hi);
/* Is [start, start+size) mapped readable right now? One system call per 1024 pages
 * (process_vm_readv: an error, never a fault), none for pages found readable since the
 * VM's last page call. */
bool jhp_readable(uint64_t start, uint64_t size);   /* jhp_lock held */
/* Protection keys: while jitherald reads the VM's code in the VM's thread, that thread may
 * read pages of every key (x86 PKRU: access-disable bits cleared, write-disable kept), then
 * its own rights come back. No-ops where the CPU or kernel has no protection keys. */
uint32_t jhp_pkeys_open(void);
void jhp_pkeys_close(uint32_t saved);
/* The PKRU value that lets a thread holding `pkru` read every key (pure: tested). */
uint32_t jhp_pkru_readable(uint32_t pkru);

#endif
