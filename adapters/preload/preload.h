/*
 * preload.h — libjitherald-run.so, the preload library behind `jitherald run` (see
 * preload.c for the session it makes work). Three parts:
 *   preload.c  loading, configuration, the follower thread, fork and exit;
 *   follow.c   reading the VM's perf map and jitdump as they grow, and announcing what
 *              they say through the public API;
 *   guard.c    the VM's mmap/munmap/mremap/mprotect/pkey_mprotect, interposed: serialised
 *              with the page swaps of announcements, and the jitdump found as perf finds
 *              it (the VM maps it executable).
 * Names here start with jhp_.
 */
#ifndef JHP_PRELOAD_H
#define JHP_PRELOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jitherald.h"

/* What a run did, for JITHERALD_RUN_STATS and the debug summary. Updated by the follower
 * thread only, read at exit. */
struct jhp_stats {
    uint64_t map_lines, dump_loads, dump_moves, dump_debug;
    uint64_t announced, replaced, same, moved, with_lines, with_cfi;
    uint64_t cfi_refused;       /* unwinding info that could not be handed on */
    uint64_t unreadable;        /* code no longer mapped readable when its line was read */
    uint64_t malformed;         /* lines and records that could not be read */
    uint64_t failed;            /* jh_code_add refused the description */
    uint64_t partial;           /* waits for the rest of a line or record */
    uint64_t truncations;       /* files that shrank: read again from the start */
};

/* preload.c */
extern jh_ctx *jhp_ctx;                 /* opened on the first announcement: jhp_open() */
extern jh_ctx *jhp_rec;                 /* the audit log's own, beside other channels */
bool jhp_open(void);
extern struct jhp_stats jhp_st;
void jhp_wake(void);                    /* make the follower thread look again */
bool jhp_stopping(void);                /* the process is exiting: stop reading */
__attribute__((format(printf, 1, 2))) void jhp_warn(const char *fmt, ...);

/* guard.c: the lock that keeps the VM from changing page mappings or protections while
 * an announcement reads and swaps its code. The follower thread takes it around every
 * jitherald call; the VM's calls take it only while jhp_guard_on is set. */
extern atomic_bool jhp_guard_on;
void jhp_guard_lock(void);
void jhp_guard_unlock(void);
void jhp_guard_thread_is_follower(void);   /* this thread's own mmap calls pass through */
void jhp_guard_atfork(void);
/* Is [start, start+size) mapped readable right now? (process_vm_readv: an error, never a
 * fault.) Call with the guard held, so that it stays so. */
bool jhp_readable(uint64_t start, uint64_t size);
/* A jitdump the VM mapped (PROT_EXEC, as perf wants): its path, or "" (taken once). */
bool jhp_take_dump_path(char *path, size_t len);

/* A descriptor of ours, moved out of the VM's way (>= 1000: helpers such as Erlang's
 * erl_child_setup close every descriptor above 3 and open their own pipes, which get the
 * lowest numbers), and how to tell it is still ours: a VM may close it, and the number
 * may come back as the VM's. */
struct jhp_fd {
    int fd;
    dev_t dev;
    ino_t ino;
};
void jhp_fd_take(struct jhp_fd *f, int fd);     /* fd < 0: f->fd = -1 */
bool jhp_fd_ours(const struct jhp_fd *f);
void jhp_fd_close(struct jhp_fd *f);            /* closes it only if still ours */

/* follow.c */
extern bool jhp_guess_fp;               /* JITHERALD_RUN_FP=0: no frame-pointer guess */
struct jhp_follow;
void jhp_follow_init(pid_t pid, double start_time);
int jhp_follow_inotify_fd(void);       /* -1 when there is none, or it is gone */
void jhp_follow_events(void);           /* inotify said something: read what is new */
void jhp_follow_dump(const char *path); /* start following this jitdump */
void jhp_follow_all(void);              /* read every followed file to its end */
void jhp_follow_fini(void);
void jhp_follow_forget(void);          /* fork child: drop the parent's descriptors */

#endif
