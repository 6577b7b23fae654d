/*
 * log_libs.c — see log_libs.h.
 */
#include "log_libs.h"

#include <dlfcn.h>

bool jhc_lib_load(struct jhc_lib *lib)
{
    if (lib->state)
        return lib->state > 0;
    lib->state = -1;
    void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return false;
    for (size_t i = 0; i < lib->n; i++)
        if (!(*lib->slots[i] = dlsym(h, lib->names[i])))
            return false;
    lib->state = 1;
    return true;
}
