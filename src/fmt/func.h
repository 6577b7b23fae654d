/*
 * func.h — a function as every encoder sees it: the neutral description the library copies
 * from `struct jh_code` and the CLI rebuilds from files it reads (an audit log, a jitdump).
 * Encoders (ELF images, DWARF, .eh_frame, jitdump records, perf-map lines, audit-log
 * records) take this and nothing of the library's bookkeeping, so the CLI calls the very
 * same code. Addresses are 64-bit whatever the host: a file may come from another machine.
 */
#ifndef JH__FMT_FUNC_H
#define JH__FMT_FUNC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jitherald.h"

/* A function's FDE instructions, encoded once (jh__func.insns). */
struct jh__insns {
    uint32_t len;
    uint8_t b[];
};

struct jh__func {
    uint64_t start, size;       /* size > 0 */
    const char *name;
    const char *const *files;   /* nfiles names, referred to by lines[].file */
    const struct jh_line *lines;/* sorted by offset, offsets < size */
    uint32_t nfiles, nlines;
    /* (the 32-bit fields in pairs: no padding, 184 bytes on LP64 instead of 200, in every
     * entry the core keeps: node's 2,200 builtins are kept by two contexts under `-c all`) */
    enum jh_unwind_kind unwind;
    uint32_t fp_push_end, fp_set_end;   /* JH_UNWIND_FRAME_POINTER */
    uint32_t nepilogues;                /* JH_UNWIND_FRAME_POINTER */
    const struct jh_epilogue *epilogues;
    const uint8_t *cfi;                 /* JH_UNWIND_CFI: FDE instructions */
    size_t cfi_len;
    const char *symbol;                 /* for symbol tables; NULL: name (jh__func_symbol) */
    uint32_t prologue_end;              /* 0: not given */
    uint32_t cfa_offset;                /* JH_UNWIND_FRAMELESS */
    uint32_t ncfa_steps, nsaved_regs;
    const struct jh_cfa_step *cfa_steps;
    const struct jh_saved_reg *saved_regs;
    uint64_t personality, lsda;         /* addresses in the process; 0: none */
    uint32_t nra_signed;                /* arm64 PAC-RET: where the ra is signed */
    uint32_t ra_key;                    /* JH_PAC_KEY_A or _B */
    const struct jh_range *ra_signed;
    /* jh__bid_func_hash of this description once known (the core's entries: the first
     * channel that needs it computes it, jh__entry_bid; a move forgets it); 0: not known,
     * computed at each use. Whoever changes a field of a description clears it. */
    uint64_t bid_hash;
    /* strlen(name) and strlen(symbol) when known (the core's entries, which measure both
     * once as they copy them); 0: not known, measured at each use (jh__func_name_len). Five
     * encoders measured each builtin's name and symbol again: ~170 instructions a builtin
     * at node's start (issue 30). Whoever changes the name or symbol clears them. */
    uint32_t name_len, symbol_len;
    /* The FDE instructions the unwind fields encode to for the host (jh__cfi_fde_insns's
     * bytes, arm64's signing state spliced in), once an encoder has made them: the core's
     * entries, jh__entry_insns (channels/channel.h), which jh__entry_free frees. Every
     * .eh_frame encoder copies them then, where each LuaJIT trace's instructions were
     * encoded once by each of gdb's images, the unwind channel and jitdump (issue 30).
     * They do not depend on start (a move keeps them); NULL: encoded at each use. Whoever
     * changes an unwind field frees and clears them. */
    const struct jh__insns *insns;
};

/* The file name of line row l (a "?" for a bad index, which validation never lets in). */
static inline const char *jh__func_file(const struct jh__func *f, const struct jh_line *l)
{
    return l->file < f->nfiles && f->files[l->file] ? f->files[l->file] : "?";
}

/* strlen(f->name), from name_len when known. */
static inline size_t jh__func_name_len(const struct jh__func *f)
{
    return f->name_len ? f->name_len : strlen(f->name);
}

/* strlen(f->symbol) for a function that has one, from symbol_len when known. */
static inline size_t jh__func_symbol_len(const struct jh__func *f)
{
    return f->symbol_len ? f->symbol_len : strlen(f->symbol);
}

/* Whether f has a symbol that differs from its name (what symbol tables and DWARF spell
 * apart): compared by length first. */
static inline int jh__func_symbol_differs(const struct jh__func *f)
{
    if (!f->symbol)
        return 0;
    if (!f->name_len || !f->symbol_len)
        return strcmp(f->symbol, f->name) != 0;
    if (f->name_len != f->symbol_len)
        return 1;
    if (f->name_len >= 8) {     /* "Builtin:X" and "Builtin_X": told apart without a call */
        uint64_t a, b;
        memcpy(&a, f->name, sizeof a);
        memcpy(&b, f->symbol, sizeof b);
        if (a != b)
            return 1;
    }
    return memcmp(f->symbol, f->name, f->name_len) != 0;
}

/* The name for symbol tables and debuggers' `break`. */
static inline const char *jh__func_symbol(const struct jh__func *f)
{
    return f->symbol ? f->symbol : f->name;
}

/* strlen(jh__func_symbol(f)). */
static inline size_t jh__func_symbol_or_name_len(const struct jh__func *f)
{
    return f->symbol ? jh__func_symbol_len(f) : jh__func_name_len(f);
}

#endif
