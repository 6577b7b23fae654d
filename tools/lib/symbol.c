/* symbol.c — see symbol.h. */
#include "lib/symbol.h"

#include <string.h>

#include "fmt/symbol.h"

const char *jhr_symbol(char *out, size_t cap, const char *name)
{
    if (!name || jh__symbol_is_safe(name) || cap < JHR_SYMBOL_MAX(strlen(name)))
        return NULL;
    jh__symbol_from_name(out, cap, name);
    return out;
}
