/*
 * test_auditlog_open.c — what opening the audit log leaves behind it, besides the file:
 *   - no read-around: the header, the first store into the freshly allocated file, brings
 *     one page of it into memory, not the first chunk (read_ahead_kb of it: 1 MiB where
 *     that is 8 MiB), which the VM's thread filled with zeros before jh_open returned;
 *   - no thread: the writers prepare the file ahead of the tail themselves (a thread of
 *     ours would make each TLB flush of a single-threaded VM an interrupt to another CPU),
 *     and the pages past the last record are in memory before a writer stores into them;
 *     with JITHERALD_AUDITLOG_HELPER=0 they are not.
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

/* Can part count the file's pages in memory? Not under qemu-user, whose madvise ignores
 * advice (MADV_RANDOM: read-around fills pages), nor on tmpfs, where every allocated page
 * is in memory. Says why it skips. */
static bool pages_countable(const char *part)
{
    static char why[256];
    struct statfs fs;
    if (getenv("JH_QEMU_USER"))
        snprintf(why, sizeof why, "%s: qemu-user does not pass MADV_RANDOM to the kernel", part);
    else if (statfs(dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC_)
        snprintf(why, sizeof why, "%s: the test directory is tmpfs, where every allocated page "
                 "is in memory (run it with TMPDIR on a disk)", part);
    else
        return true;
    SKIP_PART(why);
    return false;
}

static void test_no_read_around(void)
{
    if (!pages_countable("no_read_around"))
        return;
    /* nothing prepared ahead: nothing but the header's own store touches the file */
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

/* Threads of this process, from /proc/self/task. */
static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_no_thread(void)
{
    if (getenv("JH_QEMU_USER")) {
        SKIP_PART("no_thread: qemu-user's /proc/self/task is not the guest's");
        return;
    }
    int before = threads();
    jh_ctx *ctx = open_log("nothread", JH_OPT_IGNORE_ENV);
    static char blob[64 << 10];
    for (int i = 0; i < 48; i++)            /* 3 MiB: prepared ahead and grown many times */
        CHECK_EQ(jh_log_memory(ctx, blob, sizeof blob, "blob"), 0);
    CHECK(before > 0);
    CHECK_EQ(threads(), before);
    jh_close(ctx);
}

/* 50 records of ~4 KiB: the file's pages in memory past those the records wrote. */
static long pages_ahead(const char *engine, bool ahead)
{
    if (!ahead)
        setenv("JITHERALD_AUDITLOG_HELPER", "0", 1);
    unsetenv("JITHERALD_DIR");
    unsetenv("JITHERALD");
    jh_ctx *ctx = open_log(engine, 0);
    unsetenv("JITHERALD_AUDITLOG_HELPER");
    static char rec[4000];
    for (int i = 0; i < 50; i++)
        CHECK_EQ(jh_log_memory(ctx, rec, sizeof rec, "rec"), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/%s-%d.jhlog", dir, engine, (int)getpid());
    long page = sysconf(_SC_PAGESIZE);
    long written = (50 * (long)(sizeof rec + 64) + page - 1) / page + 1;
    long n = resident(path, 256);           /* before close, which trims the file */
    jh_close(ctx);
    return n - written;
}

static void test_prepared_ahead(void)
{
    if (!pages_countable("prepared_ahead"))
        return;
    long on = pages_ahead("ahead", true), off = pages_ahead("noahead", false);
    if (on < 8 || off > 1)
        fprintf(stderr, "pages in memory past the records: %ld prepared, %ld without\n", on, off);
    CHECK(on >= 8);         /* at least half of the 64 KiB stretch */
    CHECK(off <= 1);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/jh-test-auditlog-open.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        SKIP("mkdtemp");
    test_no_read_around();
    test_no_thread();
    test_prepared_ahead();
    rm_tree(dir);
    return check_done();
}
