/*
 * test_elfmap_arena_lost.c — an elfmap window's arena (the address space below the code
 * where its unwind tables are mapped, src/channels/elfmap_file.c) lost in the middle of a
 * jh_code_add: mapping the image's metadata there fails, and so does reserving the range
 * again (a failed MAP_FIXED may have unmapped it: the kernel may give it to anyone now).
 * This program's own mmap makes both fail once, as the kernel would (the range unmapped,
 * ENOMEM), at the metadata's first growth after ten functions. Then:
 *   - every jh_code_add succeeds, the channel stays live and says what happened;
 *   - every function, before and after, runs, and the file mapped at its address names
 *     it with its bytes (what perf and valgrind read);
 *   - after jh_close nothing is left of the arena but the hole it lost (the rest of its
 *     reservation, the pieces of the image mapped there) and no mapping of the image.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "elfmap_witness.h"
#include "jitherald.h"

static char dir[64];
static size_t pg;

/* ---- the injected failure ---------------------------------------------------------- */

static int armed;                   /* 1: the next metadata mapping fails; 2: its reservation */
static int injected;
static uintptr_t resv_at[64];       /* anonymous PROT_NONE reservations, made anywhere */
static size_t resv_len[64];
static int nresv;
static uintptr_t arena, arena_len, hole, hole_len;

/* TSan's runtime maps its own memory through this mmap too, before it is ready to see an
 * instrumented access: none here. */
#define RAW __attribute__((no_sanitize("thread", "address")))

RAW static bool image_fd(int fd)
{
    char link[64], path[512];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return false;
    path[n] = 0;
    return strstr(path, dir) == path && strstr(path, ".elf");
}

/* The failure the kernel gives a MAP_FIXED it cannot do: the range it replaced is gone. */
RAW static void *fail_fixed(void *addr, size_t len)
{
    munmap(addr, len);
    injected++;
    errno = ENOMEM;
    return MAP_FAILED;
}

RAW void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (armed == 1 && (flags & MAP_FIXED) && (flags & MAP_SHARED) && off != 0 && fd >= 0 &&
        image_fd(fd)) {
        for (int i = 0; i < nresv; i++)         /* the arena it lies in */
            if ((uintptr_t)addr >= resv_at[i] && (uintptr_t)addr - resv_at[i] < resv_len[i]) {
                arena = resv_at[i];
                arena_len = resv_len[i];
            }
        armed = 2;
        return fail_fixed(addr, len);
    }
    if (armed == 2 && (flags & MAP_FIXED) && (flags & MAP_ANONYMOUS) && prot == PROT_NONE) {
        armed = 0;
        hole = (uintptr_t)addr;
        hole_len = len;
        return fail_fixed(addr, len);
    }
    /* the system call itself: dlsym() would allocate before TSan's runtime is ready */
    long got = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    void *p = got == -1 ? MAP_FAILED : (void *)got;
    if (p != MAP_FAILED && !addr && prot == PROT_NONE && (flags & MAP_ANONYMOUS) && nresv < 64) {
        resv_at[nresv] = (uintptr_t)p;
        resv_len[nresv++] = len;
    }
    return p;
}

/* ---- the JIT ------------------------------------------------------------------------ */

/* A frame-pointer function returning v (a frame-pointer FDE each: the image has unwind
 * tables, which the arena maps). */
#if defined(__aarch64__)
#define FP_PUSH_END 4
#define FP_SET_END 8
static void emit(uint8_t *p, size_t size, uint32_t v)
{
    static const uint32_t head[] = { 0xa9bf7bfd, 0x910003fd }, tail[] = { 0xa8c17bfd, 0xd65f03c0 };
    for (size_t o = 0; o + 4 <= size; o += 4)
        memcpy(p + o, &(uint32_t){ 0xd503201f }, 4);
    memcpy(p, head, sizeof head);
    memcpy(p + 8, &(uint32_t){ 0x52800000 | (v & 0xffff) << 5 }, 4);     /* movz w0, #v */
    memcpy(p + size - sizeof tail, tail, sizeof tail);
}
#else
#define FP_PUSH_END 1
#define FP_SET_END 4
static void emit(uint8_t *p, size_t size, uint32_t v)
{
    memset(p, 0x90, size);
    memcpy(p, "\x55\x48\x89\xe5\xb8", 5);       /* push rbp; mov rbp, rsp; mov eax, v */
    memcpy(p + 5, &v, 4);
    p[size - 2] = 0x5d;
    p[size - 1] = 0xc3;
}
#endif

static char said[4096];
static void on_log(void *arg, int level, const char *msg)
{
    (void)arg;
    (void)level;
    size_t n = strlen(said);
    snprintf(said + n, sizeof said - n, "%s\n", msg);
}

#define AREA (64 * 1024)
#define NFN 80
#define ARM_AT 10

/* Is anything mapped in [a, b)? */
static bool mapped_in(uintptr_t a, uintptr_t b, char *line_out, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    bool any = false;
    while (!any && f && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s < b && e > a) {
            snprintf(line_out, len, "%s", line);
            any = true;
        }
    }
    if (f)
        fclose(f);
    return any;
}

static bool image_mapped(char *line_out, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    bool any = false;
    while (!any && f && fgets(line, sizeof line, f))
        if (strstr(line, dir)) {
            snprintf(line_out, len, "%s", line);
            any = true;
        }
    if (f)
        fclose(f);
    return any;
}

int main(void)
{
    pg = (size_t)sysconf(_SC_PAGESIZE);
    snprintf(dir, sizeof dir, "/tmp/jh-test-lost-XXXXXX");
    if (!mkdtemp(dir))
        SKIP("mkdtemp failed");
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_ELFMAP, .dir = dir, .engine = "lost",
                            .flags = JH_OPT_IGNORE_ENV, .log = on_log };
    CHECK_EQ(jh_open(&jh, &o), 0);
    uint8_t *area = mmap(NULL, AREA, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(area != MAP_FAILED);
    /* long names: the metadata outgrows what was mapped ahead of it after a few dozen */
    static struct { uint8_t *p; size_t size; char name[640]; } fn[NFN];
    size_t top = AREA;
    int lost_at = -1;
    for (int i = 0; i < NFN; i++) {
        if (i == ARM_AT)
            armed = 1;
        size_t size = 96 + (size_t)(i % 5) * 32;
        top -= size;
        fn[i].p = area + top;
        fn[i].size = size;
        snprintf(fn[i].name, sizeof fn[i].name, "fn_%d_%0600d", i, 0);
        mprotect(area, AREA, PROT_READ | PROT_WRITE);
        emit(fn[i].p, size, 1000u + (uint32_t)i);
        mprotect(area, AREA, PROT_READ | PROT_EXEC);
        struct jh_code c = { .sz = sizeof c, .name = fn[i].name, .start = fn[i].p, .size = size,
                             .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = FP_PUSH_END,
                             .fp_set_end = FP_SET_END };
        uint64_t id;
        CHECK_EQ(jh_code_add(jh, &c, &id), 0);
        if (lost_at < 0 && injected == 2)
            lost_at = i;
    }
    printf("arena %#lx +%#lx, lost in the add of fn_%d, hole %#lx +%#lx\n", (unsigned long)arena,
           (unsigned long)arena_len, lost_at, (unsigned long)hole, (unsigned long)hole_len);
    printf("said:\n%s", said);
    if (!injected && strstr(said, "no address space below")) {
        jh_close(jh);               /* (qemu-user's guest address space, for one) */
        rm_tree(dir);
        SKIP("no arena fits below the code on this machine: there is none to lose");
    }
    CHECK_EQ(injected, 2);                      /* both failures happened, in one add */
    CHECK(lost_at >= ARM_AT);
    CHECK(arena && hole >= arena && hole + hole_len <= arena + arena_len);
    CHECK(strstr(said, "cannot map") != NULL);
    CHECK_EQ(jh_channels(jh), JH_ELFMAP);
    int ran = 0, named = 0;
    for (int i = 0; i < NFN; i++) {
        ran += ((int (*)(void))(uintptr_t)fn[i].p)() == 1000 + i;
        struct ew_fn w = { fn[i].p, fn[i].size, fn[i].name };
        enum ew_verdict v = ew_check_one(&w, NULL, 0);
        if (v != EW_OK)
            fprintf(stderr, "%s: %s\n", fn[i].name, ew_verdict_str(v));
        named += v == EW_OK;
    }
    CHECK_EQ(ran, NFN);
    CHECK_EQ(named, NFN);
    jh_close(jh);
    munmap(area, AREA);
    char line[1024];
    /* the arena, but for its hole, given back; the image mapped nowhere */
    if (arena && mapped_in(arena, hole, line, sizeof line)) {
        fprintf(stderr, "left below the hole: %s", line);
        CHECK(false);
    }
    if (arena && mapped_in(hole + hole_len, arena + arena_len, line, sizeof line)) {
        fprintf(stderr, "left above the hole: %s", line);
        CHECK(false);
    }
    if (image_mapped(line, sizeof line)) {
        fprintf(stderr, "the image still mapped: %s", line);
        CHECK(false);
    }
    rm_tree(dir);
    return check_done();
}
