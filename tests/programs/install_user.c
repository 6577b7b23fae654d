/*
 * install_user.c — a user's program, for tests/integration/install_pkgconfig.sh. Not built
 * by make: the script compiles it against an installed tree with pkg-config, which is
 * what it tests. Prints "VERSION RC" (RC: jh_code_add's result), and removes the perf map
 * it wrote (a test leaves nothing behind in /tmp for a later process with its pid).
 */
#include <jitherald.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_PERFMAP, .flags = JH_OPT_IGNORE_ENV };
    if (jh_open(&jh, &o))
        return 1;
    static char code[32];
    struct jh_code c = { .sz = sizeof c, .name = "installed_fn", .start = code, .size = 32 };
    uint64_t id;
    int rc = jh_code_add(jh, &c, &id);
    jh_close(jh);
    char map[64];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
    unlink(map);
    printf("%s %d\n", jh_version(), rc);
    return rc;
}
