/*
 * run_vm.c — a VM that knows nothing of jitherald: it puts code in pages, writes
 * /tmp/perf-<pid>.map or jit-<pid>.dump about it the awkward ways real VMs do, and checks
 * what `jitherald run -c elfmap` made of it by looking at its own /proc/self/maps: an
 * announced function's page is mapped from an image (jit-*.elf). Every check is made the
 * moment the write that completes a line or record returns, before the VM would run the
 * code: that is when tools must know it. Run by tests/integration/run_robust.sh and
 * bench/preload.sh, under LD_PRELOAD=libjitherald-run.so.
 *
 *   run_vm partial N     N functions, one line each, half of them written in two halves
 *   run_vm junk          malformed lines between good ones (no newline for 2 MiB, NULs,
 *                        0x numbers, size 0, an unmapped address, a writable page)
 *   run_vm dump          a jitdump: records written in halves, an unknown record, a LOAD
 *                        with no NUL in its name, DEBUG_INFO, MOVE, then a broken size
 *   run_vm pieces N      a jitdump of N functions through stdio, cut at odd places: single
 *                        bytes, records split anywhere, several records in one write; each
 *                        named by the write that completes it, not before
 *   run_vm pieces-other N  the same in the other byte order, with a header longer than 40
 *   run_vm fork          a child writes its own map; the parent rewrites its map
 *   run_vm jcmd          the map written again from the start by a new open, as HotSpot's
 *                        `jcmd PID Compiler.perfmap` does: the same first line, longer, the
 *                        methods compiled since among the old ones (issue 24, defect 2)
 *   run_vm none          writes nothing
 *   run_vm closefds      closes every descriptor above 2, then uses a pipe: no byte lost
 *   run_vm huge N        N lines in one write, 64 bytes apart
 *   run_vm race MS       a thread rewrites code pages (mprotect RW, write, RX) while their
 *                        lines are written again and again: no write may be lost
 *   run_vm latency N [gdb]  N lines, one write each, a function at a time: the distribution
 *                        of the VM's write() (which includes jitherald's work), and how many
 *                        were known when it returned: the page swapped (elfmap), or the GDB
 *                        JIT interface's descriptor changed (gdb: a debugger told)
 * Exit status 0 when what it checks holds; it prints what it saw.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* libgcc's lookup (unwind-dw2-fde.h), as the unwinder's own callers use it */
struct dwarf_eh_bases { void *tbase, *dbase, *func; };
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

static long pg, st;             /* page size; code pages are st apart, a PROT_NONE page
                                   between each two, so that each is a mapping of its own
                                   (elfmap swaps whole runs of adjacent pages) */
static int mapfd = -1;
static char mappath[64];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void msleep(double ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };
    nanosleep(&ts, NULL);
}

/* n pages of code, st apart: push rbp; mov rbp,rsp; pop rbp; ret, then int3s. r-x. */
static uint8_t *code_pages(size_t n)
{
    uint8_t *p = mmap(NULL, n * st, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        exit(2);
    for (size_t i = 0; i < n; i++) {
        uint8_t *c = p + i * st;
        mprotect(c, pg, PROT_READ | PROT_WRITE);
        memset(c, 0xcc, pg);
        memcpy(c, "\x55\x48\x89\xe5\x5d\xc3", 6);
        mprotect(c, pg, PROT_READ | PROT_EXEC);
    }
    return p;
}

static void open_map(void)
{
    snprintf(mappath, sizeof mappath, "/tmp/perf-%d.map", (int)getpid());
    mapfd = open(mappath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (mapfd < 0)
        exit(2);
}

static void put(const void *s, size_t n)
{
    if (write(mapfd, s, n) != (ssize_t)n)
        exit(2);
}

static void line(const void *at, size_t size, const char *name)
{
    char b[256];
    int n = snprintf(b, sizeof b, "%lx %zx %s\n", (unsigned long)(uintptr_t)at, size, name);
    put(b, (size_t)n);
}

/* Is the page of p mapped from an image file (jit-*.elf)? */
static bool swapped(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char l[512];
    bool yes = false;
    uintptr_t a = (uintptr_t)p;
    while (f && fgets(l, sizeof l, f)) {
        unsigned long lo, hi;
        if (sscanf(l, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) {
            yes = strstr(l, "/jit-") && strstr(l, ".elf");
            break;
        }
    }
    if (f)
        fclose(f);
    return yes;
}

/* How many pages of p[0..n) are swapped now. */
static size_t now_swapped(uint8_t *p, size_t n, size_t stride)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += swapped(p + i * stride);
    return k;
}

static int partial(size_t n)
{
    uint8_t *c = code_pages(n);
    open_map();
    size_t k = 0, early = 0;
    for (size_t i = 0; i < n; i++) {
        char b[128];
        int len = snprintf(b, sizeof b, "%lx 6 fn_%zu\n", (unsigned long)(uintptr_t)(c + i * st), i);
        if (i % 2) {            /* a VM flushing its buffer in the middle of a line */
            put(b, (size_t)len / 2);
            early += swapped(c + i * st);       /* half a line says nothing yet */
            put(b + len / 2, (size_t)len - (size_t)len / 2);
        } else {
            put(b, (size_t)len);
        }
        k += swapped(c + i * st);
    }
    printf("partial: %zu of %zu swapped when their line was written; %zu after half a line\n",
           k, n, early);
    return k == n && !early ? 0 : 1;
}

static int junk(void)
{
    uint8_t *c = code_pages(4);
    uint8_t *rw = mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(rw, "\x55\x48\x89\xe5\x5d\xc3", 6);
    open_map();
    line(c, 6, "good_0");
    put("zzz not a line\n", 15);
    put("12 \n", 4);
    size_t big = 2u << 20;
    char *b = malloc(big);
    memset(b, 'a', big);
    put(b, big);                /* 2 MiB with no newline */
    put("\n", 1);
    free(b);
    put("1234 10 with\0nul\n", 17);
    char l[128];
    int n = snprintf(l, sizeof l, "0x%lx 0x6 good_1_erlang_style\n", (unsigned long)(uintptr_t)(c + st));
    put(l, (size_t)n);
    line(c + 2 * st, 0, "size_zero");
    line((void *)(uintptr_t)0x10000, 16, "not_mapped");
    line(rw, 6, "writable");
    line(c + 3 * st, 6, "good_3");
    uint8_t *good[] = { c, c + st, c + 3 * st };
    size_t k = 0;
    for (int i = 0; i < 3; i++)
        k += swapped(good[i]);
    /* (the size-0 line's page may be swapped with its neighbours, as part of their run of
     * pages: the script checks it was not announced) */
    bool bad = swapped(rw);
    printf("junk: %zu of 3 good lines swapped; writable swapped: %s\n", k, bad ? "yes" : "no");
    return k == 3 && !bad ? 0 : 1;
}

/* ---- jitdump ---- */
static int dumpfd;
static void dput(const void *p, size_t n)
{
    if (write(dumpfd, p, n) != (ssize_t)n)
        exit(2);
}
struct prefix { uint32_t id, total; uint64_t ts; };
static uint64_t idx;

static void load(const void *code, size_t size, const char *name, bool nul, bool halves)
{
    size_t nl = strlen(name) + (nul ? 1 : 0);
    size_t total = 16 + 40 + nl + size;
    uint8_t *r = calloc(1, total);
    struct prefix pf = { 0, (uint32_t)total, (uint64_t)now_ms() };
    memcpy(r, &pf, 16);
    uint32_t pid = (uint32_t)getpid();
    uint64_t a = (uintptr_t)code, sz = size, ix = idx++;
    memcpy(r + 16, &pid, 4);
    memcpy(r + 20, &pid, 4);
    memcpy(r + 24, &a, 8);
    memcpy(r + 32, &a, 8);
    memcpy(r + 40, &sz, 8);
    memcpy(r + 48, &ix, 8);
    memcpy(r + 56, name, nl);
    memcpy(r + 56 + nl, code, size);
    if (halves) {
        dput(r, total / 2);
        msleep(5);
        dput(r + total / 2, total - total / 2);
    } else {
        dput(r, total);
    }
    free(r);
}

/* UNWINDING_INFO for code of `size` bytes that starts push rbp; mov rbp,rsp: an .eh_frame
 * (CIE "zR", FDE) and its .eh_frame_hdr, laid out as perf places them (code at 0x80). */
static void unwinding_info(uint64_t size)
{
    uint8_t eh[64] = { 0 }, hdr[20];
    uint64_t eh_addr = (0x80 + size + 7) & ~7ull;
    static const uint8_t cie[] = { 0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1,
                                   0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0 };
    memcpy(eh, cie, sizeof cie);
    /* FDE at 24: length 24, CIE pointer 28 (back to 0), pc_begin pcrel, range, no
     * augmentation data, then: advance 1; cfa_off 16; rbp at cfa-16; advance 3; cfa=rbp */
    uint32_t len = 24, ciep = 28;
    int32_t pc = (int32_t)(0x80 - (eh_addr + 24 + 8));
    uint32_t range = (uint32_t)size;
    memcpy(eh + 24, &len, 4);
    memcpy(eh + 28, &ciep, 4);
    memcpy(eh + 32, &pc, 4);
    memcpy(eh + 36, &range, 4);
    static const uint8_t ins[] = { 0, 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6 };
    memcpy(eh + 40, ins, sizeof ins);           /* then nops (zeros) to the entry's end */
    size_t eh_len = 52 + 4;                     /* FDE 24..52, then the zero terminator */
    uint64_t hdr_addr = eh_addr + eh_len;
    hdr[0] = 1, hdr[1] = 0x1b, hdr[2] = 0x03, hdr[3] = 0x3b;
    int32_t ehp = (int32_t)(eh_addr - (hdr_addr + 4)), loc = (int32_t)(0x80 - hdr_addr),
            fde = (int32_t)(eh_addr + 24 - hdr_addr);
    uint32_t one = 1;
    memcpy(hdr + 4, &ehp, 4);
    memcpy(hdr + 8, &one, 4);
    memcpy(hdr + 12, &loc, 4);
    memcpy(hdr + 16, &fde, 4);
    uint64_t us = eh_len + sizeof hdr, hs = sizeof hdr, mapped = us;
    struct prefix pf = { 4, (uint32_t)(16 + 24 + us), 0 };
    dput(&pf, 16);
    dput(&us, 8);
    dput(&hs, 8);
    dput(&mapped, 8);
    dput(eh, eh_len);
    dput(hdr, sizeof hdr);
}

static int dump(void)
{
    uint8_t *c = code_pages(6);
    char path[64];
    snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
    dumpfd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    struct { uint32_t magic, version, size, mach, pad, pid; uint64_t ts, flags; } h =
        { 0x4A695444, 1, 40, 62, 0, (uint32_t)getpid(), 0, 0 };
    dput(&h, 20);               /* the header, in two writes */
    void *m = mmap(NULL, pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, dumpfd, 0);  /* as perf wants */
    msleep(5);
    dput((char *)&h + 20, 20);
    load(c, 6, "d_first", true, true);
    struct prefix unk = { 99, 24, 0 };
    dput(&unk, 16);
    dput("12345678", 8);
    load(c + st, 6, "d_no_nul", false, false);             /* malformed: skipped */
    /* DEBUG_INFO: one entry at the code, line 7 of a.src */
    uint8_t d[16 + 16 + 16 + 6];
    struct prefix dp = { 2, sizeof d, 0 };
    uint64_t a = (uintptr_t)(c + 2 * st), one = 1;
    uint32_t ln = 7, disc = 0;
    memcpy(d, &dp, 16);
    memcpy(d + 16, &a, 8);
    memcpy(d + 24, &one, 8);
    memcpy(d + 32, &a, 8);
    memcpy(d + 40, &ln, 4);
    memcpy(d + 44, &disc, 4);
    memcpy(d + 48, "a.src", 6);
    dput(d, sizeof d);
    unwinding_info(6);
    load(c + 2 * st, 6, "d_lines", true, true);
    load(c + 3 * st, 6, "d_moving", true, false);
    /* MOVE to page 4 (same bytes) */
    uint8_t mv[16 + 48];
    struct prefix mp = { 1, sizeof mv, 0 };
    uint32_t pid = (uint32_t)getpid();
    uint64_t o = (uintptr_t)(c + 3 * st), nw = (uintptr_t)(c + 4 * st), sz = 6, ix = 3;
    memcpy(mv, &mp, 16);
    memcpy(mv + 16, &pid, 4);
    memcpy(mv + 20, &pid, 4);
    memcpy(mv + 24, &nw, 8);
    memcpy(mv + 32, &o, 8);
    memcpy(mv + 40, &nw, 8);
    memcpy(mv + 48, &sz, 8);
    memcpy(mv + 56, &ix, 8);
    size_t k1 = swapped(c + 3 * st);
    dput(mv, sizeof mv);
    load(c + 5 * st, 6, "d_last", true, false);
    struct prefix broken = { 0, 8, 0 };
    dput(&broken, 16);                                      /* the rest is lost */
    load(c + st, 6, "d_after_broken", true, false);
    uint8_t *good[] = { c, c + 2 * st, c + 4 * st, c + 5 * st };
    size_t k = 0;
    for (int i = 0; i < 4; i++)
        k += swapped(good[i]);
    bool bad = swapped(c + st);
    printf("dump: %zu of 4 swapped (moving one before its move: %zu); malformed swapped: %s\n",
           k, k1, bad ? "yes" : "no");
    /* what the process's own unwinder finds (the unwind channel): an FDE for the code that
     * came with UNWINDING_INFO; for the other only with the frame-pointer guess */
    struct dwarf_eh_bases bases;
    printf("dump: FDE for the code with UNWINDING_INFO: %s; for the code without: %s\n",
           _Unwind_Find_FDE(c + 2 * st + 2, &bases) ? "yes" : "no",
           _Unwind_Find_FDE(c + 2, &bases) ? "yes" : "no");
    munmap(m, pg);
    close(dumpfd);
    unlink(path);
    return k == 4 && k1 == 1 && !bad ? 0 : 1;
}

/* ---- a jitdump in odd pieces ---- */
/* V8's way: open + fdopen, then each record in pieces through stdio (fwrite of the fixed
 * part, of the name, fputc of its NUL, fwrite of the code), heard before any flush. Here
 * the whole file is cut at lengths that cycle through single bytes, a prefix and a byte
 * more or less, and pieces holding several records or the end of one and the start of the
 * next. After each piece, the functions whose LOAD it completed must be named (their page
 * swapped) and the next one must not be; at the end the file holds exactly these bytes. */
/* A field of w (4 or 8) bytes at b, in this machine's byte order or (other) the other. */
static void field(uint8_t *b, uint64_t v, int w, bool other)
{
    if (w == 4) {
        uint32_t x = other ? __builtin_bswap32((uint32_t)v) : (uint32_t)v;
        memcpy(b, &x, 4);
    } else {
        uint64_t x = other ? __builtin_bswap64(v) : v;
        memcpy(b, &x, 8);
    }
}

static int pieces(size_t n, bool other)
{
    uint8_t *c = code_pages(n);
    size_t cap = 64 + n * 256, len = 0;
    uint8_t *b = calloc(1, cap);
    size_t *end = calloc(n, sizeof *end);       /* where each function's LOAD ends */
    size_t *rend = calloc(3 * n, sizeof *rend), nr = 0;     /* where each record ends */
    /* in the other byte order, as a VM of the other endianness wrote it: a header 8 bytes
     * longer than the 40 this version knows (a reader waits for all of it, read in the
     * file's order, before the first record) */
    uint32_t hsize = other ? 48 : 40;
    field(b, 0x4A695444, 4, other);
    field(b + 4, 1, 4, other);
    field(b + 8, hsize, 4, other);
    field(b + 12, 62, 4, other);
    field(b + 20, (uint32_t)getpid(), 4, other);
    len = hsize;
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 1) {       /* V8's UNWINDING_INFO: a bare .eh_frame_hdr, nothing to use */
            uint32_t total = 16 + 24 + 24;
            field(b + len, 4, 4, other);
            field(b + len + 4, total, 4, other);
            field(b + len + 16, 20, 8, other);
            field(b + len + 24, 20, 8, other);
            field(b + len + 32, 20, 8, other);
            len += total;       /* (the table's bytes: zeros) */
            rend[nr++] = len;
        }
        if (i % 5 == 3) {       /* a record nobody knows, a bare prefix or longer: skipped */
            uint32_t total = i % 2 ? 16 : 24;
            field(b + len, 77, 4, other);
            field(b + len + 4, total, 4, other);
            len += total;
            rend[nr++] = len;
        }
        char name[32];
        int nl = snprintf(name, sizeof name, "piece_%zu", i) + 1;
        uint32_t total = (uint32_t)(16 + 40 + nl + 6), pid = (uint32_t)getpid();
        uint64_t a = (uintptr_t)(c + i * st);
        field(b + len, 0, 4, other);
        field(b + len + 4, total, 4, other);
        field(b + len + 16, pid, 4, other);
        field(b + len + 20, pid, 4, other);
        field(b + len + 24, a, 8, other);
        field(b + len + 32, a, 8, other);
        field(b + len + 40, 6, 8, other);
        field(b + len + 48, i, 8, other);
        memcpy(b + len + 56, name, (size_t)nl);
        memcpy(b + len + 56 + nl, c + i * st, 6);
        len += total;
        end[i] = rend[nr++] = len;
    }
    char path[64];
    snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (!f)
        return 2;
    void *m = mmap(NULL, pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);  /* as perf wants */
    /* R: to the end of the record under way (after another R: a whole record in one
     * write); R2: to the end of the one after it */
    enum { R = 0, R2 = 9999 };
    static const size_t cut[] = { 1, 5, R, 10, 16, R, 3, 60, 1, 1, 1, R2, 7, R, R, 300, 2, 24,
                                  R, 33, 15, 17, R, R, R2, 16, R };
    size_t off = 0, next = 0, writes = 0, ones = 0, several = 0, on_time = 0, early = 0, late = 0;
    for (size_t k = 0, r = 0; off < len; k++) {
        while (r < nr && rend[r] <= off)
            r++;                /* the record under way */
        /* the header and the first record a byte at a time, as fputc writes V8's NULs */
        size_t want = off < end[0] ? 1 : cut[k % (sizeof cut / sizeof cut[0])];
        if (want == R || want == R2)
            want = rend[want == R || r + 1 == nr ? r : r + 1] - off;
        size_t p = want < len - off ? want : len - off;
        if (p == 1 ? fputc(b[off], f) == EOF : fwrite(b + off, 1, p, f) != p)
            return 2;
        off += p;
        writes++;
        ones += p == 1;
        size_t done = 0;
        for (; next < n && end[next] <= off; next++, done++) {
            bool yes = swapped(c + next * st);
            on_time += yes;
            late += !yes;
        }
        several += done > 1;
        if (next < n)
            early += swapped(c + next * st);
    }
    fflush(f);
    uint8_t *back = malloc(len + 1);
    ssize_t got = pread(fd, back, len + 1, 0);
    bool same = got == (ssize_t)len && !memcmp(back, b, len);
    printf("pieces%s: %zu functions in %zu writes (%zu of one byte, %zu completing two or more); "
           "named by the write that completed them: %zu; early: %zu; late: %zu; the file %s\n",
           other ? " (other byte order)" : "", n, writes, ones, several, on_time, early, late,
           same ? "holds exactly what was written" : "DIFFERS from what was written");
    munmap(m, pg);
    fclose(f);
    unlink(path);
    free(back);
    free(rend);
    free(end);
    free(b);
    return on_time == n && !early && !late && same ? 0 : 1;
}

static int forked(void)
{
    uint8_t *c = code_pages(4);
    open_map();
    line(c, 6, "parent_0");
    if (!swapped(c))
        return 1;
    pid_t p = fork();
    if (p == 0) {
        close(mapfd);
        open_map();             /* the child's own, under its pid */
        line(c + st, 6, "child_1");
        size_t k = swapped(c + st);
        unlink(mappath);
        _exit(k == 1 ? 0 : 1);
    }
    int status;
    waitpid(p, &status, 0);
    /* rewritten: shorter than before, the old line again and a new one */
    if (ftruncate(mapfd, 0) || lseek(mapfd, 0, SEEK_SET))
        return 2;
    line(c + 2 * st, 6, "p2");
    line(c, 6, "parent_0");
    size_t k = swapped(c + 2 * st);
    printf("fork: child %s; parent after rewrite %zu of 1\n",
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "failed", k);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && k == 1 ? 0 : 1;
}

static int jcmd(void)
{
    uint8_t *c = code_pages(4);
    open_map();
    line(c, 6, "m_0");
    line(c + 3 * st, 6, "m_3");
    close(mapfd);
    /* jcmd again: a new open with O_TRUNC, the lines by address, so the first bytes are
     * the old file's and the new methods sit between old ones */
    open_map();
    line(c, 6, "m_0");
    line(c + st, 6, "m_1");
    line(c + 2 * st, 6, "m_2");
    line(c + 3 * st, 6, "m_3");
    size_t k = now_swapped(c, 4, st);
    printf("jcmd: %zu of 4 named after the rewrite\n", k);
    close(mapfd);
    unlink(mappath);
    return k == 4 ? 0 : 1;
}

static int huge(size_t n)
{
    size_t len = (n * 64 + pg - 1) / pg * pg;
    uint8_t *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(c, 0xc3, len);
    mprotect(c, len, PROT_READ | PROT_EXEC);
    open_map();
    char *b = malloc(n * 48 + 1);
    size_t off = 0;
    for (size_t i = 0; i < n; i++)
        off += (size_t)sprintf(b + off, "%lx 40 h_%zu\n", (unsigned long)(uintptr_t)(c + i * 64), i);
    double t0 = now_ms();
    put(b, off);
    double t = now_ms() - t0;
    size_t k = now_swapped(c, len / (size_t)pg, (size_t)pg);
    printf("huge: %zu lines (%zu bytes) written in %.1f ms; %zu of %zu pages swapped then\n",
           n, off, t, k, len / (size_t)pg);
    return 0;
}

/* ---- race ---- */
#define RACE_PAGES 8
static uint8_t *rc;
static atomic_bool stop;
static uint32_t last[RACE_PAGES];
static atomic_ulong lost, writes;

static void *rewriter(void *arg)
{
    (void)arg;
    uint32_t v = 0;
    while (!atomic_load(&stop)) {
        for (int i = 0; i < RACE_PAGES; i++) {
            uint8_t *p = rc + i * st;
            ++v;
            mprotect(p, pg, PROT_READ | PROT_WRITE);
            memcpy(p + 64, &v, 4);
            mprotect(p, pg, PROT_READ | PROT_EXEC);
            last[i] = v;
            atomic_fetch_add(&writes, 1);
        }
        for (int i = 0; i < RACE_PAGES; i++) {
            uint32_t got;
            memcpy(&got, rc + i * st + 64, 4);
            if (got != last[i])
                atomic_fetch_add(&lost, 1);
        }
    }
    return NULL;
}

static int race(double ms)
{
    rc = code_pages(RACE_PAGES);
    open_map();
    pthread_t t;
    pthread_create(&t, NULL, rewriter, NULL);
    double end = now_ms() + ms;
    unsigned gen = 0;
    while (now_ms() < end) {
        for (int i = 0; i < RACE_PAGES; i++) {
            char nm[32];
            snprintf(nm, sizeof nm, "r%u_%d", gen, i);   /* a new name: announced again */
            line(rc + i * st, 6, nm);
        }
        gen++;
        msleep(1);
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    size_t k = 0;
    for (int i = 0; i < RACE_PAGES; i++)
        k += swapped(rc + i * st);
    printf("race: %lu writes, %lu lost, %u rounds of lines, %zu pages swapped at the end\n",
           atomic_load(&writes), atomic_load(&lost), gen, k);
    return atomic_load(&lost) == 0 ? 0 : 1;
}

/* A helper that closes every descriptor it did not open itself and then uses the lowest
 * numbers, as Erlang's erl_child_setup does: nothing may read from its pipe. */
static int closefds(void)
{
    if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
    int p[2];
    if (pipe2(p, O_NONBLOCK))  /* a stolen message is then a missing one, not a hang */
        return 2;
    uint64_t got = 0, sent = 0;
    for (uint64_t i = 1; i <= 2000; i++) {
        if (write(p[1], &i, sizeof i) != sizeof i)
            return 2;
        sent += i;
        uint64_t v;
        if (i % 4 == 0)
            msleep(0.1);
        while (read(p[0], &v, sizeof v) == sizeof v) {
            got += v;
            break;
        }
    }
    printf("closefds: sent %llu, read back %llu\n", (unsigned long long)sent,
           (unsigned long long)got);
    return got == sent ? 0 : 1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The GDB JIT interface's descriptor (libjitherald.so's, which the preload brought):
 * a debugger reads it when __jit_debug_register_code is called, after each change. */
struct jit_descriptor {
    uint32_t version, action_flag;
    void *relevant_entry, *first_entry;
};

static int latency(size_t n, bool gdb)
{
    volatile struct jit_descriptor *d = dlsym(RTLD_DEFAULT, "__jit_debug_descriptor");
    if (gdb && !d) {
        fprintf(stderr, "latency: no __jit_debug_descriptor: not under jitherald run -c gdb?\n");
        return 2;
    }
    uint8_t *c = code_pages(n);
    open_map();
    double *t = calloc(n, sizeof *t);
    size_t known = 0;
    for (size_t i = 0; i < n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "lat_%zu", i);
        void *rel = gdb ? d->relevant_entry : NULL, *first = gdb ? d->first_entry : NULL;
        double t0 = now_ms();
        line(c + i * st, 6, nm);
        t[i] = now_ms() - t0;
        known += gdb ? d->relevant_entry != rel || d->first_entry != first : swapped(c + i * st);
        msleep(2);              /* one function at a time, as a VM compiles them */
    }
    qsort(t, n, sizeof *t, cmp_d);
    printf("write_ms n=%zu min=%.3f p50=%.3f p90=%.3f p99=%.3f max=%.3f known_at_return=%zu\n",
           n, t[0], t[n / 2], t[n * 9 / 10], t[n * 99 / 100], t[n - 1], known);
    return known == n ? 0 : 1;
}

int main(int argc, char **argv)
{
    pg = sysconf(_SC_PAGESIZE);
    st = 2 * pg;
    const char *m = argc > 1 ? argv[1] : "";
    size_t n = argc > 2 ? strtoul(argv[2], NULL, 0) : 16;
    int rc_ = 2;
    if (!strcmp(m, "partial")) rc_ = partial(n);
    else if (!strcmp(m, "junk")) rc_ = junk();
    else if (!strcmp(m, "dump")) rc_ = dump();
    else if (!strcmp(m, "pieces")) rc_ = pieces(n, false);
    else if (!strcmp(m, "pieces-other")) rc_ = pieces(n, true);
    else if (!strcmp(m, "fork")) rc_ = forked();
    else if (!strcmp(m, "jcmd")) rc_ = jcmd();
    else if (!strcmp(m, "none")) rc_ = 0;
    else if (!strcmp(m, "closefds")) rc_ = closefds();
    else if (!strcmp(m, "huge")) rc_ = huge(n);
    else if (!strcmp(m, "race")) rc_ = race((double)n);
    else if (!strcmp(m, "latency")) rc_ = latency(n, argc > 3 && !strcmp(argv[3], "gdb"));
    else fprintf(stderr, "usage: run_vm partial|junk|dump|pieces|pieces-other|fork|none|huge|race|latency [N]\n");
    if (mapfd >= 0 && strcmp(m, "huge"))       /* huge: the script counts after exit */
        unlink(mappath);
    return rc_;
}
