/*
 * pageswap.c — see pageswap.h. Used by the elfmap channel:
 *
 *     $ JITHERALD=elfmap,perfmap ./minijit fib.mini & grep jitherald /proc/$!/maps
 *     7f3a12400000-7f3a12401000 r-xp 00001000 fd:01 917 /tmp/jitherald-1000/jit-4242-1.elf
 *     7f3a12401000-7f3a12800000 rw-p 00000000 00:00 0
 *
 * Linux only (mmap MAP_FIXED semantics, /proc/self/maps).
 */
#include "channels/pageswap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <valgrind/valgrind.h>

/* PROCMAP_QUERY (include/uapi/linux/fs.h, Linux 6.11): one VMA per ioctl instead of
 * formatting the whole of /proc/self/maps. Declared here: build hosts have older headers. */
#ifndef PROCMAP_QUERY
struct procmap_query {
    uint64_t size;
    uint64_t query_flags;
    uint64_t query_addr;
    uint64_t vma_start;
    uint64_t vma_end;
    uint64_t vma_flags;
    uint64_t vma_page_size;
    uint64_t vma_offset;
    uint64_t inode;
    uint32_t dev_major;
    uint32_t dev_minor;
    uint32_t vma_name_size;
    uint32_t build_id_size;
    uint64_t vma_name_addr;
    uint64_t build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE   0x01
#define PROCMAP_QUERY_VMA_WRITABLE   0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_VMA_SHARED     0x08
#endif

const char *jh__vma_verdict_str(enum jh__vma_verdict v)
{
    switch (v) {
    case JH__VMA_OK: return "ok";
    case JH__VMA_UNMAPPED: return "part of the range is not mapped (announce code once it "
                                  "is mapped)";
    case JH__VMA_WRITABLE: return "the pages are writable: elfmap maps only pages the JIT has "
                                  "made read+exec (W^X), or RWX pages of a JIT that writes "
                                  "them only under the lock it announces under and says so "
                                  "(JH_OPT_CODE_RWX); mprotect them PROT_READ|PROT_EXEC "
                                  "before jh_code_add";
    case JH_VMA_NOT_RX: return "the pages are not readable and executable (announce code "
                               "once its pages are PROT_READ|PROT_EXEC)";
    case JH__VMA_SHARED: return "the pages are a shared mapping (a double-mapped code "
                                "buffer?), which elfmap cannot replace";
    case JH__VMA_FOREIGN: return "the pages belong to a file or named mapping that is not ours";
    case JH__VMA_ERROR: return "cannot read /proc/self/maps (is /proc mounted?)";
    }
    return "?";
}

struct vma {
    uintptr_t start, end;
    bool r, w, x, shared, named;
    dev_t dev;
    ino_t ino;
};

/* What may be mapped over; with need_file, only our own files' mappings (anonymous memory
 * is then "foreign": jh__vma_own). */
struct want {
    jh__own_file_fn *own;
    void *arg;
    bool need_file;
    bool rwx;                   /* writable pages may be mapped over (JH_OPT_CODE_RWX) */
    unsigned seen;              /* out: 1 a writable VMA was met, 2 a read-only one, 4 an
                                   anonymous one */
};

static enum jh__vma_verdict judge(const struct vma *v, struct want *w)
{
    if (w->need_file && !v->ino)
        return JH__VMA_FOREIGN;
    if (v->shared && v->r && v->x)
        return JH__VMA_SHARED;
    if (v->w && !w->rwx)
        return JH__VMA_WRITABLE;
    if (!v->r || !v->x)
        return JH_VMA_NOT_RX;
    if (v->shared)
        return JH__VMA_SHARED;
    w->seen |= (v->w ? 1 : 2) | (v->ino ? 0 : 4);
    if (v->ino ? !w->own || !w->own(w->arg, v->dev, v->ino) : v->named)
        return JH__VMA_FOREIGN;
    return JH__VMA_OK;
}

/* prctl(PR_SET_VMA_ANON_NAME) names anonymous memory "[anon:NAME]": still anonymous. */
static bool anon_name(const char *name)
{
    return !strncmp(name, "[anon:", 6);
}

/* 1: answered, 0: the ioctl is not available, <0: error. */
static int query_one(int fd, uintptr_t addr, struct vma *v)
{
    /* The name only tells anonymous memory apart ([heap], [anon:NAME]): a file's mapping is
     * judged by its inode. So it is asked for only then, in a second query: for a file the
     * kernel would build its path (d_path) and copy a 4 KiB buffer for nothing, half of
     * what the ioctl cost (LuaJIT: two queries a trace, each into a mapping of our file). */
    char name[4096];            /* too small a buffer fails the query: ENAMETOOLONG */
    struct procmap_query q = { .size = sizeof q, .query_addr = addr };
    int err = ioctl(fd, PROCMAP_QUERY, &q);
    if (!err && !q.inode) {
        q = (struct procmap_query){ .size = sizeof q, .query_addr = addr,
                                    .vma_name_size = sizeof name,
                                    .vma_name_addr = (uintptr_t)name };
        err = ioctl(fd, PROCMAP_QUERY, &q);
    }
    if (err != 0) {
        if (errno == ENOENT)
            return -ENOENT;
        return errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP ? 0 : -errno;
    }
    *v = (struct vma){ .start = q.vma_start, .end = q.vma_end,
        .r = q.vma_flags & PROCMAP_QUERY_VMA_READABLE,
        .w = q.vma_flags & PROCMAP_QUERY_VMA_WRITABLE,
        .x = q.vma_flags & PROCMAP_QUERY_VMA_EXECUTABLE,
        .shared = q.vma_flags & PROCMAP_QUERY_VMA_SHARED,
        .named = q.vma_name_size > 0 && !anon_name(name), .dev = makedev(q.dev_major, q.dev_minor),
        .ino = (ino_t)q.inode };
    return 1;
}

static _Atomic int have_query = -1;     /* -1 unknown, 0 no, 1 yes */

static uintptr_t num(const char **p, int base)
{
    uintptr_t v = 0;
    for (const char *c = *p;; c++) {
        int d = *c >= '0' && *c <= '9' ? *c - '0' : base == 16 && *c >= 'a' && *c <= 'f' ?
                *c - 'a' + 10 : -1;
        if (d < 0) {
            *p = c;
            return v;
        }
        v = v * (uintptr_t)base + (uintptr_t)d;
    }
}

/* The whole of a /proc file, NUL-terminated, to free(); NULL on any failure. */
static char *read_proc(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 64 << 10, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        if (cap - len < 4096) {
            char *n = realloc(buf, cap * 2);
            if (!n) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = n;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (buf)
        buf[len] = 0;
    return buf;
}

/* Parse /proc/self/maps: "start-end perms offset maj:min inode   path". */
static enum jh__vma_verdict check_text(uintptr_t lo, uintptr_t hi, struct want *w)
{
    char *buf = read_proc("/proc/self/maps");
    if (!buf)
        return JH__VMA_ERROR;
    uintptr_t at = lo;
    enum jh__vma_verdict verdict = JH__VMA_UNMAPPED;
    for (char *line = buf; line && *line && at < hi;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        /* Parsed by hand: sscanf made this the hottest function of a callgrind run. */
        const char *c = line;
        uintptr_t s = num(&c, 16), e = (*c == '-' ? c++, num(&c, 16) : 0);
        char perms[4] = { 0 };
        while (*c == ' ')
            c++;
        for (int k = 0; k < 4 && *c && *c != ' '; k++)
            perms[k] = *c++;
        while (*c == ' ')
            c++;
        num(&c, 16);                                    /* offset */
        while (*c == ' ')
            c++;
        unsigned maj = (unsigned)num(&c, 16), min = (*c == ':' ? c++, (unsigned)num(&c, 16) : 0);
        while (*c == ' ')
            c++;
        uintptr_t ino = num(&c, 10);
        while (*c == ' ')
            c++;
        if (e > at) {
            if (s > at)
                break;                                  /* a hole at `at` */
            struct vma v = { .start = s, .end = e, .r = perms[0] == 'r', .w = perms[1] == 'w',
                             .x = perms[2] == 'x', .shared = perms[3] == 's',
                             .named = *c != 0 && !anon_name(c), .dev = makedev(maj, min),
                             .ino = (ino_t)ino };
            verdict = judge(&v, w);
            if (verdict != JH__VMA_OK)
                break;
            at = e;
            verdict = JH__VMA_UNMAPPED;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
    return at >= hi ? JH__VMA_OK : verdict;
}

static enum jh__vma_verdict check(int maps_fd, uintptr_t lo, uintptr_t hi, struct want *w)
{
    if (maps_fd >= 0 && have_query != 0 && !RUNNING_ON_VALGRIND) {
        uintptr_t at = lo;
        while (at < hi) {
            struct vma v = { 0 };
            int r = query_one(maps_fd, at, &v);
            if (r == -ENOENT)
                return JH__VMA_UNMAPPED;
            if (r <= 0)
                break;
            have_query = 1;
            if (v.start > at)
                return JH__VMA_UNMAPPED;
            enum jh__vma_verdict verdict = judge(&v, w);
            if (verdict != JH__VMA_OK)
                return verdict;
            at = v.end;
        }
        if (at >= hi)
            return JH__VMA_OK;
        have_query = 0;
    }
    return check_text(lo, hi, w);
}

enum jh__vma_verdict jh__vma_check(int maps_fd, uintptr_t lo, uintptr_t hi,
                                  jh__own_file_fn *own, void *arg, bool rwx)
{
    return jh__vma_check_files(maps_fd, lo, hi, own, arg, rwx, NULL);
}

enum jh__vma_verdict jh__vma_check_files(int maps_fd, uintptr_t lo, uintptr_t hi,
                                        jh__own_file_fn *own, void *arg, bool rwx,
                                        bool *files)
{
    struct want w = { own, arg, false, rwx, 0 };
    enum jh__vma_verdict v = check(maps_fd, lo, hi, &w);
    if (files)
        *files = v == JH__VMA_OK && !(w.seen & 4);
    return v;
}

bool jh__vma_own(int maps_fd, uintptr_t lo, uintptr_t hi, jh__own_file_fn *own, void *arg,
                 bool rwx)
{
    struct want w = { own, arg, true, rwx, 0 };
    return check(maps_fd, lo, hi, &w) == JH__VMA_OK;
}

int jh__vma_writable(int maps_fd, uintptr_t lo, uintptr_t hi, jh__own_file_fn *own, void *arg)
{
    struct want w = { own, arg, false, true, 0 };
    if (check(maps_fd, lo, hi, &w) != JH__VMA_OK)
        return -1;
    unsigned rw = w.seen & 3;
    return rw == 1 ? 1 : rw == 2 ? 0 : -1;
}

int jh__vma_bounds(int maps_fd, uintptr_t addr, uintptr_t *start, uintptr_t *end)
{
    if (maps_fd >= 0 && have_query != 0 && !RUNNING_ON_VALGRIND) {
        struct vma v = { 0 };
        int r = query_one(maps_fd, addr, &v);
        if (r < 0)
            return r;
        if (r > 0 && v.start <= addr) {
            *start = v.start;
            *end = v.end;
            return 0;
        }
        if (r > 0)
            return -ENOENT;
    }
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -errno;
    char line[512];
    int err = -ENOENT;
    while (fgets(line, sizeof line, f)) {
        const char *c = line;
        uintptr_t s = num(&c, 16), e = (*c == '-' ? c++, num(&c, 16) : 0);
        if (addr >= s && addr < e) {
            *start = s;
            *end = e;
            err = 0;
            break;
        }
        if (!strchr(line, '\n'))           /* a long path: skip the rest of the line */
            while (fgets(line, sizeof line, f) && !strchr(line, '\n'))
                ;
    }
    fclose(f);
    return err;
}

/* ---- BTI ---- */

/* Does the "VmFlags:" line's value (up to end) hold the two-letter flag? */
static bool vm_flag(const char *c, const char *end, const char flag[2])
{
    for (; c + 2 <= end; c++)
        if (c[0] == flag[0] && c[1] == flag[1] && c[-1] == ' ' && (c + 2 == end || c[2] == ' '))
            return true;
    return false;
}

int jh__smaps_guarded(const char *text, uintptr_t lo, uintptr_t hi)
{
    unsigned seen = 0;          /* 1: an unguarded VMA in the range, 2: a guarded one */
    uintptr_t s = 0, e = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        const char *c = line;
        uintptr_t a = num(&c, 16);
        if (c != line && *c == '-') {               /* "start-end perms ...": a new VMA */
            c++;
            s = a;
            e = num(&c, 16);
        } else if (!strncmp(line, "VmFlags:", 8) && e > lo && s < hi) {
            seen |= vm_flag(line + 8, end, "bt") ? 2 : 1;
        }
        line = *end ? end + 1 : end;
    }
    return seen == 2 ? 1 : seen == 1 ? 0 : -1;
}

int jh__vma_guarded(uintptr_t lo, uintptr_t hi)
{
    char *text = read_proc("/proc/self/smaps");
    if (!text)
        return -1;
    int g = jh__smaps_guarded(text, lo, hi);
    free(text);
    return g;
}

/* Is every page of the range mapped? (mincore fails with ENOMEM on a hole.) */
static bool mapped(uintptr_t lo, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[64];
    for (size_t done = 0; done < len;) {
        size_t n = len - done > sizeof vec * page ? sizeof vec * page : len - done;
        if (mincore((void *)(lo + done), n, vec) != 0 && errno == ENOMEM)
            return false;
        done += n;
    }
    return true;
}

/* Put expect back at lo in fresh anonymous memory. Threads running there fault for the
 * instant the page is not executable only if RWX is refused (then RW, copy, RX). */
static int restore(uintptr_t lo, size_t len, const void *expect, int prot)
{
    void *p = mmap((void *)lo, len, PROT_READ | PROT_WRITE | PROT_EXEC | prot,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        p = mmap((void *)lo, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    memcpy(p, expect, len);
    if (mprotect(p, len, PROT_READ | PROT_EXEC | prot) != 0)
        return -errno;
    VALGRIND_DISCARD_TRANSLATIONS(p, len);
    return 0;
}

/* A MAP_FIXED mapping refused with EPERM: a noexec file system refuses the file anywhere, a
 * sealed range (mseal) refuses to be replaced. */
static int why_refused(size_t len, int fd, off_t off, int prot)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_EXEC | prot, MAP_PRIVATE, fd, off);
    if (p == MAP_FAILED)
        return -EPERM;
    munmap(p, len);
    return -EBUSY;
}

int jh__swap_pages(uintptr_t lo, size_t len, int fd, off_t off, const void *expect, int prot)
{
    /* Valgrind (3.19, amd64 and arm64: debuginfo.c, di_notify_mmap) reads a file's symbols
     * only from a mapping that is r-x and not writable, and keeps them across mprotect: so
     * writable code is mapped r-x there, then made writable, before this returns (the
     * JIT's code lock keeps its threads off the pages meanwhile: JH_OPT_CODE_RWX). */
    int first = RUNNING_ON_VALGRIND ? prot & ~PROT_WRITE : prot;
    void *p = mmap((void *)lo, len, PROT_READ | PROT_EXEC | first, MAP_FIXED | MAP_PRIVATE, fd,
                   off);
    if (p != MAP_FAILED && first != prot &&
        mprotect(p, len, PROT_READ | PROT_EXEC | prot) != 0) {
        int err = -errno;
        restore(lo, len, expect, prot);
        return err;
    }
    if (p == MAP_FAILED) {
        int err = -errno;
        if (err == -EPERM)
            err = why_refused(len, fd, off, prot);
        /* Linux checks permissions (noexec mount: EPERM) before it touches the old
         * mapping, but a late failure may have unmapped it: then put the bytes back. */
        if (!mapped(lo, len) || memcmp((const void *)lo, expect, len) != 0)
            restore(lo, len, expect, prot);
        return err;
    }
    if (p != (void *)lo || memcmp(p, expect, len) != 0) {
        int err = restore(lo, len, expect, prot);
        return err ? err : -EIO;
    }
    return 0;
}

int jh__unswap_pages(uintptr_t lo, size_t len, int prot)
{
    void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED)
        return -errno;
    memcpy(copy, (const void *)lo, len);
    int err = 0;
    if (mprotect(copy, len, PROT_READ | PROT_EXEC | prot) != 0 ||
        mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo) == MAP_FAILED)
        err = -errno;
    if (err)
        munmap(copy, len);
    else
        VALGRIND_DISCARD_TRANSLATIONS(lo, len);
    return err;
}
