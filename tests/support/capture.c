/* capture.c — see capture.h. */
#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

char *capture(const char *cmd, int *status)
{
    size_t len = strlen(cmd) + 16;
    char *full = malloc(len);
    if (status)
        *status = -1;
    if (!full)
        return NULL;
    snprintf(full, len, "{ %s; } 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0, r;
    char *out = malloc(cap);
    while (out && (r = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 2) {
            char *t = realloc(out, cap *= 2);
            if (!t)
                free(out);
            out = t;
        }
    }
    int st = pclose(p);
    if (status)
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (out)
        out[n] = 0;
    return out;
}
