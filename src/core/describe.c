/* describe.c — see describe.h. */
#include "core/describe.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "fmt/cfi.h"

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

int jh__code_validate(const struct jh_code *c)
{
    if (!c->name || !c->name[0] || !c->start || c->size == 0 ||
        (uintptr_t)c->start + (c->size - 1) < (uintptr_t)c->start)
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
    switch (c->unwind) {
    case JH_UNWIND_NONE:
        return 0;
    case JH_UNWIND_FRAME_POINTER:
        return c->fp_push_end == 0 || c->fp_push_end > c->fp_set_end ||
               c->fp_set_end > c->size ? -EINVAL : 0;
    case JH_UNWIND_CFI:
        /* Checked here, once: a description a channel's encoder would refuse later would
         * switch that channel off for all the code after it. */
        if (!c->cfi || c->cfi_len == 0 || c->cfi_len > (1u << 20))
            return -EINVAL;
        return jh__cfi_validate(c->cfi, c->cfi_len, c->size);
    }
    return -EINVAL;
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
    free((void *)e->fn.files);
    free((void *)e->fn.lines);
    free((void *)e->fn.cfi);
    free(e);
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
    f->unwind = c->unwind;
    f->fp_push_end = c->fp_push_end;
    f->fp_set_end = c->fp_set_end;
    if (!(f->name = strdup(c->name)))
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
        struct jh_line *lines = malloc(c->nlines * sizeof *lines);
        if (!(f->lines = lines))
            goto fail;
        memcpy(lines, c->lines, c->nlines * sizeof *lines);
        f->nlines = c->nlines;
    }
    if (c->unwind == JH_UNWIND_CFI) {
        uint8_t *cfi = malloc(c->cfi_len);
        if (!(f->cfi = cfi))
            goto fail;
        memcpy(cfi, c->cfi, c->cfi_len);
        f->cfi_len = c->cfi_len;
    }
    return e;
fail:
    jh__entry_free(e);
    return NULL;
}
