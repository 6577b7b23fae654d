/*
 * elf_image.c — the ELF64 image builder shared by the gdb and elfmap channels. See
 * elf_image.h for the layout and the reasons behind it.
 *
 * Sizes first, bytes second: DWARF, symbols and .eh_frame sizes are known before anything
 * is written, so the output buffer is reserved once and never moves while the image is
 * written. That is what lets a NOBITS image give .eh_frame the address its bytes really
 * have (an SHF_ALLOC section at a made-up address would collide with other objfiles'
 * sections in GDB's sorted section table).
 */
#include "fmt/elf_image.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/build_id.h"
#include "fmt/cfi.h"
#include "fmt/dwarf.h"
#include "fmt/func.h"

#define SECTIONS(X) X(S_NULL, "") X(S_TEXT, ".text") X(S_EH, ".eh_frame") X(S_DATA, ".data") \
    X(S_INFO, ".debug_info") X(S_ABBREV, ".debug_abbrev") X(S_LINE, ".debug_line")          \
    X(S_STR, ".debug_str") X(S_RANGES, ".debug_ranges") X(S_SYMTAB, ".symtab")               \
    X(S_STRTAB, ".strtab") X(S_NOTE, ".note.gnu.build-id") X(S_SHSTRTAB, ".shstrtab")
#define X_ID(id, name) id,
#define X_SIZE(id, name) sizeof name,
enum { SECTIONS(X_ID) S_MAX };
static const uint8_t sec_name_size[S_MAX] = { SECTIONS(X_SIZE) };   /* with the NUL */

/* An image of this many functions or fewer (most: one per add) keeps its per-function
 * bookkeeping on the stack. */
#define FNS_SMALL 8

void jh__elf_scratch_free(struct jh__elf_scratch *sc)
{
    if (sc) {
        jh__dwarf_free(&sc->dw);
        jh__buf_free(&sc->eh);
    }
}

struct sec {
    bool on;
    uint32_t type;
    uint64_t flags, addr, align, entsize;
    size_t off, size;           /* off from the image start */
    const void *bytes;          /* NULL: zeros / NOBITS / written specially */
    uint32_t link, info;
    uint32_t index, name;
};

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Zeros up to offset at of b (an alignment gap: a few bytes, in room reserved before). */
static inline void pad_to(struct jh__buf *b, size_t at)
{
    if (at <= b->len)
        return;
    if (b->err || at > b->cap) {
        jh__buf_zeros(b, at - b->len);
        return;
    }
    memset(b->p + b->len, 0, at - b->len);
    b->len = at;
}

static const char *sym_name(const struct jh__elf_spec *s, const struct jh__func *f)
{
    return s->flags & JH__ELF_SYMBOLS ? jh__func_symbol(f) : f->name;
}

static int check_spec(const struct jh__elf_spec *s, uint64_t *lo, size_t *size)
{
    if (!s || (s->nfns && !s->fns) || s->page_size & (s->page_size - 1))
        return -EINVAL;
    if (s->e_type && s->e_type != ET_DYN && s->e_type != ET_EXEC)
        return -EINVAL;
    /* Compared by last bytes: code may end at the top of the address space. */
    uint64_t prev_last = 0;
    for (size_t i = 0; i < s->nfns; i++) {
        const struct jh__func *e = s->fns[i];
        if (!e || !e->name || !e->size || e->start + (e->size - 1) < e->start ||
            (i && e->start <= prev_last))
            return -EINVAL;
        prev_last = e->start + (e->size - 1);
    }
    *lo = s->text_addr;
    *size = s->text_size;
    if (s->text == JH__ELF_TEXT_NOBITS) {
        if (!*size) {
            if (!s->nfns)
                return -EINVAL;
            *lo = s->fns[0]->start;
            *size = prev_last - *lo + 1;
        }
    } else if (s->text == JH__ELF_TEXT_COPY) {
        size_t page = s->page_size ? s->page_size : 4096;
        if (!*size || !s->text_bytes || *lo % page || s->rw_addr % page)
            return -EINVAL;
    } else {
        return -EINVAL;
    }
    uint64_t last = *lo + (*size - 1);
    if (last < *lo)
        return -EINVAL;
    for (size_t i = 0; i < s->nfns; i++)
        if (s->fns[i]->start < *lo || s->fns[i]->start + (s->fns[i]->size - 1) > last)
            return -EINVAL;
    return 0;
}

/* A .text section: one per maximal run of adjacent functions in NOBITS auto mode. */
struct run {
    uint64_t lo, hi;
};

/* Does function b continue a's .text section? Adjacent, or a gap the caller lets us cover. */
static bool joins(const struct jh__elf_spec *s, const struct jh__func *a, const struct jh__func *b)
{
    uint64_t end = a->start + a->size;
    if (b->start == end)
        return true;
    return b->start - end <= s->join_gap && s->join_ok && s->join_ok(s->join_arg, a, b);
}

/* Runs of adjacent functions. Exact ranges matter: LLDB maps an address to the section
 * with the greatest start below it, so an image whose single .text spanned another image's
 * function would capture that function's addresses and hide its name. */
static int make_runs(const struct jh__elf_spec *s, uint64_t lo, size_t size, struct run **out,
                     size_t *nruns, uint32_t *fn_run, struct run *small)
{
    size_t n = 1;
    bool auto_range = s->text == JH__ELF_TEXT_NOBITS && !s->text_size;
    /* fn_run[i] holds whether function i starts a run until the runs are numbered: each
     * pair is asked once (a gap asks the caller, gdb's view of the live code) */
    if (auto_range)
        for (size_t i = 1; i < s->nfns; i++)
            n += fn_run[i] = !joins(s, s->fns[i - 1], s->fns[i]);
    if (n >= SHN_LORESERVE - S_MAX || n >= PN_XNUM - 2)
        return -E2BIG;
    struct run *r = n <= FNS_SMALL ? small : malloc(n * sizeof *r);
    if (!r)
        return -ENOMEM;
    if (!auto_range) {
        r[0] = (struct run){ lo, lo + size };
        for (size_t i = 0; i < s->nfns; i++)
            fn_run[i] = 0;
    } else {
        size_t k = 0;
        r[0] = (struct run){ s->fns[0]->start, s->fns[0]->start + s->fns[0]->size };
        fn_run[0] = 0;
        for (size_t i = 1; i < s->nfns; i++) {
            const struct jh__func *e = s->fns[i];
            if (fn_run[i])
                r[++k] = (struct run){ e->start, e->start };
            r[k].hi = e->start + e->size;
            fn_run[i] = (uint32_t)k;
        }
    }
    *out = r;
    *nruns = n;
    return 0;
}

void jh__elf_ehdr_init(void *ehdr, unsigned type, unsigned machine)
{
    Elf64_Ehdr *eh = ehdr;
    *eh = (Elf64_Ehdr){ 0 };
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_ident[EI_OSABI] = ELFOSABI_NONE;
    eh->e_type = (uint16_t)type;
    eh->e_machine = (uint16_t)machine;
    eh->e_version = EV_CURRENT;
    eh->e_ehsize = sizeof *eh;
    eh->e_phentsize = sizeof(Elf64_Phdr);
    eh->e_shentsize = sizeof(Elf64_Shdr);
}

int jh__elf_image(struct jh__buf *out, const struct jh__elf_spec *s, struct jh__elf_layout *layout)
{
    struct jh__elf_scratch own, *sc = s && s->scratch ? s->scratch : &own;
    struct jh__dwarf *dw = &sc->dw;
    struct jh__buf *ehb = &sc->eh;  /* absolute pointers: encoded once, before the layout */
    int eh_n = 0;
    struct run runs_small[FNS_SMALL], *runs = NULL;
    uint32_t fn_run_small[FNS_SMALL], *fn_run = NULL;
    uint32_t name_small[FNS_SMALL], *name_len = NULL;     /* symbol names' strlen */
    bool dwarf = false;
    struct sec sec[S_MAX];
    uint64_t text_lo;
    size_t text_size, nruns = 0, eh_size = 0, strtab_size = 1, shstr_size = 0;
    const bool copy = s && s->text == JH__ELF_TEXT_COPY;
    const size_t page = s && s->page_size ? s->page_size : 4096;
    const size_t orig = out->len;
    size_t start = out->len, nfde = 0;
    int err;

    if ((err = check_spec(s, &text_lo, &text_size)))
        return err;
    if (sc == &own)             /* (the gdb channel's every image brings its own) */
        memset(&own, 0, sizeof own);
    if (out->err)
        return out->err;
    ehb->len = 0;
    ehb->err = 0;
    if (s->nfns <= FNS_SMALL) {
        fn_run = fn_run_small;
        name_len = name_small;
    } else {
        fn_run = malloc(s->nfns * (sizeof *fn_run + sizeof *name_len));
        if (!fn_run)
            return -ENOMEM;
        name_len = fn_run + s->nfns;
    }
    if ((err = make_runs(s, text_lo, text_size, &runs, &nruns, fn_run, runs_small)))
        goto fail;
    if (!(s->flags & JH__ELF_NO_DWARF)) {
        struct jh__dwarf_opts dopts = { .producer = s->producer, .comp_dir = s->comp_dir };
        if ((err = jh__dwarf_build(dw, s->fns, s->nfns, &dopts)))
            goto fail;
        dwarf = true;
    }

    const struct jh__arch *arch = s->arch ? s->arch : JH__ARCH_HOST;
    struct jh__cfi_opts copts = { .arch = arch, .ptr = copy ? JH__CFI_PCREL : JH__CFI_ABS,
                                  .cfi_checked = s->flags & JH__ELF_CFI_CHECKED };
    bool want_eh = !(s->flags & JH__ELF_NO_EH_FRAME) && (!copy || s->rw_addr) && s->nfns;
    if (want_eh) {
        size_t with_unwind = 0;
        for (size_t i = 0; i < s->nfns; i++)
            with_unwind += s->fns[i]->unwind != JH_UNWIND_NONE;
        if (with_unwind && copts.ptr == JH__CFI_ABS) {
            /* no byte depends on where .eh_frame lands: no dry run for its size */
            eh_n = jh__cfi_eh_frame_p(ehb, &copts, s->fns, s->nfns, NULL);
            if (eh_n < 0) {
                err = eh_n;
                goto fail;
            }
            eh_size = ehb->len;
        } else if (with_unwind) {
            eh_size = copts.size = jh__cfi_eh_frame_size_p(&copts, s->fns, s->nfns);
            if (!eh_size) {
                err = -EINVAL;
                goto fail;
            }
        }
        want_eh = eh_size != 0;
    }
    for (size_t i = 0; i < s->nfns; i++) {
        const struct jh__func *f = s->fns[i];
        size_t len = s->flags & JH__ELF_SYMBOLS ? jh__func_symbol_or_name_len(f) :
                                                  jh__func_name_len(f);
        if (len >= UINT32_MAX - strtab_size) {
            err = -E2BIG;
            goto fail;
        }
        name_len[i] = (uint32_t)len;
        strtab_size += len + 1;
    }

    /* ---- the section table (.text runs take indices 1..nruns), then the layout ---- */
    sec[S_NULL] = (struct sec){ .on = true };  /* (every slot is assigned below) */
    sec[S_TEXT] = (struct sec){ .on = true, .type = copy ? SHT_PROGBITS : SHT_NOBITS,
        .flags = SHF_ALLOC | SHF_EXECINSTR, .addr = text_lo, .size = text_size,
        .align = copy ? 16 : 1, .bytes = copy ? s->text_bytes : NULL };
    sec[S_EH] = (struct sec){ .on = want_eh, .type = SHT_PROGBITS,
        .flags = SHF_ALLOC | (copy ? SHF_WRITE : 0), .size = eh_size, .align = 8 };
    sec[S_DATA] = (struct sec){ .on = copy && s->rw_addr && !want_eh, .type = SHT_PROGBITS,
        .flags = SHF_ALLOC | SHF_WRITE, .size = 16, .align = 8 };
    struct { int i; struct jh__buf *b; } dws[] = { { S_INFO, &dw->info }, { S_ABBREV, &dw->abbrev },
        { S_LINE, &dw->line }, { S_STR, &dw->str }, { S_RANGES, &dw->ranges } };
    for (size_t k = 0; k < sizeof dws / sizeof dws[0]; k++)
        sec[dws[k].i] = !dwarf || !dws[k].b->len ? (struct sec){ .on = false } :
                        (struct sec){ .on = true, .type = SHT_PROGBITS, .align = 1,
                .size = dws[k].b->len, .bytes = dws[k].b->p,
                .entsize = dws[k].i == S_STR ? 1 : 0,
                .flags = dws[k].i == S_STR ? SHF_MERGE | SHF_STRINGS : 0 };
    sec[S_SYMTAB] = (struct sec){ .on = true, .type = SHT_SYMTAB, .align = 8,
        .size = (s->nfns + 1) * sizeof(Elf64_Sym), .entsize = sizeof(Elf64_Sym), .info = 1 };
    sec[S_STRTAB] = (struct sec){ .on = true, .type = SHT_STRTAB, .align = 1, .size = strtab_size };
    sec[S_SHSTRTAB] = (struct sec){ .on = true, .type = SHT_STRTAB, .align = 1 };
    /* Not SHF_ALLOC: a NOBITS image's allocated sections must sit at real addresses, and
     * readers (perf, BFD, elfutils) find the id by its section as well as by PT_NOTE. */
    uint8_t note[JH__BUILD_ID_NOTE_SIZE];
    {
        struct jh__bid bid = { 0 };
        uint8_t id[JH__BUILD_ID_SIZE];
        for (size_t i = 0; i < s->nfns; i++)
            jh__bid_add(&bid, s->fn_bid ? s->fn_bid[i] : jh__bid_func_hash(s->fns[i]));
        if (copy)
            jh__bid_bytes(&bid, text_lo, s->text_bytes, text_size);
        jh__bid_final(&bid, text_lo, text_size, id);
        jh__bid_note(note, id);
    }
    sec[S_NOTE] = (struct sec){ .on = true, .type = SHT_NOTE, .align = 4,
        .size = sizeof note, .bytes = note };

    uint32_t nsec = 0;
    for (int i = 0; i < S_MAX; i++) {
        if (!sec[i].on)
            continue;
        sec[i].index = nsec;
        nsec += i == S_TEXT ? (uint32_t)nruns : 1;
        sec[i].name = (uint32_t)shstr_size;   /* every run shares the name ".text" */
        shstr_size += sec_name_size[i];
    }
    sec[S_SHSTRTAB].size = shstr_size;
    sec[S_SYMTAB].link = sec[S_STRTAB].index;

    /* NOBITS: a PT_LOAD per run with no file bytes, and one for .eh_frame (BFD warns about
     * an SHF_ALLOC section outside every segment once there are segments), unless the
     * caller says no. COPY: the code segment, and the rw one if asked for. */
    const bool nophdrs = !copy && (s->flags & JH__ELF_NO_PHDRS);
    const size_t nph = copy ? (s->rw_addr ? 2 : 1) : nophdrs ? 0 : nruns + want_eh;
    size_t off = sizeof(Elf64_Ehdr) + nph * sizeof(Elf64_Phdr);
    size_t rw_off = 0, rw_size = 0;
    if (copy) {
        off = align_up(off, page);
        sec[S_TEXT].off = off;
        off += text_size;
        if (s->rw_addr) {
            rw_off = off = align_up(off, page);
            int r = want_eh ? S_EH : S_DATA;
            sec[r].off = off;
            sec[r].addr = s->rw_addr;
            rw_size = sec[r].size;
            off += rw_size;
        }
    } else {
        off = align_up(off, 8);
        sec[S_TEXT].off = off;      /* NOBITS: an offset inside the file, no bytes */
        if (want_eh) {
            sec[S_EH].off = off;
            off += eh_size;
        }
    }
    for (int i = S_INFO; i < S_MAX; i++) {
        if (!sec[i].on)
            continue;
        off = align_up(off, sec[i].align);
        sec[i].off = off;
        off += sec[i].size;
    }
    size_t shoff = align_up(off, 8);
    size_t total = shoff + nsec * sizeof(Elf64_Shdr);

    /* ---- write: reserve once so out->p does not move from here on ---- */
    jh__buf_align(out, 8);
    start = out->len;
    if (!out->p && !out->err) {
        /* a fresh buffer gets exactly the image (and the caller's head room): debuggers'
         * images live as long as their code, and jh_buf's doubling would leave up to half
         * of each one unused */
        if (!(out->p = malloc(start + total))) {
            err = out->err = -ENOMEM;
            goto fail;
        }
        out->cap = start + total;
    }
    if ((err = jh__buf_reserve(out, total)))
        goto fail;
    if (!copy && want_eh)
        sec[S_EH].addr = (uint64_t)(uintptr_t)(out->p + start + sec[S_EH].off);
    copts.addr = sec[S_EH].addr;

    Elf64_Ehdr eh;
    jh__elf_ehdr_init(&eh, s->e_type ? s->e_type : ET_DYN, arch->e_machine);
    eh.e_phoff = nph ? sizeof eh : 0;
    eh.e_shoff = shoff;
    eh.e_phnum = (uint16_t)nph;
    eh.e_shnum = (uint16_t)nsec;
    eh.e_shstrndx = (uint16_t)sec[S_SHSTRTAB].index;
    jh__buf_put(out, &eh, sizeof eh);

    if (copy) {
        Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = sec[S_TEXT].off,
                          .p_vaddr = text_lo, .p_paddr = text_lo, .p_filesz = text_size,
                          .p_memsz = text_size, .p_align = page };
        jh__buf_put(out, &ph, sizeof ph);
        if (s->rw_addr) {
            Elf64_Phdr rw = { .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = rw_off,
                              .p_vaddr = s->rw_addr, .p_paddr = s->rw_addr,
                              .p_filesz = rw_size, .p_memsz = rw_size, .p_align = page };
            jh__buf_put(out, &rw, sizeof rw);
        }
    } else if (!nophdrs) {
        for (size_t k = 0; k < nruns; k++) {
            Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
                              .p_offset = sec[S_TEXT].off, .p_vaddr = runs[k].lo,
                              .p_paddr = runs[k].lo, .p_memsz = runs[k].hi - runs[k].lo,
                              .p_align = 1 };
            jh__buf_put(out, &ph, sizeof ph);
        }
        if (want_eh) {
            Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R, .p_offset = sec[S_EH].off,
                              .p_vaddr = sec[S_EH].addr, .p_paddr = sec[S_EH].addr,
                              .p_filesz = eh_size, .p_memsz = eh_size, .p_align = 1 };
            jh__buf_put(out, &ph, sizeof ph);
        }
    }

    for (int i = S_TEXT; i < S_MAX; i++) {
        if (!sec[i].on || (i == S_TEXT && !copy))
            continue;
        pad_to(out, start + sec[i].off);
        if (i == S_EH && ehb->len) {
            jh__buf_put(out, ehb->p, ehb->len);
            nfde = (size_t)eh_n;
        } else if (i == S_EH) {
            size_t at = out->len;
            int n = jh__cfi_eh_frame_p(out, &copts, s->fns, s->nfns, NULL);
            if (n < 0) {
                err = n;
                goto fail;
            }
            if (out->len - at != eh_size) {
                err = -EINVAL;      /* the encoder's dry run disagrees with its output */
                goto fail;
            }
            nfde = (size_t)n;
        } else if (i == S_SYMTAB) {
            Elf64_Sym sym = { 0 };
            jh__buf_put(out, &sym, sizeof sym);
            uint32_t name = 1;
            for (size_t k = 0; k < s->nfns; k++) {
                const struct jh__func *e = s->fns[k];
                sym = (Elf64_Sym){ .st_name = name, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
                    .st_other = STV_DEFAULT, .st_shndx = (uint16_t)(sec[S_TEXT].index + fn_run[k]),
                    .st_value = e->start, .st_size = e->size };
                jh__buf_put(out, &sym, sizeof sym);
                name += name_len[k] + 1;
            }
        } else if (i == S_STRTAB) {
            jh__buf_u8(out, 0);
            for (size_t k = 0; k < s->nfns; k++)
                jh__buf_put(out, sym_name(s, s->fns[k]), name_len[k] + 1);
        } else if (i == S_SHSTRTAB) {
            /* each name's size a constant: no call to copy it */
#define X_PUT(id, name) if (sec[id].on) jh__buf_put(out, name, sizeof name);
            SECTIONS(X_PUT)
#undef X_PUT
        } else if (sec[i].bytes) {
            jh__buf_put(out, sec[i].bytes, sec[i].size);
        } else {
            jh__buf_zeros(out, sec[i].size);
        }
    }
    pad_to(out, start + shoff);
    for (int i = 0; i < S_MAX; i++) {
        if (!sec[i].on)
            continue;
        if (i == S_NULL) {
            jh__buf_zeros(out, sizeof(Elf64_Shdr));
            continue;
        }
        Elf64_Shdr sh = (Elf64_Shdr){ .sh_name = sec[i].name, .sh_type = sec[i].type,
            .sh_flags = sec[i].flags, .sh_addr = sec[i].addr,
            .sh_offset = sec[i].off, .sh_size = sec[i].size, .sh_link = sec[i].link,
            .sh_info = sec[i].info, .sh_addralign = sec[i].align,
            .sh_entsize = sec[i].entsize };
        if (i == S_TEXT && !copy) {
            for (size_t k = 0; k < nruns; k++) {
                sh.sh_addr = runs[k].lo;
                sh.sh_size = runs[k].hi - runs[k].lo;
                jh__buf_put(out, &sh, sizeof sh);
            }
        } else {
            jh__buf_put(out, &sh, sizeof sh);
        }
    }
    if (out->err) {
        err = out->err;
        goto fail;
    }
    if (out->len - start != total) {
        err = -EINVAL;
        goto fail;
    }
    if (layout) {
        *layout = (struct jh__elf_layout){ .size = total, .text_off = copy ? sec[S_TEXT].off : 0,
            .rw_off = rw_off, .rw_size = rw_size, .ntext = nruns,
            .eh_frame_off = want_eh ? sec[S_EH].off : 0, .eh_frame_size = eh_size,
            .eh_frame_addr = want_eh ? sec[S_EH].addr : 0, .nfde = want_eh ? nfde : 0 };
    }
    err = 0;
fail:
    if (runs != runs_small)
        free(runs);
    if (fn_run != fn_run_small)
        free(fn_run);
    if (sc == &own)
        jh__elf_scratch_free(&own);
    if (!err)
        return 0;
    if (out->len > orig)
        out->len = orig;
    return err;
}
