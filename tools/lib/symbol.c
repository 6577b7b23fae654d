/* symbol.c — see symbol.h. */
#include "lib/symbol.h"

#include <string.h>

#include "fmt/symbol.h"

const char *jhr_symbol(char *out, size_t cap, const char *name)
{
    if (!name)
        return NULL;
    size_t len = strlen(name);
    if (cap < JHR_SYMBOL_MAX(len))
        return NULL;
    /* A name the derivation gives back unchanged is one jh__symbol_is_safe passes: only word
     * bytes (every other byte is dropped or becomes '_'), not empty ("_"), no digit first
     * ("_9..."). Asked this way, a builtin's name is walked once, not twice (node names
     * 2,182 at its start, issue 30). */
    size_t n = jh__symbol_from_name(out, cap, name);
    return n == len && !memcmp(out, name, len) ? NULL : out;
}
