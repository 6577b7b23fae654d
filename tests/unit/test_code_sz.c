/*
 * test_code_sz.c — struct jh_code is read as far as its sz goes, field by field, as
 * jh_options is: a caller built against an older, shorter struct keeps what it gave (a
 * struct cut after nfiles still names its files, and its lines and unwind rules, which it
 * does not have, are not read), one that is too short to say where the code is (no size)
 * is refused, and a newer caller's longer struct is accepted when its unknown tail is
 * zero. Checked where the description ends up: in the jitdump file (DEBUG_INFO and
 * UNWINDING_INFO records) and in the audit log's code_add record.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"
#include "base/buf.h"
#include "fmt/auditlog.h"
#include "fmt/jitdump.h"
#include "fmt/msgpack.h"

static char base[] = "/tmp/jh-code-sz-XXXXXX";
static uint8_t code[64] __attribute__((aligned(16)));
static const char *const files[] = { "sz.src" };
static const struct jh_line lines[] = { { 0, 7, 1, 0 }, { 4, 8, 1, 0 } };

/* What the channels wrote for one function. */
struct seen {
    int debug_info, unwinding_info;     /* jitdump records */
    bool files, no_lines, no_unwind;    /* in the audit log's code_add */
};

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *p = malloc(1 << 20);
    *n = p ? fread(p, 1, 1 << 20, f) : 0;
    fclose(f);
    return p;
}

/* The msgpack bytes of key followed by (array of n strings) or (string v), in *b. */
static bool holds(const uint8_t *p, size_t n, const struct jh__buf *b)
{
    return b->len && memmem(p, n, b->p, b->len) != NULL;
}

/* Announce c on a context with the jitdump channel and the audit log, in a directory of
 * its own, and read back what they wrote. */
static int announce(const struct jh_code *c, const char *label, struct seen *s)
{
    char dir[128], path[512];
    snprintf(dir, sizeof dir, "%s/%s", base, label);
    CHECK_EQ(mkdir(dir, 0700), 0);
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_JITDUMP | JH_AUDITLOG, .dir = dir,
                            .engine = "sz", .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &o), 0);
    if (!jh)
        return -1;
    uint64_t id;
    int rc = jh_code_add(jh, c, &id);
    jh_close(jh);
    memset(s, 0, sizeof *s);

    size_t n = 0;
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
    uint8_t *p = slurp(path, &n);
    CHECK(p && n >= JH__JD_HEADER_SIZE);
    for (size_t off = JH__JD_HEADER_SIZE; p && off + JH__JD_PREFIX_SIZE <= n;) {
        uint32_t rid, size;
        memcpy(&rid, p + off, 4);
        memcpy(&size, p + off + 4, 4);
        s->debug_info += rid == JH__JD_CODE_DEBUG_INFO;
        s->unwinding_info += rid == JH__JD_CODE_UNWINDING_INFO;
        if (size < JH__JD_PREFIX_SIZE)
            break;
        off += size;
    }
    free(p);

    /* the one log there: <engine>-<pid>[-<n>].jhlog, n counting this process's logs */
    DIR *d = opendir(dir);
    path[0] = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".jhlog"))
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    p = slurp(path, &n);
    CHECK(p != NULL);
    struct jh__buf b = { 0 };
    jh__mp_str(&b, JH__AL_K_FILES);
    jh__mp_array(&b, 1);
    jh__mp_str(&b, files[0]);
    s->files = p && holds(p, n, &b);
    b.len = 0;
    jh__mp_str(&b, JH__AL_K_LINES);
    jh__mp_array(&b, 0);
    s->no_lines = p && holds(p, n, &b);
    b.len = 0;
    jh__mp_kstr(&b, JH__AL_K_UNWIND, JH__AL_UNWIND_NONE);
    s->no_unwind = p && holds(p, n, &b);
    jh__buf_free(&b);
    free(p);
    return rc;
}

static struct jh_code full(void)
{
    struct jh_code c = { .sz = sizeof c, .name = "sized", .start = code, .size = sizeof code,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    return c;
}

/* A caller's struct of exactly sz bytes (malloc'd so: under ASan a read past it is
 * caught), holding the first sz bytes of c. */
static struct jh_code *cut(const struct jh_code *c, size_t sz)
{
    unsigned char *p = malloc(sz);
    memcpy(p, c, sz);
    memcpy(p + offsetof(struct jh_code, sz), &sz, sizeof sz);
    return (struct jh_code *)(void *)p;
}

int main(void)
{
    if (!mkdtemp(base))
        SKIP("mkdtemp failed");
    struct seen s;

    /* The whole struct: everything arrives (the control for what follows). */
    struct jh_code c = full();
    CHECK_EQ(announce(&c, "whole", &s), 0);
    CHECK_EQ(s.debug_info, 1);
    CHECK_EQ(s.unwinding_info, 1);
    CHECK(s.files && !s.no_lines && !s.no_unwind);

    /* Cut after nfiles (an older caller without lines and unwind rules): the files are
     * read, the lines and unwind rules are not, whatever lies past the end. */
    struct jh_code *old = cut(&c, offsetof(struct jh_code, lines));
    CHECK_EQ(announce(old, "to_nfiles", &s), 0);
    CHECK_EQ(s.debug_info, 0);
    CHECK_EQ(s.unwinding_info, 0);
    CHECK(s.files && s.no_lines && s.no_unwind);
    free(old);
    /* the same with the caller's memory past its struct holding garbage */
    struct jh_code g = full();
    g.sz = offsetof(struct jh_code, lines);
    g.lines = (const struct jh_line *)(uintptr_t)1;
    g.nlines = 1000;
    g.unwind = (enum jh_unwind_kind)77;
    CHECK_EQ(announce(&g, "garbage_after", &s), 0);
    CHECK(s.debug_info == 0 && s.unwinding_info == 0 && s.files && s.no_lines && s.no_unwind);

    /* Cut before unwind: lines read, no unwind rules. */
    old = cut(&c, offsetof(struct jh_code, unwind));
    CHECK_EQ(announce(old, "to_nlines", &s), 0);
    CHECK_EQ(s.debug_info, 1);
    CHECK_EQ(s.unwinding_info, 0);
    CHECK(s.files && !s.no_lines && s.no_unwind);
    free(old);

    /* Cut inside fp_set_end: the frame-pointer rule is incomplete, so invalid. */
    old = cut(&c, offsetof(struct jh_code, fp_set_end));
    CHECK_EQ(announce(old, "half_unwind", &s), -EINVAL);
    free(old);

    /* Smaller than the required fields (name, start, size): refused. */
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .flags = JH_OPT_IGNORE_ENV };
    CHECK_EQ(jh_open(&jh, &o), 0);
    uint64_t id;
    old = cut(&c, offsetof(struct jh_code, size));
    CHECK_EQ(jh_code_add(jh, old, &id), -EINVAL);
    free(old);
    old = cut(&c, offsetof(struct jh_code, size) + sizeof c.size);
    CHECK_EQ(jh_code_add(jh, old, &id), 0);
    free(old);
    jh_close(jh);

    /* A newer caller's longer struct: a zero tail is accepted and changes nothing, a
     * non-zero one (a field this library does not know about) is refused. */
    struct { struct jh_code c; uint64_t tail[3]; } big;
    memset(&big, 0, sizeof big);
    big.c = full();
    big.c.sz = sizeof big;
    CHECK_EQ(announce(&big.c, "longer", &s), 0);
    CHECK(s.debug_info == 1 && s.unwinding_info == 1 && s.files && !s.no_lines && !s.no_unwind);
    big.tail[2] = 1;
    CHECK_EQ(announce(&big.c, "longer_unknown", &s), -EINVAL);

    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base);
    return check_done();
}
