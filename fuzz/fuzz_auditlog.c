/*
 * fuzz_auditlog.c — the audit-log reader (tools/lib/auditlog_read.c) and everything that
 * presents what it read (text, disassembly, perf map, jitdump, HTML) on arbitrary bytes. The corpus
 * holds real logs (and `profile`'s time lookup runs on each): minijit with --log-structs, one with patch/move/remove and every
 * attribute kind, one cut by SIGKILL, a fork child's.
 */
#include <stdint.h>
#include <stdio.h>

#include <stdlib.h>

#include "fmt/arch.h"
#include "lib/auditlog_when.h"
#include "log_present.h"

/* `profile`'s time lookup (lib/auditlog_when.h) at each function's start and middle, at the
 * times of its add and of its last record: what it finds must hold the address. */
static void when(const struct jhr_al *lf)
{
    struct jhr_al_when w;
    if (jhr_al_when_build(&w, lf) < 0)
        return;
    for (size_t i = 0; i < lf->nfns && i < 16; i++) {
        const struct jhr_al_fn *fn = &lf->fns[i];
        uint64_t addrs[] = { fn->start, fn->start + fn->size / 2, fn->cur_start };
        uint64_t times[] = { fn->t_add, fn->t_remove, 0, UINT64_MAX };
        for (size_t a = 0; a < 3; a++)
            for (size_t t = 0; t < 4; t++) {
                bool live;
                const struct jhr_al_fn *hit = jhr_al_when_fn(&w, addrs[a], times[t], &live);
                if (hit && addrs[a] - hit->start >= hit->size && addrs[a] - hit->cur_start >= hit->size) {
                    /* a function moved more than once may hold it at a middle place */
                    if (hit->nmoves < 2)
                        abort();
                }
            }
    }
    jhr_al_when_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null && !(null = fopen("/dev/null", "w")))
        return 0;
    jhc_disasm_source = false;         /* never open files a fuzzed log names */
    struct jhr_al lf;
    char err[256];
    if (jhr_al_parse(&lf, data, size, err, sizeof err) < 0)
        return 0;
    for (size_t i = 0; i < lf.nrecs; i++)
        jhr_mp_print(null, &lf.recs[i].map, 0);
    for (size_t i = 0; i < lf.nfns && i < 16; i++) {
        uint32_t line;
        jhr_al_fn_line(&lf.fns[i], lf.fns[i].size / 2, &line);
        jhr_al_fn_at(&lf, lf.fns[i].cur_start, SIZE_MAX);
        jhc_disasm_print(&lf, &lf.fns[i], null, i & 1);
    }
    for (size_t i = 0; i < lf.nmems && i < 16; i++)
        jhr_al_mem_at(&lf, lf.mems[i].addr, lf.mems[i].size, SIZE_MAX);
    jhc_export_perfmap(&lf, null);
    const struct jh__arch *a = jh__arch_by_name(lf.arch);
    jhc_export_jitdump(&lf, a ? a : &jh__arch_arm64, null);   /* arm64: the one not the host */
    jhc_report_html(&lf, NULL, NULL, null);
    when(&lf);
    jhr_al_free(&lf);
    return 0;
}
