/*
 * auditlog.h — the audit log's format in one place: frame layout, record kinds, keys and
 * extension types, shared by the writer (src/channels/auditlog*.c) and the reader
 * (tools/lib/auditlog_read.c), plus the encoder of the records the library builds under its
 * lock. docs/auditlog-format.md is the prose version.
 *
 * A log is a sequence of frames: 0xce, a big-endian u32 length, then one msgpack map of
 * that length (the frame is a msgpack uint32 followed by a map, so any msgpack tool reads
 * the file). A writer stores the 0xce last: 0x00 there means the frame was cut.
 * Every record's map starts with type, time (CLOCK_MONOTONIC ns) and thread (tid).
 */
#ifndef JH__FMT_AUDITLOG_H
#define JH__FMT_AUDITLOG_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "fmt/func.h"

#define JH__AL_FORMAT "jitherald-auditlog"
#define JH__AL_VERSION 1
#define JH__AL_FRAME_MARK 0xce
#define JH__AL_FRAME_HDR 5          /* the mark + big-endian u32 length of the map */
/* Addresses (JH_ATTR_ADDR) are msgpack fixext 8 of type JH__MP_EXT_ADDR (fmt/msgpack.h). */

/* Record kinds: X(ENUM_SUFFIX, "type string"). */
#define JH__AL_RECORDS(X)                                                              \
    X(HEADER, "header") X(MEMORY, "memory") X(EVENT, "event") X(CODE_ADD, "code_add")   \
    X(CODE_REMOVE, "code_remove") X(CODE_MOVE, "code_move")                            \
    X(CODE_PATCHED, "code_patched") X(LIMIT, "limit") X(CLOSE, "close")

/* Keys. Common to every record: */
#define JH__AL_K_TYPE "type"
#define JH__AL_K_TIME "time"
#define JH__AL_K_THREAD "thread"
/* header */
#define JH__AL_K_FORMAT "format"
#define JH__AL_K_VERSION "version"
#define JH__AL_K_LIBRARY "library"
#define JH__AL_K_PID "pid"
#define JH__AL_K_PARENT_PID "parent_pid"
#define JH__AL_K_ENGINE "engine"
#define JH__AL_K_EXE "exe"
#define JH__AL_K_ARCH "arch"
#define JH__AL_K_PAC_MASK "pac_mask"
#define JH__AL_K_POINTER_SIZE "pointer_size"
#define JH__AL_K_BYTE_ORDER "byte_order"
#define JH__AL_K_CLOCK "clock"
#define JH__AL_K_REALTIME "realtime"
#define JH__AL_K_LIMIT "limit"      /* also in `limit` records */
/* memory */
#define JH__AL_K_ADDRESS "address"  /* also in code_patched */
#define JH__AL_K_HINT "hint"
#define JH__AL_K_DATA "data"        /* also in code_patched */
/* event */
#define JH__AL_K_EVENT "event"
#define JH__AL_K_ATTRS "attrs"
/* code_* */
#define JH__AL_K_ID "id"
#define JH__AL_K_NAME "name"
#define JH__AL_K_START "start"
#define JH__AL_K_SIZE "size"
#define JH__AL_K_FILES "files"
#define JH__AL_K_LINES "lines"      /* [offset, line, column, file] per row */
#define JH__AL_K_UNWIND "unwind"    /* one of the JH__AL_UNWIND_* strings */
#define JH__AL_K_FP_PUSH_END "fp_push_end"
#define JH__AL_K_FP_SET_END "fp_set_end"
#define JH__AL_K_CFI "cfi"
#define JH__AL_K_CODE "code"
#define JH__AL_K_OLD_START "old_start"
/* code_add, after 0.1.0, each only when given */
#define JH__AL_K_SYMBOL "symbol"            /* when it is not the name */
#define JH__AL_K_PROLOGUE_END "prologue_end"
#define JH__AL_K_EPILOGUES "epilogues"      /* frame_pointer: [start, end] per epilogue */
#define JH__AL_K_RA_SIGNED "ra_signed"      /* arm64 PAC-RET: [start, end] per signed range */
#define JH__AL_K_RA_KEY    "ra_key"         /* its key: 1 for B (absent: A) */
#define JH__AL_K_CFA_OFFSET "cfa_offset"    /* frameless */
#define JH__AL_K_CFA_STEPS "cfa_steps"      /* frameless: [offset, cfa_offset] per step */
#define JH__AL_K_SAVED_REGS "saved_regs"    /* frameless: [reg, cfa_offset (int)] per register */
#define JH__AL_K_PERSONALITY "personality"  /* addresses (JH__MP_EXT_ADDR) */
#define JH__AL_K_LSDA "lsda"
/* code_add whose bytes are a loaded object's file (V8's builtins in node's text), instead
 * of `code`: where the file is, its GNU build-id, the bytes' offset in it */
#define JH__AL_K_CODE_FILE "code_file"
#define JH__AL_K_CODE_BUILD_ID "code_build_id"
#define JH__AL_K_CODE_OFFSET "code_offset"
/* limit, close */
#define JH__AL_K_TAIL "tail"
#define JH__AL_K_BYTES "bytes"
#define JH__AL_K_DROPPED "dropped"

#define JH__AL_UNWIND_NONE "none"
#define JH__AL_UNWIND_FRAME_POINTER "frame_pointer"
#define JH__AL_UNWIND_CFI "cfi"
#define JH__AL_UNWIND_FRAMELESS "frameless"

/* Code that is, byte for byte, part of a file with a build-id: recorded by reference. */
struct jh__al_ref {
    const char *path;
    size_t path_len;                /* strlen(path), or 0: measured by the encoder */
    const uint8_t *build_id;
    uint32_t build_id_len;          /* 1..64 */
    uint64_t offset;                /* of the code's first byte in the file */
};
#define JH__AL_BUILD_ID_MAX 64

/* Encoders of the records the library builds: one msgpack map each (no frame header).
 * jh__al_*_size() is the map's exact length; jh__al_put_*() writes it at p, that many
 * bytes, and returns the byte after (the channel encodes straight into its frame).
 * code_add carries the code bytes (f->start is read as an address in this process), or
 * with ref, where they lie in a file instead. */
size_t jh__al_code_add_size(uint64_t ts, uint32_t tid, uint64_t id, const struct jh__func *f,
                            const struct jh__al_ref *ref);
uint8_t *jh__al_put_code_add(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                             const struct jh__func *f, const struct jh__al_ref *ref);
/* At least jh__al_code_add_size(), found without measuring the record: a bound on its keys
 * and numbers plus the variable parts' lengths; SIZE_MAX when f names source files (a
 * bound would need their lengths). A caller with that much room encodes the record there
 * first and learns its size from the end it returns: one pass instead of two. */
size_t jh__al_code_add_bound(const struct jh__func *f, const struct jh__al_ref *ref);
size_t jh__al_code_remove_size(uint64_t ts, uint32_t tid, uint64_t id, uint64_t start,
                               uint64_t size);
uint8_t *jh__al_put_code_remove(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                                uint64_t start, uint64_t size);
size_t jh__al_code_move_size(uint64_t ts, uint32_t tid, uint64_t id, uint64_t old_start,
                             uint64_t start, uint64_t size);
uint8_t *jh__al_put_code_move(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                              uint64_t old_start, uint64_t start, uint64_t size);
size_t jh__al_code_patched_size(uint64_t ts, uint32_t tid, uint64_t id, uint64_t addr,
                                size_t len);
uint8_t *jh__al_put_code_patched(uint8_t *p, uint64_t ts, uint32_t tid, uint64_t id,
                                 uint64_t addr, const void *bytes, size_t len);
/* The head every record starts with: a map of nkeys keys, then type (tlen bytes), time,
 * thread; the record's own keys follow. */
size_t jh__al_head_size(uint32_t nkeys, size_t tlen, uint64_t ts, uint32_t tid);
uint8_t *jh__al_put_head(uint8_t *p, uint32_t nkeys, const char *type, size_t tlen,
                         uint64_t ts, uint32_t tid);

/* The same appended to b (the file's header and close, the fuzzers): b->err is set when
 * memory runs out, the map is too large for a frame, or (a bug) the put and its size
 * disagree. */
void jh__al_code_add(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                     const struct jh__func *f, const struct jh__al_ref *ref);
void jh__al_code_remove(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                        uint64_t start, uint64_t size);
void jh__al_code_move(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                      uint64_t old_start, uint64_t start, uint64_t size);
void jh__al_code_patched(struct jh__buf *b, uint64_t ts, uint32_t tid, uint64_t id,
                         uint64_t addr, const void *bytes, size_t len);
void jh__al_head(struct jh__buf *b, uint32_t nkeys, const char *type, uint64_t ts,
                 uint32_t tid);

#endif
