/* lock.c — see lock.h. */
#include "base/lock.h"

#include <sys/syscall.h>
#include <unistd.h>

_Atomic unsigned jh__fork_gen;

/* Registered by constructors, before main() or inside dlopen(), never while a fork is under
 * way in this process: a plain list, read by the fork handler only. */
static struct jh__lock *registered;

void jh__lock_register(struct jh__lock *l)
{
    for (struct jh__lock *p = registered; p; p = p->next)
        if (p == l)
            return;
    l->next = registered;
    registered = l;
}

void jh__locks_take_all(void)
{
    for (struct jh__lock *l = registered; l; l = l->next)
        pthread_mutex_lock(&l->m);
}

void jh__locks_release_all(void)
{
    for (struct jh__lock *l = registered; l; l = l->next)
        pthread_mutex_unlock(&l->m);
}

uint32_t jh__thread_id(void)
{
    /* gettid() is a system call: cache it, and forget it in a fork child. */
    static _Thread_local struct { unsigned gen; uint32_t tid; } cache;
    unsigned gen = jh__fork_generation() + 1;
    if (cache.gen != gen) {
        cache.tid = (uint32_t)syscall(SYS_gettid);
        cache.gen = gen;
    }
    return cache.tid;
}

void jh__atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    pthread_atfork(prepare, parent, child);
}
