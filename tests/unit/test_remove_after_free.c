/*
 * test_remove_after_free.c — jh_code_remove and jh_close after the JIT freed the code
 * (issue 13, item 5): LuaJIT reports a flush after it has unmapped its machine code. With
 * every channel on, code is announced (and patched), its memory unmapped, and only then
 * removed; a fork child whose first call comes after the unmap (it announces again what is
 * live: jitdump and the audit log read code bytes) must not fault either; then new code in
 * a new mapping, at the same address where the kernel allows, is named as usual. Run by
 * `make test` and, under AddressSanitizer, by `make asan`.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"

#define AREA (64 * 1024)
#define NFN 40

static char dir[64];
static const char *const files[] = { "freed.lua" };

/* push rbp; mov rbp,rsp; mov eax, v; pop rbp; ret — frame-pointer unwind info fits it */
static void emit(uint8_t *p, uint32_t v)
{
    static const uint8_t head[] = { 0x55, 0x48, 0x89, 0xe5, 0xb8 };
    memcpy(p, head, sizeof head);
    memcpy(p + 5, &v, 4);
    p[9] = 0x5d;
    p[10] = 0xc3;
}

static uint8_t *area_at(void *hint)
{
    uint8_t *a = mmap(hint, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED);
    memset(a, 0xcc, AREA);
    for (int i = 0; i < NFN; i++)
        emit(a + AREA - 256 - 64 * (size_t)(i + 1), 100 + (uint32_t)i);   /* top-down */
    CHECK_EQ(mprotect(a, AREA, PROT_READ | PROT_EXEC), 0);
    return a;
}

static void announce(jh_ctx *jh, uint8_t *a, uint64_t *ids, char (*names)[48])
{
    for (int i = 0; i < NFN; i++) {
        snprintf(names[i], sizeof names[i], "TRACE_%d freed.lua:%d", i, 10 + i);
        struct jh_line lines[2] = { { .offset = 0, .line = 10 + (uint32_t)i },
                                    { .offset = 5, .line = 11 + (uint32_t)i } };
        struct jh_code c = { .sz = sizeof c, .name = names[i],
                             .start = a + AREA - 256 - 64 * (size_t)(i + 1), .size = 11,
                             .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
                             .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
        CHECK_EQ(jh_code_add(jh, &c, &ids[i]), 0);
    }
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/jh-test-raf-XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ALL, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV, .engine = "freed" };
    CHECK_EQ(jh_open(&jh, &o), 0);
    unsigned want = jh_channels(jh);
    CHECK(want & JH_ELFMAP);
    CHECK(want & JH_JITDUMP);
    CHECK(want & JH_AUDITLOG);

    static char names[NFN][48];
    uint64_t ids[NFN];
    uint8_t *a = area_at(NULL);
    announce(jh, a, ids, names);
    /* a side trace links: a parent patched */
    CHECK_EQ(mprotect(a, AREA, PROT_READ | PROT_WRITE), 0);
    emit(a + AREA - 256 - 64, 999);
    CHECK_EQ(mprotect(a, AREA, PROT_READ | PROT_EXEC), 0);
    CHECK_EQ(jh_code_patched(jh, a + AREA - 256 - 64 + 5, 4), 0);
    CHECK_EQ(((uint32_t (*)(void))(void *)(a + AREA - 256 - 64))(), 999);

    /* jit.flush(): the machine code goes first ... */
    CHECK_EQ(munmap(a, AREA), 0);

    /* ... a fork child's first call comes now: it must not read the freed code */
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        for (int i = 0; i < NFN; i++)
            bad += jh_code_remove(jh, ids[i]) != 0;
        jh_close(jh);
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (WIFSIGNALED(st))
        fprintf(stderr, "fork child killed by signal %d\n", WTERMSIG(st));
    char childmap[64];                          /* the child's own perf map */
    snprintf(childmap, sizeof childmap, "/tmp/perf-%d.map", (int)pid);
    unlink(childmap);

    /* ... and the announcements of its removal after */
    for (int i = 0; i < NFN; i++)
        CHECK_EQ(jh_code_remove(jh, ids[i]), 0);
    CHECK_EQ(jh_code_remove(jh, ids[0]), -ENOENT);
    CHECK_EQ(jh_channels(jh), want);            /* no channel failed */

    /* new code in a new mapping (where the old one was, if the kernel lets us) */
    uint8_t *b = area_at(a);
    announce(jh, b, ids, names);
    struct ew_fn w[NFN];
    for (int i = 0; i < NFN; i++)
        w[i] = (struct ew_fn){ b + AREA - 256 - 64 * (size_t)(i + 1), 11, names[i] };
    CHECK_EQ(ew_check(w, NFN, NULL), NFN);
    CHECK_EQ(((uint32_t (*)(void))(void *)(b + AREA - 256 - 64))(), 100);
    CHECK_EQ(jh_channels(jh), want);

    /* and once more, freed again, with jh_close doing the removal */
    CHECK_EQ(munmap(b, AREA), 0);
    jh_close(jh);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s /tmp/perf-%d.map", dir, (int)getpid());
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    return check_done();
}
