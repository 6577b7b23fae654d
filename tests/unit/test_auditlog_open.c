/*
 * test_auditlog_open.c — what opening the audit log leaves behind it, besides the file:
 *   - no read-around: the header, the first store into the freshly allocated file, brings
 *     one page of it into memory, not the first chunk (read_ahead_kb of it: 1 MiB where
 *     that is 8 MiB), which the VM's thread filled with zeros before jh_open returned;
 *   - the helper thread is there under its name, `jh-auditlog` (it names itself: jh_open
 *     does not wait for it to run).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jitherald.h"

#define TMPFS_MAGIC_ 0x01021994     /* fallocate there allocates (resident) pages */

static char dir[256];

static jh_ctx *open_log(const char *engine, unsigned flags)
{
    jh_ctx *ctx = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_AUDITLOG, .dir = dir,
                            .engine = engine, .flags = flags };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    CHECK_EQ(jh_channels(ctx), JH_AUDITLOG);
    return ctx;
}

/* Pages of the file at path in the page cache, of its first `pages`. */
static long resident(const char *path, size_t pages)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    if (fd < 0)
        return -1;
    long page = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, pages * (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return -1;
    unsigned char vec[1024];
    long n = -1;
    if (pages <= sizeof vec && mincore(m, pages * (size_t)page, vec) == 0) {
        n = 0;
        for (size_t i = 0; i < pages; i++)
            n += vec[i] & 1;
    }
    munmap(m, pages * (size_t)page);
    return n;
}

static void test_no_read_around(void)
{
    if (getenv("JH_QEMU_USER")) {   /* its madvise ignores advice (MADV_RANDOM) */
        SKIP_PART("no_read_around: qemu-user does not pass MADV_RANDOM to the kernel");
        return;
    }
    struct statfs fs;
    if (statfs(dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC_) {
        SKIP_PART("no_read_around: the test directory is tmpfs, where every allocated page "
                  "is in memory (run it with TMPDIR on a disk)");
        return;
    }
    /* without the helper: nothing but the header's own store touches the file */
    setenv("JITHERALD_AUDITLOG_HELPER", "0", 1);
    unsetenv("JITHERALD_DIR");
    unsetenv("JITHERALD");
    jh_ctx *ctx = open_log("readaround", 0);
    unsetenv("JITHERALD_AUDITLOG_HELPER");
    char path[512];
    snprintf(path, sizeof path, "%s/readaround-%d.jhlog", dir, (int)getpid());
    struct stat sb;
    CHECK_EQ(stat(path, &sb), 0);
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (size_t)sb.st_size / (size_t)page;
    CHECK(pages >= 16);         /* the first chunk is allocated: room to read around */
    if (pages > 256)
        pages = 256;
    long n = resident(path, pages);
    if (n > 2)
        fprintf(stderr, "%ld of the log's first %zu pages in memory after jh_open\n", n, pages);
    CHECK(n >= 1 && n <= 2);    /* the header's page (and at most the next) */
    jh_close(ctx);
}

/* Some thread of this process is named name, within 5 s. */
static bool thread_named(const char *name)
{
    for (int tries = 0; tries < 500; tries++) {
        DIR *d = opendir("/proc/self/task");
        if (!d)
            return false;
        bool found = false;
        for (struct dirent *e; !found && (e = readdir(d));) {
            char p[300], comm[64] = "";
            snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
            FILE *f = fopen(p, "r");
            if (f) {
                found = fgets(comm, sizeof comm, f) && !strncmp(comm, name, strlen(name)) &&
                        (comm[strlen(name)] == '\n' || !comm[strlen(name)]);
                fclose(f);
            }
        }
        closedir(d);
        if (found)
            return true;
        nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
    }
    return false;
}

static void test_helper_named(void)
{
    if (getenv("JH_QEMU_USER")) {
        SKIP_PART("helper_named: qemu-user's /proc/self/task is not the guest's");
        return;
    }
    jh_ctx *ctx = open_log("named", JH_OPT_IGNORE_ENV);
    CHECK(thread_named("jh-auditlog"));
    jh_close(ctx);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/jh-test-auditlog-open.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    test_no_read_around();
    test_helper_named();
    rm_tree(dir);
    return check_done();
}
