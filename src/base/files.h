/*
 * files.h — files in directories other users can write to. perf insists on
 * /tmp/perf-<pid>.map, a predictable name in a world-writable directory, and users point
 * JITHERALD_DIR at shared places: whoever creates a name first could make us write through
 * a symlink, append into their file, truncate it, or hang us on a FIFO. So every open here
 *   - never follows a symlink (O_NOFOLLOW) and never blocks (O_NONBLOCK: a FIFO or device
 *     answers at once, and is then refused),
 *   - checks what it opened (a regular file of ours with a single link) before anything in
 *     it changes: truncation is a step after the check, never O_TRUNC,
 *   - creates with mode 0600.
 * Readers of files found by a guessable name (the CLI looking for /tmp/perf-PID.map) use
 * jh__open_regular with JH__OPEN_OWN for the same reasons.
 * On Windows (files_win.c) the same functions refuse reparse points (symbolic links,
 * junctions), devices, pipes and files with several links; ownership is left to the ACLs
 * of the directory (the default one is the user's own %TEMP%).
 */
#ifndef JH__BASE_FILES_H
#define JH__BASE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifndef _WIN32
#include <signal.h>
#include <sys/types.h>
#include <sys/uio.h>
#endif

enum {
    JH__OPEN_TRUNCATE = 1 << 0, /* jh__open_private: empty the file once it is known ours */
    JH__OPEN_OWN = 1 << 1,      /* jh__open_regular: refuse a file another user owns */
    JH__OPEN_NOFOLLOW = 1 << 2  /* jh__open_regular: refuse a symlink */
};

/* What an error of the functions below means, in words about files (not about code):
 * "refused: it is a symbolic link", "No such file or directory"... Never NULL. */
const char *jh__file_error(int err);

/* Open path for writing (oflags: O_WRONLY or O_RDWR, optionally O_CREAT, O_EXCL, O_APPEND;
 * O_TRUNC is refused with -EINVAL: pass JH__OPEN_TRUNCATE). The fd, or a negative errno:
 * -ELOOP a symlink, -EPERM another user's file or several links, -EINVAL not a regular
 * file (FIFO, device, directory). */
int jh__open_private(const char *path, int oflags, unsigned how);

/* Open path read-only, refusing anything but a regular file (and what `how` adds). The fd
 * (blocking mode restored) or a negative errno as above. */
int jh__open_regular(const char *path, unsigned how);

/* Unlink path only if it is a regular file of ours: 0, -ENOENT, -EPERM (someone else's: left
 * alone, even when we are root and the sticky bit would not stop us), or another errno. */
int jh__unlink_private(const char *path);

/* mkdir -m 0700 if missing; refuse a symlink, a non-directory, one owned by another user
 * (root's excepted), or one others can write to without the sticky bit. */
int jh__ensure_dir(const char *path);

/* A directory created and checked on first use (jh__dir_get), so that a JIT whose channels
 * never write a file never creates one. */
struct jh__dir {
    char *path;
    int err;                    /* 1: not checked yet, 0: ready, < 0: refused (reported) */
};
struct jh__diag;
/* 0 and *path, or the negative errno of the first attempt (reported once through diag). */
int jh__dir_get(struct jh__dir *d, const struct jh__diag *diag, const char **path);

/* Where jitherald puts its files when neither the JIT nor JITHERALD_DIR says: the library's
 * default and the CLI's, computed in this one place. "/tmp/jitherald-<euid>"; on Windows
 * "%TEMP%\jitherald". */
void jh__default_dir(char *buf, size_t len);

/* 0 or -errno; retry EINTR; a file-size limit gives -EFBIG, never SIGXFSZ. */
int jh__write_all(int fd, const void *p, size_t n);
#ifndef _WIN32
int jh__writev_all(int fd, struct iovec *iov, int iovcnt);
/* The same at file offset off (the file position does not move). */
int jh__pwrite_all(int fd, const void *p, size_t n, uint64_t off);
/* Zeros written over [from, to) of fd, up to 1 MiB a call: 0 or -errno as jh__pwrite_all;
 * where they end in *end (if not NULL), an error or not. Before a shared mapping's first
 * stores into a fallocated range: ext4 turns each page of an unwritten extent into a
 * written one in the page fault, a journal handle per page, where a write does many pages
 * at once (measured here: 4.2 us a page stored into, 1.1 with the zeros written first).
 * Used by every channel that stores through a shared mapping (jitdump, elfmap, the audit
 * log). */
int jh__pwrite_zeros(int fd, uint64_t from, uint64_t to, uint64_t *end);

/*
 * A descriptor the library keeps across calls (a perf map, a jitdump, an image, the audit
 * log, /proc/self/maps). A program may close descriptors it did not open (close_range,
 * closefrom, a loop up to the limit, dup2 over them) and get the number back for a file of
 * its own: the library must then never write to it, truncate, map or close it. So a kept
 * descriptor is moved out of the way (to JH__KFD_LOW or above when the limit allows: a
 * program's next open takes the lowest free number, not ours), and every use checks that
 * the number still names the file that was opened, by device and inode. That pair is the
 * file's own for everything kept here: regular files and /proc files (anonymous-inode
 * descriptors, eventfd, inotify, epoll, all share one pair: the library keeps none).
 */
#define JH__KFD_LOW 1000
struct jh__kfd {
    int fd;                     /* -1: none */
    dev_t dev;
    ino_t ino;
};
#define JH__KFD_NONE ((struct jh__kfd){ -1, 0, 0 })
/* Keep fd (closed on failure; fd < 0 is passed back). k->fd, or a negative errno. */
int jh__kfd_keep(struct jh__kfd *k, int fd);
/* Grow the process's descriptor table past JH__KFD_LOW now. Call it while the process has
 * one thread (a constructor): once threads share the table, the kernel grows it under
 * synchronize_rcu(), a wait of 5-16 ms measured here on the first jh__kfd_keep at node's
 * start under jitherald run (wall time, no CPU). Harmless when the limit is lower. */
void jh__kfd_reserve(void);
/* k's descriptor if the number still names the file it was opened on. If not, k forgets
 * it (never closing the program's file) and, given a path, opens that path again
 * (jh__open_private with oflags, no O_CREAT) provided it is the same file as before (a
 * file put in its place since is not ours to write); else -EBADF. */
int jh__kfd_get(struct jh__kfd *k, const char *path, int oflags);
/* Close k's descriptor if it is still ours; k->fd = -1 either way. */
void jh__kfd_close(struct jh__kfd *k);

/* Around any other call that may grow a file (ftruncate, fallocate): with a file-size limit
 * set, SIGXFSZ is blocked from begin to end, and end(g, err) takes back the one the call
 * raised when err is -EFBIG. */
struct jh__fsize_guard {
    bool on;
    sigset_t old;
};
void jh__fsize_guard_begin(struct jh__fsize_guard *g);
void jh__fsize_guard_end(struct jh__fsize_guard *g, int err);
#endif

#endif
