/* lock_win.c — lock.h on Windows: SRWLOCKs, InitOnce, and no fork() to prepare for. */
#include "base/lock.h"

#include <windows.h>

_Static_assert(sizeof(SRWLOCK) == sizeof(void *), "struct jh__lock holds an SRWLOCK");
_Static_assert(sizeof(INIT_ONCE) == sizeof(void *), "struct jh__once holds an INIT_ONCE");

_Atomic unsigned jh__fork_gen;

void jh__lock_init(struct jh__lock *l, const char *name)
{
    InitializeSRWLock((SRWLOCK *)&l->m);
    l->name = name;
    l->next = 0;
}

void jh__lock(struct jh__lock *l) { AcquireSRWLockExclusive((SRWLOCK *)&l->m); }
void jh__unlock(struct jh__lock *l) { ReleaseSRWLockExclusive((SRWLOCK *)&l->m); }
bool jh__trylock(struct jh__lock *l) { return TryAcquireSRWLockExclusive((SRWLOCK *)&l->m) != 0; }

/* No fork: process-wide locks need no handler to take them. */
void jh__lock_register(struct jh__lock *l) { (void)l; }
void jh__locks_take_all(void) {}
void jh__locks_release_all(void) {}
void jh__atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    (void)prepare, (void)parent, (void)child;
}

static BOOL CALLBACK once_trampoline(INIT_ONCE *o, void *fn, void **ctx)
{
    (void)o, (void)ctx;
    ((void (*)(void))fn)();
    return TRUE;
}

void jh__call_once(struct jh__once *o, void (*fn)(void))
{
    InitOnceExecuteOnce((INIT_ONCE *)&o->once, once_trampoline, (void *)fn, NULL);
}

/* GetCurrentThreadId reads the thread's TEB: no system call to cache. */
uint32_t jh__thread_id(void) { return (uint32_t)GetCurrentThreadId(); }
