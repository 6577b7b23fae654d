/* describe.c — see describe.h. */
#include "core/describe.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "fmt/cfi.h"
#include "fmt/symbol.h"

/* An old caller's struct ends somewhere in ours: what it has is read, the rest is zero.
 * Only name, start and size are required. */
int jh__code_read(struct jh_code *out, const struct jh_code *c)
{
    if (!c || c->sz < offsetof(struct jh_code, size) + sizeof c->size ||
        !jh__tail_is_zero(c, sizeof *out, c->sz))
        return -EINVAL;
    size_t n = c->sz < sizeof *out ? c->sz : sizeof *out;
    memcpy(out, c, n);
    memset((char *)out + n, 0, sizeof *out - n);
    out->sz = sizeof *out;
    return 0;
}

/* Limits that keep one description's encodings small (a CFA program of a few hundred KiB
 * at most); real code has a handful of each. */
#define MAX_STEPS (1u << 16)
#define MAX_REGS 256u
#define MAX_REG 255u

static int validate_frameless(const struct jh_code *c)
{
    if ((c->ncfa_steps && !c->cfa_steps) || c->ncfa_steps > MAX_STEPS ||
        (c->nsaved_regs && !c->saved_regs) || c->nsaved_regs > MAX_REGS)
        return -EINVAL;
    for (uint32_t i = 0; i < c->ncfa_steps; i++)
        if (c->cfa_steps[i].offset >= c->size ||
            (i && c->cfa_steps[i].offset <= c->cfa_steps[i - 1].offset))
            return -EINVAL;
    for (uint32_t i = 0; i < c->nsaved_regs; i++) {
        const struct jh_saved_reg *r = &c->saved_regs[i];
        if (r->reg > MAX_REG || r->cfa_offset >= 0 || r->cfa_offset % 8)
            return -EINVAL;
    }
    return 0;
}

static int validate_frame_pointer(const struct jh_code *c)
{
    if (c->fp_push_end == 0 || c->fp_push_end > c->fp_set_end || c->fp_set_end > c->size)
        return -EINVAL;
    if ((c->nepilogues && !c->epilogues) || c->nepilogues > MAX_STEPS)
        return -EINVAL;
    uint64_t from = c->fp_set_end;
    for (uint32_t i = 0; i < c->nepilogues; i++) {
        const struct jh_epilogue *e = &c->epilogues[i];
        if (e->start < from || e->start >= e->end || e->end > c->size)
            return -EINVAL;
        from = e->end;
    }
    return 0;
}

static int validate_unwind(const struct jh_code *c)
{
    switch (c->unwind) {
    case JH_UNWIND_NONE:
        return c->personality ? -EINVAL : 0;    /* no FDE to carry it */
    case JH_UNWIND_FRAME_POINTER:
        return validate_frame_pointer(c);
    case JH_UNWIND_CFI:
        /* Checked here, once: a description a channel's encoder would refuse later would
         * switch that channel off for all the code after it. */
        if (!c->cfi || c->cfi_len == 0 || c->cfi_len > (1u << 20))
            return -EINVAL;
        return jh__cfi_validate(c->cfi, c->cfi_len, c->size);
    case JH_UNWIND_FRAMELESS:
        return validate_frameless(c);
    }
    return -EINVAL;
}

int jh__code_validate(const struct jh_code *c)
{
    if (!c->name || !c->name[0] || !c->start || c->size == 0 ||
        (uintptr_t)c->start + (c->size - 1) < (uintptr_t)c->start)
        return -EINVAL;
    if (c->symbol && !c->symbol[0])
        return -EINVAL;
    if (c->nfiles && !c->files)
        return -EINVAL;
    for (uint32_t i = 0; i < c->nfiles; i++)
        if (!c->files[i])
            return -EINVAL;
    if (c->nlines && !c->lines)
        return -EINVAL;
    for (uint32_t i = 0; i < c->nlines; i++) {
        const struct jh_line *l = &c->lines[i];
        if (l->offset >= c->size || l->file >= c->nfiles)
            return -EINVAL;
        if (i && l->offset < c->lines[i - 1].offset)
            return -EINVAL;
    }
    if (c->prologue_end >= c->size || (c->lsda && !c->personality))
        return -EINVAL;
    return validate_unwind(c);
}

/* ---- interning ------------------------------------------------------------------------ */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
    return h;
}

const char *jh__intern(struct jh__strings *s, const char *str)
{
    if (s->n * 2 >= s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        char **t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slot[i])
                continue;
            size_t j = hash_str(s->slot[i]) & (cap - 1);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = s->slot[i];
        }
        free(s->slot);
        s->slot = t;
        s->cap = cap;
    }
    size_t j = hash_str(str) & (s->cap - 1);
    while (s->slot[j]) {
        if (!strcmp(s->slot[j], str))
            return s->slot[j];
        j = (j + 1) & (s->cap - 1);
    }
    if (!(s->slot[j] = strdup(str)))
        return NULL;
    s->n++;
    return s->slot[j];
}

void jh__strings_free(struct jh__strings *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slot[i]);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* ---- entries -------------------------------------------------------------------------- */
void jh__entry_free(struct jh__entry *e)
{
    if (!e)
        return;
    free((char *)e->fn.name);
    free((char *)e->fn.symbol);
    free((void *)e->fn.files);
    free((void *)e->fn.lines);
    free((void *)e->fn.cfi);
    free((void *)e->fn.cfa_steps);
    free((void *)e->fn.saved_regs);
    free((void *)e->fn.epilogues);
    free(e);
}

static void *dup_array(const void *p, size_t n, size_t size)
{
    void *q = malloc(n * size);
    if (q)
        memcpy(q, p, n * size);
    return q;
}

/* The symbol for symbol tables: the JIT's, or one derived from a name that is not usable
 * as one as it is (NULL then: the name serves). */
static int copy_symbol(struct jh__func *f, const struct jh_code *c)
{
    if (c->symbol)
        return (f->symbol = strdup(c->symbol)) ? 0 : -ENOMEM;
    if (jh__symbol_is_safe(c->name))
        return 0;
    size_t n = strlen(c->name) + 2;
    char *s = malloc(n);
    if (!s)
        return -ENOMEM;
    jh__symbol_from_name(s, n, c->name);
    f->symbol = s;
    return 0;
}

static int copy_unwind(struct jh__func *f, const struct jh_code *c)
{
    f->unwind = c->unwind;
    f->personality = (uintptr_t)c->personality;
    f->lsda = (uintptr_t)c->lsda;
    switch (c->unwind) {
    case JH_UNWIND_NONE:
        return 0;
    case JH_UNWIND_FRAME_POINTER:
        f->fp_push_end = c->fp_push_end;
        f->fp_set_end = c->fp_set_end;
        if (c->nepilogues &&
            !(f->epilogues = dup_array(c->epilogues, c->nepilogues, sizeof *c->epilogues)))
            return -ENOMEM;
        f->nepilogues = c->nepilogues;
        return 0;
    case JH_UNWIND_CFI:
        if (!(f->cfi = dup_array(c->cfi, c->cfi_len, 1)))
            return -ENOMEM;
        f->cfi_len = c->cfi_len;
        return 0;
    case JH_UNWIND_FRAMELESS:
        f->cfa_offset = c->cfa_offset;
        if (c->ncfa_steps &&
            !(f->cfa_steps = dup_array(c->cfa_steps, c->ncfa_steps, sizeof *c->cfa_steps)))
            return -ENOMEM;
        f->ncfa_steps = c->ncfa_steps;
        if (c->nsaved_regs &&
            !(f->saved_regs = dup_array(c->saved_regs, c->nsaved_regs, sizeof *c->saved_regs)))
            return -ENOMEM;
        f->nsaved_regs = c->nsaved_regs;
        return 0;
    }
    return -EINVAL;
}

struct jh__entry *jh__entry_new(struct jh__strings *s, const struct jh_code *c)
{
    struct jh__entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    struct jh__func *f = &e->fn;
    f->start = (uintptr_t)c->start;
    f->size = c->size;
    e->node.start = (uintptr_t)c->start;
    e->node.size = c->size;
    f->prologue_end = c->prologue_end;
    if (!(f->name = strdup(c->name)) || copy_symbol(f, c) || copy_unwind(f, c))
        goto fail;
    if (c->nfiles) {
        const char **files = malloc(c->nfiles * sizeof *files);
        if (!(f->files = files))
            goto fail;
        for (uint32_t i = 0; i < c->nfiles; i++)
            if (!(files[i] = jh__intern(s, c->files[i])))
                goto fail;
        f->nfiles = c->nfiles;
    }
    if (c->nlines) {
        if (!(f->lines = dup_array(c->lines, c->nlines, sizeof *c->lines)))
            goto fail;
        f->nlines = c->nlines;
    }
    return e;
fail:
    jh__entry_free(e);
    return NULL;
}
