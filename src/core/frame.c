/*
 * frame.c — jh_frame_at (include/jitherald.h): the frame the process's own unwinder has for
 * a pc, read with the library's one .eh_frame reader and translator (fmt/eh_frame.h). The
 * FDE comes from _Unwind_Find_FDE (libgcc's, or whichever unwinder the process resolves it
 * to); only its record and its CIE's are read, each checked readable first.
 */
#include <errno.h>
#include <string.h>

#include "base/os.h"
#include "fmt/arch.h"
#include "fmt/eh_frame.h"
#include "jitherald.h"

/* The bytes of the record at p (its length word and what it says), if readable. */
static size_t record_len(const uint8_t *p)
{
    uint32_t n;
    if (!jh__mem_readable(p, 4))
        return 0;
    memcpy(&n, p, 4);
    if (n == 0 || n == 0xffffffffu || n > (1u << 20) || !jh__mem_readable(p, 4 + (size_t)n))
        return 0;
    return 4 + (size_t)n;
}

int jh_frame_at(const void *pc, struct jh_frame *out)
{
    if (!out || out->sz < sizeof *out || (out->nsaved_regs && !out->saved_regs))
        return -EINVAL;
    const uint8_t *fde = jh__find_fde(pc);
    if (!fde)
        return -ENOENT;
    size_t flen = record_len(fde);
    if (flen < 8)
        return -EINVAL;
    uint32_t id;
    memcpy(&id, fde + 4, 4);
    if (id == 0 || (uintptr_t)fde + 4 < id)
        return -EINVAL;
    const uint8_t *cie = fde + 4 - id;
    size_t clen = record_len(cie);
    if (!clen || cie + clen > fde)
        return -EINVAL;
    /* one span from the CIE to the FDE's end, read in place */
    size_t span = (size_t)(fde - cie) + flen;
    struct jh__eh_cie c;
    struct jh__eh_fde f;
    char why[160];
    if (jh__eh_cie(cie, span, (uintptr_t)cie, 0, &c, why, sizeof why) ||
        jh__eh_fde(cie, span, (uintptr_t)cie, (size_t)(fde - cie), &c, &f, why, sizeof why) ||
        (uintptr_t)pc < f.pc || (uintptr_t)pc - f.pc >= f.range)
        return -EINVAL;
    uint32_t room = out->nsaved_regs;
    out->flags = 0;
    out->cfa_offset = 0;
    out->nsaved_regs = 0;
    out->fde_start = (const void *)(uintptr_t)f.pc;
    out->fde_size = (size_t)f.range;
    out->personality = NULL;
    if (c.pers_enc != JH__EH_PE_omit) {
        uintptr_t p = (uintptr_t)c.personality;
        if (c.pers_enc & JH__EH_PE_indirect) {         /* the routine is in a slot */
            const void *slot = (const void *)p;
            p = 0;
            if (jh__mem_readable(slot, sizeof p))
                memcpy(&p, slot, sizeof p);
        }
        out->personality = (const void *)p;
    }
    struct jh__buf cfi = { 0 };
    struct jh__eh_rules r;
    int rc = 0;
    if (jh__eh_translate(NULL, &c, &f, &cfi, why, sizeof why) == 0 &&
        jh__eh_rules_at(NULL, cfi.p, cfi.len, (uintptr_t)pc - f.pc, &r) == 0 && r.plain &&
        r.cfa_off >= 0 && r.cfa_off <= UINT32_MAX) {
        out->flags = JH_FRAME_PLAIN;
        out->cfa_offset = (uint32_t)r.cfa_off;
        uint32_t n = 0;
        for (unsigned reg = 0; reg < 64; reg++) {
            if (!(r.saved >> reg & 1) || reg == JH__ARCH_HOST->ra)
                continue;
            if (n < room)
                out->saved_regs[n] = (struct jh_saved_reg){ reg, (int32_t)r.at[reg] };
            n++;
        }
        out->nsaved_regs = n;
        rc = n > room ? -ENOSPC : 0;
    }
    jh__buf_free(&cfi);
    return rc;
}
