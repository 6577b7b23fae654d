/*
 * auditlog_test.c — the audit log written on Windows, read on Linux with the same CLI
 * (tests/integration/win64_auditlog.sh). With JITHERALD=auditlog and JITHERALD_DIR set:
 *     auditlog_test.exe normal   three functions, an event naming one, a memory snapshot,
 *                                4 MiB of snapshots (the file grows past its first view),
 *                                one function removed, then jh_close
 *     auditlog_test.exe crash    the same records, then the process dies without closing
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "jitherald.h"
#include "wjit.h"

struct vm_state {
    unsigned magic;
    unsigned ncompiled;
    char name[16];
};

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2 || wjit_init(1u << 20) < 0)
        return 2;
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .engine = "wjit" };
    if (jh_open(&jh, &o) < 0 || !(jh_channels(jh) & JH_AUDITLOG)) {
        printf("FAIL no audit log (JITHERALD=%s)\n", getenv("JITHERALD"));
        return 1;
    }
    struct wjit_chain c;
    if (wjit_make_chain(jh, "al", &c) != 0)
        return 1;
    struct vm_state vm = { 0x564d5354, 3, "wjit-vm" };
    struct jh_attr a[] = {
        { .key = "name", .kind = JH_ATTR_STR, .v.s = "al_middle" },
        { .key = "code", .kind = JH_ATTR_ADDR, .v.u = (uintptr_t)c.fn[1].code },
        { .key = "state", .kind = JH_ATTR_ADDR, .v.u = (uintptr_t)&vm },
        { .key = "tier", .kind = JH_ATTR_INT, .v.i = -2 },
    };
    jh_log_memory(jh, &vm, sizeof vm, "struct vm_state");
    jh_log_event(jh, "compile", a, 4);
    static char big[1024];
    for (int i = 0; i < 4096; i++) {
        memset(big, i & 0xff, sizeof big);
        jh_log_memory(jh, big, sizeof big, "char[1024]");
    }
    jh_code_remove(jh, c.fn[2].id);
    jh_log_event(jh, "done", NULL, 0);
    printf("ok logged\n");
    if (!strcmp(argv[1], "crash"))
        TerminateProcess(GetCurrentProcess(), 9);   /* no jh_close, no exit handlers */
    jh_close(jh);
    return 0;
}
