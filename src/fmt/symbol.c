/* symbol.c — see symbol.h. */
#include "fmt/symbol.h"

#include <string.h>

/* [A-Za-z0-9_], by byte (the upper half all 0: UTF-8 bytes are not word bytes) */
static const unsigned char word_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
};

static bool word(unsigned char c) { return word_byte[c]; }

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

/* The bounded encoder: out may be too small. */
static size_t from_name_cut(char *out, size_t cap, const char *name)
{
    size_t n = 0;
    char last = 0;
#define PUT(ch) do { if (n + 1 < cap) out[n] = (ch); last = (ch); n++; } while (0)
    const unsigned char *p = (const unsigned char *)name;
    bool gap = false;
    for (; *p; p++) {
        if (!word(*p)) {
            gap = true;
            continue;
        }
        if (!n && digit(*p))
            PUT('_');       /* the first byte kept, not the name's first: " 9" is "_9" */
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

/* With room for the longest result (strlen + 2): each run of word bytes is found by a scan
 * and copied whole, with no bound check per byte (node names 2,200 builtins at start,
 * "Builtin:ArrayPrototypePush": a copy per byte cost ~15 instructions a byte, issue 30).
 * Same output as the bounded encoder. */
/* The first byte at or after p that is not a word byte (the NUL at the latest), four bytes
 * a step: a byte is read only after the one before it was a word byte, so never past the
 * NUL (~1 instruction a byte less than a byte a step: node's 2,182 builtins' names of ~35
 * bytes, issue 30). */
static const unsigned char *word_end(const unsigned char *p)
{
    for (;; p += 4) {
        if (!word(p[0]))
            return p;
        if (!word(p[1]))
            return p + 1;
        if (!word(p[2]))
            return p + 2;
        if (!word(p[3]))
            return p + 3;
    }
}

size_t jh__symbol_derive(char *out, const char *name, bool *changed)
{
    const unsigned char *p = (const unsigned char *)name;
    char *o = out;
    while (*p && !word(*p))
        p++;
    bool ch = p != (const unsigned char *)name;     /* a byte dropped: not the name */
    if (digit(*p))
        *o++ = '_', ch = true;
    for (;;) {
        const unsigned char *w = p;
        p = word_end(p);
        memcpy(o, w, (size_t)(p - w));
        o += p - w;
        if (!*p)
            break;
        ch = true;
        while (*p && !word(*p))
            p++;
        if (!*p)
            break;
        if (o > out && o[-1] != '_')    /* a gap between words: one '_' */
            *o++ = '_';
    }
    if (o == out)
        *o++ = '_', ch = true;      /* nothing usable at all: still a symbol */
    *o = 0;
    if (changed)
        *changed = ch;
    return (size_t)(o - out);
}

size_t jh__symbol_from_name(char *out, size_t cap, const char *name)
{
    if (cap < strlen(name) + 2)
        return from_name_cut(out, cap, name);
    return jh__symbol_derive(out, name, NULL);
}
