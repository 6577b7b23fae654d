/*
 * fuzz_auditlog.c — the audit-log reader (tools/lib/auditlog_read.c) and everything that
 * presents what it read (text, disassembly, perf map, jitdump, HTML) on arbitrary bytes. The corpus
 * holds real logs: minijit with --log-structs, one with patch/move/remove and every
 * attribute kind, one cut by SIGKILL, a fork child's.
 */
#include <stdint.h>
#include <stdio.h>

#include "fmt/arch.h"
#include "log_present.h"

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
    jhc_report_html(&lf, NULL, null);
    jhr_al_free(&lf);
    return 0;
}
