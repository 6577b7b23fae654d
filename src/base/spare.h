/*
 * spare.h — free runs of a file (or any offset space): put a run back, take the smallest
 * run that fits. Kept by offset, adjacent runs merged. For fmt/elf_grow.c, whose sections
 * move into chunks that others left (their pages allocated and mapped already) before new
 * room at the file's end.
 */
#ifndef JH__BASE_SPARE_H
#define JH__BASE_SPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jh__spare_run {
    uint64_t off, len;
};

struct jh__spare {
    struct jh__spare_run *v;    /* by offset, none adjacent to the next */
    size_t n, cap;
    uint64_t bytes;             /* their total */
};

/* [off, off+len) is free (it overlaps no run). Best effort: without memory it is not
 * remembered (false), and stays unused. */
bool jh__spare_put(struct jh__spare *s, uint64_t off, uint64_t len);
/* The start of the smallest run of at least len bytes (best fit), taken from its start:
 * the rest stays free. UINT64_MAX: none fits. */
uint64_t jh__spare_take(struct jh__spare *s, uint64_t len);
/* [off, off+len) taken if free, the start of a run (a chunk that ends at off grows in
 * place): true if taken. */
bool jh__spare_take_at(struct jh__spare *s, uint64_t off, uint64_t len);
/* The highest run, taken whole: false when none is left. */
bool jh__spare_pop(struct jh__spare *s, struct jh__spare_run *out);
void jh__spare_free(struct jh__spare *s);

#endif
