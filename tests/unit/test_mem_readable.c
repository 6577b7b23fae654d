/*
 * test_mem_readable.c — jh__mem_readable (base/os.h), which the audit log asks before it
 * copies live code in a fork child (perhaps in a signal handler), the jitdump channel
 * before it writes code, and the frame and description readers before they read a JIT's
 * memory: readable exactly when every page of the range is, whatever the range's length
 * (one probe a page, PROBES pages a system call), its alignment, or where the hole is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "base/os.h"

#define NPAGES 80

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, NPAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    if (m == MAP_FAILED)
        SKIP("mmap");
    /* holes: one page at 70 (past two calls' worth of probes), one at 33 (just past the
     * first call's 32) */
    CHECK(munmap(m + 70 * page, page) == 0);
    CHECK(munmap(m + 33 * page, page) == 0);

    CHECK(jh__mem_readable(m, 0));
    CHECK(jh__mem_readable(m, 1));
    CHECK(jh__mem_readable(m + 17, 33 * page - 17));          /* up to the hole's first byte */
    CHECK(!jh__mem_readable(m + 17, 33 * page - 16));         /* one byte into it */
    CHECK(!jh__mem_readable(m + 33 * page, 1));
    CHECK(!jh__mem_readable(m + 33 * page + page - 1, 2));    /* starts in it */
    CHECK(jh__mem_readable(m + 34 * page, 36 * page));        /* 34..69: 36 pages, two calls */
    CHECK(!jh__mem_readable(m + 34 * page, 36 * page + 1));
    CHECK(!jh__mem_readable(m + 34 * page + 5, 37 * page));   /* over the hole to 71 */
    CHECK(jh__mem_readable(m + 71 * page - 1 - page, 1));    /* the last byte before it */
    CHECK(!jh__mem_readable(m, NPAGES * page));
    CHECK(jh__mem_readable(m + 71 * page, 9 * page));
    CHECK(jh__mem_readable(m + 71 * page + page / 2, page));  /* two pages, unaligned */
    CHECK(!jh__mem_readable((const void *)(UINTPTR_MAX - 10), 100));     /* wraps */
    CHECK(!jh__mem_readable((const void *)(uintptr_t)page, 1));          /* never mapped */

    /* every length from each start across the first hole, against a page walk */
    for (size_t s = 30 * page - 3; s < 30 * page + 3; s++)
        for (size_t n = 1; n < 5 * page; n += page / 2 - 1) {
            bool want = !(s < 34 * page && s + n > 33 * page);
            CHECK_EQ(jh__mem_readable(m + s, n), want);
        }
    munmap(m, NPAGES * page);
    return check_done();
}
