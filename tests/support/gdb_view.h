/*
 * gdb_view.h — what a debugger attaching now would see of the JIT code: walk
 * __jit_debug_descriptor's list as gdb does (list order) and read each image's ELF symbol
 * table. Shared by the unit tests of the gdb channel and of switching channels on and off.
 */
#ifndef JH_TEST_GDB_VIEW_H
#define JH_TEST_GDB_VIEW_H

#include <stddef.h>
#include <stdint.h>

struct sym {
    uintptr_t addr;
    uint64_t size;
    char name[32];
    const void *image;          /* the image it was read from (its symfile_addr) */
};

/* After snapshot(): every symbol of every image, and how many images there were. */
extern struct sym *view;
extern size_t nview, nimages;

/* Read the list now: the number of faults found in it (its links, each image's bounds and
 * symbols), each said on stderr. */
int snapshot(void);

/* How many symbols are named name (at addr, when addr is not 0). */
int count_named(const char *name, uintptr_t addr);

/* The image naming name (the first in list order), or NULL. */
const void *image_naming(const char *name);

/* An in-memory ELF64 image's section count: e_shnum, or with ELF's extended numbering
 * (e_shnum 0: the gdb channel's growing image, fmt/elf_grow_mem.h) section 0's sh_size. */
size_t elf_shnum(const void *image);

#endif
