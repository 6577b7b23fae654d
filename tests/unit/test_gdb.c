/*
 * test_gdb.c — the gdb channel's bookkeeping, seen the way a debugger that attaches at a
 * given moment sees it: walk __jit_debug_descriptor's list and read each image's symbols.
 * Checked after every kind of change: every live function named exactly once, removed
 * and moved code gone from its old place, few images (packing works), deferred mode
 * invisible until jh_flush, several contexts and threads sharing the one list. One image
 * is also handed to llvm-dwarfdump-14 --verify, the decoder's verdict rather than ours.
 */
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "channels/gdb_jit.h"
#include "check.h"
#include "fmt/build_id.h"
#include "gdb_view.h"
#include "jitherald.h"


/* ---- code to announce (never run: a region of rets is enough) ---- */
enum { FN_SIZE = 32 };

static uint8_t *code_region(size_t n)
{
    uint8_t *p = mmap(NULL, n * FN_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, 0xc3, n * FN_SIZE);
    return p;
}

static const char *files[] = { "test.mini", "lib.mini" };

static uint64_t add_fn(jh_ctx *jh, const uint8_t *at, const char *name, uint32_t line)
{
    struct jh_line lines[2] = { { .offset = 0, .line = line, .file = 0 },
                                { .offset = 4, .line = line + 1, .column = 3, .file = 1 } };
    struct jh_code c = { .sz = sizeof c, .name = name, .start = at, .size = FN_SIZE,
        .files = files, .nfiles = 2, .lines = lines, .nlines = 2,
        .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    return id;
}

static jh_ctx *open_gdb(uint32_t batch)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB, .flags = JH_OPT_IGNORE_ENV,
                            .engine = "test", .gdb_batch = batch };
    CHECK_EQ(jh_open(&jh, &o), 0);
    CHECK(jh && (jh_channels(jh) & JH_GDB));
    return jh;
}

static void test_immediate(void)
{
    enum { N = 3000 };
    uint8_t *code = code_region(N);
    static uint64_t ids[N];
    char name[32];
    jh_ctx *jh = open_gdb(0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "f%d", i);
        ids[i] = add_fn(jh, code + (size_t)i * FN_SIZE, name, (uint32_t)i + 1);
        if (i == 0 || i == 16 || i == 300 || i == N - 1) {
            /* what a debugger attaching right now finds: everything so far, once */
            CHECK_EQ(snapshot(), 0);
            CHECK_EQ(nview, i + 1);
            CHECK_EQ(count_named(name, (uintptr_t)(code + (size_t)i * FN_SIZE)), 1);
            CHECK_EQ(count_named("f0", (uintptr_t)code), 1);
        }
    }
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nview, N);
    /* no debugger: every function went into one growing image, frozen when full (1024,
     * gdb_batch), so 3000 = 2 full images + the growing one (gdb_grow.c) */
    printf("immediate: %d functions in %zu images\n", N, nimages);
    CHECK_EQ(nimages, 3);
    int dup = 0;
    for (int i = 0; i < N; i += 7) {
        snprintf(name, sizeof name, "f%d", i);
        dup += count_named(name, (uintptr_t)(code + (size_t)i * FN_SIZE)) != 1;
    }
    CHECK_EQ(dup, 0);

    /* remove every third function. Big images are rebuilt lazily: the live functions stay
     * named exactly once, the removed ones may linger (on freed code) until a quarter of
     * their image is dead, their addresses are reused, or jh_flush */
    for (int i = 0; i < N; i += 3)
        CHECK_EQ(jh_code_remove(jh, ids[i]), 0);
    CHECK_EQ(snapshot(), 0);
    CHECK(nview >= N - (N + 2) / 3);
    /* an image is rebuilt once a quarter of it is dead: staleness stays bounded */
    CHECK(nview <= N - (N + 2) / 3 + N / 4);
    CHECK_EQ(count_named("f2998", 0), 1);
    CHECK_EQ(count_named("f1", (uintptr_t)(code + FN_SIZE)), 1);

    /* move f1 into the hole f0 left: reusing a removed address settles the images that
     * still claim it first (f0 is gone), and the name follows the code at once; images
     * that lost code elsewhere stay within the bound above (rebuilding them all made a JIT
     * that frees code as it compiles pay for every image at every function) */
    CHECK_EQ(jh_code_move(jh, ids[1], code), 0);
    CHECK_EQ(snapshot(), 0);
    CHECK(nview >= N - (N + 2) / 3 && nview <= N - (N + 2) / 3 + N / 4);
    CHECK_EQ(count_named("f0", 0), 0);
    CHECK(count_named("f2997", 0) <= 1);
    CHECK_EQ(count_named("f2998", 0), 1);
    CHECK_EQ(count_named("f1", (uintptr_t)code), 1);
    CHECK(count_named("f1", (uintptr_t)(code + FN_SIZE)) <= 1);   /* its old copy: freed */

    /* a removal then jh_flush: gone */
    CHECK_EQ(jh_code_remove(jh, ids[2]), 0);
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("f2", 0), 0);
    CHECK_EQ(nview, N - (N + 2) / 3 - 1);

    /* reuse a freed address for new code, right after its removal, no flush between */
    CHECK_EQ(jh_code_remove(jh, ids[4]), 0);
    add_fn(jh, code + 4 * FN_SIZE, "reborn", 7);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("reborn", (uintptr_t)(code + 4 * FN_SIZE)), 1);
    CHECK_EQ(count_named("f4", 0), 0);

    CHECK_EQ(jh_flush(jh), 0);
    jh_close(jh);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nimages, 0);
    CHECK(__jit_debug_descriptor.first_entry == NULL);
    munmap(code, N * FN_SIZE);
}

/* jh_code_remove_range (a JIT flushing its code): images are settled once, at its end,
 * not as each quarter of them dies; when it returns, nothing removed is named any more and
 * what stays is named exactly once. */
static void test_remove_range(void)
{
    enum { N = 2000 };
    uint8_t *code = code_region(N);
    char name[32];
    jh_ctx *jh = open_gdb(0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "r%d", i);
        add_fn(jh, code + (size_t)i * FN_SIZE, name, 1 + i % 50);
    }
    /* the first 10 go in one call */
    CHECK_EQ(jh_code_remove_range(jh, code, 10 * FN_SIZE), 10);
    snapshot();
    CHECK_EQ(nview, N - 10);
    CHECK_EQ(count_named("r0", 0), 0);
    CHECK_EQ(count_named("r9", 0), 0);
    CHECK_EQ(count_named("r10", (uintptr_t)(code + 10 * FN_SIZE)), 1);
    CHECK_EQ(count_named("r1999", (uintptr_t)(code + 1999 * FN_SIZE)), 1);
    /* and the rest: no image left */
    CHECK_EQ(jh_code_remove_range(jh, code, (size_t)N * FN_SIZE), N - 10);
    snapshot();
    CHECK_EQ(nview, 0);
    CHECK_EQ(nimages, 0);
    jh_close(jh);
    munmap(code, N * FN_SIZE);
}

/* jitherald run announces a function from the perf map, then again from the jitdump with
 * its lines (jh_code_remove_range over it, then jh_code_add): the last function added to
 * the growing image is taken out of it in place, and the new one appended; the image stays
 * the one registered (no copy, no rebuild). */
static void test_replace_last(void)
{
    enum { N = 100 };
    uint8_t *code = code_region(N);
    char name[32];
    jh_ctx *jh = open_gdb(0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "q%d", i);
        add_fn(jh, code + (size_t)i * FN_SIZE, name, 1 + i);
        CHECK_EQ(jh_code_remove_range(jh, code + (size_t)i * FN_SIZE, FN_SIZE), 1);
        snprintf(name, sizeof name, "again%d", i);
        add_fn(jh, code + (size_t)i * FN_SIZE, name, 2 + i);
    }
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nimages, 1);
    CHECK_EQ(nview, N);
    CHECK_EQ(count_named("q0", 0), 0);
    CHECK_EQ(count_named("q99", 0), 0);
    CHECK_EQ(count_named("again0", (uintptr_t)code), 1);
    CHECK_EQ(count_named("again99", (uintptr_t)(code + 99 * FN_SIZE)), 1);
    const void *grown = image_naming("again0");
    /* any other removal: the image as it stands becomes an ordinary one (gdb.c's lazy
     * removal), and the next add starts a new growing image */
    CHECK_EQ(jh_code_remove_range(jh, code + 50 * FN_SIZE, FN_SIZE), 1);
    add_fn(jh, code + 50 * FN_SIZE, "new50", 9);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("again50", 0), 0);
    CHECK_EQ(count_named("new50", (uintptr_t)(code + 50 * FN_SIZE)), 1);
    CHECK_EQ(nview, N);
    CHECK(image_naming("again0") != grown);     /* rebuilt: it claimed new50's place */
    jh_close(jh);
    munmap(code, N * FN_SIZE);
}

/* jitherald run replaces a function in place (the perf map's description, then the
 * jitdump's with lines): jh_code_remove_range over it, then jh_code_add at the same
 * range. The full image it was in is rebuilt once, at the removal's end, keeping its place
 * out of its sections, so that the new code needs no second rebuild of it (Erlang: 620
 * replacements, each rebuilding a full image twice). */
static void test_replace(void)
{
    enum { N = 2048 };
    uint8_t *code = code_region(N);
    char name[32], left[32], right[32];
    jh_ctx *jh = open_gdb(0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "p%d", i);
        add_fn(jh, code + (size_t)i * FN_SIZE, name, 1 + i % 50);
    }
    for (int k = 0; k < 3; k++) {
        int at = 500 + 7 * k;
        snprintf(name, sizeof name, "p%d", at);
        snprintf(left, sizeof left, "p%d", at - 1);
        snprintf(right, sizeof right, "p%d", at + 1);
        CHECK_EQ(snapshot(), 0);
        const void *full = image_naming(name);
        CHECK(full && image_naming(left) == full && image_naming(right) == full);
        CHECK_EQ(jh_code_remove_range(jh, code + (size_t)at * FN_SIZE, FN_SIZE), 1);
        CHECK_EQ(snapshot(), 0);
        CHECK_EQ(count_named(name, 0), 0);          /* gone when the removal returns */
        const void *rebuilt = image_naming(left);
        CHECK(rebuilt && rebuilt != full && image_naming(right) == rebuilt);
        snprintf(name, sizeof name, "again%d", at);
        add_fn(jh, code + (size_t)at * FN_SIZE, name, 3);
        CHECK_EQ(snapshot(), 0);
        CHECK_EQ(count_named(name, (uintptr_t)(code + (size_t)at * FN_SIZE)), 1);
        CHECK_EQ(count_named(left, (uintptr_t)(code + (size_t)(at - 1) * FN_SIZE)), 1);
        CHECK_EQ(count_named(right, (uintptr_t)(code + (size_t)(at + 1) * FN_SIZE)), 1);
        CHECK_EQ(nview, N);
        /* the full image was not rebuilt again for the new code */
        CHECK(image_naming(left) == rebuilt && image_naming(right) == rebuilt);
    }
    jh_close(jh);
    munmap(code, N * FN_SIZE);
}

static void test_deferred(void)
{
    enum { N = 700 };
    uint8_t *code = code_region(N);
    static uint64_t ids[N];
    char name[32];
    jh_ctx *jh = open_gdb(256 | JH_GDB_DEFER);
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "d%d", i);
        ids[i] = add_fn(jh, code + (size_t)i * FN_SIZE, name, 1);
    }
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nview, 0);             /* not yet: the JIT flushes before running new code */
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nview, 100);
    CHECK_EQ(nimages, 1);
    for (int i = 100; i < N; i++) {
        snprintf(name, sizeof name, "d%d", i);
        ids[i] = add_fn(jh, code + (size_t)i * FN_SIZE, name, 1);
    }
    CHECK_EQ(snapshot(), 0);                     /* 256 pending filled an image by themselves, twice */
    CHECK_EQ(nview, 100 + 512);
    CHECK_EQ(jh_code_remove(jh, ids[5]), 0);        /* in an image: rebuilt at the flush */
    CHECK_EQ(jh_code_remove(jh, ids[N - 1]), 0);    /* still pending: never shown */
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nview, N - 2);
    CHECK_EQ(count_named("d5", 0), 0);
    CHECK_EQ(count_named("d699", 0), 0);
    CHECK_EQ(count_named("d698", 0), 1);
    CHECK(nimages <= 4);
    jh_close(jh);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nimages, 0);
    munmap(code, N * FN_SIZE);
}

/* Moving code out of a big image: announced at its new address at once (a one-function
 * image), the old address left to the lazy removal path, gone at jh_flush. */
static void test_move_big(void)
{
    enum { N = 300 };
    uint8_t *code = code_region(N + 8);
    static uint64_t ids[N];
    char name[32];
    jh_ctx *jh = open_gdb(0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "m%d", i);
        ids[i] = add_fn(jh, code + (size_t)i * FN_SIZE, name, 1);
    }
    CHECK_EQ(snapshot(), 0);
    size_t before = nimages;
    uint8_t *to = code + (size_t)(N + 4) * FN_SIZE;
    memcpy(to, code + 5 * FN_SIZE, FN_SIZE);
    CHECK_EQ(jh_code_move(jh, ids[5], to), 0);      /* m5 sits in the 256-function image */
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("m5", (uintptr_t)to), 1);
    CHECK(count_named("m5", (uintptr_t)(code + 5 * FN_SIZE)) <= 1);
    CHECK(nimages <= before + 1);
    CHECK_EQ(jh_flush(jh), 0);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("m5", 0), 1);
    CHECK_EQ(count_named("m5", (uintptr_t)to), 1);
    CHECK_EQ(nview, N);
    /* new code on the old address settles the stale image first */
    memcpy(code + 6 * FN_SIZE, code, FN_SIZE);
    CHECK_EQ(jh_code_move(jh, ids[6], code + (size_t)(N + 6) * FN_SIZE), 0);
    add_fn(jh, code + 6 * FN_SIZE, "newcomer", 1);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(count_named("m6", (uintptr_t)(code + 6 * FN_SIZE)), 0);
    CHECK_EQ(count_named("newcomer", (uintptr_t)(code + 6 * FN_SIZE)), 1);
    CHECK_EQ(count_named("m6", (uintptr_t)(code + (size_t)(N + 6) * FN_SIZE)), 1);
    jh_close(jh);
    munmap(code, (N + 8) * FN_SIZE);
}

/* The build-id of the listed image that holds one function, at addr: its length, 0 if
 * there is no such image. */
static size_t image_id_at(uintptr_t addr, uint8_t id[64])
{
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce;
         ce = ce->next_entry) {
        const uint8_t *p = (const uint8_t *)ce->symfile_addr;
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff), *note = NULL;
        bool one = false;
        for (size_t i = 0; i < elf_shnum(eh); i++) {
            const Elf64_Sym *sym = (const Elf64_Sym *)(p + sh[i].sh_offset);
            if (sh[i].sh_type == SHT_SYMTAB)
                one = sh[i].sh_size == 2 * sizeof *sym && sym[1].st_value == addr;
            if (sh[i].sh_type == SHT_NOTE)
                note = &sh[i];
        }
        if (one && note)
            return jh__note_build_id(p + note->sh_offset, note->sh_size, id);
    }
    return 0;
}

/* A moved function's image carries the build-id a fresh image of it at its new address
 * has: the share of the id the channel keeps per function (by id and start) is not the
 * one from before the move. */
static void test_move_build_id(void)
{
    uint8_t *code = code_region(4), moved[64], fresh[64];
    uintptr_t to = (uintptr_t)(code + 2 * FN_SIZE);
    jh_ctx *jh = open_gdb(0);
    uint64_t id = add_fn(jh, code, "bid_moved", 7);
    CHECK_EQ(jh_code_move(jh, id, (const void *)to), 0);
    size_t n = image_id_at(to, moved);
    jh_close(jh);
    jh = open_gdb(0);
    add_fn(jh, (const uint8_t *)to, "bid_moved", 7);
    CHECK_EQ(n, JH__BUILD_ID_SIZE);
    CHECK_EQ(image_id_at(to, fresh), n);
    CHECK(!memcmp(moved, fresh, n));
    jh_close(jh);
    munmap(code, 4 * FN_SIZE);
}

/* Several contexts (one per JIT engine) in several threads share the one list. */
enum { NT = 4, PER = 400 };
static uint8_t *tcode;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[32];
    jh_ctx *jh = open_gdb(t % 2 ? 64 : 0);
    uint64_t ids[PER];
    for (int i = 0; i < PER; i++) {
        snprintf(name, sizeof name, "t%d_%d", t, i);
        ids[i] = add_fn(jh, tcode + ((size_t)t * PER + i) * FN_SIZE, name, 1);
    }
    for (int i = 0; i < PER; i += 2)
        CHECK_EQ(jh_code_remove(jh, ids[i]), 0);
    return jh;
}

static void test_threads(void)
{
    pthread_t th[NT];
    jh_ctx *ctxs[NT];
    tcode = code_region(NT * PER);
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], (void **)&ctxs[t]);
        CHECK_EQ(jh_flush(ctxs[t]), 0);
    }
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nview, NT * PER / 2);
    CHECK_EQ(count_named("t3_1", 0), 1);
    CHECK_EQ(count_named("t3_0", 0), 0);
    jh_close(ctxs[1]);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nview, (NT - 1) * PER / 2);
    CHECK_EQ(count_named("t1_1", 0), 0);
    CHECK_EQ(count_named("t2_1", 0), 1);
    for (int t = 0; t < NT; t++)
        if (t != 1)
            jh_close(ctxs[t]);
    CHECK_EQ(snapshot(), 0);
    CHECK_EQ(nimages, 0);
    munmap(tcode, NT * PER * FN_SIZE);
}

/* The packed image as LLVM's verifier sees it. */
static void test_verify(void)
{
    if (system("(llvm-dwarfdump-14 --version && readelf --version) >/dev/null 2>&1") != 0) {
        SKIP_PART("llvm-dwarfdump-14 or readelf missing (Debian packages llvm-14, binutils): "
                  "the packed image was not verified");
        return;
    }
    enum { N = 300 };
    uint8_t *code = code_region(N);
    char name[32], path[] = "/tmp/jh-test-gdb.XXXXXX";
    jh_ctx *jh = open_gdb(0);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "v%d", i);
        add_fn(jh, code + (size_t)i * FN_SIZE, name, (uint32_t)i + 1);
    }
    size_t biggest = 0;
    const struct jit_code_entry *big = NULL;
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce; ce = ce->next_entry)
        if (ce->symfile_size > biggest)
            biggest = ce->symfile_size, big = ce;
    int fd = mkstemp(path);
    CHECK(fd >= 0 && big);
    if (fd >= 0 && big) {
        CHECK_EQ(write(fd, big->symfile_addr, big->symfile_size), (ssize_t)big->symfile_size);
        close(fd);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "llvm-dwarfdump-14 --verify %s | grep -q 'No errors.'", path);
        CHECK_EQ(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "readelf -a -w %s 2>&1 | grep -q -i -e warning -e error", path);
        CHECK(system(cmd) != 0);
        unlink(path);
    }
    jh_close(jh);
    munmap(code, N * FN_SIZE);
}

int main(void)
{
    /* the debugger's breakpoint target must exist as a real function */
    CHECK(*(volatile uint8_t *)(uintptr_t)__jit_debug_register_code != 0);
    test_immediate();
    test_deferred();
    test_remove_range();
    test_replace();
    test_replace_last();
    test_move_big();
    test_move_build_id();
    test_threads();
    test_verify();
    free(view);
    return check_done();
}
