/*
 * compile.c — minijit's one-pass compiler: recursive descent straight to machine code.
 *
 *     $ cat t.mini                           $ minijit t.mini
 *     fn main() { print(twice(21)) }         42
 *     fn twice(x) { return x * 2 }
 *
 * Signatures are collected first (so calls may name functions defined later); then each body
 * is parsed once and emitted as it is parsed. Calls between JIT functions go through the
 * program's table of entry points (`call [table+8i]`), filled in as each function is
 * published, so functions can be placed anywhere and in any order. While emitting, the
 * compiler keeps a line table: a row at every statement and at every call, the rows a
 * debugger needs for `break file:line` and a profiler for per-line costs, and the row a
 * backtrace's return address (call + length - 1) falls in.
 */
#include "mj_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST 256            /* expression/block nesting: bounds our C recursion */
#define MAX_SLOTS 65536

struct sig {
    const char *name;
    uint32_t len;
    int nparams;
    uint32_t line, col;
    int body;                   /* token index of the body's '{' */
};

struct local {
    const char *name;
    uint32_t len;
    uint32_t slot;
    int scope;
};

struct cc {
    const struct mj_token *t;
    int i;
    const char *filename;
    char *err;
    size_t errlen;
    jmp_buf fail;
    struct sig *sigs;
    int nsigs;
    int32_t *hash;              /* sigs by name: open addressing, -1 = empty */
    uint32_t hcap;              /* power of 2, or 0 */
    void **table;
    /* the function being compiled */
    struct mj_asm a;
    struct local *locals;
    int nlocals, caplocals, scope;
    uint32_t nslots;
    int depth;                  /* values pushed on the machine stack right now */
    int nest;
    size_t *rets;               /* jump sites to the epilogue */
    int nrets, caprets;
    struct jh_line *lines;
    uint32_t nlines, caplines;
};

static _Noreturn void fail_at(struct cc *c, const struct mj_token *at, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(c->err, c->errlen, "%s:%u:%u: error: ", c->filename, at->line, at->col);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - n, fmt, ap);
        va_end(ap);
    }
    longjmp(c->fail, 1);
}

static const struct mj_token *peek(struct cc *c) { return &c->t[c->i]; }
static const struct mj_token *peek2(struct cc *c)
{
    return c->t[c->i].kind == T_EOF ? &c->t[c->i] : &c->t[c->i + 1];
}
static const struct mj_token *next(struct cc *c)
{
    const struct mj_token *k = &c->t[c->i];
    if (k->kind != T_EOF)
        c->i++;
    return k;
}

static void describe(const struct mj_token *k, char *buf, size_t len)
{
    if (k->kind == T_IDENT || k->kind == T_NUM)
        snprintf(buf, len, "%s '%.*s'", mj__tok_name(k->kind), (int)(k->len > 40 ? 40 : k->len), k->text);
    else
        snprintf(buf, len, "%s", mj__tok_name(k->kind));
}

static const struct mj_token *expect(struct cc *c, enum mj_tok kind, const char *what)
{
    const struct mj_token *k = peek(c);
    if (k->kind != kind) {
        char found[64];
        describe(k, found, sizeof found);
        fail_at(c, k, "expected %s%s, found %s", mj__tok_name(kind), what, found);
    }
    return next(c);
}

static void *grow(struct cc *c, void *p, int *cap, size_t elem, const struct mj_token *at)
{
    int ncap = *cap ? *cap * 2 : 16;
    void *n = realloc(p, (size_t)ncap * elem);
    if (!n)
        fail_at(c, at, "out of memory");
    *cap = ncap;
    return n;
}

static bool same(const char *a, uint32_t alen, const struct mj_token *k)
{
    return alen == k->len && !memcmp(a, k->text, alen);
}

static bool is_builtin(const struct mj_token *k)
{
    return same("print", 5, k) || same("callback", 8, k);
}

/* ---- function names: a hash, so programs of a million functions compile in linear time */

static uint32_t hash_name(const char *s, size_t len)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static int sig_find(struct cc *c, const struct mj_token *name)
{
    for (uint32_t h = hash_name(name->text, name->len); c->hcap; h++) {
        int32_t i = c->hash[h & (c->hcap - 1)];
        if (i < 0)
            break;
        if (same(c->sigs[i].name, c->sigs[i].len, name))
            return i;
    }
    return -1;
}

static void hash_put(int32_t *hash, uint32_t cap, uint32_t h, int32_t i)
{
    while (hash[h & (cap - 1)] >= 0)
        h++;
    hash[h & (cap - 1)] = i;
}

/* Index sigs[nsigs - 1]. */
static void sig_index(struct cc *c, const struct mj_token *at)
{
    if ((uint64_t)c->nsigs * 2 > c->hcap) {
        uint32_t cap = c->hcap ? c->hcap * 2 : 64;
        int32_t *n = cap < (1u << 30) ? malloc(cap * sizeof *n) : NULL;
        if (!n)
            fail_at(c, at, "out of memory");
        memset(n, 0xff, cap * sizeof *n);
        for (int i = 0; i < c->nsigs - 1; i++)
            hash_put(n, cap, hash_name(c->sigs[i].name, c->sigs[i].len), i);
        free(c->hash);
        c->hash = n;
        c->hcap = cap;
    }
    const struct sig *s = &c->sigs[c->nsigs - 1];
    hash_put(c->hash, c->hcap, hash_name(s->name, s->len), c->nsigs - 1);
}

int mj__unit_find(const struct mj__unit *u, const char *name)
{
    size_t len = strlen(name);
    for (uint32_t h = hash_name(name, len); u->hcap; h++) {
        int32_t i = u->hash[h & (u->hcap - 1)];
        if (i < 0)
            break;
        if (i < u->nfns && !strcmp(u->fns[i].name, name))
            return i;
    }
    return -1;
}

/* ---- line table ---------------------------------------------------------------------- */

static void mark(struct cc *c, const struct mj_token *at)
{
    uint32_t off = (uint32_t)mj__asm_pos(&c->a);
    if (c->nlines && c->lines[c->nlines - 1].offset == off) {
        c->lines[c->nlines - 1].line = at->line;
        c->lines[c->nlines - 1].column = at->col;
        return;
    }
    if (c->nlines && c->lines[c->nlines - 1].line == at->line &&
        c->lines[c->nlines - 1].column == at->col)
        return;
    if (c->nlines == c->caplines) {
        int cap = (int)c->caplines;
        c->lines = grow(c, c->lines, &cap, sizeof *c->lines, at);
        c->caplines = (uint32_t)cap;
    }
    c->lines[c->nlines++] = (struct jh_line){ .offset = off, .line = at->line, .column = at->col };
}

/* ---- scopes -------------------------------------------------------------------------- */

static struct local *find_local(struct cc *c, const struct mj_token *name)
{
    for (int i = c->nlocals - 1; i >= 0; i--)
        if (same(c->locals[i].name, c->locals[i].len, name))
            return &c->locals[i];
    return NULL;
}

static uint32_t declare(struct cc *c, const struct mj_token *name)
{
    for (int i = c->nlocals - 1; i >= 0 && c->locals[i].scope == c->scope; i--)
        if (same(c->locals[i].name, c->locals[i].len, name))
            fail_at(c, name, "'%.*s' is already declared in this block", (int)name->len, name->text);
    if (is_builtin(name))
        fail_at(c, name, "'%.*s' is a builtin function", (int)name->len, name->text);
    if (c->nslots >= MAX_SLOTS)
        fail_at(c, name, "too many variables in one function (limit %d)", MAX_SLOTS);
    if (c->nlocals == c->caplocals)
        c->locals = grow(c, c->locals, &c->caplocals, sizeof *c->locals, name);
    c->locals[c->nlocals++] = (struct local){ name->text, name->len, c->nslots, c->scope };
    return c->nslots++;
}

static void enter(struct cc *c, const struct mj_token *at)
{
    if (++c->nest > MAX_NEST)
        fail_at(c, at, "nested too deeply (limit %d)", MAX_NEST);
}

/* ---- expressions: value in rax ------------------------------------------------------- */

static void expr(struct cc *c);

static void push(struct cc *c) { mj__x_push_rax(&c->a); c->depth++; }
static void pop(struct cc *c, int reg) { mj__x_pop(&c->a, reg); c->depth--; }

static void call(struct cc *c, const struct mj_token *name)
{
    expect(c, T_LPAREN, " after a function name");
    int nargs = 0;
    if (peek(c)->kind != T_RPAREN) {
        for (;;) {
            if (nargs == MJ_MAX_PARAMS)
                fail_at(c, peek(c), "too many arguments (at most %d)", MJ_MAX_PARAMS);
            expr(c);
            push(c);
            nargs++;
            if (peek(c)->kind != T_COMMA)
                break;
            next(c);
        }
    }
    expect(c, T_RPAREN, " after the arguments");

    const void *builtin = NULL;
    int want = -1, index = -1;
    if (same("print", 5, name))
        builtin = (const void *)mj__builtin_print, want = 1;
    else if (same("callback", 8, name))
        builtin = (const void *)mj__builtin_callback, want = 1;
    else {
        index = sig_find(c, name);
        if (index < 0)
            fail_at(c, name, "unknown function '%.*s'", (int)name->len, name->text);
        want = c->sigs[index].nparams;
    }
    if (nargs != want)
        fail_at(c, name, "'%.*s' takes %d argument%s, %d given", (int)name->len, name->text,
                want, want == 1 ? "" : "s", nargs);
    for (int i = nargs - 1; i >= 0; i--)
        pop(c, mj__argreg[i]);
    /* The frame is 16-byte aligned below the locals; each pending temporary is 8 bytes. */
    bool pad = c->depth & 1;
    if (pad)
        mj__x_sub_rsp8(&c->a);
    mark(c, name);
    if (builtin)
        mj__x_call_abs(&c->a, builtin);
    else
        mj__x_call_indirect(&c->a, &c->table[index]);
    if (pad)
        mj__x_add_rsp8(&c->a);
}

static void primary(struct cc *c)
{
    const struct mj_token *k = peek(c);
    switch (k->kind) {
    case T_NUM:
        next(c);
        mj__x_mov_rax_imm(&c->a, k->num);
        return;
    case T_LPAREN:
        next(c);
        expr(c);
        expect(c, T_RPAREN, "");
        return;
    case T_IDENT: {
        next(c);
        if (peek(c)->kind == T_LPAREN) {
            call(c, k);
            return;
        }
        struct local *l = find_local(c, k);
        if (!l)
            fail_at(c, k, "'%.*s' is not declared (use 'var %.*s = ...')", (int)k->len, k->text,
                    (int)k->len, k->text);
        mj__x_load_slot(&c->a, l->slot);
        return;
    }
    default: {
        char found[64];
        describe(k, found, sizeof found);
        fail_at(c, k, "expected an expression, found %s", found);
    }
    }
}

static void unary(struct cc *c)
{
    const struct mj_token *k = peek(c);
    if (k->kind == T_MINUS || k->kind == T_NOT) {
        next(c);
        enter(c, k);
        unary(c);
        c->nest--;
        if (k->kind == T_MINUS)
            mj__x_neg(&c->a);
        else
            mj__x_not(&c->a);
        return;
    }
    primary(c);
}

static int level(enum mj_tok k)
{
    switch (k) {
    case T_STAR: case T_SLASH: case T_PERCENT: return 3;
    case T_PLUS: case T_MINUS: return 2;
    case T_EQ: case T_NE: case T_LT: case T_LE: case T_GT: case T_GE: return 1;
    default: return 0;
    }
}

static void binary(struct cc *c, int min)
{
    if (min > 3) {
        unary(c);
        return;
    }
    binary(c, min + 1);
    while (level(peek(c)->kind) == min) {
        enum mj_tok op = next(c)->kind;
        push(c);
        binary(c, min + 1);
        pop(c, MJ_RCX);
        mj__x_binop(&c->a, op);
    }
}

/* && and || short-circuit and yield 0 or 1. */
static void logic_and(struct cc *c)
{
    binary(c, 1);
    while (peek(c)->kind == T_ANDAND) {
        next(c);
        size_t skip = mj__x_jz_fwd(&c->a);
        binary(c, 1);
        mj__x_patch_to_here(&c->a, skip);
        mj__x_bool(&c->a);
    }
}

static void expr(struct cc *c)
{
    enter(c, peek(c));
    logic_and(c);
    while (peek(c)->kind == T_OROR) {
        next(c);
        mj__x_bool(&c->a);
        size_t skip = mj__x_jnz_fwd(&c->a);
        logic_and(c);
        mj__x_patch_to_here(&c->a, skip);
        mj__x_bool(&c->a);
    }
    c->nest--;
}

/* ---- statements ---------------------------------------------------------------------- */

static void block(struct cc *c);

static void statement(struct cc *c)
{
    const struct mj_token *k = peek(c);
    mark(c, k);
    switch (k->kind) {
    case T_VAR: {
        next(c);
        const struct mj_token *name = expect(c, T_IDENT, " after 'var'");
        if (peek(c)->kind == T_ASSIGN) {
            next(c);
            expr(c);
        } else {
            mj__x_mov_rax_imm(&c->a, 0);
        }
        mj__x_store_slot(&c->a, declare(c, name));   /* after the initialiser: var x = x */
        break;
    }
    case T_IF: {
        next(c);
        expr(c);
        size_t skip = mj__x_jz_fwd(&c->a);
        block(c);
        if (peek(c)->kind == T_ELSE) {
            next(c);
            size_t over = mj__x_jmp_fwd(&c->a);
            mj__x_patch_to_here(&c->a, skip);
            if (peek(c)->kind == T_IF) {
                enter(c, peek(c));
                statement(c);
                c->nest--;
            } else {
                block(c);
            }
            mj__x_patch_to_here(&c->a, over);
        } else {
            mj__x_patch_to_here(&c->a, skip);
        }
        break;
    }
    case T_WHILE: {
        next(c);
        size_t top = mj__asm_pos(&c->a);
        expr(c);
        size_t out = mj__x_jz_fwd(&c->a);
        block(c);
        mark(c, k);
        mj__x_jmp_back(&c->a, top);
        mj__x_patch_to_here(&c->a, out);
        break;
    }
    case T_RETURN:
        next(c);
        if (peek(c)->kind == T_RBRACE || peek(c)->kind == T_SEMI)
            mj__x_mov_rax_imm(&c->a, 0);
        else
            expr(c);
        if (c->nrets == c->caprets)
            c->rets = grow(c, c->rets, &c->caprets, sizeof *c->rets, k);
        c->rets[c->nrets++] = mj__x_jmp_fwd(&c->a);
        break;
    case T_LBRACE:
        block(c);
        break;
    case T_IDENT:
        if (peek2(c)->kind == T_ASSIGN) {
            struct local *l = find_local(c, k);
            if (!l)
                fail_at(c, k, "'%.*s' is not declared (use 'var %.*s = ...')", (int)k->len,
                        k->text, (int)k->len, k->text);
            uint32_t slot = l->slot;
            next(c);
            next(c);
            expr(c);
            mj__x_store_slot(&c->a, slot);
            break;
        }
        expr(c);
        break;
    default:
        expr(c);
        break;
    }
    if (peek(c)->kind == T_SEMI)
        next(c);
}

static void block(struct cc *c)
{
    const struct mj_token *open = expect(c, T_LBRACE, "");
    enter(c, open);
    c->scope++;
    while (peek(c)->kind != T_RBRACE) {
        if (peek(c)->kind == T_EOF)
            fail_at(c, open, "'{' is never closed");
        if (peek(c)->kind == T_FN)
            fail_at(c, peek(c), "functions cannot be nested (missing '}' above?)");
        statement(c);
    }
    next(c);
    while (c->nlocals && c->locals[c->nlocals - 1].scope == c->scope)
        c->nlocals--;
    c->scope--;
    c->nest--;
}

/* ---- functions and programs ---------------------------------------------------------- */

static void function(struct cc *c, int index, struct mj__unit_fn *out)
{
    const struct sig *s = &c->sigs[index];
    c->i = s->body;
    c->a = (struct mj_asm){ 0 };
    c->nlocals = 0;
    c->scope = 0;
    c->nslots = 0;
    c->depth = 0;
    c->nrets = 0;
    c->nlines = 0;
    c->lines = NULL;
    c->caplines = 0;

    /* Parameters: back up to the '(' and declare each name. */
    int p = s->body;
    while (c->t[p].kind != T_LPAREN)
        p--;
    const struct mj_token *fn_tok = &c->t[p - 2];
    mark(c, fn_tok);
    size_t frame_at = mj__x_prologue(&c->a);
    uint32_t stores_at = (uint32_t)mj__asm_pos(&c->a);
    for (int i = 0, k = p + 1; i < s->nparams; i++, k += 2)
        mj__x_store_slot_reg(&c->a, declare(c, &c->t[k]), mj__argreg[i]);
    uint32_t body_at = (uint32_t)mj__asm_pos(&c->a);

    block(c);
    /* The frame is set up once the stack pointer is moved: the parameters' stores belong to
     * the first statement's row, and that is where `break NAME` stops (prologue_end). Had
     * the row begun after the stores, a body starting with a loop would put it on the loop
     * head, and the breakpoint would stop on every iteration. */
    if (c->nlines > 1 && c->lines[1].offset == body_at)
        c->lines[1].offset = stores_at;
    const struct mj_token *close = &c->t[c->i - 1];
    mark(c, close);
    mj__x_mov_rax_imm(&c->a, 0);                  /* falling off the end returns 0 */
    for (int i = 0; i < c->nrets; i++)
        mj__x_patch_to_here(&c->a, c->rets[i]);
    mj__x_epilogue(&c->a);
    mj__x_patch_frame(&c->a, frame_at, (c->nslots * 8 + 15) & ~15u);
    if (c->a.oom)
        fail_at(c, fn_tok, "out of memory");

    out->name = strndup(s->name, s->len);
    if (!out->name)
        fail_at(c, fn_tok, "out of memory");
    out->nparams = s->nparams;
    out->line = s->line;
    out->column = s->col;
    out->end_line = close->line;
    out->code = c->a.p;
    out->len = c->a.len;
    c->a = (struct mj_asm){ 0 };
    out->lines = c->lines;
    out->nlines = c->nlines;
    out->prologue_end = stores_at;
    c->lines = NULL;
    out->frame_slots = c->nslots;
}

/* fn NAME ( [IDENT {, IDENT}] ) { ... } at top level, nothing else. */
static void signatures(struct cc *c)
{
    int cap = 0;
    while (peek(c)->kind != T_EOF) {
        const struct mj_token *fn = peek(c);
        if (fn->kind != T_FN) {
            char found[64];
            describe(fn, found, sizeof found);
            fail_at(c, fn, "expected 'fn' at top level, found %s", found);
        }
        next(c);
        const struct mj_token *name = expect(c, T_IDENT, " after 'fn'");
        if (is_builtin(name))
            fail_at(c, name, "'%.*s' is a builtin function", (int)name->len, name->text);
        int dup = sig_find(c, name);
        if (dup >= 0)
            fail_at(c, name, "function '%.*s' is already defined on line %u", (int)name->len,
                    name->text, c->sigs[dup].line);
        expect(c, T_LPAREN, " after the function name");
        int n = 0;
        if (peek(c)->kind != T_RPAREN) {
            for (;;) {
                const struct mj_token *param = expect(c, T_IDENT, " (a parameter name)");
                if (++n > MJ_MAX_PARAMS)
                    fail_at(c, param, "too many parameters (at most %d)", MJ_MAX_PARAMS);
                for (int k = 1; k < n; k++)
                    if (same(c->t[c->i - 1 - 2 * k].text, c->t[c->i - 1 - 2 * k].len, param))
                        fail_at(c, param, "parameter '%.*s' appears twice", (int)param->len,
                                param->text);
                if (peek(c)->kind != T_COMMA)
                    break;
                next(c);
            }
        }
        expect(c, T_RPAREN, " after the parameters");
        if (peek(c)->kind != T_LBRACE)
            expect(c, T_LBRACE, " (the function body)");
        if (c->nsigs == cap)
            c->sigs = grow(c, c->sigs, &cap, sizeof *c->sigs, fn);
        c->sigs[c->nsigs++] = (struct sig){ name->text, name->len, n, fn->line, fn->col, c->i };
        sig_index(c, fn);
        /* Skip the body; it is compiled once every name is known. */
        int open = 0;
        do {
            enum mj_tok k = next(c)->kind;
            if (k == T_EOF)
                fail_at(c, &c->t[c->sigs[c->nsigs - 1].body], "'{' is never closed");
            open += k == T_LBRACE ? 1 : k == T_RBRACE ? -1 : 0;
        } while (open > 0);
    }
}

void mj__unit_free(struct mj__unit *u)
{
    if (!u)
        return;
    for (int i = 0; i < u->nfns; i++) {
        free(u->fns[i].name);
        free(u->fns[i].code);
        free(u->fns[i].lines);
    }
    free(u->fns);
    free(u->table);
    free(u->hash);
    *u = (struct mj__unit){ 0 };
}

int mj__compile_unit(const char *src, const char *filename, struct mj__unit *u, char *err,
                     size_t errlen)
{
    struct mj_token *toks = NULL;
    *u = (struct mj__unit){ 0 };
    if (mj__lex(src, filename, &toks, err, errlen) < 0)
        return -1;
    /* On the heap: longjmp must not find it in registers (setjmp's clobber rules). */
    struct cc *c = calloc(1, sizeof *c);
    if (!c) {
        free(toks);
        snprintf(err, errlen, "%s: error: out of memory", filename);
        return -1;
    }
    *c = (struct cc){ .t = toks, .filename = filename, .err = err, .errlen = errlen };
    int rc = -1;
    if (setjmp(c->fail)) {
        mj__asm_free(&c->a);
        free(c->lines);
        mj__unit_free(u);
        goto out;
    }
    signatures(c);
    if (!c->nsigs)
        fail_at(c, peek(c), "no function in the program");
    u->table = calloc((size_t)c->nsigs, sizeof *u->table);
    u->fns = calloc((size_t)c->nsigs, sizeof *u->fns);
    if (!u->table || !u->fns)
        fail_at(c, peek(c), "out of memory");
    c->table = u->table;
    for (int i = 0; i < c->nsigs; i++) {
        function(c, i, &u->fns[i]);
        u->nfns = i + 1;
    }
    u->hash = c->hash;
    u->hcap = c->hcap;
    c->hash = NULL;
    rc = 0;
out:
    free(toks);
    free(c->sigs);
    free(c->hash);
    free(c->locals);
    free(c->rets);
    free(c);
    return rc;
}
