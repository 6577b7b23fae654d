/*
 * core_read.h — what a Linux core file says about the process's memory: its memory
 * segments (the bytes the core holds, by address) and its NT_FILE note (which file each
 * file-backed mapping came from, at which offset). Both the kernel's cores and gdb's
 * `gcore` write them. ELF64 little-endian cores only (x86-64, arm64).
 *
 *     struct jhr_core c;
 *     if (jhr_core_read(&c, data, len) == 0) {
 *         for (size_t i = 0; i < c.nmaps; i++)
 *             printf("%llx %s\n", (unsigned long long)c.maps[i].start, c.maps[i].path);
 *         jhr_core_free(&c);
 *     }
 *
 * Every length and offset is checked against the data; paths point into it (NUL-terminated
 * there by the note's own layout, checked).
 */
#ifndef JHR_CORE_READ_H
#define JHR_CORE_READ_H

#include <stddef.h>
#include <stdint.h>

struct jhr_core_map {
    uint64_t start, end;        /* [start, end) in the process */
    uint64_t offset;            /* file offset of start, in bytes */
    const char *path;           /* as the kernel wrote it: " (deleted)" may end it */
};

struct jhr_core_seg {
    uint64_t vaddr, memsz;
    uint64_t offset, filesz;    /* the bytes the core holds: data[offset, offset + filesz) */
};

struct jhr_core {
    const uint8_t *data;
    size_t len;
    uint16_t machine;           /* e_machine */
    struct jhr_core_map *maps;
    size_t nmaps;
    struct jhr_core_seg *segs;
    size_t nsegs;
};

/* 0; JH_EFORMAT if data is not an ELF64 little-endian core or a note or segment runs past
 * it; -ENOMEM. A core without an NT_FILE note reads with nmaps 0. data must outlive c. */
int jhr_core_read(struct jhr_core *c, const uint8_t *data, size_t len);
void jhr_core_free(struct jhr_core *c);

/* How many bytes of the process from addr on the core holds in one piece (0: none, the
 * page was left out or never mapped); *p points at them. */
size_t jhr_core_bytes(const struct jhr_core *c, uint64_t addr, const uint8_t **p);

/* The GNU build-id (NT_GNU_BUILD_ID) in the notes at notes[0, n): its length (at most
 * 64, copied to id), or 0 if there is none. */
size_t jhr_note_build_id(const uint8_t *notes, size_t n, uint8_t id[64]);

/* The build-id of the ELF file mapped by maps[i], if that mapping starts at file offset 0
 * and the core holds the ELF header, program headers and note there (the kernel and gcore
 * keep the first page of each ELF file mapped at offset 0): its length, or 0. */
size_t jhr_core_map_build_id(const struct jhr_core *c, size_t i, uint8_t id[64]);

#endif
