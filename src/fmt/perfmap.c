/* perfmap.c — see perfmap.h. */
#include "fmt/perfmap.h"

#include <string.h>

static size_t hex(char *out, uint64_t v)
{
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

size_t jh__perfmap_line(char *out, size_t cap, uint64_t start, uint64_t size, const char *name)
{
    size_t nlen = strnlen(name, JH__PERFMAP_NAME_MAX);
    size_t need = 16 + 1 + 16 + 1 + nlen + JH__PERFMAP_NAME_MIN + 1;  /* the most it takes */
    if (need > cap)
        return need;
    size_t n = hex(out, start);
    out[n++] = ' ';
    n += hex(out + n, size);
    out[n++] = ' ';
    for (size_t i = 0; i < nlen; i++) {
        unsigned char c = (unsigned char)name[i];
        out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (!nlen)
        out[n++] = '?';
    for (size_t i = nlen ? nlen : 1; i < JH__PERFMAP_NAME_MIN; i++)
        out[n++] = ' ';
    out[n++] = '\n';
    return n;
}
