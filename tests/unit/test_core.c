/* test_core.c — the public API's contract: bad inputs, overlap, ids, move, lookup,
 * options, environment, failing channels. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

static char code[4096] __attribute__((aligned(16)));
static int log_count;
static char last_log[512];

static void logfn(void *arg, int level, const char *msg)
{
    (void)arg; (void)level;
    log_count++;
    snprintf(last_log, sizeof last_log, "%s", msg);
}

static struct jh_code mk(const char *name, size_t off, size_t size)
{
    struct jh_code c = { .sz = sizeof c, .name = name, .start = code + off, .size = size };
    return c;
}

static jh_ctx *open_ch(unsigned channels)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = channels, .flags = JH_OPT_IGNORE_ENV,
                            .log = logfn };
    CHECK_EQ(jh_open(&jh, &o), 0);
    return jh;
}

static void test_bad_inputs(void)
{
    jh_ctx *jh = open_ch(JH_PERFMAP);
    uint64_t id;
    struct jh_code c = mk("f", 0, 16);
    CHECK_EQ(jh_code_add(NULL, &c, &id), -EINVAL);
    CHECK_EQ(jh_code_add(jh, NULL, &id), -EINVAL);
    c.name = NULL;   CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c.name = "";     CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c = mk("f", 0, 0); CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c = mk("f", 0, 16); c.start = NULL; CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c = mk("f", 0, 16); c.start = (void *)(uintptr_t)-8; CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c = mk("f", 0, 16); c.sz = 3; CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);

    const char *files[] = { "a.x" };
    struct jh_line lines[] = { { 0, 1, 0, 0 }, { 8, 2, 0, 0 } };
    c = mk("f", 0, 16); c.files = files; c.nfiles = 1; c.lines = lines; c.nlines = 2;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    lines[1].offset = 16;                      /* out of range */
    CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    lines[1].offset = 8; lines[1].file = 1;    /* no such file */
    CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    lines[1].file = 0; lines[0].offset = 9;    /* unsorted */
    CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    lines[0].offset = 0; c.lines = NULL;
    CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c = mk("f", 0, 16); c.nfiles = 1;           /* files NULL */
    CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);

    c = mk("f", 0, 16); c.unwind = JH_UNWIND_FRAME_POINTER;
    CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);               /* push_end 0 */
    c.fp_push_end = 4; c.fp_set_end = 1; CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c.fp_push_end = 1; c.fp_set_end = 17; CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c.fp_set_end = 4; CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    c = mk("f", 0, 16); c.unwind = JH_UNWIND_CFI; CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);
    c.unwind = (enum jh_unwind_kind)7; CHECK_EQ(jh_code_add(jh, &c, &id), -EINVAL);

    /* A newer caller's bigger struct is fine if the unknown tail is zero. */
    struct { struct jh_code c; char tail[16]; } big;
    memset(&big, 0, sizeof big);
    big.c = mk("f", 0, 16); big.c.sz = sizeof big;
    CHECK_EQ(jh_code_add(jh, &big.c, &id), 0);
    CHECK_EQ(jh_code_remove(jh, id), 0);
    big.tail[5] = 1;
    CHECK_EQ(jh_code_add(jh, &big.c, &id), -EINVAL);

    CHECK_EQ(jh_code_remove(jh, 999999), -ENOENT);
    CHECK_EQ(jh_code_remove(jh, 0), -ENOENT);
    CHECK_EQ(jh_code_move(jh, 999999, code), -ENOENT);
    CHECK_EQ(jh_code_move(jh, 1, NULL), -EINVAL);
    CHECK_EQ(jh_code_patched(jh, NULL, 4), -EINVAL);
    CHECK_EQ(jh_code_patched(jh, code, 4), -ENOENT);
    CHECK_EQ(jh_flush(NULL), -EINVAL);
    CHECK_EQ(jh_log_event(jh, NULL, NULL, 0), -EINVAL);
    CHECK_EQ(jh_log_memory(NULL, code, 1, NULL), -EINVAL);
    jh_close(jh);
    jh_close(NULL);
}

static void test_overlap_move_lookup(void)
{
    jh_ctx *jh = open_ch(JH_PERFMAP);
    uint64_t a, b, c3, x;
    struct jh_code c = mk("a", 0, 64);
    CHECK_EQ(jh_code_add(jh, &c, &a), 0);
    c = mk("b", 64, 64);  CHECK_EQ(jh_code_add(jh, &c, &b), 0);   /* adjacent is fine */
    c = mk("x", 63, 2);   CHECK_EQ(jh_code_add(jh, &c, &x), JH_EOVERLAP);
    c = mk("x", 0, 4096); CHECK_EQ(jh_code_add(jh, &c, &x), JH_EOVERLAP);
    c = mk("x", 127, 1);  CHECK_EQ(jh_code_add(jh, &c, &x), JH_EOVERLAP);
    c = mk("c", 256, 32); CHECK_EQ(jh_code_add(jh, &c, &c3), 0);
    CHECK(a != b && b != c3 && a != c3);

    char name[8];
    const void *start; size_t size; uint64_t id;
    CHECK_EQ(jh_lookup(jh, code + 70, &id, &start, &size, name, sizeof name), 0);
    CHECK_EQ(id, b); CHECK(start == code + 64); CHECK_EQ(size, 64); CHECK_STR(name, "b");
    CHECK_EQ(jh_lookup(jh, code + 200, NULL, NULL, NULL, NULL, 0), -ENOENT);

    CHECK_EQ(jh_code_move(jh, c3, code + 100), JH_EOVERLAP);       /* onto b */
    CHECK_EQ(jh_code_move(jh, c3, code + 270), 0);                 /* overlaps only itself */
    CHECK_EQ(jh_lookup(jh, code + 300, &id, NULL, NULL, NULL, 0), 0);
    CHECK_EQ(id, c3);
    CHECK_EQ(jh_lookup(jh, code + 260, NULL, NULL, NULL, NULL, 0), -ENOENT);
    CHECK_EQ(jh_code_patched(jh, code + 280, 4), 0);
    CHECK_EQ(jh_code_patched(jh, code + 280, 400), -ENOENT);       /* runs past the end */

    CHECK_EQ(jh_code_remove(jh, b), 0);
    CHECK_EQ(jh_code_remove(jh, b), -ENOENT);                      /* twice */
    c = mk("b2", 64, 64); CHECK_EQ(jh_code_add(jh, &c, &x), 0);   /* reuse of the range */
    CHECK(x > c3);                                                  /* ids never reused */
    jh_close(jh);
}

static void test_no_channel(void)
{
    jh_ctx *jh = open_ch(0);
    CHECK_EQ(jh_channels(jh), 0);
    uint64_t a, b;
    struct jh_code c = mk("a", 0, 64);
    CHECK_EQ(jh_code_add(jh, &c, &a), 0);
    CHECK_EQ(jh_code_add(jh, &c, &b), 0);   /* not stored: no overlap check, documented */
    CHECK(b == a + 1);
    c.name = NULL;
    CHECK_EQ(jh_code_add(jh, &c, &b), -EINVAL);  /* still validated */
    CHECK_EQ(jh_code_remove(jh, a), 0);
    CHECK_EQ(jh_code_remove(jh, 12345), -ENOENT);
    CHECK_EQ(jh_lookup(jh, code, NULL, NULL, NULL, NULL, 0), -ENOENT);
    CHECK_EQ(jh_flush(jh), 0);
    jh_close(jh);
}

static void test_options(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = 1u << 10 };
    CHECK_EQ(jh_open(&jh, &o), -EINVAL);
    CHECK(jh == NULL);
    o.channels = 0; o.flags = 1u << 9;
    CHECK_EQ(jh_open(&jh, &o), -EINVAL);
    o.flags = 0; o.sz = 2;
    CHECK_EQ(jh_open(&jh, &o), -EINVAL);
    CHECK_EQ(jh_open(NULL, NULL), -EINVAL);

    struct { struct jh_options o; char tail[8]; } big;
    memset(&big, 0, sizeof big);
    big.o.sz = sizeof big; big.o.flags = JH_OPT_IGNORE_ENV;
    CHECK_EQ(jh_open(&jh, &big.o), 0);
    jh_close(jh);
    big.tail[0] = 1;
    CHECK_EQ(jh_open(&jh, &big.o), -EINVAL);

    /* The environment chooses channels unless told not to. */
    setenv("JITHERALD", "perfmap,bogus", 1);
    log_count = 0;
    struct jh_options e = { .sz = sizeof e, .log = logfn };
    CHECK_EQ(jh_open(&jh, &e), 0);
    CHECK_EQ(jh_channels(jh), JH_PERFMAP);
    CHECK(log_count == 1 && strstr(last_log, "bogus"));
    jh_close(jh);
    setenv("JITHERALD", "none", 1);
    e.channels = JH_PERFMAP;
    CHECK_EQ(jh_open(&jh, &e), 0);
    CHECK_EQ(jh_channels(jh), 0);
    jh_close(jh);
    e.flags = JH_OPT_IGNORE_ENV;
    CHECK_EQ(jh_open(&jh, &e), 0);
    CHECK_EQ(jh_channels(jh), JH_PERFMAP);
    jh_close(jh);
    unsetenv("JITHERALD");

    /* Directory refused (a file is in the way): channels needing it fail, others run. */
    char dir[] = "/tmp/jh-core-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char notdir[64];
    snprintf(notdir, sizeof notdir, "%s/file", dir);
    FILE *f = fopen(notdir, "w"); fclose(f);
    setenv("JITHERALD_DIR", notdir, 1);
    struct jh_options s = { .sz = sizeof s, .channels = JH_PERFMAP, .log = logfn };
    CHECK_EQ(jh_open(&jh, &s), 0);
    CHECK_EQ(jh_channels(jh), JH_PERFMAP);
    jh_close(jh);
    unsetenv("JITHERALD_DIR");
    unlink(notdir);
    rmdir(dir);

    CHECK(strlen(jh_strerror(JH_EOVERLAP)) > 5);
    CHECK_STR(jh_strerror(-ENOENT), "no such code registered");
    CHECK(jh_strerror(-ENOTSUP) != NULL && strcmp(jh_strerror(-ENOTSUP), "unknown error"));
    CHECK_STR(jh_strerror(12345), "unknown error");
    CHECK_STR(jh_version(), JH_VERSION_STRING);
}

/* A channel that cannot start: JH_OPT_STRICT turns it into an error. */
static void test_strict(void)
{
    jh_ctx *jh = NULL;
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    unlink(path);
    CHECK_EQ(symlink("/tmp/jh-nowhere", path), 0);
    log_count = 0;
    struct jh_options o = { .sz = sizeof o, .channels = JH_PERFMAP,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT, .log = logfn };
    CHECK_EQ(jh_open(&jh, &o), JH_ECHANNEL);
    CHECK(jh == NULL);
    CHECK(log_count >= 1);
    o.flags = JH_OPT_IGNORE_ENV;
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK_EQ(jh_channels(jh), 0);
    jh_close(jh);
    CHECK(access("/tmp/jh-nowhere", F_OK) != 0);
    unlink(path);
}

int main(void)
{
    test_bad_inputs();
    test_overlap_move_lookup();
    test_no_channel();
    test_options();
    test_strict();
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    unlink(path);
    return check_done();
}
