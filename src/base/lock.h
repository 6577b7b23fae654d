/*
 * lock.h — the locks jitherald takes, and what makes fork() safe with them.
 *
 * A fork() taken while some thread holds a lock leaves that lock held forever in the child,
 * whose only thread is the one that forked. So every lock has exactly one fork path:
 *   - process-wide locks (one per channel that shares state between contexts) are defined
 *     with JH__LOCK_DEFINE, which registers them at load time; the atfork handler
 *     (core/fork.c) takes them all before fork() and releases them on both sides;
 *   - a context's lock, and the channel locks that belong to one context, are taken by the
 *     same handler through the context list and the channels' fork hooks.
 * Raw pthread mutexes appear nowhere else in src/ (scripts/check-layers.sh checks).
 *
 * Lock order (outer first): the context list, a context's lock, a channel's process-wide
 * lock, a channel's own inner lock. No two locks of one level are ever held together.
 */
#ifndef JH__BASE_LOCK_H
#define JH__BASE_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef _WIN32
/* Windows has no fork(): a lock is an SRWLOCK (a pointer-sized word, zero when free),
 * declared here without <windows.h> so that every file including this one does not get its
 * macros. lock_win.c does the calls. */
struct jh__lock {
    void *m;
    const char *name;
    struct jh__lock *next;
};
#define JH__LOCK_INIT(name) { 0, name, 0 }
void jh__lock_init(struct jh__lock *l, const char *name);
static inline void jh__lock_fini(struct jh__lock *l) { (void)l; }
void jh__lock(struct jh__lock *l);
void jh__unlock(struct jh__lock *l);
bool jh__trylock(struct jh__lock *l);
#else
#include <pthread.h>

struct jh__lock {
    pthread_mutex_t m;
    const char *name;
    struct jh__lock *next;      /* process-wide locks: the registered list */
};

#define JH__LOCK_INIT(name) { PTHREAD_MUTEX_INITIALIZER, name, NULL }

static inline void jh__lock_init(struct jh__lock *l, const char *name)
{
    pthread_mutex_init(&l->m, NULL);
    l->name = name;
    l->next = 0;
}
static inline void jh__lock_fini(struct jh__lock *l) { pthread_mutex_destroy(&l->m); }
static inline void jh__lock(struct jh__lock *l) { pthread_mutex_lock(&l->m); }
static inline void jh__unlock(struct jh__lock *l) { pthread_mutex_unlock(&l->m); }
static inline bool jh__trylock(struct jh__lock *l) { return pthread_mutex_trylock(&l->m) == 0; }
#endif

/* A process-wide lock, taken by the fork handler: `JH__LOCK_DEFINE(static, pm_lock, "perfmap");` */
#define JH__LOCK_DEFINE(storage, var, name)                                          \
    storage struct jh__lock var = JH__LOCK_INIT(name);                               \
    __attribute__((constructor)) static void var##_register(void) { jh__lock_register(&var); }

void jh__lock_register(struct jh__lock *l);

/* The fork handler's share of the work: take / release every registered lock. */
void jh__locks_take_all(void);
void jh__locks_release_all(void);

/* Bumped in every fork child by the fork handler. State tagged with an older generation
 * belongs to the parent (its pid, its files): a channel restarts it on its next call. */
extern _Atomic unsigned jh__fork_gen;
static inline unsigned jh__fork_generation(void)
{
    return atomic_load_explicit(&jh__fork_gen, memory_order_relaxed);
}

/* The calling thread's id (gettid; Windows: GetCurrentThreadId) for records, cached per
 * thread and per fork. */
uint32_t jh__thread_id(void);

/* Install a fork handler (the one of core/fork.c): pthread_atfork. Windows has no fork():
 * nothing to do, and the fork generation stays 0. */
void jh__atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* fn runs once per process, whichever thread gets here first; the others wait for it. */
#ifdef _WIN32
struct jh__once { void *once; };
#define JH__ONCE_INIT { 0 }
void jh__call_once(struct jh__once *o, void (*fn)(void));
#else
struct jh__once { pthread_once_t once; };
#define JH__ONCE_INIT { PTHREAD_ONCE_INIT }
static inline void jh__call_once(struct jh__once *o, void (*fn)(void)) { pthread_once(&o->once, fn); }
#endif

#endif
