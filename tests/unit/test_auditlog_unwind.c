/*
 * test_auditlog_unwind.c — what a JIT says since 0.1.0 (symbol, prologue_end, frameless unwind
 * descriptions, epilogues, personality and LSDA) reaches the audit log and comes back out
 * of the CLI's reader as it went in; a name that is not a symbol gets its derived symbol
 * recorded, one that is gets none. With JH_CORPUS=DIR the log is also saved there, cut to
 * its frames, as a fuzz corpus input (fuzz/corpus/auditlog/unwind-desc.jhlog).
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"
#include "lib/auditlog_read.h"

static uint8_t code[3][64] __attribute__((aligned(16)));

int main(void)
{
    char dir[] = "/tmp/jh-test-al-unwind.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir, .engine = "uw",
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &o), 0);

    static const char *files[] = { "t.lua" };
    static const struct jh_line lines[] = { { 0, 3, 0, 0 }, { 20, 4, 0, 0 } };
    static const struct jh_cfa_step steps[] = { { 4, 96 }, { 50, 80 } };
    static const struct jh_saved_reg regs[] = { { 6, -16 }, { 3, -24 }, { 15, -32 }, { 14, -40 } };
    static const struct jh_epilogue epis[] = { { 40, 41 }, { 62, 64 } };
    static const char lsda[] = "lsda";
    struct jh_code c[3] = {
        { .sz = sizeof c[0], .name = "TRACE_7 t.lua:3", .start = code[0], .size = 64,
          .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
          .unwind = JH_UNWIND_FRAMELESS, .cfa_offset = 80, .cfa_steps = steps, .ncfa_steps = 2,
          .saved_regs = regs, .nsaved_regs = 4 },
        { .sz = sizeof c[0], .name = "ns::fn(int)", .symbol = "_ZN2ns2fnEi", .start = code[1],
          .size = 64, .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
          .prologue_end = 8, .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
          .fp_set_end = 4, .epilogues = epis, .nepilogues = 2,
          .personality = (const void *)main, .lsda = lsda },
        { .sz = sizeof c[0], .name = "plain", .start = code[2], .size = 64 },
    };
    for (int i = 0; i < 3; i++)
        CHECK_EQ(jh_code_add(jh, &c[i], NULL), 0);
    jh_close(jh);

    char path[512], err[256];
    snprintf(path, sizeof path, "%s/uw-%d.jhlog", dir, (int)getpid());
    struct jhr_al lf;
    CHECK_EQ(jhr_al_open(&lf, path, err, sizeof err), 0);
    CHECK_EQ(lf.nfns, 3);
    CHECK_EQ(lf.bad, 0);
    if (lf.nfns == 3) {
        const struct jhr_al_fn *t = &lf.fns[0], *f = &lf.fns[1], *p = &lf.fns[2];
        CHECK_STR(t->name, "TRACE_7 t.lua:3");
        CHECK_STR(t->symbol, "TRACE_7_t_lua_3");          /* derived, and recorded */
        CHECK_STR(t->unwind, "frameless");
        CHECK_EQ(t->cfa_offset, 80);
        CHECK_EQ(t->ncfa_steps, 2);
        CHECK(t->cfa_steps && t->cfa_steps[1].offset == 50 && t->cfa_steps[1].cfa_offset == 80);
        CHECK_EQ(t->nsaved_regs, 4);
        CHECK(t->saved_regs && t->saved_regs[3].reg == 14 && t->saved_regs[3].cfa_offset == -40);
        CHECK_EQ(t->prologue_end, 0);
        CHECK_EQ(t->personality, 0);

        CHECK_STR(f->symbol, "_ZN2ns2fnEi");
        CHECK_EQ(f->prologue_end, 8);
        CHECK_STR(f->unwind, "frame_pointer");
        CHECK_EQ(f->nepilogues, 2);
        CHECK(f->epilogues && f->epilogues[1].start == 62 && f->epilogues[1].end == 64);
        CHECK_EQ(f->personality, (uintptr_t)main);
        CHECK_EQ(f->lsda, (uintptr_t)lsda);

        CHECK(p->symbol == NULL);                           /* the name is a symbol */
        CHECK_STR(p->unwind, "none");
    }
    const char *corpus = getenv("JH_CORPUS");
    if (corpus && lf.nrecs) {
        const struct jhr_al_rec *last = &lf.recs[lf.nrecs - 1];
        size_t end = (size_t)last->off + 5;
        uint32_t len = (uint32_t)lf.data[last->off + 1] << 24 | lf.data[last->off + 2] << 16 |
                       lf.data[last->off + 3] << 8 | lf.data[last->off + 4];
        char out[600];
        snprintf(out, sizeof out, "%s/unwind-desc.jhlog", corpus);
        FILE *fo = fopen(out, "wb");
        CHECK(fo && fwrite(lf.data, 1, end + len, fo) == end + len);
        if (fo)
            fclose(fo);
    }
    jhr_al_free(&lf);
    unlink(path);
    rmdir(dir);
    return check_done();
}
