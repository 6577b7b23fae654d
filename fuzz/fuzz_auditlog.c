/*
 * fuzz_auditlog.c — the audit-log reader (tools/log_read.c) and everything that presents
 * what it read (text, disassembly, perf map, jitdump, HTML) on arbitrary bytes. The corpus
 * holds real logs: minijit with --log-structs, one with patch/move/remove and every
 * attribute kind, one cut by SIGKILL, a fork child's.
 */
#include <stdint.h>
#include <stdio.h>

#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null && !(null = fopen("/dev/null", "w")))
        return 0;
    log_source = false;         /* never open files a fuzzed log names */
    struct log_file lf;
    char err[256];
    if (log_parse(&lf, data, size, err, sizeof err) < 0)
        return 0;
    for (size_t i = 0; i < lf.nrecs; i++)
        mp_print(null, &lf.recs[i].map, 0);
    for (size_t i = 0; i < lf.nfns && i < 16; i++) {
        uint32_t line;
        log_fn_line(&lf.fns[i], lf.fns[i].size / 2, &line);
        log_fn_at(&lf, lf.fns[i].cur_start, SIZE_MAX);
        disasm_print(&lf, &lf.fns[i], null, i & 1);
    }
    for (size_t i = 0; i < lf.nmems && i < 16; i++)
        log_mem_at(&lf, lf.mems[i].addr, lf.mems[i].size, SIZE_MAX);
    export_perfmap(&lf, null);
    export_jitdump(&lf, null);
    report_html(&lf, NULL, null);
    log_free(&lf);
    return 0;
}
