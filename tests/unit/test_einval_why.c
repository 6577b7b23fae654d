/*
 * test_einval_why.c — a refused call names the field, the function and the reason:
 * jh_code_add's -EINVAL for a missing .sz, lines out of order, a zero frame-pointer offset,
 * bad CFI and the rest, and jh_open's for malformed options. The message goes to the JIT's
 * log callback at JH_LOG_INFO (the return value already says the call failed), or without
 * one to stderr with JITHERALD_DEBUG=1 only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fmt/arch.h"
#include "jitherald.h"

static char said[2048];
static int said_level, said_count;

static void record(void *arg, int level, const char *msg)
{
    (void)arg;
    snprintf(said, sizeof said, "%s", msg);
    said_level = level;
    said_count++;
}

static unsigned char code[64];
static const char *files[] = { "f.mini" };

static struct jh_code base(void)
{
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = code, .size = sizeof code };
    return c;
}

/* c refused with -EINVAL, and one message at info holding each of wants. */
static void refused(jh_ctx *jh, const struct jh_code *c, const char *const *wants, int line)
{
    said[0] = 0;
    said_count = 0;
    uint64_t id;
    int err = jh_code_add(jh, c, &id);
    CHECK_EQ(err, -EINVAL);
    CHECK_EQ(said_count, 1);
    CHECK_EQ(said_level, JH_LOG_INFO);
    for (; *wants; wants++)
        if (!strstr(said, *wants)) {
            CHECK(!"the message names what it should");
            fprintf(stderr, "  (line %d) wanted \"%s\" in: %s\n", line, *wants, said);
        }
}
#define REFUSED(jh, c, ...) refused(jh, c, (const char *const[]){ __VA_ARGS__, NULL }, __LINE__)

static void test_code_add(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .flags = JH_OPT_IGNORE_ENV, .log = record };
    CHECK_EQ(jh_open(&jh, &o), 0);

    struct jh_code c = base();
    said_count = 0;
    uint64_t id;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);                  /* valid: nothing said */
    CHECK_EQ(said_count, 0);

    c = base();
    c.sz = 0;                                               /* `.sz` forgotten */
    REFUSED(jh, &c, "jh_code_add: -EINVAL: .sz is 0, less than the", "bytes up to .size",
            "set .sz = sizeof(struct jh_code)");
    CHECK(!strstr(said, "\"f\""));      /* a struct not read that far: its name neither */

    struct { struct jh_code c; uint64_t newer; } big = { base(), 7 };
    big.c.sz = sizeof big;                                  /* a newer header's field, set */
    REFUSED(jh, &big.c, "jh_code_add(\"f\")", "more than this library's",
            "are not zero: fields of a newer header");

    struct jh_line rows[] = { { .offset = 8, .line = 1 }, { .offset = 2, .line = 2 } };
    c = base();
    c.files = files, c.nfiles = 1, c.lines = rows, c.nlines = 2;
    REFUSED(jh, &c, "jh_code_add(\"f\"): -EINVAL: lines[1].offset 0x2 comes before "
            "lines[0].offset 0x8", "sorted by offset");

    struct jh_line far[] = { { .offset = 64, .line = 1 } };
    c.lines = far, c.nlines = 1;
    REFUSED(jh, &c, "lines[0].offset 0x40 is not inside the code (size 0x40)");

    struct jh_line nofile[] = { { .offset = 0, .line = 1, .file = 1 } };
    c.lines = nofile;
    REFUSED(jh, &c, "lines[0].file 1 is not an index into .files (.nfiles 1)");

    c = base();
    c.nlines = 3;
    REFUSED(jh, &c, ".nlines is 3 but .lines is NULL");

    c = base();
    c.unwind = JH_UNWIND_FRAME_POINTER;                     /* offsets left at 0 */
    REFUSED(jh, &c, "jh_code_add(\"f\")", "JH_UNWIND_FRAME_POINTER: .fp_push_end is 0",
            "just after `push rbp`");
    c.fp_push_end = 4, c.fp_set_end = 1;
    REFUSED(jh, &c, ".fp_push_end 4 is after .fp_set_end 1");

    static const uint8_t past_end[] = { 0x02, 100 };        /* advance_loc1 100 > size */
    c = base();
    c.unwind = JH_UNWIND_CFI, c.cfi = past_end, c.cfi_len = sizeof past_end;
    REFUSED(jh, &c, "cfi byte 0: advances to offset 0x64, past the end of the code (size 0x40)");
    static const uint8_t set_loc[] = { 0x41, 0x01, 0, 0, 0, 0, 0, 0, 0, 0 };
    c.cfi = set_loc, c.cfi_len = sizeof set_loc;
    REFUSED(jh, &c, "cfi byte 1: opcode 0x1 is not one this library reads");
    c.cfi = NULL;
    REFUSED(jh, &c, "JH_UNWIND_CFI: .cfi is NULL");

    struct jh_saved_reg up[] = { { .reg = 6, .cfa_offset = 16 } };
    c = base();
    c.unwind = JH_UNWIND_FRAMELESS, c.cfa_offset = 8, c.saved_regs = up, c.nsaved_regs = 1;
    REFUSED(jh, &c, "saved_regs[0].cfa_offset 16", "negative multiple of 8");

    c = base();
    c.name = "";
    REFUSED(jh, &c, "jh_code_add: -EINVAL: .name is empty");
    c = base();
    c.size = 0;
    REFUSED(jh, &c, "jh_code_add(\"f\"): -EINVAL: .size is 0");
    c = base();
    c.lsda = code;
    REFUSED(jh, &c, ".lsda is set without a .personality");

    /* arm64 return-address signing: refused on x86-64 by name; elsewhere, ranges checked */
    struct jh_range signed_ra[] = { { 4, 28 }, { 20, 40 } };
    c = base();
    c.unwind = JH_UNWIND_FRAME_POINTER, c.fp_push_end = 4, c.fp_set_end = 8;
    c.ra_signed = signed_ra, c.nra_signed = 1;
    if (!JH__ARCH_HOST->pac) {
        REFUSED(jh, &c, ".ra_signed/.ra_key: return addresses are signed on arm64 (PAC-RET)");
    } else {
        c.nra_signed = 2;
        REFUSED(jh, &c, "ra_signed[1] starts at 0x14, before ra_signed[0] ends (0x1c)");
        c.nra_signed = 1, c.ra_key = 2;
        REFUSED(jh, &c, ".ra_key 2 is neither JH_PAC_KEY_A nor JH_PAC_KEY_B");
    }
    jh_close(jh);
}

static void test_open(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .flags = 0x100, .log = record };
    said_count = 0;
    CHECK_EQ(jh_open(&jh, &o), -EINVAL);
    CHECK(!jh);
    CHECK_EQ(said_count, 1);
    CHECK_EQ(said_level, JH_LOG_INFO);
    CHECK(strstr(said, "jh_open: -EINVAL: jh_options.flags 0x100 has bits that are not JH_OPT_*"));
    o.flags = 0;
    o.channels = 0x40;
    CHECK_EQ(jh_open(&jh, &o), -EINVAL);
    CHECK(strstr(said, "jh_options.channels 0x40 has bits no channel has"));
}

/* Without a callback: stderr, with JITHERALD_DEBUG=1 only. A forgotten jh_options.sz (no
 * callback can be read then) and a refused jh_code_add, in a child whose stderr we read. */
static void test_stderr(const char *debug)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        if (debug)
            setenv("JITHERALD_DEBUG", debug, 1);
        else
            unsetenv("JITHERALD_DEBUG");
        said_count = 0;
        jh_ctx *jh = NULL;
        struct jh_options bad = { .log = record };          /* .sz forgotten */
        int e1 = jh_open(&jh, &bad);
        struct jh_options o = { .sz = sizeof o, .flags = JH_OPT_IGNORE_ENV };
        int e2 = jh_open(&jh, &o);
        struct jh_code c = base();
        c.unwind = JH_UNWIND_FRAME_POINTER;
        uint64_t id;
        int e3 = jh_code_add(jh, &c, &id);
        jh_close(jh);
        _exit(e1 == -EINVAL && e2 == 0 && e3 == -EINVAL && !said_count ? 0 : 1);
    }
    close(p[1]);
    char out[4096];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof out - 1 && (got = read(p[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = 0;
    close(p[0]);
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (debug) {
        CHECK(strstr(out, "] info: jh_open: -EINVAL: jh_options.sz is 0, less than the"));
        CHECK(strstr(out, "] info: jh_code_add(\"f\"): -EINVAL: JH_UNWIND_FRAME_POINTER: "
                          ".fp_push_end is 0"));
    } else {
        CHECK_EQ(n, 0);
    }
    if (debug ? !strstr(out, "fp_push_end") : n != 0)
        fprintf(stderr, "stderr (JITHERALD_DEBUG=%s):\n%s", debug ? debug : "unset", out);
}

int main(void)
{
    test_code_add();
    test_open();
    test_stderr(NULL);
    test_stderr("1");
    return check_done();
}
