/*
 * gdb_jit.h — the GDB/LLDB JIT interface itself (GDB manual, "JIT Interface"): the
 * descriptor and the hook, whose names, layout and version GDB fixes, the one lock that
 * orders every edit of the list, and telling whether a debugger listens. The gdb channel
 * (gdb.c) decides what goes into which image; the benchmark and the tests read the list
 * through the same declarations.
 *
 * The protocol: a list of {next, prev, symfile, size} entries hangs off
 * __jit_debug_descriptor; after each edit the JIT sets relevant_entry and action_flag and
 * calls __jit_debug_register_code, on which the debugger has a breakpoint. The debugger
 * reads only relevant_entry at that stop; on attach it walks the whole list. So the list is
 * always complete and consistent (a debugger may stop us at any instruction), an entry and
 * its image stay unchanged until after their unregister call, and one process-wide lock
 * orders every edit (several contexts share the list).
 */
#ifndef JH__CHANNELS_GDB_JIT_H
#define JH__CHANNELS_GDB_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/diag.h"
#include "fmt/elf_image.h"
#include "fmt/func.h"

enum { JIT_NOACTION = 0, JIT_REGISTER = 1, JIT_UNREGISTER = 2 };

struct jit_code_entry {
    struct jit_code_entry *next_entry, *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
};

struct jit_descriptor {
    uint32_t version;
    uint32_t action_flag;
    struct jit_code_entry *relevant_entry, *first_entry;
};

/* The descriptor's section: scripts/gdb-section.sh marks it executable in the shared
 * library's section header so that gdb reads our descriptor even where the executable
 * defines one (gdb_jit.c). */
#define JH__GDB_SECTION ".jh_gdb_jit"

extern struct jit_descriptor __jit_debug_descriptor;
void __jit_debug_register_code(void);

/* What the debugger sees of one image: its list entry and the ELF bytes (an in-memory
 * ELF + DWARF image of fns, fmt/elf_image.h), which follow it in the same allocation.
 * Allocated per registration, freed only after its unregister call has returned. */
struct jh__gdb_image {
    struct jit_code_entry ce;
    /* NULL; or the bytes lie in this mapping of map_len bytes, the image's own (a growing
     * image frozen as it stood, gdb_grow.c), unmapped with it */
    void *map;
    size_t map_len;
};

/* An image built by appending to a buffer whose len starts at JH__GDB_HEAD (room for the
 * entry, in the same allocation): the buffer's block becomes the image. */
#define JH__GDB_HEAD ((sizeof(struct jh__gdb_image) + 7) / 8 * 8)
struct jh__gdb_image *jh__gdb_image_of(struct jh__buf *b);

/* 0, -ENOMEM, or the image builder's error. fns sorted by start, not overlapping. A gap of
 * at most JH__GDB_JOIN_GAP bytes between two of them is covered by one .text section when
 * join_ok says no other code is in it (fmt/elf_image.h: join_ok). 64 KiB: LLVM's memory
 * managers put each module on its own pages, code and data interleaved, 8 KiB from one
 * function to the next; at 256 bytes that was a section per function, and gdb's cost per
 * function grew with their number (8,000 page-apart functions: 2.8 ms each, 0.64 ms now). */
#define JH__GDB_JOIN_GAP 65536
int jh__gdb_image_build(struct jh__gdb_image **out, const struct jh__func *const *fns, size_t n,
                        bool (*join_ok)(void *arg, const struct jh__func *a, const struct jh__func *b), void *join_arg,
                        struct jh__elf_scratch *scratch, const uint64_t *fn_bid);
void jh__gdb_image_free(struct jh__gdb_image *im);

/* Change what the debugger sees, under the list lock: register add (if not NULL) first, then
 * unregister drop[] (NULLs skipped) and free them, so a function moving between images is
 * never in none. */
void jh__gdb_publish(struct jh__gdb_image *add, struct jh__gdb_image *const *drop, size_t ndrop);

/* Under the list lock: register add, then unregister drop, neither freed (the growing
 * image's two views, gdb_grow.c). */
void jh__gdb_republish(struct jit_code_entry *add, struct jit_code_entry *drop);

/* A ready-made ELF object (jh_gdb_object_add), registered as it is: the entry is ours, the
 * bytes the caller's, unchanged until after jh__gdb_object_remove. While any is listed the
 * re-announcement LLDB needs on attach waits (gdb_jit.c). 0 or -ENOMEM. */
int jh__gdb_object_add(const void *elf, size_t len, struct jit_code_entry **out);
void jh__gdb_object_remove(struct jit_code_entry *ce);

/* Is a debugger listening now (a breakpoint on the hook)? One load. */
bool jh__gdb_listening(void);
/* Take note of a debugger that appeared since last time (LLDB 14 drops what it read on
 * attach, so every image is announced again). Call at quiet points; cheap when nothing
 * changed. */
void jh__gdb_check_debugger(void);
/* Say once (through d) that another JIT edits our list, if one was seen doing so. */
void jh__gdb_report_foreign(const struct jh__diag *d);
/* Warn (through d) when another library's __jit_debug_descriptor comes first: once a process. */
void jh__gdb_warn_shadowed(const struct jh__diag *d);

#endif
