/*
 * dll_test.c — jitherald.dll as a Windows program links it (import library, the DLL next
 * to the .exe), and which channels Windows has. Run under Wine by
 * tests/integration/win64_unwind.sh:
 *     dll_test.exe DIR      prints "ok ..." lines, exits 0 when every check passed
 * With JITHERALD=unwind,gdb in the environment, jh_open(NULL) must give the unwind channel
 * and say on stderr that gdb is not built here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jitherald.h"

static int failures;
#define CHECK(c) do { if (!(c)) { printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
    failures++; } } while (0)

static char logbuf[4096];
static void on_log(void *arg, int level, const char *msg)
{
    (void)arg;
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "\n%d %s", level, msg);
}

/* Was text said at this level? */
static int said(int level, const char *text)
{
    char want[128];
    snprintf(want, sizeof want, "\n%d %s", level, text);
    return strstr(logbuf, want) != NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2)
        return 2;
    CHECK(!strcmp(jh_version(), JH_VERSION_STRING));
    printf("version %s\n", jh_version());

    /* "all": the channels built for Windows, nothing said about the others */
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ALL, .dir = argv[1],
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT, .log = on_log };
    CHECK(jh_open(&jh, &o) == 0);
    CHECK(jh_channels(jh) == (JH_UNWIND | JH_AUDITLOG));
    CHECK(said(JH_LOG_DEBUG, "perfmap: not built") && !said(JH_LOG_ERROR, "perfmap"));
    jh_close(jh);
    printf("ok all: channels %#x\n", JH_UNWIND | JH_AUDITLOG);

    /* asked for by name: reported, the others carry on; strict: refused */
    logbuf[0] = 0;
    o.channels = JH_PERFMAP | JH_UNWIND;
    o.flags = JH_OPT_IGNORE_ENV;
    CHECK(jh_open(&jh, &o) == 0);
    CHECK(jh_channels(jh) == JH_UNWIND);
    CHECK(said(JH_LOG_ERROR, "perfmap: not built for this platform"));
    static const unsigned char code[16] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = code, .size = sizeof code };
    uint64_t id;
    CHECK(jh_code_add(jh, &c, &id) == 0);
    char name[8];
    CHECK(jh_lookup(jh, code + 3, NULL, NULL, NULL, name, sizeof name) == 0 && !strcmp(name, "f"));
    CHECK(jh_code_remove(jh, id) == 0);
    CHECK(jh_code_remove(jh, id) == -ENOENT);
    jh_close(jh);
    o.flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT;
    CHECK(jh_open(&jh, &o) == JH_ECHANNEL);
    printf("ok by name: perfmap reported as not built, unwind on; strict refuses\n");

    CHECK(!strcmp(jh_strerror(-ENOENT), "no such code registered"));
    CHECK(strlen(jh_strerror(-EDOM)) > 0);

    /* the environment, as on Linux */
    CHECK(jh_open(&jh, NULL) == 0);
    printf("env channels %#x\n", jh_channels(jh));
    jh_close(jh);
    return failures ? 1 : 0;
}
