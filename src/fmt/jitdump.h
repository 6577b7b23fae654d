/*
 * jitdump.h — the jitdump file format as perf 6.1 reads it (tools/perf/util/jitdump.h and
 * jitdump.c): constants, byte offsets and the one encoder of its records, shared by the
 * jitdump channel (src/channels/jitdump.c), `jitherald log FILE to-jitdump` and the reader
 * (tools/lib/jitdump_read.c). All fields are in the writer's byte order (little-endian on
 * every target we build for); a reader recognises the other order by the swapped magic.
 *
 * File:    header, then records until EOF (a live process's file may end mid-record).
 * Header:  u32 magic 'JiTD' (0x4A695444), u32 version (1), u32 total_size (header bytes,
 *          40; readers skip any extension), u32 elf_mach (EM_*), u32 pad, u32 pid,
 *          u64 timestamp, u64 flags (bit 0: timestamps are TSC; any other bit makes perf
 *          reject the whole file).
 * Record:  u32 id, u32 total_size (prefix included), u64 timestamp (CLOCK_MONOTONIC ns,
 *          the clock of `perf record -k 1`), then a body per id.
 */
#ifndef JH__FMT_JITDUMP_H
#define JH__FMT_JITDUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "fmt/arch.h"
#include "fmt/func.h"

#define JH__JD_MAGIC          0x4A695444u
#define JH__JD_MAGIC_SWAPPED  0x4454694Au
#define JH__JD_VERSION        1u         /* perf < 6.9 rejects anything newer */
#define JH__JD_HEADER_SIZE    40u
#define JH__JD_FLAG_ARCH_TIMESTAMP ((uint64_t)1) /* the only flag bit perf 6.1 knows */

#define JH__JD_PREFIX_SIZE    16u        /* id, total_size, timestamp */

enum {
    JH__JD_CODE_LOAD = 0,
    JH__JD_CODE_MOVE = 1,
    JH__JD_CODE_DEBUG_INFO = 2,
    JH__JD_CODE_CLOSE = 3,
    JH__JD_CODE_UNWINDING_INFO = 4,
    JH__JD_CODE_MAX
};

/* LOAD: u32 pid, u32 tid, u64 vma, u64 code_addr, u64 code_size, u64 code_index, then the
 * NUL-terminated name (an empty one is written as "?", as in the perf map), then exactly
 * code_size bytes of code. perf finds the code by
 * counting back from the end of the record, so nothing may follow it. perf names the
 * synthetic ELF `jitted-<pid>-<code_index>.so`: an index must never be reused. */
#define JH__JD_LOAD_FIXED     56u

/* MOVE: u32 pid, u32 tid, u64 vma, u64 old_code_addr, u64 new_code_addr, u64 code_size,
 * u64 code_index (of the LOAD whose code moved). */
#define JH__JD_MOVE_SIZE      64u

/* DEBUG_INFO: u64 code_addr, u64 nr_entry, then nr_entry entries of u64 addr (absolute,
 * in the process), i32 lineno, i32 discriminator, NUL-terminated file name (an empty one
 * is written as "?"). Applies to the next LOAD, whose code_addr it repeats. */
#define JH__JD_DEBUG_FIXED    32u
#define JH__JD_DEBUG_ENTRY_FIXED 16u

/* UNWINDING_INFO: u64 unwinding_size (.eh_frame + .eh_frame_hdr bytes that follow),
 * u64 eh_frame_hdr_size, u64 mapped_size, then .eh_frame immediately followed by
 * .eh_frame_hdr (that order: perf's genelf.c takes the header from the end). Applies to the
 * next LOAD. perf extends that LOAD's mapping to ALIGN_8(code_size) + mapped_size. */
#define JH__JD_UNWIND_FIXED   40u

/* CLOSE: the prefix only. */

/*
 * perf inject turns each LOAD into an ELF whose .text starts at this file offset and
 * address; .eh_frame goes at ALIGN_8(text + code_size) and .eh_frame_hdr right after it,
 * so the pc-relative pointers in UNWINDING_INFO are computed for that layout, not for the
 * process. 0x80 = round_up(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), 16) since perf 6.1
 * (commits babd04386b1d "perf jit: Include program header in ELF files" and 89b15d00527b
 * "perf inject: Fix GEN_ELF_TEXT_OFFSET for jit"); it was 0x40 before.
 */
#define JH__JD_PERF_TEXT_OFFSET 0x80u

/* ---- the encoder -------------------------------------------------------------------- */

/* Where the fields a writer fills in at the last moment lie in an encoded unit: the
 * timestamps (so that file order and time order agree under a writer's lock) and the LOAD's
 * code_index (a process-wide counter, taken under the same lock). */
struct jh__jd_unit {
    size_t stamp_at[3];         /* record starts */
    int nstamps;
    size_t index_at;            /* the LOAD's code_index field */
    bool unwinding;             /* an UNWINDING_INFO record was written */
    int unwind_err;             /* why it was not, when the encoder refused (else 0) */
};

/* The 40-byte file header; elf_mach is arch's e_machine (NULL: the host's). */
void jh__jd_header(struct jh__buf *b, const struct jh__arch *arch, uint32_t pid,
                   uint64_t timestamp);

/*
 * perf widens a LOAD's mapping to ALIGN_8(code_size) + mapped_size when UNWINDING_INFO
 * precedes it: true when that still ends before next_start, the start of the next live
 * function above start (0: none), so that perf's mapping never hides a neighbour.
 */
bool jh__jd_unwind_fits(uint64_t start, uint64_t code_size, uint64_t mapped_size,
                        uint64_t next_start);

/*
 * Append one function as one unit: DEBUG_INFO (when f has lines; absolute addresses, plus
 * an entry at the end of the code so the last row covers bytes), UNWINDING_INFO (arch's CFI,
 * NULL: the host's; when f has unwind info, the CFI encoder accepts it, and
 * jh__jd_unwind_fits), then LOAD — all but
 * the code bytes, which the caller writes right after (f->size bytes, e.g. with writev).
 * 0, -EFBIG (the LOAD would not fit total_size's 32 bits), -ENOMEM.
 */
int jh__jd_function(struct jh__buf *b, const struct jh__func *f, const struct jh__arch *arch,
                    uint32_t pid, uint32_t tid, uint64_t timestamp, uint64_t index,
                    uint64_t next_start, struct jh__jd_unit *u);

/* Set every timestamp of the unit, and its code_index. */
void jh__jd_restamp(struct jh__buf *b, const struct jh__jd_unit *u, uint64_t timestamp,
                    uint64_t index);

/* MOVE of the LOAD `index` from old_addr to new_addr; CLOSE. */
void jh__jd_move(struct jh__buf *b, uint32_t pid, uint32_t tid, uint64_t old_addr,
                 uint64_t new_addr, uint64_t code_size, uint64_t index, uint64_t timestamp);
void jh__jd_close(struct jh__buf *b, uint64_t timestamp);

#endif
