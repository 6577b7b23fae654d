/* test_core.c — the public API's contract: bad inputs, overlap, ids, move, lookup,
 * options, environment, failing channels. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

static char code[4096] __attribute__((aligned(16)));
static int log_count;
static char last_log[512], all_log[4096];

static void logfn(void *arg, int level, const char *msg)
{
    (void)arg; (void)level;
    log_count++;
    snprintf(last_log, sizeof last_log, "%s", msg);
    size_t n = strlen(all_log);
    snprintf(all_log + n, sizeof all_log - n, "%s\n", msg);
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

/* jh_code_remove_range: everything overlapping the range goes, partly inside or not;
 * what only touches its edges stays. */
static void test_remove_range(void)
{
    jh_ctx *jh = open_ch(JH_PERFMAP);
    uint64_t id[6];
    static const size_t at[6] = { 0, 64, 128, 512, 1024, 2048 }, len[6] = { 64, 64, 300, 8, 8, 8 };
    for (int i = 0; i < 6; i++) {
        struct jh_code c = mk("f", at[i], len[i]);
        CHECK_EQ(jh_code_add(jh, &c, &id[i]), 0);
    }
    CHECK_EQ(jh_code_remove_range(jh, code, 0), -EINVAL);
    CHECK_EQ(jh_code_remove_range(jh, (void *)UINTPTR_MAX, 2), -EINVAL);   /* wraps */
    CHECK_EQ(jh_code_remove_range(jh, code + 440, 72), 0);      /* a gap: [428, 512) */
    CHECK_EQ(jh_code_remove_range(jh, code + 100, 400), 2);     /* the tail of 64+64, 128+300 */
    CHECK_EQ(jh_code_remove(jh, id[1]), -ENOENT);
    CHECK_EQ(jh_code_remove(jh, id[2]), -ENOENT);
    CHECK_EQ(jh_lookup(jh, code, NULL, NULL, NULL, NULL, 0), 0);      /* ends before: stays */
    CHECK_EQ(jh_lookup(jh, code + 512, NULL, NULL, NULL, NULL, 0), 0);
    CHECK_EQ(jh_code_remove_range(jh, code + 519, 1), 1);       /* its last byte */
    CHECK_EQ(jh_code_remove_range(jh, code, sizeof code), 3);   /* the rest */
    CHECK_EQ(jh_code_remove_range(jh, code, sizeof code), 0);
    struct jh_code c = mk("again", 0, 4096);
    CHECK_EQ(jh_code_add(jh, &c, NULL), 0);                     /* the range is free */
    jh_close(jh);
    jh = open_ch(0);                                            /* nothing stored */
    CHECK_EQ(jh_code_add(jh, &c, &id[0]), 0);
    CHECK_EQ(jh_code_remove_range(jh, code, sizeof code), 0);
    CHECK_EQ(jh_code_remove(jh, id[0]), 0);
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

    CHECK(strlen(jh_strerror(JH_EOVERLAP)) > 5);
    CHECK_STR(jh_strerror(-ENOENT), "no such code registered");
    CHECK(jh_strerror(-ENOTSUP) != NULL && strcmp(jh_strerror(-ENOTSUP), "unknown error"));
    CHECK_STR(jh_strerror(12345), "unknown error");
    CHECK_STR(jh_version(), JH_VERSION_STRING);
}

/* The number of entries in a directory (. and .. aside), -1 if it cannot be read. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* The perf map of this process names fn. */
static bool perf_map_names(const char *fn)
{
    char path[64], line[256], want[128];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    snprintf(want, sizeof want, " %s\n", fn);
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = strlen(line) > strlen(want) && !strcmp(line + strlen(line) - strlen(want), want);
    if (f)
        fclose(f);
    return found;
}

/* A directory the files may not go to, with each channel that writes there: that channel
 * is reported (naming itself and the directory) and off, the others (the perf map) live,
 * jh_code_add succeeds, and nothing is written where it was refused (look: the directory
 * it would have gone to). */
static void refused_with_each_channel(const char *what, const char *dir, const char *look)
{
    static const struct { unsigned bit; const char *name; } ch[] = {
        { JH_JITDUMP, "jitdump" }, { JH_ELFMAP, "elfmap" }, { JH_AUDITLOG, "auditlog" },
    };
    for (size_t i = 0; i < sizeof ch / sizeof ch[0]; i++) {
        jh_ctx *jh = NULL;
        struct jh_options o = { .sz = sizeof o, .channels = ch[i].bit | JH_PERFMAP, .dir = dir,
                                .flags = JH_OPT_IGNORE_ENV, .log = logfn, .engine = "refused" };
        all_log[0] = 0;
        int before = entries(look);
        CHECK_EQ(jh_open(&jh, &o), 0);
        if (!jh)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s_%s", what, ch[i].name);
        struct jh_code c = mk(name, 0, 64);
        uint64_t id;
        CHECK_EQ(jh_code_add(jh, &c, &id), 0);
        CHECK_EQ(jh_flush(jh), 0);
        if (jh_channels(jh) != JH_PERFMAP || !strstr(all_log, ch[i].name) ||
            !strstr(all_log, dir) || !perf_map_names(name)) {
            fprintf(stderr, "%s with %s: channels %#x, log:\n%s", what, ch[i].name,
                    jh_channels(jh), all_log);
            CHECK(!"the directory was refused, the channel reported and off, the perf map live");
        }
        CHECK_EQ(jh_code_remove(jh, id), 0);
        jh_close(jh);
        CHECK_EQ(entries(look), before);
    }
}

/* Each way the directory is refused: a symbolic link, another user's directory, one
 * everybody may write to without the sticky bit (with it, it is accepted: /tmp). */
static void test_dir_refused(void)
{
    char base[] = "/tmp/jh-core-XXXXXX", path[128], real[128];
    CHECK(mkdtemp(base) != NULL);

    snprintf(path, sizeof path, "%s/file", base);        /* a file in the way */
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    refused_with_each_channel("file", path, base);
    CHECK_EQ(unlink(path), 0);

    snprintf(real, sizeof real, "%s/real", base);
    snprintf(path, sizeof path, "%s/link", base);
    CHECK(mkdir(real, 0700) == 0 && symlink(real, path) == 0);
    refused_with_each_channel("symlink", path, real);
    unlink(path);
    rmdir(real);

    snprintf(path, sizeof path, "%s/open", base);
    CHECK(mkdir(path, 0700) == 0 && chmod(path, 0777) == 0);
    refused_with_each_channel("world_writable", path, path);
    CHECK_EQ(chmod(path, 01777), 0);                    /* sticky: accepted */
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_JITDUMP, .dir = path,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT, .log = logfn };
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK_EQ(jh_channels(jh), JH_JITDUMP);
    jh_close(jh);
    CHECK_EQ(entries(path), 1);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", path);
    CHECK_EQ(system(cmd), 0);

    if (geteuid() == 0) {
        snprintf(path, sizeof path, "%s/theirs", base);
        CHECK(mkdir(path, 0700) == 0 && chown(path, 65534, 65534) == 0);
        refused_with_each_channel("foreign", path, path);
        rmdir(path);
    } else {
        SKIP_PART("not root: the directory of another user was not tried (needs chown)");
    }
    CHECK_EQ(rmdir(base), 0);
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
    test_remove_range();
    test_no_channel();
    test_options();
    test_dir_refused();
    test_strict();
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    unlink(path);
    return check_done();
}
