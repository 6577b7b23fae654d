/*
 * pageswap.h — inspecting the mappings behind a range of pages, and replacing live code
 * pages in place by a private mapping of a file holding the same bytes (the elfmap
 * channel's mechanics; the policy of what to swap and when lives in elfmap.c).
 *
 * The replacement is one mmap(MAP_FIXED) call: the kernel swaps the mappings under the
 * mm write lock, so a thread executing the old page faults and resumes on the new one —
 * there is no instant where the address is unmapped. What it cannot protect is a byte
 * written to the old page between our snapshot and the swap: that is why only pages
 * that are not writable are swapped, and why the bytes are compared right before and
 * right after the swap.
 */
#ifndef JH__CHANNELS_PAGESWAP_H
#define JH__CHANNELS_PAGESWAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Why a range may not be swapped (the first reason found), for a one-time report. */
enum jh__vma_verdict {
    JH__VMA_OK = 0,
    JH__VMA_UNMAPPED,        /* a hole in the range */
    JH__VMA_WRITABLE,        /* PROT_WRITE: the JIT may be writing it right now */
    JH_VMA_NOT_RX,          /* not readable and executable */
    JH__VMA_SHARED,          /* MAP_SHARED (e.g. a memfd double mapping): writes through
                               the other view would no longer reach the code */
    JH__VMA_FOREIGN,         /* file-backed by someone else's file, or a named mapping */
    JH__VMA_ERROR            /* could not read the mappings */
};

/* Does (dev, ino) belong to one of our own image files? */
typedef bool jh__own_file_fn(void *arg, dev_t dev, ino_t ino);

/*
 * Check that every page of [lo, hi) is mapped private, readable, executable, not
 * writable (unless rwx), and either anonymous (unnamed) or a mapping of a file own() accepts.
 * Uses the PROCMAP_QUERY ioctl (Linux 6.11+) when it works and valgrind is not watching
 * (valgrind does not know the ioctl, so memcheck would flag its results), and parses
 * /proc/self/maps otherwise. maps_fd: an fd of /proc/self/maps kept open by the caller,
 * or -1.
 */
enum jh__vma_verdict jh__vma_check(int maps_fd, uintptr_t lo, uintptr_t hi,
                                  jh__own_file_fn *own, void *arg, bool rwx);
/* jh__vma_check, and *files: whether all of [lo, hi) passed as mappings of own()'s files
 * (what jh__vma_own would say, from the same look at the mappings). */
enum jh__vma_verdict jh__vma_check_files(int maps_fd, uintptr_t lo, uintptr_t hi,
                                        jh__own_file_fn *own, void *arg, bool rwx,
                                        bool *files);
/* Is every page of [lo, hi) still a private, r-x mapping of a file own() accepts (not
 * anonymous, not writable)? A page once swapped may since have been unmapped by the JIT and
 * mapped anew, made writable, or given back to anonymous memory. */
bool jh__vma_own(int maps_fd, uintptr_t lo, uintptr_t hi, jh__own_file_fn *own, void *arg,
                 bool rwx);
/* [lo, hi) passes jh__vma_check with rwx: 1 if all of it is writable (RWX), 0 if none of it
 * is, -1 if it mixes both or does not pass. */
int jh__vma_writable(int maps_fd, uintptr_t lo, uintptr_t hi, jh__own_file_fn *own, void *arg);
const char *jh__vma_verdict_str(enum jh__vma_verdict v);

/* The mapping (VMA) holding addr: 0 and [*start, *end), or -ENOENT / a negative errno. */
int jh__vma_bounds(int maps_fd, uintptr_t addr, uintptr_t *start, uintptr_t *end);

/*
 * Are the pages of [lo, hi) BTI-guarded (arm64 PROT_BTI: the "bt" of smaps' VmFlags)? 1 all
 * of them, 0 none, -1 some are and some are not, or smaps cannot be read. The reader of
 * /proc/self/smaps's text is jh__smaps_guarded (for tests).
 */
int jh__vma_guarded(uintptr_t lo, uintptr_t hi);
int jh__smaps_guarded(const char *smaps, uintptr_t lo, uintptr_t hi);

/*
 * Replace [lo, lo+len) (page aligned) by mmap(MAP_FIXED|MAP_PRIVATE, PROT_READ|PROT_EXEC|prot)
 * of fd at offset off (prot: 0, PROT_BTI where the code's pages have it, PROT_WRITE where
 * they are RWX: under valgrind mapped r-x, then made RWX), whose bytes must equal expect[0..len). Returns 0 when the new pages
 * hold exactly expect. On any failure the range ends up holding expect in an anonymous
 * r-x mapping (as before, or restored from expect) and a negative errno is returned:
 * -EIO means the mapped bytes differed from expect (the file is not what we wrote).
 */
int jh__swap_pages(uintptr_t lo, size_t len, int fd, off_t off, const void *expect, int prot);
/* -EBUSY from jh__swap_pages: the pages refuse to be mapped over (sealed: mseal(2)), while
 * the file maps fine elsewhere. */

/*
 * The opposite: [lo, lo+len) (page aligned, r-x, mapped from one of our files) becomes
 * private anonymous memory again, r-x (| prot), with the same bytes, in one step (a copy mremap'ed
 * over it: a thread running there never finds the range unmapped or not executable). From
 * then on it behaves as the memory the JIT allocated: madvise(MADV_DONTNEED) gives zeros,
 * not the file's bytes. 0 or a negative errno (the range is then as it was).
 */
int jh__unswap_pages(uintptr_t lo, size_t len, int prot);

#endif
