/* debuginfod.c — see debuginfod.h. */
#include "lib/debuginfod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *jhr_debuginfod_find(const char *idhex)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    size_t n = strlen(idhex);
    if (!urls || !*urls || !n || n > 128 || strspn(idhex, "0123456789abcdef") != n)
        return NULL;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "debuginfod-find executable %s 2>/dev/null", idhex);
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    char line[4096];
    char *got = fgets(line, sizeof line, f) ? strdup(line) : NULL;
    if (pclose(f) != 0) {
        free(got);
        return NULL;
    }
    if (got)
        got[strcspn(got, "\n")] = 0;
    return got;
}
