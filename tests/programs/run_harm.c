/*
 * run_harm.c — a VM doing what twelve defects of `jitherald run` once punished (issue 22),
 * run under LD_PRELOAD=libjitherald-run.so by tests/integration/run_harm.sh. Each mode
 * checks from inside the VM what the VM would notice (its own memory, descriptors and
 * files, whether it hangs) and prints one line; exit 0 when the VM was left unharmed.
 *
 *   planted         waits for ./go, then writes its own map line: the script planted
 *                   another user's /tmp/perf-<pid>.map first (1)
 *   forkmap N       a thread maps its jitdump executable again and again while the main
 *                   thread forks N children that each map their own (CPython's -X
 *                   perf_jit): no child hangs (2)
 *   sigpage MS      signal handlers calling mprotect/munmap/mmap(MAP_FIXED) while their
 *                   thread is inside one, while lines are announced (3)
 *   sigexit         exit() from a signal handler while other threads announce (3)
 *   anonfds         its eventfd and inotify descriptors on the numbers of old (dup2'ed to
 *                   3..10 and 1000..1010): every count and event still its own (4)
 *   pkey            code tagged with a protection key this thread may not read, its line
 *                   written: no fault (5; where the CPU has keys)
 *   closefds        closes every descriptor, puts its own data file on every number up to
 *                   1100, writes more lines: its file unchanged, the code named (6)
 *   reuse           unmaps a code area whose functions were never removed, maps a fresh one
 *                   there, writes new code on a page that held them: named (7)
 *   dontneed        frees named code with madvise(MADV_DONTNEED): reads zeros (8)
 *   sealed          a sealed code page and an ordinary one: the ordinary one named (9)
 *   bigline         a line naming 64 MiB over an 8-byte stub, over 1,000 earlier lines,
 *                   while a thread calls mprotect: CPU and wall time of both (10)
 *   errno           errno after a map line jitherald could not read (0, as the VM left
 *                   it) and after a write the file size limit cut short (EFBIG)
 *   writev N        two threads append N jitdump records each, one writev of three pieces
 *                   per record: the script checks every record was heard whole
 *   dupover         dup2 of a data file over the map's descriptor, a line written there:
 *                   not heard (it went to the data file)
 *   idle MS         sleeps: a process that never writes a map (11)
 *   inotify         can this process still create an inotify instance? (11)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_mseal
#define SYS_mseal 462
#endif

static long pg;
static FILE *map;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void msleep(double ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };
    nanosleep(&ts, NULL);
}

/* n pages: `mov eax, i; ret` at each, int3 after, r-x (a PROT_NONE page between two). */
static uint8_t *code_pages(size_t n)
{
    uint8_t *p = mmap(NULL, n * 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        exit(2);
    for (size_t i = 0; i < n; i++) {
        uint8_t *c = p + i * 2 * pg;
        mprotect(c, pg, PROT_READ | PROT_WRITE);
        memset(c, 0xcc, pg);
        c[0] = 0xb8;
        memcpy(c + 1, &(uint32_t){ (uint32_t)i }, 4);
        c[5] = 0xc3;
        mprotect(c, pg, PROT_READ | PROT_EXEC);
    }
    return p;
}

static void open_map(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    map = fopen(path, "a");
    if (!map)
        printf("cannot open %s: %s\n", path, strerror(errno));
    else
        setvbuf(map, NULL, _IOLBF, 0);
}

static void line(const void *at, size_t size, const char *name)
{
    if (map)
        fprintf(map, "%lx %zx %s\n", (unsigned long)(uintptr_t)at, size, name);
}

/* The file behind the mapping of p ("" if anonymous). */
static void backing(const void *p, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char l[512];
    path[0] = 0;
    while (f && fgets(l, sizeof l, f)) {
        unsigned long lo, hi;
        int n = 0;
        if (sscanf(l, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &n) >= 2 &&
            (uintptr_t)p >= lo && (uintptr_t)p < hi) {
            snprintf(path, len, "%s", l + n);
            path[strcspn(path, "\n")] = 0;
            break;
        }
    }
    if (f)
        fclose(f);
}

static bool named(const void *p)
{
    char b[512];
    backing(p, b, sizeof b);
    return strstr(b, "/jit-") && strstr(b, ".elf");
}

/* ---- 1 ---- */
static int planted(void)
{
    uint8_t *c = code_pages(1);
    printf("pid %d code %lx\n", (int)getpid(), (unsigned long)(uintptr_t)c);
    fflush(stdout);
    for (int i = 0; i < 2000 && access("go", F_OK); i++)
        msleep(5);
    open_map();
    line(c, 6, "own_function");
    printf("planted: own line %s; code %s\n", map ? "written" : "not written",
           named(c) ? "named" : "anonymous");
    return 0;
}

/* ---- 2 ---- */
static atomic_bool stop;

static void map_own_dump(void)
{
    char path[64];
    snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    static const uint32_t h[10] = { 0x4A695444, 1, 40, 62, 0, 0 };
    if (write(fd, h, sizeof h) == sizeof h) {
        void *m = mmap(NULL, pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED)
            munmap(m, pg);
    }
    close(fd);
    unlink(path);
}

static atomic_bool mapping;

static void *mapper(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        map_own_dump();
        atomic_store(&mapping, true);
    }
    return NULL;
}

/* Where a hung child waits, for the log: gdb outside the preload and its sanitizer. */
static void show_stacks(pid_t p)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "env -u LD_PRELOAD timeout 60 gdb -nx -p %d -batch "
             "-ex 'thread apply all bt' 2>&1 | grep -E '^#|^Thread' | head -80", (int)p);
    fflush(stdout);
    if (system(cmd) != 0)
        printf("(no stacks: gdb failed)\n");
}

static int forkmap(int n)
{
    pthread_t t;
    pthread_create(&t, NULL, mapper, NULL);
    /* Forks begin once the thread maps: a thread still starting allocates (its stack
     * bounds, under ASan), and GCC 12's ASan does not hold its allocator across fork, so a
     * fork then leaves the child's allocator locked for good (a thread the child creates
     * hangs in its first malloc) whoever the child is. What this mode tests is a thread
     * mapping its jitdump while forks happen. */
    while (!atomic_load(&mapping))
        msleep(1);
    int hung = 0, failed = 0;
    for (int i = 0; i < n && !hung; i++) {
        pid_t p = fork();
        if (p == 0) {
            map_own_dump();
            _exit(0);
        }
        int st = 0;
        double end = now_ms() + 10000;
        while (waitpid(p, &st, WNOHANG) == 0) {
            if (now_ms() > end) {
                hung++;
                show_stacks(p);
                kill(p, SIGKILL);
                waitpid(p, &st, 0);
                break;
            }
            msleep(0.2);
        }
        failed += !hung && !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    printf("forkmap: %d forks, %d hung, %d failed\n", n, hung, failed);
    return hung || failed;
}

/* ---- 3 ---- */
static uint8_t *spare;
static atomic_ulong handled;

/* A hole at p, then the page back: NOREPLACE, as any other thread's mmap may take a hole
 * meanwhile (jitherald's own, for one). Then the page is someone else's: false, and the
 * caller leaves it alone from then on, as a VM leaves memory it no longer owns. */
static bool hole_and_back(uint8_t *p, int prot)
{
    munmap(p, pg);
    return mmap(p, pg, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == p;
}

static atomic_bool spare_owned = true;

static void page_handler(int sig)
{
    (void)sig;
    int e = errno;
    mprotect(spare, pg, PROT_READ);
    mmap(spare, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (atomic_exchange(&spare_owned, false))
        atomic_store(&spare_owned, hole_and_back(spare + pg, PROT_READ | PROT_WRITE));
    mprotect(spare, pg, PROT_READ | PROT_WRITE);
    atomic_fetch_add(&handled, 1);
    errno = e;
}

static uint8_t *flip;

static void *flipper(void *arg)
{
    (void)arg;
    bool owned = true;
    while (!atomic_load(&stop)) {
        mprotect(flip, pg, PROT_READ | PROT_WRITE);
        mprotect(flip, pg, PROT_READ | PROT_EXEC);
        mmap(flip + pg, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        owned = owned && hole_and_back(flip + 3 * pg, PROT_NONE);
    }
    return NULL;
}

static int sigpage(double ms)
{
    spare = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    flip = code_pages(2);
    uint8_t *c = code_pages(16);
    struct sigaction sa = { .sa_handler = page_handler, .sa_flags = SA_RESTART };
    sigaction(SIGUSR1, &sa, NULL);
    open_map();
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    double end = now_ms() + ms;
    unsigned gen = 0;
    while (now_ms() < end) {
        pthread_kill(t, SIGUSR1);               /* into the flipper's mprotect/munmap/mmap */
        raise(SIGUSR1);                         /* into this thread's announcement */
        char nm[32];
        snprintf(nm, sizeof nm, "s%u", gen);
        line(c + (gen % 16) * 2 * pg, 6, nm);
        gen++;
    }
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    printf("sigpage: %lu handlers ran, %u lines\n", atomic_load(&handled), gen);
    return 0;
}

static void exit_handler(int sig)
{
    (void)sig;
    exit(0);
}

static void *announcer(void *arg)
{
    uint8_t *c = arg;
    for (unsigned gen = 0;; gen++) {
        char nm[32];
        snprintf(nm, sizeof nm, "x%u", gen);
        line(c + (gen % 16) * 2 * pg, 6, nm);
    }
    return NULL;
}

static int sigexit(void)
{
    uint8_t *c = code_pages(16);
    open_map();
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, announcer, c);
    signal(SIGALRM, exit_handler);
    msleep(200);
    printf("sigexit: exiting from a handler\n");
    fflush(stdout);
    raise(SIGALRM);
    return 1;                   /* not reached */
}

/* ---- 4 ---- */
static int anonfds(void)
{
    uint8_t *c = code_pages(8);
    int ev = eventfd(0, EFD_NONBLOCK), in = inotify_init1(IN_NONBLOCK);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/jh-anonfds-%d", (int)getpid());
    mkdir(dir, 0700);
    int targets[] = { 3, 4, 5, 6, 7, 8, 9, 10, 1000, 1001, 1002, 1003, 1004, 1005, 1006 };
    int evs[16], ins[16], n = 0;
    for (size_t i = 0; i + 1 < sizeof targets / sizeof targets[0]; i += 2, n++) {
        evs[n] = dup2(ev, targets[i]);
        ins[n] = dup2(in, targets[i + 1]);
    }
    inotify_add_watch(in, dir, IN_CREATE);
    open_map();
    uint64_t sent = 0, got = 0;
    int events = 0;
    for (int round = 0; round < 8; round++) {
        char nm[32];
        snprintf(nm, sizeof nm, "a%d", round);
        line(c + round * 2 * pg, 6, nm);
        for (int k = 0; k < n; k++) {
            uint64_t one = 1;
            if (write(evs[k], &one, 8) == 8)
                sent++;
        }
        char f[96];
        snprintf(f, sizeof f, "%s/f%d", dir, round);
        close(open(f, O_CREAT | O_WRONLY, 0600));
        msleep(2);
    }
    uint64_t v;
    while (read(ev, &v, 8) == 8)
        got += v;
    char buf[4096] __attribute__((aligned(8)));
    ssize_t r;
    while ((r = read(ins[n - 1], buf, sizeof buf)) > 0)   /* the same instance, at 1005 */
        for (char *p = buf; p < buf + r; p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len)
            events++;
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    printf("anonfds: eventfd %llu of %llu, inotify %d of 8 events\n", (unsigned long long)got,
           (unsigned long long)sent, events);
    return got == sent && events == 8 ? 0 : 1;
}

/* ---- 5 ---- */
static int pkey(void)
{
    uint8_t *c = code_pages(1);
    int k = (int)syscall(SYS_pkey_alloc, 0, 0);
    if (k < 0) {
        printf("pkey: NOTE no protection keys here (%s): the VM cannot tag code; the preload's "
               "logic is checked by tests/unit/test_run_pkeys\n", strerror(errno));
        return 0;
    }
    if (syscall(SYS_pkey_mprotect, c, pg, PROT_READ | PROT_EXEC, k) != 0) {
        printf("pkey: pkey_mprotect: %s\n", strerror(errno));
        return 1;
    }
    /* this thread may not read key k: PKRU access-disable bit 2k */
    uint32_t eax, edx;
    __asm__ volatile(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
    eax |= 1u << (2 * k);
    __asm__ volatile(".byte 0x0f,0x01,0xef" : : "a"(eax), "c"(0), "d"(0) : "memory");
    open_map();
    line(c, 6, "keyed_function");           /* before the fix: SIGSEGV in the reader */
    __asm__ volatile(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
    printf("pkey: key %d, line written, this thread still without access: %s\n", k,
           eax >> (2 * k) & 1 ? "yes" : "no");
    return eax >> (2 * k) & 1 ? 0 : 1;
}

/* ---- 6 ---- */
static int closefds(void)
{
    uint8_t *c = code_pages(8);
    open_map();
    line(c, 6, "before_0");
    line(c + 2 * pg, 6, "before_1");
    fclose(map);
    map = NULL;
    if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
    char path[64];
    snprintf(path, sizeof path, "/tmp/jh-data-%d", (int)getpid());
    int d = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    unsigned char data[4096];
    memset(data, 'D', sizeof data);
    if (d < 0 || write(d, data, sizeof data) != sizeof data)
        return 2;
    for (int fd = 3; fd <= 1100; fd++)
        if (fd != d)
            dup2(d, fd);
    open_map();         /* a low number is free? no: so the map goes above 1100 */
    for (int i = 2; i < 8; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "after_%d", i);
        line(c + i * 2 * pg, 6, nm);
    }
    struct stat st;
    unsigned char now[sizeof data + 1];
    bool same = fstat(d, &st) == 0 && st.st_size == (off_t)sizeof data &&
                pread(d, now, sizeof now, 0) == (ssize_t)sizeof data && !memcmp(now, data, sizeof data);
    int k = 0;
    for (int i = 2; i < 8; i++)
        k += named(c + i * 2 * pg);
    unlink(path);
    printf("closefds: data file %s (%lld bytes); %d of 6 later functions named\n",
           same ? "unchanged" : "CHANGED", (long long)st.st_size, k);
    return same && k == 6 ? 0 : 1;
}

/* ---- 7, 8, 9 ---- */
static int reuse(void)
{
    uint8_t *a = code_pages(2);
    open_map();
    line(a, 6, "old_function");
    bool first = named(a);
    munmap(a, 4 * pg);
    uint8_t *b = mmap(a, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
                      MAP_FIXED_NOREPLACE, -1, 0);
    if (b != a)
        return 2;
    memset(b, 0xcc, pg);
    memcpy(b + 0x800, "\xb8\x07\x00\x00\x00\xc3", 6);
    mprotect(b, 4 * pg, PROT_READ | PROT_EXEC);
    line(b + 0x800, 6, "new_function");
    bool again = named(b + 0x800);
    int r = ((int (*)(void))(b + 0x800))();
    printf("reuse: first %s; on the fresh mapping %s; it returns %d\n", first ? "named" : "anonymous",
           again ? "named" : "anonymous", r);
    return first && again && r == 7 ? 0 : 1;
}

static int dontneed(void)
{
    uint8_t *c = code_pages(1);
    open_map();
    line(c, 6, "freed_function");
    bool was = named(c);
    madvise(c, pg, MADV_DONTNEED);
    size_t nonzero = 0;
    for (long i = 0; i < pg; i++)
        nonzero += c[i] != 0;
    printf("dontneed: named %s; after MADV_DONTNEED %zu nonzero bytes\n", was ? "yes" : "no",
           nonzero);
    return was && !nonzero ? 0 : 1;
}

static int sealed(void)
{
    uint8_t *c = code_pages(2);
    if (syscall(SYS_mseal, c, pg, 0) != 0) {
        printf("sealed: NOTE this kernel cannot seal (%s): tests/unit/test_elfmap_reuse "
               "says so too\n", strerror(errno));
        return 0;
    }
    open_map();
    line(c, 6, "sealed_function");
    line(c + 2 * pg, 6, "free_function");
    bool s = named(c), f = named(c + 2 * pg);
    printf("sealed: sealed page %s, the other %s\n", s ? "named" : "left as it is",
           f ? "named" : "anonymous");
    return !s && f ? 0 : 1;
}

/* ---- 10 ---- */
static uint8_t *probe_page;
static double worst_mprotect;

static void *protector(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        double t0 = now_ms();
        mprotect(probe_page, pg, PROT_READ | PROT_WRITE);
        mprotect(probe_page, pg, PROT_READ | PROT_EXEC);
        double t = now_ms() - t0;
        if (t > worst_mprotect)
            worst_mprotect = t;
    }
    return NULL;
}

static int bigline(void)
{
    size_t big = 64u << 20;
    uint8_t *c = mmap(NULL, big + 2 * pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (c == MAP_FAILED)
        return 2;
    for (int i = 0; i < 1000; i++)
        memcpy(c + (size_t)i * 4096, "\x55\x48\x89\xe5\x5d\xc3", 6);
    mprotect(c, big, PROT_READ | PROT_EXEC);
    probe_page = c + big + pg;              /* next to it: inside elfmap's window */
    open_map();
    for (int i = 0; i < 1000; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "small_%d", i);
        line(c + (size_t)i * 4096, 6, nm);
    }
    pthread_t t;
    pthread_create(&t, NULL, protector, NULL);
    msleep(20);
    double w0 = now_ms(), c0 = cpu_ms();
    line(c, big, "big_over_a_stub");
    double wall = now_ms() - w0, cpu = cpu_ms() - c0;
    msleep(20);
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    printf("bigline: the write took %.1f ms (%.1f ms of CPU); the other thread's mprotect "
           "waited at most %.1f ms\n", wall, cpu, worst_mprotect);
    return 0;
}

/* ---- what jitherald does after the VM's call leaves the call's result as it was ---- */
static int errno_kept(void)
{
    uint8_t *c = code_pages(1);
    open_map();
    errno = 0;
    line(c + pg, 6, "on_a_page_no_one_can_read");   /* the probe fails (EFAULT) */
    int after_ok = errno;
    signal(SIGXFSZ, SIG_IGN);
    fflush(map);
    setvbuf(map, NULL, _IONBF, 0);
    struct rlimit rl = { (rlim_t)ftell(map) + 40, RLIM_INFINITY };
    setrlimit(RLIMIT_FSIZE, &rl);
    errno = 0;
    int r = fprintf(map, "%lx 6 first_of_two_lines_written_at_once\n%lx 6 second_of_two\n",
                    (unsigned long)(uintptr_t)c, (unsigned long)(uintptr_t)c);
    int after_cut = errno;
    rl.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &rl);
    printf("errno: after an unreadable line %d (%s); after a write cut short %d (%s)\n",
           after_ok, strerror(after_ok), after_cut, strerror(after_cut));
    return after_ok == 0 && r < 0 && after_cut == EFBIG ? 0 : 1;
}

static int dump_fd;
struct appender { uint8_t *code; int n, t; };

static void *appender(void *arg)
{
    const struct appender *a = arg;
    for (int i = 0; i < a->n; i++) {
        char name[32];
        uint32_t nl = (uint32_t)snprintf(name, sizeof name, "fn_%d_%d", a->t, i) + 1;
        uint64_t at = (uint64_t)(uintptr_t)(a->code + a->t * 2 * pg + (i % 200) * 16);
        struct { uint32_t id, total; uint64_t ts; uint32_t pid, tid; uint64_t vma, addr, size, idx; }
            l = { 0, (uint32_t)(sizeof l + nl + 16), 0, (uint32_t)getpid(), 0, at, at, 16,
                  (uint64_t)i };
        /* the code's bytes from a copy: the other thread's announcement swaps this page
         * (same bytes), and TSan counts a mapping made over memory as a write to it */
        uint8_t bytes[16];
        memset(bytes, 0xcc, sizeof bytes);
        struct iovec v[3] = { { &l, sizeof l }, { name, nl }, { bytes, sizeof bytes } };
        if (writev(dump_fd, v, 3) != (ssize_t)l.total)
            return (void *)1;
    }
    return NULL;
}

static int writev_whole(int n)
{
    uint8_t *c = code_pages(2);
    char path[64];
    snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
    dump_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    struct { uint32_t magic, version, total, mach, pad, pid; uint64_t ts, flags; } h =
        { 0x4A695444, 1, 40, 62, 0, (uint32_t)getpid(), 0, 0 };
    if (dump_fd < 0 || write(dump_fd, &h, sizeof h) != sizeof h)
        return 2;
    struct appender a[2] = { { c, n, 0 }, { c, n, 1 } };
    pthread_t t[2];
    void *r[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, appender, &a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &r[i]);
    close(dump_fd);
    unlink(path);
    printf("writev: %d records each from 2 threads, %s\n", n,
           r[0] || r[1] ? "a write failed" : "written");
    return r[0] || r[1] ? 2 : 0;
}

static int dupover(void)
{
    uint8_t *c = code_pages(2);
    open_map();
    line(c, 6, "before_dup2");
    char path[64];
    snprintf(path, sizeof path, "/tmp/jh-data-%d", (int)getpid());
    int d = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (d < 0 || dup2(d, fileno(map)) < 0)
        return 2;
    char l[64];
    int k = snprintf(l, sizeof l, "%lx 6 intruder\n", (unsigned long)(uintptr_t)(c + 2 * pg));
    bool wrote = write(fileno(map), l, (size_t)k) == k;
    unlink(path);
    bool first = named(c), second = named(c + 2 * pg);
    printf("dupover: the map's line %s; the data file's line %s\n",
           first ? "named" : "anonymous", second ? "NAMED" : "not heard");
    return wrote && first && !second ? 0 : 1;
}

int main(int argc, char **argv)
{
    pg = sysconf(_SC_PAGESIZE);
    const char *m = argc > 1 ? argv[1] : "";
    double n = argc > 2 ? strtod(argv[2], NULL) : 0;
    int rc = 2;
    if (!strcmp(m, "planted")) rc = planted();
    else if (!strcmp(m, "forkmap")) rc = forkmap(n > 0 ? (int)n : 1000);
    else if (!strcmp(m, "sigpage")) rc = sigpage(n > 0 ? n : 1000);
    else if (!strcmp(m, "sigexit")) rc = sigexit();
    else if (!strcmp(m, "anonfds")) rc = anonfds();
    else if (!strcmp(m, "pkey")) rc = pkey();
    else if (!strcmp(m, "closefds")) rc = closefds();
    else if (!strcmp(m, "reuse")) rc = reuse();
    else if (!strcmp(m, "dontneed")) rc = dontneed();
    else if (!strcmp(m, "sealed")) rc = sealed();
    else if (!strcmp(m, "bigline")) rc = bigline();
    else if (!strcmp(m, "errno")) rc = errno_kept();
    else if (!strcmp(m, "writev")) rc = writev_whole(n > 0 ? (int)n : 1000);
    else if (!strcmp(m, "dupover")) rc = dupover();
    else if (!strcmp(m, "idle")) { msleep(n); rc = 0; }
    else if (!strcmp(m, "inotify")) {
        int fd = inotify_init1(0);
        printf("inotify: %s\n", fd >= 0 ? "created" : strerror(errno));
        rc = fd >= 0 ? 0 : 1;
    } else fprintf(stderr, "usage: run_harm MODE [N] (see the source)\n");
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    if (map && strcmp(m, "planted"))
        unlink(path);
    return rc;
}
