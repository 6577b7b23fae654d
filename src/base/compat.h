/*
 * compat.h — the few compiler and target facts every layer shares. Nothing in src/ is
 * exported from the shared library (-fvisibility=hidden plus jitherald.map); internal names
 * carry the jh__/JH__ prefix so that, linked statically, they cannot collide with a
 * program's own names or with the public jh_ API. Which architecture the code is for is
 * not a base fact: src/fmt/arch.h describes it, for the host and for files from elsewhere.
 */
#ifndef JH__BASE_COMPAT_H
#define JH__BASE_COMPAT_H

#define JH__HIDDEN __attribute__((visibility("hidden")))
#define JH__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define JH__NOINLINE __attribute__((noinline))

/* The struct containing member m, from a pointer to m. */
#define JH__CONTAINER_OF(p, type, m) ((type *)(void *)((char *)(p) - offsetof(type, m)))

/* mingw-w64's errno.h lacks ESHUTDOWN (jh_channels_set on a context being closed): Linux's
 * number, so the value is the same on every platform. */
#include <errno.h>
#ifndef ESHUTDOWN
#define ESHUTDOWN 108
#endif

#endif
