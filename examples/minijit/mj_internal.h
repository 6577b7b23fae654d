/*
 * mj_internal.h — what minijit's files share: the code arena, the lexer, the x86-64
 * emitter. Nothing here is part of minijit.h's API.
 */
#ifndef MJ_INTERNAL_H
#define MJ_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "minijit.h"

/* ---- arena.c: executable memory ------------------------------------------------------ */

/* Called with the arena lock held for code i of a batch, once every byte of the batch is
 * in place and read+exec. A non-zero return stops the batch: codes i.. are taken back. */
typedef int mj_publish_fn(void *arg, size_t i, void *code);

/* Copy n pieces of code into the arena (each 16-byte aligned, packed), make them executable
 * and call fn for each in order. out[i] receives each address (NULL for what was taken
 * back). Returns 0, -ENOMEM, -errno from mprotect, or fn's result; codes before the one fn
 * refused stay allocated (release them with mj__arena_release). The lock is held across the
 * copy and fn, so no other thread writes to a page while a channel (elfmap) copies it. */
int mj__arena_publish(size_t n, const uint8_t *const *bytes, const size_t *lens, void **out,
                      mj_publish_fn *fn, void *arg);
/* Give code back for reuse; undo(arg, code) runs first under the lock (may be NULL): it is
 * where the caller says goodbye to tools before the bytes can be reused. */
void mj__arena_release(void *code, size_t len, void (*undo)(void *arg, void *code), void *arg);

/* ---- lexer.c ------------------------------------------------------------------------- */

enum mj_tok {
    T_EOF = 0, T_NUM, T_IDENT,
    T_FN, T_VAR, T_IF, T_ELSE, T_WHILE, T_RETURN,
    T_LPAREN, T_RPAREN, T_LBRACE, T_RBRACE, T_COMMA, T_SEMI,
    T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT, T_NOT,
    T_ASSIGN, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_ANDAND, T_OROR
};

struct mj_token {
    enum mj_tok kind;
    uint32_t line, col;         /* 1-based; col counts bytes */
    const char *text;           /* into the source */
    uint32_t len;
    int64_t num;                /* T_NUM */
};

/* Tokenise all of src (ends with T_EOF). Returns the count, or -1 with
 * "file:line:col: error: message" in err. *out is malloc'd. */
int mj__lex(const char *src, const char *file, struct mj_token **out, char *err, size_t errlen);
const char *mj__tok_name(enum mj_tok k);

/* ---- codegen_x64.c: a growable byte buffer with x86-64 encodings ----------------------- */

struct mj_asm {
    uint8_t *p;
    size_t len, cap;
    bool oom;                   /* sticky: an allocation failed, the bytes are garbage */
};

void mj__asm_free(struct mj_asm *a);
size_t mj__asm_pos(const struct mj_asm *a);

/* Argument registers of the SysV ABI, in order. */
enum { MJ_RDI = 7, MJ_RSI = 6, MJ_RDX = 2, MJ_RCX = 1, MJ_R8 = 8, MJ_R9 = 9, MJ_RAX = 0 };
extern const uint8_t mj__argreg[MJ_MAX_PARAMS];

/* Function frame. prologue returns the offset of the frame size's imm32 for patching. */
size_t mj__x_prologue(struct mj_asm *a);
void mj__x_patch_frame(struct mj_asm *a, size_t at, uint32_t bytes);
void mj__x_epilogue(struct mj_asm *a);            /* leave; ret (see codegen_x64.c) */
int mj__x_no_frame_pointer(void);
/* The raw CFI of a function of len bytes compiled without a frame record. */
#define MJ__X_FRAME_CFI 18
size_t mj__x_frame_cfi(uint8_t out[MJ__X_FRAME_CFI], size_t len);
int mj__x_no_unwind_info(void);

void mj__x_mov_rax_imm(struct mj_asm *a, int64_t v);
void mj__x_load_slot(struct mj_asm *a, uint32_t slot);        /* rax = [rbp - 8(slot+1)] */
void mj__x_store_slot(struct mj_asm *a, uint32_t slot);       /* [rbp - 8(slot+1)] = rax */
void mj__x_store_slot_reg(struct mj_asm *a, uint32_t slot, int reg);
void mj__x_push_rax(struct mj_asm *a);
void mj__x_pop(struct mj_asm *a, int reg);
void mj__x_sub_rsp8(struct mj_asm *a);
void mj__x_add_rsp8(struct mj_asm *a);

/* rax = rax OP rcx, after `pop rcx` gave the left operand: the helpers take care of
 * operand order. op is the token. */
void mj__x_binop(struct mj_asm *a, enum mj_tok op);
void mj__x_neg(struct mj_asm *a);
void mj__x_not(struct mj_asm *a);                 /* rax = (rax == 0) */
void mj__x_bool(struct mj_asm *a);                /* rax = (rax != 0) */

/* Jumps: the *_fwd forms return a patch site for mj__x_patch_to_here. */
size_t mj__x_jz_fwd(struct mj_asm *a);            /* test rax,rax; jz */
size_t mj__x_jnz_fwd(struct mj_asm *a);           /* test rax,rax; jnz */
size_t mj__x_jmp_fwd(struct mj_asm *a);
void mj__x_jmp_back(struct mj_asm *a, size_t target);
void mj__x_patch_to_here(struct mj_asm *a, size_t site);
void mj__x_patch_to(struct mj_asm *a, size_t site, size_t target);

/* call [slot] (a per-program table entry) / call a C function at an absolute address. */
void mj__x_call_indirect(struct mj_asm *a, void *const *slot);
void mj__x_call_abs(struct mj_asm *a, const void *fn);

/* ---- compile.c: source to unpublished machine code ----------------------------------- */

struct mj__unit_fn {
    char *name;
    int nparams;
    uint32_t line, column, end_line;
    uint8_t *code;              /* position-dependent: calls use the unit's table */
    size_t len;
    struct jh_line *lines;      /* file 0 */
    uint32_t nlines;
    uint32_t frame_slots;
    uint32_t prologue_end;      /* after `sub rsp`: where the body's first row starts */
};

struct mj__unit {
    struct mj__unit_fn *fns;    /* source order */
    int nfns;
    void **table;               /* entry points by index: fill in before running */
    int32_t *hash;              /* function index by name (see mj__unit_find) */
    uint32_t hcap;
};

/* Index of the function called name, or -1. */
int mj__unit_find(const struct mj__unit *u, const char *name);

/* 0, or -1 with "file:line:col: error: message" in err (u is then empty). */
int mj__compile_unit(const char *src, const char *filename, struct mj__unit *u, char *err,
                     size_t errlen);
void mj__unit_free(struct mj__unit *u);

/* ---- builtins (minijit.c) ------------------------------------------------------------ */
int64_t mj__builtin_print(int64_t x);
int64_t mj__builtin_callback(int64_t x);

#endif /* MJ_INTERNAL_H */
