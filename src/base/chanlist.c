/* chanlist.c — see chanlist.h. */
#include "base/chanlist.h"

#include <stdio.h>
#include <string.h>

#include "jitherald.h"

#define NAME(U, l, w, r) { #l, JH_##U, r },
static const struct { const char *name; unsigned bit; bool run; } list[] = {
    JH__CHANNELS(NAME)
};
#undef NAME

#define BIT(U, l, w, r) | JH_##U
_Static_assert((0 JH__CHANNELS(BIT)) == JH_ALL, "JH__CHANNELS and jitherald.h's JH_ALL disagree");
#undef BIT
_Static_assert(sizeof list / sizeof *list == JH__NCHAN, "one name per slot");

#define N (sizeof list / sizeof *list)

unsigned jh__channels_all(void)
{
    return JH_ALL;
}

unsigned jh__channels_run(void)
{
    unsigned bits = 0;
    for (size_t i = 0; i < N; i++)
        bits |= list[i].run ? list[i].bit : 0;
    return bits;
}

unsigned jh__channel_bit(const char *s, size_t n)
{
    for (size_t i = 0; i < N; i++)
        if (strlen(list[i].name) == n && !strncmp(s, list[i].name, n))
            return list[i].bit;
    return 0;
}

const char *jh__channel_name(unsigned bit)
{
    for (size_t i = 0; i < N; i++)
        if (list[i].bit == bit)
            return list[i].name;
    return NULL;
}

void jh__channel_names(unsigned bits, const char *sep, char *buf, size_t n)
{
    size_t k = 0;
    if (n)
        buf[0] = 0;
    /* in the order of the public bits, the order users read them in */
    for (unsigned b = 1; b && b <= JH_ALL && n; b <<= 1) {
        const char *name = bits & b ? jh__channel_name(b) : NULL;
        if (!name)
            continue;
        int w = snprintf(buf + k, n - k, "%s%s", k ? sep : "", name);
        if (w < 0 || (size_t)w >= n - k) {
            buf[k] = 0;         /* whole names only */
            return;
        }
        k += (size_t)w;
    }
}

unsigned jh__channels_parse(const char *s, unsigned allowed,
                            void (*unknown)(void *arg, const char *name, size_t n), void *arg)
{
    static const char sep[] = ",: ";
    unsigned bits = 0;
    s += strspn(s, sep);
    while (*s) {
        size_t n = strcspn(s, sep);
        unsigned b = jh__channel_bit(s, n);
        if (n == 3 && !strncmp(s, "all", 3))
            bits |= allowed;
        else if (n == 4 && !strncmp(s, "none", 4))
            bits = 0;
        else if (b & allowed)
            bits |= b;
        else if (unknown)
            unknown(arg, s, n);
        s += n;
        s += strspn(s, sep);
    }
    return bits;
}
