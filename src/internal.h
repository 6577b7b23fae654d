/*
 * internal.h — what the core shares with the channels and encoders. Nothing here is
 * exported from the shared library (-fvisibility=hidden + jitherald.map); internal names
 * carry the jh__ prefix so they never collide with the public jh_ API.
 */
#ifndef JH_INTERNAL_H
#define JH_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "jitherald.h"
#include "buf.h"

#define JH__HIDDEN __attribute__((visibility("hidden")))

#if defined(__x86_64__)
#define JH__ARCH_X86_64 1
#elif defined(__aarch64__)
#define JH__ARCH_ARM64 1
#endif

/* Channel slots, in the order the core calls them on add (reverse on remove). */
enum { JH__CH_AUDITLOG, JH__CH_UNWIND, JH__CH_PERFMAP, JH__CH_JITDUMP, JH__CH_GDB, JH__CH_ELFMAP,
       JH__NCHAN };

/*
 * One piece of live code: a private copy of the caller's description, plus registry links
 * and a slot per channel for its own bookkeeping. Strings and arrays are owned by the
 * entry (file names are interned in the context and shared).
 */
struct jh__entry {
    uint64_t id;
    uintptr_t start;
    size_t size;
    char *name;
    const char **files;         /* nfiles interned strings */
    uint32_t nfiles;
    uint32_t nlines;
    struct jh_line *lines;
    enum jh_unwind_kind unwind;
    uint32_t fp_push_end, fp_set_end;
    uint8_t *cfi;
    size_t cfi_len;
    /* registry: AVL tree by start address */
    struct jh__entry *left, *right;
    int height;
    void *chan[JH__NCHAN];       /* each channel's per-entry state, NULL until it sets it */
};

/*
 * A channel. Every hook runs with the context lock held, so hooks of one context never run
 * concurrently. A hook returning a negative errno makes the core report the channel once,
 * call its close hook and switch it off; the JIT's call still succeeds.
 */
struct jh__channel_ops {
    const char *name;           /* as in $JITHERALD */
    unsigned bit;               /* JH_PERFMAP ... */
    int  (*open)(jh_ctx *ctx, void **state);
    int  (*add)(void *state, struct jh__entry *e);
    int  (*remove)(void *state, struct jh__entry *e);
    int  (*move)(void *state, struct jh__entry *e, uintptr_t old_start);      /* e->start is new */
    int  (*patched)(void *state, struct jh__entry *e, uintptr_t addr, size_t len);
    int  (*flush)(void *state);
    /* In a fork child, before the first call: restart per-process files. NULL: nothing. */
    int  (*forked)(void *state);
    void (*close)(void *state);
};

extern const struct jh__channel_ops jh__perfmap_ops, jh__jitdump_ops, jh__gdb_ops,
       jh__unwind_ops, jh__elfmap_ops, jh__auditlog_ops;

/* Address-ordered live-code registry (registry.c). Not locked: the context lock guards it. */
struct jh__registry {
    struct jh__entry *root;
    size_t count;
    struct jh__entry ***idtab;   /* id -> entry, in chunks of JH__ID_CHUNK */
    size_t idtab_chunks;
};
#define JH__ID_CHUNK 4096

int  jh__reg_insert(struct jh__registry *r, struct jh__entry *e);   /* 0 or JH_EOVERLAP/-ENOMEM */
void jh__reg_erase(struct jh__registry *r, struct jh__entry *e);
struct jh__entry *jh__reg_by_id(const struct jh__registry *r, uint64_t id);
struct jh__entry *jh__reg_find(const struct jh__registry *r, uintptr_t addr); /* containing */
struct jh__entry *jh__reg_ceil(const struct jh__registry *r, uintptr_t addr); /* first start >= addr */
bool jh__reg_overlaps(const struct jh__registry *r, uintptr_t start, size_t size,
                      const struct jh__entry *except);
void jh__reg_fini(struct jh__registry *r);                         /* frees nothing but tables */
void jh__reg_rekey(struct jh__registry *r, struct jh__entry *e, uintptr_t new_start);
/* In address order: for (e = jh__reg_ceil(r, 0); e; e = jh__reg_next(r, e)) */
struct jh__entry *jh__reg_next(const struct jh__registry *r, const struct jh__entry *e);

struct jh_ctx {
    pthread_mutex_t lock;
    _Atomic unsigned live;      /* channel bits live now; read without the lock */
    struct {
        const struct jh__channel_ops *ops;
        void *state;
    } chan[JH__NCHAN];
    struct jh__registry reg;
    _Atomic uint64_t next_id;
    _Atomic bool stored;        /* the registry has held an entry: ids must be checked */
    unsigned fork_gen;          /* jh__fork_gen when files were last (re)opened */
    char *dir;                  /* for jitdump, elfmap, auditlog; created on first use */
    bool dir_ready;
    char *engine;
    unsigned flags;
    jh_log_fn *log;
    void *log_arg;
    bool debug;                 /* JITHERALD_DEBUG */
    uint32_t gdb_batch;
    uint64_t auditlog_limit;
    char **strings;             /* interned file names (open addressing) */
    size_t nstrings, strings_cap;
    jh_ctx *next_ctx;           /* all contexts, for fork handling */
};

/* Bumped in every fork child (pthread_atfork): a context whose fork_gen differs is in a
 * child that has not restarted its per-process files yet. */
extern _Atomic unsigned jh__fork_gen;

/* Logging (core.c): to the user's callback, else stderr when JITHERALD_DEBUG is set. */
void jh__log(jh_ctx *ctx, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The context's private directory, created (0700) and checked on first use. */
int jh__ctx_dir(jh_ctx *ctx, const char **dir);

/* Safe files (file.c). Paths may be in world-writable directories such as /tmp. */
/* Open path with O_NOFOLLOW|O_CLOEXEC (+flags), mode 0600; refuse anything that is not a
 * regular file owned by us with a single link. Returns the fd or a negative errno. */
int jh__open_private(const char *path, int flags);
/* mkdir -m 0700 if missing; refuse a symlink, a non-directory, or one owned by another
 * user; a directory others can write to is refused unless it has the sticky bit. */
int jh__ensure_dir(const char *path);
int jh__write_all(int fd, const void *p, size_t n);        /* 0 or -errno; retries EINTR */
int jh__writev_all(int fd, struct iovec *iov, int iovcnt); /* same, for a vector */

uint64_t jh__now_ns(void);                 /* CLOCK_MONOTONIC, as perf -k 1 uses */

/* Interned copy of s owned by ctx, or NULL on ENOMEM. Lock held. */
const char *jh__intern(jh_ctx *ctx, const char *s);

/* Audit log entry points used by the public jh_log_* calls (auditlog.c). */
int jh__auditlog_memory(void *state, const void *addr, size_t size, const char *type_hint);
int jh__auditlog_event(void *state, const char *name, const struct jh_attr *attrs, size_t n);

#endif
