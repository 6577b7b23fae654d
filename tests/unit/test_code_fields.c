/*
 * test_code_fields.c — the fields of struct jh_code added after 0.1.0 (symbol,
 * prologue_end, JH_UNWIND_FRAMELESS, epilogues, personality and LSDA) are validated by
 * jh_code_add before any channel sees them: each malformed description is -EINVAL and
 * switches nothing off; each good one is accepted by every channel that encodes it (perf
 * map, jitdump, gdb, unwind, audit log: all stay live); and a caller built against 0.1.0
 * (its struct ends at cfi_len) is read as before.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

static uint8_t *code;
static const char *const files[] = { "f.lua" };
static const struct jh_line lines[] = { { 0, 1, 0, 0 }, { 16, 2, 0, 0 } };

static struct jh_code base(size_t off)
{
    return (struct jh_code){ .sz = sizeof(struct jh_code), .name = "f", .start = code + off,
                             .size = 64, .files = files, .nfiles = 1, .lines = lines,
                             .nlines = 2 };
}

int main(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/jh-code-fields-%d", (int)getpid());
    code = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE | PROT_EXEC,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    memset(code, 0xc3, 1 << 16);
    jh_ctx *jh = NULL;
    unsigned want = JH_PERFMAP | JH_JITDUMP | JH_GDB | JH_UNWIND | JH_AUDITLOG;
    struct jh_options o = { .sz = sizeof o, .channels = want, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK_EQ(jh_channels(jh), want);

    static const struct jh_cfa_step steps[] = { { 4, 96 }, { 59, 80 } };
    static const struct jh_cfa_step unsorted[] = { { 8, 96 }, { 8, 80 } };
    static const struct jh_cfa_step past[] = { { 64, 96 } };
    static const struct jh_saved_reg regs[] = { { 6, -16 }, { 3, -24 } };
    static const struct jh_saved_reg above[] = { { 6, 16 } };
    static const struct jh_saved_reg odd[] = { { 6, -12 } };
    static const struct jh_saved_reg far[] = { { 1000, -16 } };
    static const struct jh_epilogue epi[] = { { 30, 31 }, { 62, 64 } };
    static const struct jh_epilogue early[] = { { 2, 3 } };            /* before fp_set_end */
    static const struct jh_epilogue overlap[] = { { 30, 40 }, { 35, 41 } };
    static const struct jh_epilogue empty[] = { { 30, 30 } };
    static const char lsda[] = "lsda";

    /* malformed */
    struct jh_code c;
    c = base(0); c.symbol = "";
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c = base(0); c.prologue_end = 64;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c = base(0); c.lsda = lsda;                                        /* no personality */
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c = base(0); c.personality = (const void *)main;                   /* unwind NONE */
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c = base(0); c.unwind = JH_UNWIND_FRAMELESS; c.cfa_offset = 80;
    c.cfa_steps = unsorted; c.ncfa_steps = 2;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c.cfa_steps = past; c.ncfa_steps = 1;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c.cfa_steps = NULL; c.ncfa_steps = 1;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c.ncfa_steps = 0;
    c.saved_regs = above; c.nsaved_regs = 1;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c.saved_regs = odd;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c.saved_regs = far;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c = base(0); c.unwind = JH_UNWIND_FRAME_POINTER; c.fp_push_end = 1; c.fp_set_end = 4;
    c.epilogues = early; c.nepilogues = 1;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c.epilogues = overlap; c.nepilogues = 2;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c.epilogues = empty; c.nepilogues = 1;
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    c = base(0); c.unwind = 4;                                         /* no such kind */
    CHECK_EQ(jh_code_add(jh, &c, NULL), -EINVAL);
    CHECK_EQ(jh_channels(jh), want);

    /* good ones, each through every channel */
    uint64_t id[4];
    c = base(0); c.name = "TRACE_1 f.lua:1"; c.prologue_end = 4;
    c.unwind = JH_UNWIND_FRAMELESS; c.cfa_offset = 96; c.cfa_steps = steps; c.ncfa_steps = 2;
    c.saved_regs = regs; c.nsaved_regs = 2;
    CHECK_EQ(jh_code_add(jh, &c, &id[0]), 0);
    c = base(64); c.symbol = "_ZN2ns2fnEi"; c.unwind = JH_UNWIND_FRAME_POINTER;
    c.fp_push_end = 1; c.fp_set_end = 4; c.epilogues = epi; c.nepilogues = 2;
    c.personality = (const void *)main; c.lsda = lsda;
    CHECK_EQ(jh_code_add(jh, &c, &id[1]), 0);
    c = base(128); c.unwind = JH_UNWIND_FRAMELESS; c.cfa_offset = 8;     /* a leaf */
    CHECK_EQ(jh_code_add(jh, &c, &id[2]), 0);
    char name[64];
    CHECK_EQ(jh_lookup(jh, code + 8, NULL, NULL, NULL, name, sizeof name), 0);
    CHECK_STR(name, "TRACE_1 f.lua:1");                 /* the display name, not the symbol */
    CHECK_EQ(jh_channels(jh), want);

    /* a 0.1.0 caller: its struct ends after cfi_len; whatever lies beyond is not read */
    struct { struct jh_code c; char junk[64]; } old;
    memset(&old, 0x5a, sizeof old);
    old.c = base(192);
    old.c.sz = offsetof(struct jh_code, cfi_len) + sizeof old.c.cfi_len;
    old.c.unwind = JH_UNWIND_FRAME_POINTER;
    old.c.fp_push_end = 1;
    old.c.fp_set_end = 4;
    old.c.cfi = NULL;
    old.c.cfi_len = 0;
    CHECK_EQ(jh_code_add(jh, &old.c, &id[3]), 0);
    CHECK_EQ(jh_channels(jh), want);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(jh_code_remove(jh, id[i]), 0);
    jh_close(jh);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s /tmp/perf-%d.map", dir, (int)getpid());
    CHECK_EQ(system(cmd), 0);
    return check_done();
}
