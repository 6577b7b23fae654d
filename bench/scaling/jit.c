/*
 * bench/scaling/jit.c — the JIT side of bench/scaling.sh (built by it against the static
 * library): writes the inputs whose cost must grow linearly, and plays the JIT under gdb.
 *
 *   jit log N FILE          an audit log of N functions, as the library writes it: aligned
 *                           48-byte slots, two line rows and frame-pointer rules each; then
 *                           a quarter of them removed in a scattered order and compiled again
 *                           at the same addresses (new ids), as a JIT recompiling does
 *   jit damage IN OUT K     OUT: IN with K bytes of garbage after its header frame, bytes
 *                           that look like frames nested in one another (the worst case for
 *                           finding the next frame), as a crash or a stray write leaves
 *   jit jitdump N FILE      a jitdump of N functions, each then moved once (jh_code_move:
 *                           N LOAD and N MOVE records, as a compacting JIT writes)
 *   jit gdb N remove        N aligned functions announced (immediate mode), then all
 *                           removed in a scattered order; prints the seconds of each phase
 *   jit gdb N attach        N/2 announced, then waits for a debugger to attach, then N/2
 *                           more and all removed; prints the seconds from the attach on
 *   jit cpu CMD [ARG...]    runs CMD (output to /dev/null) and prints the CPU seconds it
 *                           and the children it waited for used (wait4: finer than time(1))
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jitherald.h"

enum { SLOT = 48, BODY = 34 };
static const char *files[] = { "scaling.mini" };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t *arena(size_t n)
{
    uint8_t *p = mmap(NULL, n * SLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    static const uint8_t fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
    for (size_t i = 0; i < n; i++)
        memcpy(p + i * SLOT, fn, sizeof fn);
    return p;
}

static void add(jh_ctx *jh, uint8_t *code, size_t i, unsigned gen, uint64_t *id)
{
    char name[32];
    snprintf(name, sizeof name, gen ? "f%zu_v%u" : "f%zu", i, gen);
    struct jh_line lines[2] = { { 0, (uint32_t)i + 1, 0, 0 }, { 4, (uint32_t)i + 2, 5, 0 } };
    struct jh_code c = { .sz = sizeof c, .name = name, .start = code + i * SLOT, .size = BODY,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    if (jh_code_add(jh, &c, id) < 0) {
        fprintf(stderr, "jh_code_add failed\n");
        exit(1);
    }
}

/* Every 7th, then the next..., as a garbage collector frees: scattered. */
#define SCATTERED(i, n, step) for (size_t k_ = 0; k_ < (step); k_++) for (size_t i = k_; i < (n); i += (step))

static int write_log(size_t n, const char *out)
{
    char dir[] = "/tmp/jh-scaling-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir,
                            .engine = "scale", .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT,
                            .auditlog_limit = (uint64_t)4 << 30 };
    if (jh_open(&jh, &o) < 0) {
        fprintf(stderr, "audit log did not start\n");
        return 1;
    }
    uint8_t *code = arena(n);
    uint64_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        add(jh, code, i, 0, &ids[i]);
    SCATTERED(i, n, 4) {
        if (i % 4 == 0) {
            jh_code_remove(jh, ids[i]);
            add(jh, code, i, 1, &ids[i]);
        }
    }
    jh_close(jh);
    char path[300];
    snprintf(path, sizeof path, "%s/scale-%d.jhlog", dir, (int)getpid());
    int rc = rename(path, out) == 0 ? 0 : 1;
    if (rc)
        perror(out);
    rmdir(dir);
    free(ids);
    return rc;
}

static int write_jitdump(size_t n, const char *out)
{
    char dir[] = "/tmp/jh-scaling-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_JITDUMP, .dir = dir,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    if (jh_open(&jh, &o) < 0) {
        fprintf(stderr, "jitdump did not start\n");
        return 1;
    }
    uint8_t *code = arena(2 * n);
    uint64_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        add(jh, code, i, 0, &ids[i]);
    SCATTERED(i, n, 7) {
        memcpy(code + (n + i) * SLOT, code + i * SLOT, BODY);
        if (jh_code_move(jh, ids[i], code + (n + i) * SLOT) < 0) {
            fprintf(stderr, "jh_code_move failed\n");
            return 1;
        }
    }
    jh_close(jh);
    char path[300];
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
    int rc = rename(path, out) == 0 ? 0 : 1;
    if (rc)
        perror(out);
    rmdir(dir);
    free(ids);
    return rc;
}

static int damage(const char *in, const char *out, size_t garbage)
{
    FILE *f = fopen(in, "rb");
    if (!f)
        return 1;
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(n);
    if (!d || fread(d, 1, n, f) != n || n < 5)
        return 1;
    fclose(f);
    size_t head = 5 + ((size_t)d[1] << 24 | (size_t)d[2] << 16 | (size_t)d[3] << 8 | d[4]);
    static const uint8_t tail[] = { 0x82, 0xa4, 't', 'y', 'p', 'e', 0xa1, 'x' };
    size_t unit = 5 + sizeof tail, k = garbage / unit;
    FILE *o = fopen(out, "wb");
    if (!o)
        return 1;
    fwrite(d, 1, head, o);
    fputc(0x01, o);                     /* not a frame: the reader has to look */
    for (size_t i = 0; i < k; i++) {    /* each a frame to the garbage's end, nested */
        uint32_t len = (uint32_t)((k - i) * unit - 5);
        uint8_t u[5] = { 0xce, (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
                         (uint8_t)len };
        fwrite(u, 1, 5, o);
        fwrite(tail, 1, sizeof tail, o);
    }
    fwrite(d + head, 1, n - head, o);
    free(d);
    return fclose(o) == 0 ? 0 : 1;
}

static int traced(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int pid = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "TracerPid: %d", &pid) == 1)
            break;
    if (f)
        fclose(f);
    return pid;
}

static int under_gdb(size_t n, int attach)
{
    jh_ctx *jh;
    const char *batch = getenv("JH_BENCH_GDB_BATCH");
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB, .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT,
                            .gdb_batch = batch ? (uint32_t)strtoul(batch, NULL, 0) : 0 };
    if (jh_open(&jh, &o) < 0)
        return 1;
    uint8_t *code = arena(n);
    uint64_t *ids = malloc(n * sizeof *ids);
    size_t first = attach ? n / 2 : 0;
    for (size_t i = 0; i < first; i++)
        add(jh, code, i, 0, &ids[i]);
    if (attach) {
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        while (!traced())
            usleep(1000);
    }
    double t0 = now();
    for (size_t i = first; i < n; i++)
        add(jh, code, i, 0, &ids[i]);
    double t1 = now();
    SCATTERED(i, n, 7)
        jh_code_remove(jh, ids[i]);
    double t2 = now();
    printf("%s %zu: add %.3f s, remove %.3f s\n", attach ? "attach" : "remove", n, t1 - t0,
           t2 - t1);
    fflush(stdout);
    jh_close(jh);
    free(ids);
    return 0;
}

static int cpu(char **argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return 1;
    printf("%.3f\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "cpu"))
        return cpu(argv + 2);
    if (argc == 4 && !strcmp(argv[1], "log"))
        return write_log(strtoul(argv[2], NULL, 10), argv[3]);
    if (argc == 4 && !strcmp(argv[1], "jitdump"))
        return write_jitdump(strtoul(argv[2], NULL, 10), argv[3]);
    if (argc == 5 && !strcmp(argv[1], "damage"))
        return damage(argv[2], argv[3], strtoul(argv[4], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "gdb"))
        return under_gdb(strtoul(argv[2], NULL, 10), !strcmp(argv[3], "attach"));
    fprintf(stderr, "usage: jit log N FILE | jitdump N FILE | damage IN OUT BYTES | "
            "gdb N remove|attach\n");
    return 2;
}
