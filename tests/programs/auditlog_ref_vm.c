/*
 * auditlog_ref_vm.c — a "VM" whose code lies in its own executable, as V8's builtins lie in
 * node's: it announces `builtin_sum`, a function of this file, with JITHERALD=auditlog, so
 * that the audit log records it by reference (file, build-id, offset) instead of copying
 * it. tests/integration/auditlog_ref_debuginfod.sh reads the log back where this file is
 * gone and a debuginfod server has it.
 */
#include <stdio.h>

#include "jitherald.h"

__attribute__((noinline, used)) long builtin_sum(const long *v, long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += v[i] * (i + 1);
    return s;
}

int main(void)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .engine = "refvm" };
    if (jh_open(&jh, &o) != 0)
        return 1;
    struct jh_code c = { .sz = sizeof c, .name = "builtin_sum", .start = (const void *)builtin_sum,
                         .size = 48 };
    if (jh_code_add(jh, &c, NULL) != 0)
        return 1;
    long v[] = { 1, 2, 3 };
    printf("%ld\n", builtin_sum(v, 3));
    jh_close(jh);
    return 0;
}
