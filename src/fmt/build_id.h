/*
 * build_id.h — the GNU build-id of a jitherald ELF image: 20 bytes derived from what the
 * image says, so that the same code and metadata give the same id on any machine and at
 * any time (`jitherald log FILE to-elf DIR` rebuilds an image from the audit log with the
 * id the live one had), and a different generation of a page gets a different one.
 * Pure: no I/O, no state.
 *
 * What goes in: every function the image names (address, size, name, symbol, source
 * files, line table, unwind description) and code bytes at their addresses (an image that
 * holds code: elfmap's files; jh_code_patched folds in the new bytes), plus a few words
 * of the image's own layout the caller passes to jh__bid_final (elfmap: the window's
 * anchor, which fixes every function's file offset). Not in: file offsets of metadata,
 * heap addresses (.eh_frame's in a gdb image), time, pid, paths.
 *
 * Each item hashes to 128 bits that are added, lane by lane, to the image's sums, so an
 * image that grows one function at a time (fmt/elf_grow.c) updates its id in constant time,
 * and the order in which functions were added does not matter. Not cryptographic: it names
 * content, it does not vouch for it (lld's --build-id=fast is 64 bits of xxHash).
 * The note itself:  readelf -n img.elf   ("Build ID: ..."), or eu-readelf -n.
 */
#ifndef JH__FMT_BUILD_ID_H
#define JH__FMT_BUILD_ID_H

#include <stddef.h>
#include <stdint.h>

struct jh__func;

#define JH__BUILD_ID_SIZE 20
/* The note: namesz, descsz, type NT_GNU_BUILD_ID, "GNU\0", the id. */
#define JH__BUILD_ID_NOTE_SIZE (12 + 4 + JH__BUILD_ID_SIZE)

struct jh__bid {
    uint64_t a, b;              /* lane sums */
    uint64_t n;                 /* items */
};

/* The GNU build-id (NT_GNU_BUILD_ID) in the ELF notes at notes[0, n), in the host's byte
 * order: its length (1 to 64, copied to id), or 0 if there is none or a note runs past n.
 * Notes of this process's own objects (channels/auditlog_ref.c); the CLI reads those of
 * little-endian files and cores whatever the host (lib/core_read.h, jhr_note_build_id). */
size_t jh__note_build_id(const uint8_t *notes, size_t n, uint8_t id[64]);

/* 64-bit XXH64 of n bytes (the published algorithm; little-endian reads on any host). */
uint64_t jh__hash64(const void *p, size_t n, uint64_t seed);

/* Fold in a function's description (not its code bytes): f->bid_hash when known. */
void jh__bid_func(struct jh__bid *id, const struct jh__func *f);
/* The same in two steps, for a caller that keeps a function's hash while its description
 * does not change (the gdb channel: a function goes into several images on its way to a
 * full one): jh__bid_func(id, f) is jh__bid_add(id, jh__bid_func_hash(f)). */
uint64_t jh__bid_func_hash(const struct jh__func *f);
void jh__bid_add(struct jh__bid *id, uint64_t func_hash);
/* Fold in len code bytes found at address addr. */
void jh__bid_bytes(struct jh__bid *id, uint64_t addr, const void *p, size_t len);
/* The id of everything folded in, with two words describing the image's layout. */
void jh__bid_final(const struct jh__bid *id, uint64_t layout1, uint64_t layout2,
                   uint8_t out[JH__BUILD_ID_SIZE]);
/* The NT_GNU_BUILD_ID note for an id: JH__BUILD_ID_NOTE_SIZE bytes into out. */
void jh__bid_note(uint8_t out[JH__BUILD_ID_NOTE_SIZE], const uint8_t id[JH__BUILD_ID_SIZE]);

#endif
