/*
 * elfmap_witness.h — what a profiler sees of JIT code under the elfmap channel, checked the
 * way perf and valgrind look at it: the mapping that holds the code's address in
 * /proc/self/maps, the ELF file behind that mapping, the symbol that file's .symtab gives
 * the address (through the PT_LOAD that covers it), and the bytes the file holds there.
 *
 *     struct ew_fn f = { .addr = code, .size = len, .name = "TRACE_3 x.lua:10" };
 *     enum ew_verdict v = ew_check(&f, 1, NULL);   // EW_OK: named right, same bytes
 *
 * Shared by the elfmap tests and bench/elfmap_churn.c. Reads files and /proc only.
 */
#ifndef JH_TEST_ELFMAP_WITNESS_H
#define JH_TEST_ELFMAP_WITNESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x86-64 "mov eax, v; ret" (6 bytes) at p: the elfmap tests' JIT function. */
void ew_emit_ret(uint8_t *p, uint32_t v);

struct ew_fn {
    const void *addr;
    size_t size;
    const char *name;
};

enum ew_verdict {
    EW_OK = 0,
    EW_ANON,        /* the code's mapping is not a file (not swapped) */
    EW_NOFILE,      /* the mapping names a file that cannot be read as ELF */
    EW_NOSYM,       /* the file has no symbol of that name, address and size */
    EW_BYTES,       /* the file's bytes at the code differ from the code */
    EW_NVERDICT
};

const char *ew_verdict_str(enum ew_verdict v);

/*
 * Check n functions; counts[v] (if not NULL, EW_NVERDICT entries) gets how many got each
 * verdict. Returns the number of functions that are EW_OK. Every file is read afresh, as a
 * profiler reading it now would.
 */
size_t ew_check(const struct ew_fn *fns, size_t n, size_t *counts);

/* The mapping holding addr in /proc/self/maps: 1 and its perms ("r-xp") and path ("" if
 * anonymous), or 0 if none. */
int ew_mapping_of(const void *addr, char perms[5], char *path, size_t pathlen);

/* The verdict for one function, and (if path is not NULL) the file behind its mapping. */
enum ew_verdict ew_check_one(const struct ew_fn *f, char *path, size_t pathlen);

#ifdef __cplusplus
}
#endif

#endif
