/* describe.c — see describe.h. */
#include "core/describe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/os.h"
#include "core/config.h"
#include "fmt/arch.h"
#include "fmt/cfa.h"
#include "fmt/cfi.h"
#include "fmt/eh_frame.h"
#include "fmt/symbol.h"

/* A refusal: why, into the caller's buffer (see describe.h), and -EINVAL. */
static int bad(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(JH__PRINTF, 3, 4)));
static int bad(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* An old caller's struct ends somewhere in ours: what it has is read, the rest is zero.
 * Only name, start and size are required. */
int jh__code_read(struct jh_code *out, const struct jh_code *c, char *why, size_t len)
{
    size_t need = offsetof(struct jh_code, size) + sizeof c->size;
    if (!c)
        return bad(why, len, "the struct jh_code pointer is NULL");
    if (c->sz < need)
        return bad(why, len, ".sz is %zu, less than the %zu bytes up to .size: set "
                   ".sz = sizeof(struct jh_code)", c->sz, need);
    if (!jh__tail_is_zero(c, sizeof *out, c->sz))
        return bad(why, len, ".sz is %zu, more than this library's %zu, and the bytes past "
                   "%zu are not zero: fields of a newer header this library does not know",
                   c->sz, sizeof *out, sizeof *out);
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

static int validate_frameless(const struct jh_code *c, char *why, size_t len)
{
    if (c->ncfa_steps && !c->cfa_steps)
        return bad(why, len, "JH_UNWIND_FRAMELESS: .ncfa_steps is %u but .cfa_steps is NULL",
                   c->ncfa_steps);
    if (c->ncfa_steps > MAX_STEPS)
        return bad(why, len, "JH_UNWIND_FRAMELESS: .ncfa_steps %u is more than %u",
                   c->ncfa_steps, MAX_STEPS);
    if (c->nsaved_regs && !c->saved_regs)
        return bad(why, len, "JH_UNWIND_FRAMELESS: .nsaved_regs is %u but .saved_regs is NULL",
                   c->nsaved_regs);
    if (c->nsaved_regs > MAX_REGS)
        return bad(why, len, "JH_UNWIND_FRAMELESS: .nsaved_regs %u is more than %u",
                   c->nsaved_regs, MAX_REGS);
    for (uint32_t i = 0; i < c->ncfa_steps; i++) {
        uint32_t off = c->cfa_steps[i].offset;
        if (off >= c->size)
            return bad(why, len, "cfa_steps[%u].offset %#x is not inside the code (size %#zx)",
                       i, off, c->size);
        if (i && off <= c->cfa_steps[i - 1].offset)
            return bad(why, len, "cfa_steps[%u].offset %#x is not after cfa_steps[%u].offset "
                       "%#x: steps must be sorted, one per offset", i, off, i - 1,
                       c->cfa_steps[i - 1].offset);
    }
    for (uint32_t i = 0; i < c->nsaved_regs; i++) {
        const struct jh_saved_reg *r = &c->saved_regs[i];
        if (r->reg > MAX_REG)
            return bad(why, len, "saved_regs[%u].reg %u is not a DWARF register number "
                       "(0-%u)", i, (unsigned)r->reg, MAX_REG);
        if (r->cfa_offset >= 0 || r->cfa_offset % 8)
            return bad(why, len, "saved_regs[%u].cfa_offset %d: a register is saved below "
                       "the CFA, at a negative multiple of 8", i, (int)r->cfa_offset);
    }
    return 0;
}

static int validate_frame_pointer(const struct jh_code *c, char *why, size_t len)
{
    if (c->fp_push_end == 0)
        return bad(why, len, "JH_UNWIND_FRAME_POINTER: .fp_push_end is 0: it is the offset "
                   "just after `push rbp` (1 when the code starts with it), and .fp_set_end "
                   "the offset just after `mov rbp,rsp` (4)");
    if (c->fp_push_end > c->fp_set_end)
        return bad(why, len, "JH_UNWIND_FRAME_POINTER: .fp_push_end %u is after .fp_set_end "
                   "%u: `push rbp` comes before `mov rbp,rsp`", c->fp_push_end, c->fp_set_end);
    if (c->fp_set_end > c->size)
        return bad(why, len, "JH_UNWIND_FRAME_POINTER: .fp_set_end %u is past the end of the "
                   "code (size %#zx)", c->fp_set_end, c->size);
    if (c->nepilogues && !c->epilogues)
        return bad(why, len, ".nepilogues is %u but .epilogues is NULL", c->nepilogues);
    if (c->nepilogues > MAX_STEPS)
        return bad(why, len, ".nepilogues %u is more than %u", c->nepilogues, MAX_STEPS);
    uint64_t from = c->fp_set_end;
    for (uint32_t i = 0; i < c->nepilogues; i++) {
        const struct jh_epilogue *e = &c->epilogues[i];
        if (e->start < from)
            return bad(why, len, "epilogues[%u].start %#x is before %#llx (.fp_set_end or the "
                       "end of the epilogue before it): sorted, not overlapping", i, e->start,
                       (unsigned long long)from);
        if (e->start >= e->end || e->end > c->size)
            return bad(why, len, "epilogues[%u] [%#x, %#x) is empty or not inside the code "
                       "(size %#zx)", i, e->start, e->end, c->size);
        from = e->end;
    }
    return 0;
}

/* Where and why jh__cfi_validate refused c->cfi (it says only that it did). */
static int explain_cfi(const struct jh_code *c, char *why, size_t len)
{
    const uint8_t *p = c->cfi, *end = c->cfi + c->cfi_len;
    struct jh__cfa_insn in;
    uint64_t loc = 0;
    for (;;) {
        size_t at = (size_t)(p - c->cfi);
        int r = jh__cfa_next(&p, end, &in);
        if (r == 0)
            break;
        if (r == -ENOTSUP)
            return bad(why, len, "cfi byte %zu: opcode %#x is not one this library reads "
                       "(DW_CFA_set_loc needs a CIE's pointer encoding: use advance_loc)",
                       at, in.op);
        if (r < 0)
            return bad(why, len, "cfi byte %zu: the instruction is cut short or an operand "
                       "is out of range", at);
        if (in.advance > c->size - loc)
            return bad(why, len, "cfi byte %zu: advances to offset %#llx, past the end of the "
                       "code (size %#zx)", at, (unsigned long long)(loc + in.advance), c->size);
        loc += in.advance;
    }
    return bad(why, len, "cfi: refused (%zu bytes)", c->cfi_len);
}

static int validate_unwind(const struct jh_code *c, char *why, size_t len)
{
    if ((c->eh_frame || c->eh_frame_len || c->eh_frame_addr) &&
        c->unwind != JH_UNWIND_EH_FRAME)
        return bad(why, len, ".eh_frame is set but .unwind is %d, not JH_UNWIND_EH_FRAME",
                   (int)c->unwind);
    switch (c->unwind) {
    case JH_UNWIND_NONE:
        if (c->personality)         /* no FDE to carry it */
            return bad(why, len, ".personality is set but .unwind is JH_UNWIND_NONE: no "
                       "unwind information to carry it");
        return 0;
    case JH_UNWIND_FRAME_POINTER:
        return validate_frame_pointer(c, why, len);
    case JH_UNWIND_CFI:
        /* Checked here, once: a description a channel's encoder would refuse later would
         * switch that channel off for all the code after it. */
        if (!c->cfi || c->cfi_len == 0)
            return bad(why, len, "JH_UNWIND_CFI: .cfi is %s", c->cfi ? "empty (.cfi_len 0)"
                       : "NULL");
        if (c->cfi_len > (1u << 20))
            return bad(why, len, "JH_UNWIND_CFI: .cfi_len %zu is more than 1 MiB", c->cfi_len);
        return jh__cfi_validate(c->cfi, c->cfi_len, c->size) ? explain_cfi(c, why, len) : 0;
    case JH_UNWIND_FRAMELESS:
        return validate_frameless(c, why, len);
    case JH_UNWIND_EH_FRAME:            /* jh__code_lower made it JH_UNWIND_CFI before */
        break;
    }
    return bad(why, len, ".unwind %d is not a jh_unwind_kind", (int)c->unwind);
}

/* arm64 return-address signing: the ranges and the key. */
static int validate_pac(const struct jh_code *c, char *why, size_t len)
{
    if (!c->nra_signed && !c->ra_signed && !c->ra_key)
        return 0;
    if (!JH__ARCH_HOST->pac)
        return bad(why, len, ".ra_signed/.ra_key: return addresses are signed on arm64 "
                   "(PAC-RET), not on %s", JH__ARCH_HOST->name);
    if (c->ra_key > JH_PAC_KEY_B)
        return bad(why, len, ".ra_key %u is neither JH_PAC_KEY_A nor JH_PAC_KEY_B", c->ra_key);
    if (c->nra_signed && !c->ra_signed)
        return bad(why, len, ".nra_signed is %u but .ra_signed is NULL", c->nra_signed);
    if (c->nra_signed > MAX_STEPS)
        return bad(why, len, ".nra_signed %u is more than %u", c->nra_signed, MAX_STEPS);
    if (c->nra_signed && c->unwind == JH_UNWIND_NONE)
        return bad(why, len, ".ra_signed is set but .unwind is JH_UNWIND_NONE: no unwind "
                   "information to carry it");
    if (c->nra_signed && c->unwind == JH_UNWIND_CFI)
        return bad(why, len, ".ra_signed with JH_UNWIND_CFI: say where in the CFI "
                   "(DW_CFA_AARCH64_negate_ra_state); only .ra_key is read");
    for (uint32_t i = 0; i < c->nra_signed; i++) {
        const struct jh_range *r = &c->ra_signed[i];
        if (r->start >= r->end || r->end > c->size)
            return bad(why, len, "ra_signed[%u] [%#x, %#x) is empty or not inside the code "
                       "(size %#zx)", i, r->start, r->end, c->size);
        if (i && r->start < c->ra_signed[i - 1].end)
            return bad(why, len, "ra_signed[%u] starts at %#x, before ra_signed[%u] ends "
                       "(%#x): sorted, not overlapping", i, r->start, i - 1,
                       c->ra_signed[i - 1].end);
    }
    return 0;
}

int jh__code_validate(const struct jh_code *c, char *why, size_t len)
{
    if (!c->name || !c->name[0])
        return bad(why, len, ".name is %s", c->name ? "empty" : "NULL");
    if (!c->start)
        return bad(why, len, ".start is NULL");
    if (c->size == 0)
        return bad(why, len, ".size is 0");
    if ((uintptr_t)c->start + (c->size - 1) < (uintptr_t)c->start)
        return bad(why, len, ".start %p + .size %#zx wraps around the address space",
                   c->start, c->size);
    if (c->symbol && !c->symbol[0])
        return bad(why, len, ".symbol is empty (NULL derives one from .name)");
    if (c->nfiles && !c->files)
        return bad(why, len, ".nfiles is %u but .files is NULL", c->nfiles);
    for (uint32_t i = 0; i < c->nfiles; i++)
        if (!c->files[i])
            return bad(why, len, "files[%u] is NULL", i);
    if (c->nlines && !c->lines)
        return bad(why, len, ".nlines is %u but .lines is NULL", c->nlines);
    for (uint32_t i = 0; i < c->nlines; i++) {
        const struct jh_line *l = &c->lines[i];
        if (l->offset >= c->size)
            return bad(why, len, "lines[%u].offset %#x is not inside the code (size %#zx)",
                       i, l->offset, c->size);
        if (l->file >= c->nfiles)
            return bad(why, len, "lines[%u].file %u is not an index into .files (.nfiles %u)",
                       i, l->file, c->nfiles);
        if (i && l->offset < c->lines[i - 1].offset)
            return bad(why, len, "lines[%u].offset %#x comes before lines[%u].offset %#x: "
                       "rows are sorted by offset", i, l->offset, i - 1,
                       c->lines[i - 1].offset);
    }
    if (c->prologue_end >= c->size)
        return bad(why, len, ".prologue_end %#x is not inside the code (size %#zx)",
                   c->prologue_end, c->size);
    if (c->lsda && !c->personality)
        return bad(why, len, ".lsda is set without a .personality to read it");
    int err = validate_unwind(c, why, len);
    return err ? err : validate_pac(c, why, len);
}

/* ---- JH_UNWIND_EH_FRAME ----------------------------------------------------------------- */
#define MAX_EH_FRAME (16u << 20)

/* An indirect pointer's target, read from its slot: from the bytes themselves when the
 * slot lies in them (they are, by definition, what lies at [at, at + len): an adapter may
 * place a slot there), else from the process's memory if it is readable. */
static int deref(const struct jh_code *c, uint64_t at, uint64_t slot, uint64_t *v)
{
    uintptr_t x;
    if (slot >= at && slot - at <= c->eh_frame_len && c->eh_frame_len - (slot - at) >= sizeof x)
        memcpy(&x, c->eh_frame + (slot - at), sizeof x);
    else if (slot && jh__mem_readable((const void *)(uintptr_t)slot, sizeof x))
        memcpy(&x, (const void *)(uintptr_t)slot, sizeof x);
    else
        return -1;
    *v = x;
    return 0;
}

int jh__code_lower(struct jh_code *c, struct jh__buf *cfi, char *why, size_t len)
{
    if (c->unwind != JH_UNWIND_EH_FRAME)
        return 0;
    if (!c->eh_frame || !c->eh_frame_len)
        return bad(why, len, "JH_UNWIND_EH_FRAME: .eh_frame is %s", c->eh_frame ?
                   "empty (.eh_frame_len 0)" : "NULL");
    if (c->eh_frame_len > MAX_EH_FRAME)
        return bad(why, len, "JH_UNWIND_EH_FRAME: .eh_frame_len %zu is more than 16 MiB",
                   c->eh_frame_len);
    uint64_t at = c->eh_frame_addr ? c->eh_frame_addr : (uintptr_t)c->eh_frame;
    struct jh__eh_cie cie;
    struct jh__eh_fde fde;
    char msg[200];
    if (jh__eh_find(c->eh_frame, c->eh_frame_len, at, (uintptr_t)c->start, &cie, &fde, msg,
                    sizeof msg) ||
        (fde.range > c->size && snprintf(msg, sizeof msg, "the FDE at .eh_frame+%#zx covers "
                                         "%#llx bytes, more than the code's %#zx", fde.off,
                                         (unsigned long long)fde.range, c->size)) ||
        jh__eh_translate(JH__ARCH_HOST, &cie, &fde, cfi, msg, sizeof msg))
        return bad(why, len, "JH_UNWIND_EH_FRAME: %s", msg);
    if (!c->personality && cie.pers_enc != JH__EH_PE_omit) {
        uint64_t p = cie.personality;
        if ((cie.pers_enc & JH__EH_PE_indirect) && deref(c, at, cie.personality, &p))
            return bad(why, len, "JH_UNWIND_EH_FRAME: the CIE's personality slot at %#llx is "
                       "not readable", (unsigned long long)cie.personality);
        /* a pointer the translation got wrong (bytes described at the wrong address)
         * would be called by the unwinder in the middle of an exception */
        if (!jh__mem_readable((const void *)(uintptr_t)p, 1))
            return bad(why, len, "JH_UNWIND_EH_FRAME: the CIE's personality routine at %#llx "
                       "is not readable memory", (unsigned long long)p);
        c->personality = (const void *)(uintptr_t)p;
    }
    if (!c->lsda && fde.has_lsda && fde.lsda) {
        uint64_t l = fde.lsda;
        if ((cie.lsda_enc & JH__EH_PE_indirect) && deref(c, at, fde.lsda, &l))
            return bad(why, len, "JH_UNWIND_EH_FRAME: the FDE's LSDA slot at %#llx is not "
                       "readable", (unsigned long long)fde.lsda);
        c->lsda = (const void *)(uintptr_t)l;
    }
    if (cfi->err)
        return cfi->err;
    if (!cfi->len) {                    /* an FDE without instructions: the CIE's rules */
        jh__buf_u8(cfi, JH__CFA_nop);
        if (cfi->err)
            return cfi->err;
    }
    if (cie.b_key)
        c->ra_key = JH_PAC_KEY_B;
    c->unwind = JH_UNWIND_CFI;
    c->cfi = cfi->p;
    c->cfi_len = cfi->len;
    c->eh_frame = NULL;
    c->eh_frame_len = 0;
    c->eh_frame_addr = 0;
    return 0;
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

/* ---- what jh_code_add takes ---------------------------------------------------------- */
/* A description refused: -EINVAL, and which field and why to the JIT's callback (or
 * stderr with JITHERALD_DEBUG=1), at info: the return value already says it failed. name:
 * the function's, when the struct could be read that far. */
static int refused(const struct jh__diag *diag, const char *name, const char *why)
{
    jh__diag(diag, JH_LOG_INFO, "jh_code_add%s%.80s%s: -EINVAL: %s",
             name ? "(\"" : "", name ? name : "", name ? "\")" : "", why);
    return -EINVAL;
}

const struct jh_code *jh__code_prepare(const struct jh__diag *diag, const struct jh_code *code,
                                      struct jh_code *tmp, struct jh__buf *cfi, char *why,
                                      size_t whylen, int *err)
{
    const struct jh_code *c = code;
    if (code->sz != sizeof *code) {
        if (jh__code_read(tmp, code, why, whylen) < 0) {    /* the name, if that far */
            *err = refused(diag, code->sz > sizeof *code ? code->name : NULL, why);
            return NULL;
        }
        c = tmp;
    }
    if (c->unwind == JH_UNWIND_EH_FRAME) {
        if (c != tmp)
            *tmp = *code, c = tmp;
        int lerr = jh__code_lower(tmp, cfi, why, whylen);
        if (lerr) {
            *err = lerr == -ENOMEM ? lerr
                                   : refused(diag, c->name && c->name[0] ? c->name : NULL, why);
            return NULL;
        }
    }
    if ((*err = jh__code_validate(c, why, whylen)))
        *err = refused(diag, c->name && c->name[0] ? c->name : NULL, why);
    return *err ? NULL : c;
}

/* ---- entries -------------------------------------------------------------------------- */
/*
 * One block holds an entry and everything it copies from the JIT's description (name,
 * symbol, files, lines, unwind rules): one malloc and one free a function, not up to ten
 * (callgrind, a LuaJIT trace with every channel: ~1,900 instructions of malloc and free
 * went to an entry's pieces). Nothing of an entry changes after it is made but its start.
 */
/* Entries made together (jh_code_add_many: node's 2,182 builtins at start) share one block:
 * one malloc per JH__ENTRY_GROUP, not one each (~200 instructions an entry, issue 30). A
 * block lives while any of its entries does: at most JH__ENTRY_GROUP - 1 entries' room kept
 * for one that stays. Entries are freed under their context's lock or after it (jh_code_
 * remove): the count is atomic. */
struct jh__entry_block {
    atomic_size_t live;
};
#define BLOCK_ALIGN _Alignof(max_align_t)     /* malloc's: what an entry's block has */

void jh__entry_free(struct jh__entry *e)
{
    if (e)
        free((void *)e->fn.insns);      /* (jh__entry_insns) */
    if (e && e->block) {
        struct jh__entry_block *b = e->block;
        if (atomic_fetch_sub_explicit(&b->live, 1, memory_order_acq_rel) == 1)
            free(b);
        return;
    }
    free(e);
}

/* Room for count items of size bytes aligned to align, from *end: its offset in *at;
 * false when the block's size would overflow. */
static bool room(size_t *end, size_t *at, size_t count, size_t size, size_t align)
{
    size_t a = (*end + align - 1) & ~(align - 1);
    if (a < *end || (size && count > (SIZE_MAX - a) / size))
        return false;
    *at = a;
    *end = a + count * size;
    return true;
}

/* Where each copied piece goes in the block (offsets; 0: the piece is not copied). */
struct entry_plan {
    size_t files, lines, ra_signed, epilogues, cfa_steps, saved_regs, cfi, name, symbol;
    size_t name_len, symbol_len;        /* with the NUL */
    bool derive_symbol;                 /* symbol made from the name (jh__symbol_from_name) */
};

static bool plan_entry(const struct jh_code *c, struct entry_plan *p, size_t *size)
{
    size_t end = sizeof(struct jh__entry);
    memset(p, 0, sizeof *p);
    p->name_len = strlen(c->name) + 1;
    if (c->symbol)
        p->symbol_len = strlen(c->symbol) + 1;
    else if (!jh__symbol_is_safe(c->name)) {
        p->symbol_len = p->name_len + 1;
        p->derive_symbol = true;
    }
    bool ok = room(&end, &p->files, c->nfiles, sizeof *c->files, _Alignof(const char *)) &&
              room(&end, &p->lines, c->nlines, sizeof *c->lines, _Alignof(struct jh_line)) &&
              room(&end, &p->ra_signed, c->nra_signed, sizeof *c->ra_signed,
                   _Alignof(struct jh_range));
    if (ok && c->unwind == JH_UNWIND_FRAME_POINTER)
        ok = room(&end, &p->epilogues, c->nepilogues, sizeof *c->epilogues,
                  _Alignof(struct jh_epilogue));
    if (ok && c->unwind == JH_UNWIND_FRAMELESS)
        ok = room(&end, &p->cfa_steps, c->ncfa_steps, sizeof *c->cfa_steps,
                  _Alignof(struct jh_cfa_step)) &&
             room(&end, &p->saved_regs, c->nsaved_regs, sizeof *c->saved_regs,
                  _Alignof(struct jh_saved_reg));
    if (ok && c->unwind == JH_UNWIND_CFI)
        ok = room(&end, &p->cfi, c->cfi_len, 1, 1);
    ok = ok && room(&end, &p->name, p->name_len, 1, 1) &&
         room(&end, &p->symbol, p->symbol_len, 1, 1);
    *size = end;
    return ok;
}

/* n items of size bytes from src into the block at off (NULL when there are none). */
static const void *put_array(char *block, size_t off, const void *src, size_t n, size_t size)
{
    if (!n)
        return NULL;
    memcpy(block + off, src, n * size);
    return block + off;
}

static int copy_unwind(struct jh__func *f, const struct jh_code *c, char *block,
                       const struct entry_plan *p)
{
    f->unwind = c->unwind;
    f->personality = (uintptr_t)c->personality;
    f->lsda = (uintptr_t)c->lsda;
    f->ra_key = c->ra_key;
    f->ra_signed = put_array(block, p->ra_signed, c->ra_signed, c->nra_signed,
                             sizeof *c->ra_signed);
    f->nra_signed = c->nra_signed;
    switch (c->unwind) {
    case JH_UNWIND_NONE:
        return 0;
    case JH_UNWIND_FRAME_POINTER:
        f->fp_push_end = c->fp_push_end;
        f->fp_set_end = c->fp_set_end;
        f->epilogues = put_array(block, p->epilogues, c->epilogues, c->nepilogues,
                                 sizeof *c->epilogues);
        f->nepilogues = c->nepilogues;
        return 0;
    case JH_UNWIND_CFI:
        /* (an empty program still gets a pointer: the encoders tell it from none) */
        f->cfi = (const uint8_t *)block + p->cfi;
        if (c->cfi_len)
            memcpy(block + p->cfi, c->cfi, c->cfi_len);
        f->cfi_len = c->cfi_len;
        return 0;
    case JH_UNWIND_FRAMELESS:
        f->cfa_offset = c->cfa_offset;
        f->cfa_steps = put_array(block, p->cfa_steps, c->cfa_steps, c->ncfa_steps,
                                 sizeof *c->cfa_steps);
        f->ncfa_steps = c->ncfa_steps;
        f->saved_regs = put_array(block, p->saved_regs, c->saved_regs, c->nsaved_regs,
                                  sizeof *c->saved_regs);
        f->nsaved_regs = c->nsaved_regs;
        return 0;
    case JH_UNWIND_EH_FRAME:            /* lowered before; never stored as it is */
        break;
    }
    return -EINVAL;
}

/* The entry for c in block (p: its plan), or NULL (ENOMEM: a file name not interned). */
static struct jh__entry *fill_entry(struct jh__strings *s, const struct jh_code *c,
                                    const struct entry_plan *pp, char *block)
{
    struct jh__entry *e = memset(block, 0, sizeof *e);
    struct jh__func *f = &e->fn;
    f->start = (uintptr_t)c->start;
    f->size = c->size;
    e->node.start = (uintptr_t)c->start;
    e->node.size = c->size;
    f->prologue_end = c->prologue_end;
    f->name = memcpy(block + pp->name, c->name, pp->name_len);
    if (pp->name_len - 1 <= UINT32_MAX)
        f->name_len = (uint32_t)(pp->name_len - 1);
    if (pp->derive_symbol) {
        size_t n = jh__symbol_from_name(block + pp->symbol, pp->symbol_len, c->name);
        f->symbol = block + pp->symbol;
        if (n < pp->symbol_len && n <= UINT32_MAX)      /* (always: room for the longest) */
            f->symbol_len = (uint32_t)n;
    } else if (c->symbol) {
        f->symbol = memcpy(block + pp->symbol, c->symbol, pp->symbol_len);
        if (pp->symbol_len - 1 <= UINT32_MAX)
            f->symbol_len = (uint32_t)(pp->symbol_len - 1);
    }
    if (copy_unwind(f, c, block, pp))
        return NULL;
    if (c->nfiles) {
        const char **files = (const char **)(void *)(block + pp->files);
        for (uint32_t i = 0; i < c->nfiles; i++)
            if (!(files[i] = jh__intern(s, c->files[i])))
                return NULL;
        f->files = files;
        f->nfiles = c->nfiles;
    }
    f->lines = put_array(block, pp->lines, c->lines, c->nlines, sizeof *c->lines);
    f->nlines = c->nlines;
    return e;
}

struct jh__entry *jh__entry_new(struct jh__strings *s, const struct jh_code *c)
{
    struct entry_plan p;
    size_t size;
    if (!plan_entry(c, &p, &size))
        return NULL;
    char *block = malloc(size);
    if (!block)
        return NULL;
    struct jh__entry *e = fill_entry(s, c, &p, block);
    if (!e)
        free(block);
    return e;
}

bool jh__entries_new(struct jh__strings *s, const struct jh_code *const *c, size_t n,
                     struct jh__entry **out)
{
    struct entry_plan p[JH__ENTRY_GROUP];
    size_t at[JH__ENTRY_GROUP], end = (sizeof(struct jh__entry_block) + BLOCK_ALIGN - 1) &
                                      ~(size_t)(BLOCK_ALIGN - 1);
    if (!n || n > JH__ENTRY_GROUP)
        return false;
    for (size_t i = 0; i < n; i++) {
        size_t size;
        if (!plan_entry(c[i], &p[i], &size) || size > SIZE_MAX / 2 - end)
            return false;
        at[i] = end;
        end = (end + size + BLOCK_ALIGN - 1) & ~(size_t)(BLOCK_ALIGN - 1);
    }
    char *mem = malloc(end);
    if (!mem)
        return false;
    struct jh__entry_block *b = (struct jh__entry_block *)(void *)mem;
    for (size_t i = 0; i < n; i++) {
        if (!(out[i] = fill_entry(s, c[i], &p[i], mem + at[i]))) {
            free(mem);
            return false;
        }
        out[i]->block = b;
    }
    atomic_init(&b->live, n);
    return true;
}
