/* symbol.c — see symbol.h. */
#include "fmt/symbol.h"

static bool word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

static bool digit(unsigned char c) { return c >= '0' && c <= '9'; }

bool jh__symbol_is_safe(const char *name)
{
    if (!name || !name[0] || digit((unsigned char)name[0]))
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (!word(*p))
            return false;
    return true;
}

size_t jh__symbol_from_name(char *out, size_t cap, const char *name)
{
    size_t n = 0;
    char last = 0;
#define PUT(ch) do { if (n + 1 < cap) out[n] = (ch); last = (ch); n++; } while (0)
    const unsigned char *p = (const unsigned char *)name;
    if (digit(*p))
        PUT('_');
    bool gap = false;
    for (; *p; p++) {
        if (!word(*p)) {
            gap = true;
            continue;
        }
        if (gap && n && last != '_')
            PUT('_');
        gap = false;
        PUT((char)*p);
    }
    if (n == 0)
        PUT('_');           /* nothing usable at all: still a symbol */
#undef PUT
    if (cap)
        out[n < cap ? n : cap - 1] = 0;
    return n;
}
