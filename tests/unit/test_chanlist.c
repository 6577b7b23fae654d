/*
 * test_chanlist.c — the one list of channels (base/chanlist.h) and its one parser, which
 * $JITHERALD, `jitherald run -c` and the preload share: every public bit has its name and
 * back, "all" means what the caller allows, "none" drops what came before, separators mix,
 * and each refused name reaches the caller once, whole, with why left to the caller.
 */
#include <string.h>

#include "base/chanlist.h"
#include "check.h"
#include "jitherald.h"

static char refused[256];
static int nrefused;

static void refuse(void *arg, const char *name, size_t n)
{
    (void)arg;
    size_t k = strlen(refused);
    snprintf(refused + k, sizeof refused - k, "%s%.*s", k ? "|" : "", (int)n, name);
    nrefused++;
}

static unsigned parse(const char *s, unsigned allowed)
{
    refused[0] = 0;
    nrefused = 0;
    return jh__channels_parse(s, allowed, refuse, NULL);
}

int main(void)
{
    static const unsigned bits[] = { JH_PERFMAP, JH_JITDUMP, JH_GDB, JH_UNWIND, JH_ELFMAP,
                                     JH_AUDITLOG };
    unsigned seen = 0;
    for (size_t i = 0; i < sizeof bits / sizeof *bits; i++) {
        const char *name = jh__channel_name(bits[i]);
        CHECK(name != NULL);
        CHECK_EQ(jh__channel_bit(name, strlen(name)), bits[i]);
        seen |= bits[i];
    }
    CHECK_EQ(seen, (unsigned)JH_ALL);
    CHECK_EQ(jh__channels_all(), (unsigned)JH_ALL);
    CHECK(jh__channel_name(1u << 20) == NULL);
    CHECK_EQ(jh__channel_bit("gd", 2), 0u);
    CHECK_EQ(jh__channel_bit("gdbx", 4), 0u);
    CHECK_EQ(jh__channel_bit("gdb,", 3), (unsigned)JH_GDB);      /* by length, not NUL */

    /* what `jitherald run` adds: not the files the VM writes itself */
    unsigned run = jh__channels_run();
    CHECK_EQ(run, (unsigned)(JH_GDB | JH_UNWIND | JH_ELFMAP | JH_AUDITLOG));

    char names[128];
    jh__channel_names(run, ", ", names, sizeof names);
    CHECK_STR(names, "gdb, unwind, elfmap, auditlog");
    jh__channel_names(JH_ALL, ",", names, sizeof names);
    CHECK_STR(names, "perfmap,jitdump,gdb,unwind,elfmap,auditlog");
    jh__channel_names(JH_ALL, ",", names, 12);                    /* cut, still a string */
    CHECK_STR(names, "perfmap");
    jh__channel_names(0, ",", names, sizeof names);
    CHECK_STR(names, "");

    CHECK_EQ(parse("perfmap,gdb", JH_ALL), (unsigned)(JH_PERFMAP | JH_GDB));
    CHECK_EQ(nrefused, 0);
    CHECK_EQ(parse(" gdb: unwind , elfmap ", JH_ALL), (unsigned)(JH_GDB | JH_UNWIND | JH_ELFMAP));
    CHECK_EQ(parse("all", JH_ALL), (unsigned)JH_ALL);
    CHECK_EQ(parse("all", run), run);
    CHECK_EQ(parse("all,none,jitdump", JH_ALL), (unsigned)JH_JITDUMP);
    CHECK_EQ(parse("", JH_ALL), 0u);
    CHECK_EQ(parse(",,,", JH_ALL), 0u);
    CHECK_EQ(nrefused, 0);
    CHECK_EQ(parse("prefmap,gdb,alll", JH_ALL), (unsigned)JH_GDB);
    CHECK_STR(refused, "prefmap|alll");
    CHECK_EQ(parse("perfmap,gdb", run), (unsigned)JH_GDB);       /* known, not allowed here */
    CHECK_STR(refused, "perfmap");
    CHECK_EQ(jh__channels_parse("bogus,gdb", JH_ALL, NULL, NULL), (unsigned)JH_GDB);
    return check_done();
}
