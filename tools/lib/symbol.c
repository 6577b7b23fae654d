/* symbol.c — see symbol.h. */
#include "lib/symbol.h"

#include <stdbool.h>
#include <string.h>

#include "fmt/symbol.h"

const char *jhr_symbol_n(char *out, const char *name, size_t *sym_len)
{
    /* A name the derivation gives back unchanged is one jh__symbol_is_safe passes: found
     * on the walk that derives it, so a builtin's name is walked once (node names 2,182 at
     * its start, issue 30). */
    bool changed;
    size_t n = jh__symbol_derive(out, name, &changed);
    if (sym_len)
        *sym_len = changed ? n : 0;
    return changed ? out : NULL;
}

const char *jhr_symbol(char *out, size_t cap, const char *name)
{
    if (!name || cap < JHR_SYMBOL_MAX(strlen(name)))
        return NULL;
    return jhr_symbol_n(out, name, NULL);
}
