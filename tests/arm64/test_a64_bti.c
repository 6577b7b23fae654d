/*
 * test_a64_bti.c — elfmap keeps BTI (arm64 branch target identification), under
 * qemu-aarch64 -cpu max. A JIT maps its code PROT_BTI: an indirect call must land on a
 * `bti c` landing pad, or the CPU raises SIGILL. elfmap swaps the JIT's pages for a mapping
 * of its image file; that mapping must be PROT_BTI too, or every function of the JIT
 * becomes a valid target for a hijacked branch. Checked by calling through the image:
 *   - a function that starts with `bti c` still runs, after the swap and after the swap is
 *     undone (jh_code_remove gives the pages back to anonymous memory, still guarded);
 *   - a function without a landing pad still traps (in a child), at both moments.
 * The JIT says its pages are guarded with JH_OPT_CODE_BTI, as it must under qemu-user,
 * whose /proc/self/smaps is the host's (on a kernel, smaps' "bt" says it): the control
 * without the flag shows that the trap check notices a swap that drops the guard.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

#ifndef PROT_BTI
#define PROT_BTI 0x10
#endif
#define HWCAP2_BTI_BIT (1UL << 17)

enum { BTI_C = 0xd503245f, MOV_W0 = 0x52800000, RET = 0xd65f03c0 };

typedef int fn_t(void);

/* Does calling f indirectly (blr) trap with SIGILL? In a child: the trap kills it. */
static int traps(fn_t *f)
{
    pid_t pid = fork();
    if (pid == 0) {
        setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });  /* qemu would write a core */
        signal(SIGILL, SIG_DFL);
        _exit(f() == 7 ? 0 : 2);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGILL ? 1 : WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

/* Is addr mapped from a file (an elfmap image) rather than anonymous memory? */
static int from_file(const void *addr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[1024];
    int r = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long s, e;
        char path[512] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %511s", &s, &e, path) >= 2 &&
            (uintptr_t)addr >= s && (uintptr_t)addr < e) {
            r = strstr(path, ".elf") != NULL;
            break;
        }
    }
    fclose(f);
    return r;
}

/* One JIT page with a guarded function (bti c; mov w0, 42; ret) and one without a landing
 * pad (mov w0, 7; ret), announced on elfmap; JH_OPT_CODE_BTI or not. */
static void run(const char *dir, bool say_bti)
{
    uint32_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    page[0] = BTI_C;
    page[1] = MOV_W0 | 42 << 5;
    page[2] = RET;
    page[4] = MOV_W0 | 7 << 5;
    page[5] = RET;
    __builtin___clear_cache((char *)page, (char *)(page + 8));
    CHECK_EQ(mprotect(page, 4096, PROT_READ | PROT_EXEC | PROT_BTI), 0);
    fn_t *pad = (fn_t *)(void *)page, *nopad = (fn_t *)(void *)(page + 4);
    CHECK_EQ(pad(), 42);
    CHECK_EQ(traps(nopad), 1);                  /* the guard, before jitherald */

    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir, .engine = "bti",
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT |
                                     (say_bti ? JH_OPT_CODE_BTI : 0) };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    uint64_t a, b;
    struct jh_code c = { .sz = sizeof c, .name = "guarded", .start = page, .size = 12 };
    CHECK_EQ(jh_code_add(ctx, &c, &a), 0);
    c.name = "unguarded";
    c.start = page + 4;
    c.size = 8;
    CHECK_EQ(jh_code_add(ctx, &c, &b), 0);
    CHECK_EQ(jh_flush(ctx), 0);
    CHECK_EQ(from_file(page), 1);               /* swapped: the image is mapped there */
    CHECK_EQ(pad(), 42);
    if (say_bti) {
        CHECK_EQ(traps(nopad), 1);              /* the image keeps the guard */
    } else {
        /* qemu's smaps cannot tell: the image is mapped without the guard, and the trap
         * check sees it (on a kernel, smaps' "bt" would keep the guard) */
        CHECK_EQ(traps(nopad), 0);
    }

    /* every function removed: the page is anonymous again, guarded as before */
    CHECK_EQ(jh_code_remove(ctx, a), 0);
    CHECK_EQ(jh_code_remove(ctx, b), 0);
    CHECK_EQ(from_file(page), 0);
    CHECK_EQ(pad(), 42);
    if (say_bti)
        CHECK_EQ(traps(nopad), 1);
    jh_close(ctx);
    munmap(page, 4096);
}

int main(void)
{
    if (!(getauxval(AT_HWCAP2) & HWCAP2_BTI_BIT))
        SKIP("this CPU has no BTI (qemu-aarch64 -cpu max has)");
    char dir[] = "/tmp/jh-test-bti.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    run(dir, true);
    run(dir, false);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
    return check_done();
}
