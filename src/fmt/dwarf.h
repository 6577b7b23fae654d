/*
 * dwarf_write.h — DWARF 4 debug sections for a set of JIT functions: .debug_info, .debug_abbrev,
 * .debug_line, .debug_str and .debug_ranges. Pure: entries in, byte buffers out, no I/O.
 *
 * Why DWARF 4 and not 5: every consumer we serve reads version 4 line tables and units
 * without surprises (gdb 13, lldb 14, perf 6.1 through libdw 0.188, valgrind 3.19, which
 * only learnt DWARF 5 in 3.18 and still trips on some DW_FORM_line_strp layouts). Version 5
 * buys nothing here: no split DWARF, no string offsets tables, no MD5 checksums we could fill.
 *
 * What is emitted: one compile unit per source file. A function belongs to the unit of the
 * file of its first line row (or of files[0] when it has files but no rows). Functions with
 * no file at all get no DWARF from jh__dwarf_add (their ELF symbol names them); from
 * jh__dwarf_build, the debuggers' images, those whose name is not a symbol (V8's
 * "JS:*f app.js:2:15", sanitised to JS_f_app_js_2_15 for the symbol table) go into one
 * unit without a line program, so a backtrace shows the name the JIT gave. Each unit has
 *   DW_TAG_compile_unit  producer, language C99, name, [comp_dir], stmt_list, low_pc 0 +
 *                        ranges (the unit's functions are not contiguous in general:
 *                        another file's functions may sit in between)
 *     DW_TAG_subprogram  name, external, [decl_file, decl_line], low_pc, high_pc (length),
 *                        frame_base = DW_OP_call_frame_cfa
 * and a line program whose file table holds every file its functions refer to, with one
 * sequence per function (functions need not be adjacent), columns as given.
 *
 * Check the bytes with the real decoders (tests/unit/test_elf_image.c does):
 *     readelf -wi -wl -wR image.elf;  llvm-dwarfdump-14 --verify image.elf
 */
#ifndef JH__FMT_DWARF_H
#define JH__FMT_DWARF_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct jh__func;

struct jh__dwarf {
    struct jh__buf info, abbrev, line, str, ranges;
    /* for jh__dwarf_add: the .debug_str offsets of the producer and comp_dir (-1: none) */
    uint32_t producer;
    int64_t comp_dir;
    /* a build reusing the buffers of the one before: the abbreviations and the .debug_str
     * bytes [0, kept) (producer, comp_dir) are still there from it (0: nothing kept) */
    size_t kept;
};

struct jh__dwarf_opts {
    const char *producer;       /* DW_AT_producer; NULL: "jitherald" */
    const char *comp_dir;       /* DW_AT_comp_dir, relative file names resolve against it;
                                   NULL: none (debuggers then use their cwd) */
};

/*
 * Build the sections for fns[0..n) (any order; overlapping ranges are the caller's
 * problem). d must be zeroed, freed, or hold a previous build: its buffers are then
 * emptied and reused, so a caller that builds many sets (fmt/elf_image.h, struct
 * jh__elf_scratch) allocates nothing once they have grown. 0 on success (a set with no
 * file names yields empty buffers), -ENOMEM, -E2BIG when a section would not fit 32-bit
 * DWARF. On error every buffer is freed.
 */
int jh__dwarf_build(struct jh__dwarf *d, const struct jh__func *const *fns, size_t n,
                    const struct jh__dwarf_opts *o);

/*
 * The same sections grown one function at a time, for an image that is written in place
 * (fmt/elf_grow.h): jh__dwarf_begin empties d (zeroed, freed or used before, as for
 * jh__dwarf_build) and writes the abbreviations and the producer/comp_dir strings; each jh__dwarf_add appends one compile unit for f
 * alone (its line program, its range list, its strings) and touches nothing written
 * before, so every section only grows at its end. A function with no file gets nothing.
 * 0, -ENOMEM, -E2BIG. On error the buffers hold what they held before the call.
 */
int jh__dwarf_begin(struct jh__dwarf *d, const struct jh__dwarf_opts *o);
int jh__dwarf_add(struct jh__dwarf *d, const struct jh__func *f);
/* The same, and a function with no file whose name is not a symbol gets a unit of its own
 * with no line program, as from jh__dwarf_build (the gdb channel's growing image). */
int jh__dwarf_add_named(struct jh__dwarf *d, const struct jh__func *f);

/* Free the buffers (d stays usable for another build). */
void jh__dwarf_free(struct jh__dwarf *d);

#endif
