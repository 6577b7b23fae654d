/*
 * elf_grow.c — see elf_grow.h. The sections live in memory (jh_buf) and in the file; the
 * builder tracks, per section, how much of it the file already holds, so an append costs
 * the new bytes plus the section header table, whatever the image's size.
 */
#include "fmt/elf_grow.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/cfi.h"
#include "fmt/elf_grow_sec.h"
#include "fmt/func.h"

void jh__elfg_build_id(const struct jh__elfg *g, uint8_t out[JH__BUILD_ID_SIZE])
{
    if (g->s.no_build_id)
        memset(out, 0, JH__BUILD_ID_SIZE);
    else
        jh__bid_final(&g->bid, g->s.anchor_addr, g->s.anchor_off, out);
}

/* The id changed: the meta page (which holds the note) is written again, the id computed
 * once when it is. */
static void build_note(struct jh__elfg *g)
{
    g->note_dirty = true;
}


/* Give every section that outgrew its chunk one twice its size: grown in place where the
 * file's end or a spare run follows it (nothing copied or left), else a spare chunk (pages
 * allocated and mapped already: no first-store fault), else at the end of the file. */
static void place(struct jh__elfg *g)
{
    for (int i = 0; i < JH__ELFG_NGROW; i++) {
        if (sec(g, i)->len <= g->chunk[i].cap)
            continue;
        uint64_t cap = round_up(2 * (uint64_t)sec(g, i)->len, page_of(g));
        struct jh__elfg_chunk *c = &g->chunk[i];
        g->meta_dirty = g->meta_layout = true;
        if (i == G_EH || i == G_EHDR)
            g->ehdr_from = 0;           /* the table is relative to both addresses */
        uint64_t end = c->off + c->cap;
        if (end == g->end || jh__spare_take_at(&g->spare, end, cap - c->cap)) {
            g->end += end == g->end ? cap - c->cap : 0, c->cap = cap;
            continue;
        }
        /* the old chunk is spare once no header written names it (jh__elfg_synced), at
         * once if it was never written (without memory to remember it: garbage) */
        if (c->synced)
            c->old_off = c->off, c->old_cap = c->cap;
        else
            jh__spare_put(&g->spare, c->off, c->cap);
        uint64_t off = jh__spare_take(&g->spare, cap);
        if (off == UINT64_MAX)
            off = g->end, g->end += cap;
        c->off = off, c->cap = cap, c->synced = 0;
    }
}

_Static_assert(sizeof ((struct jh__elfg_spec *)0)->room ==
               JH__ELFG_NGROW * sizeof ((struct jh__elfg_spec *)0)->room[0],
               "a room for each growing section");

/* More room than this asked for a section's first chunk is none (a page). */
#define ROOM_MAX ((uint64_t)1 << 32)

int jh__elfg_init(struct jh__elfg *g, const struct jh__elfg_spec *s)
{
    memset(g, 0, sizeof *g);
    if (!s)
        return -EINVAL;
    g->s = *s;
    if (!g->s.arch)
        g->s.arch = JH__ARCH_HOST;
    size_t pg = page_of(g);
    if (pg & (pg - 1) || s->anchor_addr % pg || s->anchor_off % pg || s->anchor_off < pg ||
        s->meta_off % pg || s->rw_addr % pg || s->eh_addr % pg || !window_ok(g, s->lo, s->hi))
        return -EINVAL;
    struct jh__dwarf_opts dopts = { .producer = s->producer };
    int err = jh__dwarf_begin(&g->dw, &dopts);
    if (err)
        return err;
    Elf64_Sym null = { 0 };
    jh__buf_put(&g->symtab, &null, sizeof null);
    jh__buf_u8(&g->strtab, 0);
    jh__cfi_debug_frame_cie(&g->frame, g->s.arch);
    g->eh_cie[0] = g->eh_cie[1] = SIZE_MAX;
    g->ehdr_from = SIZE_MAX;
    for (int i = 0; i < JH__ELFG_NGROW; i++) {
        if (sec(g, i)->err) {
            err = sec(g, i)->err;
            jh__elfg_free(g);
            return err;
        }
    }
    g->end = s->meta_off + pg * (s->rw_addr ? 2 : 1);
    for (int i = 0; i < JH__ELFG_NGROW; i++) {
        uint64_t room = s->room[i] <= ROOM_MAX ? s->room[i] : 0;
        uint64_t cap = room > pg ? round_up(room, pg) : pg;
        g->chunk[i] = (struct jh__elfg_chunk){ .off = g->end, .cap = cap };
        g->end += cap;
    }
    place(g);
    jh__elfg_build_hdr(g);
    g->hdr_dirty = g->meta_dirty = g->meta_layout = g->note_dirty = true;
    g->data_dirty = s->rw_addr != 0;
    return 0;
}

void jh__elfg_free(struct jh__elfg *g)
{
    if (!g)
        return;
    jh__dwarf_free(&g->dw);
    jh__buf_free(&g->frame);
    jh__buf_free(&g->symtab);
    jh__buf_free(&g->strtab);
    jh__buf_free(&g->aranges);
    jh__buf_free(&g->eh);
    jh__buf_free(&g->ehdr);
    free(g->ehidx);
    jh__spare_free(&g->spare);
    jh__buf_free(&g->meta);
    memset(g, 0, sizeof *g);
}

int jh__elfg_set_text(struct jh__elfg *g, uint64_t lo, uint64_t hi)
{
    if (!window_ok(g, lo, hi) || lo > g->s.lo || hi < g->s.hi)
        return -EINVAL;
    if (lo == g->s.lo && hi == g->s.hi)
        return 0;
    g->s.lo = lo;
    g->s.hi = hi;
    jh__elfg_build_hdr(g);
    g->hdr_dirty = g->meta_dirty = g->meta_layout = true;
    return 0;
}

void jh__elfg_code(struct jh__elfg *g, uint64_t addr, const void *p, size_t len)
{
    if (g->s.no_build_id)
        return;
    jh__bid_bytes(&g->bid, addr, p, len);
    build_note(g);
}

/* The sorted FDEs (neh of them; no offset added to a NULL index before the first). */
static struct jh__cfi_index *eh_idx(const struct jh__elfg *g)
{
    return g->eh0 ? g->ehidx + g->eh0 : g->ehidx;
}

/* Where an FDE for code at pc goes in the sorted table. */
static size_t eh_slot(const struct jh__elfg *g, uint64_t pc)
{
    const struct jh__cfi_index *idx = eh_idx(g);
    size_t lo = 0, hi = g->neh;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (idx[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Room for one more entry. The entries sit in the middle of their allocation, room on
 * both sides: a JIT that allocates top-down (LuaJIT: each trace below the others) adds at
 * the front, one that grows upwards at the back, each without moving the others (moving
 * all of them was ~3.5 KiB a LuaJIT add on average, up to 7, after the JIT's compile had
 * evicted them: 0.1-0.4 us). */
static int eh_reserve(struct jh__elfg *g)
{
    if (g->neh < g->capeh)
        return 0;
    size_t cap = g->capeh ? 2 * g->capeh : 64, front = (cap - g->neh) / 2;
    struct jh__cfi_index *p = malloc(cap * sizeof *p);
    if (!p)
        return -ENOMEM;
    if (g->neh)
        memcpy(p + front, eh_idx(g), g->neh * sizeof *p);
    free(g->ehidx);
    g->ehidx = p;
    g->capeh = cap;
    g->eh0 = front;
    return 0;
}

/* A place for entry at (0..neh) among the entries: the smaller side moves by one into the
 * room next to it; where that side has none, all of them move once to the middle of the
 * room first (eh_reserve left some), so that the next adds on that side move nothing. */
static void eh_open(struct jh__elfg *g, size_t at)
{
    size_t sz = sizeof *g->ehidx;
    bool down = at < g->neh - at;
    if (down ? !g->eh0 : g->eh0 + g->neh == g->capeh) {
        size_t room = g->capeh - g->neh;       /* (at least 1) */
        size_t mid = down ? (room + 1) / 2 : (room - 1) / 2;
        memmove(g->ehidx + mid, eh_idx(g), g->neh * sz);
        g->eh0 = mid;
    }
    if (down) {
        memmove(eh_idx(g) - 1, eh_idx(g), at * sz);
        g->eh0--;
    } else {
        memmove(eh_idx(g) + at + 1, eh_idx(g) + at, (g->neh - at) * sz);
    }
    g->neh++;
}

/* Bring .eh_frame_hdr up to date from entry ehdr_from on (fmt/cfi_hdr.c builds it) and say
 * which of its bytes the file lacks: from ehdr_from's entry on, and the head (the count). */
static int build_eh_hdr(struct jh__elfg *g, bool *head)
{
    *head = false;
    if (!g->neh || g->ehdr_from == SIZE_MAX)
        return 0;
    struct jh__elfg_chunk *c = &g->chunk[G_EHDR];
    int err = jh__cfi_eh_frame_hdr_from(&g->ehdr, 0, addr_of(g, c->off),
                                        addr_of(g, g->chunk[G_EH].off), eh_idx(g), g->neh,
                                        g->ehdr_from);
    if (err)
        return err;
    size_t from = jh__cfi_eh_frame_hdr_size(g->ehdr_from);
    if (c->synced > from)
        c->synced = from;
    *head = c->synced > 12;
    g->ehdr_from = SIZE_MAX;
    /* PT_GNU_EH_FRAME covers the chunk (zeros after the table; readers bound the table by
     * its count): the program headers change only when the chunk moves */
    uint8_t was[sizeof g->hdr];
    memcpy(was, g->hdr, sizeof was);
    jh__elfg_build_hdr(g);
    g->hdr_dirty |= memcmp(was, g->hdr, sizeof was) != 0;
    return 0;
}

/* The new entry at of .eh_frame_hdr put into the table as built, the entries after it moved
 * up as they are (their values are relative to the two tables' addresses, which have not
 * moved): LuaJIT adds each trace below the others, so building the table from the new
 * entry on was building all of it at every add. What the file lacks: the head (the count)
 * and the table from the new entry on. Built from there in jh__elfg_spans if it fails. */
static void eh_hdr_insert(struct jh__elfg *g, size_t at, bool replace)
{
    struct jh__elfg_chunk *c = &g->chunk[G_EHDR];
    if (jh__cfi_eh_frame_hdr_insert(&g->ehdr, 0, addr_of(g, c->off),
                                    addr_of(g, g->chunk[G_EH].off), eh_idx(g), g->neh, at,
                                    replace)) {
        g->ehdr_from = at;
        return;
    }
    size_t from = jh__cfi_eh_frame_hdr_size(at);
    if (c->synced > from)
        c->synced = from;
    g->ehdr_head |= c->synced > 12;
}

int jh__elfg_add(struct jh__elfg *g, const struct jh__func *f)
{
    if (!f || !f->name || !f->size || f->start < g->s.lo || f->start >= g->s.hi ||
        f->size > g->s.hi - f->start)
        return -EINVAL;
    size_t lens[JH__ELFG_NGROW];
    for (int i = 0; i < JH__ELFG_NGROW; i++)
        lens[i] = sec(g, i)->len;
    /* a section appears with the first FDE, table entry or unit (present): counted only
     * while one may */
    bool may_appear = !g->nfde || (!g->neh && !g->s.no_eh_frame) || !g->dw.info.len;
    uint32_t before = may_appear ? nsections(g) : 0;
    Elf64_Sym sym = { .st_name = (uint32_t)g->strtab.len,
                      .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_other = STV_DEFAULT,
                      .st_shndx = (uint16_t)shndx(g, X_TEXT), .st_value = f->start,
                      .st_size = f->size };
    int err = g->strtab.len > UINT32_MAX ? -E2BIG : 0;
    if (!err) {
        jh__buf_put(&g->symtab, &sym, sizeof sym);
        jh__buf_str(&g->strtab, f->name);
        err = g->symtab.err ? g->symtab.err : g->strtab.err;
    }
    int fde = 0;
    if (!err) {
        fde = jh__cfi_debug_frame_fde(&g->frame, g->s.arch, 0, f);
        err = fde < 0 ? fde : 0;
    }
    size_t cie_was[2] = { g->eh_cie[0], g->eh_cie[1] }, at = 0, fde_at = 0;
    int ehn = 0;
    bool replace = false;           /* code at a start already described: the new FDE wins */
    if (!err && fde > 0 && !g->s.no_eh_frame) {
        at = eh_slot(g, f->start);
        if (eh_reserve(g))
            err = -ENOMEM;
        if (!err) {
            ehn = jh__cfi_eh_frame_grow(&g->eh, g->s.arch, g->eh_cie, f, &fde_at);
            err = ehn < 0 ? ehn : 0;
        }
        replace = !err && ehn && at < g->neh && eh_idx(g)[at].pc == f->start;
        if (!err && ehn && !replace)
            jh__buf_zeros(&g->ehdr, 8);     /* its table entry: built in jh__elfg_spans */
        if (!err)
            err = g->ehdr.err;
    }
    size_t cu = g->dw.info.len;
    if (!err)
        err = jh__dwarf_add(&g->dw, f);
    if (!err && g->dw.info.len > cu) {
        /* the unit's address range set: header, padding to 16, (start, size), (0, 0) */
        jh__buf_u32(&g->aranges, 44);
        jh__buf_u16(&g->aranges, 2);
        jh__buf_u32(&g->aranges, (uint32_t)cu);
        jh__buf_u8(&g->aranges, 8);
        jh__buf_u8(&g->aranges, 0);
        jh__buf_zeros(&g->aranges, 4);
        jh__buf_u64(&g->aranges, f->start);
        jh__buf_u64(&g->aranges, f->size);
        jh__buf_zeros(&g->aranges, 16);
        err = cu > UINT32_MAX ? -E2BIG : g->aranges.err;
    }
    if (err) {
        for (int i = 0; i < JH__ELFG_NGROW; i++) {
            sec(g, i)->err = 0;
            sec(g, i)->len = lens[i];
        }
        g->eh_cie[0] = cie_was[0];
        g->eh_cie[1] = cie_was[1];
        return err;
    }
    g->nsyms++;
    g->nfde += fde > 0;
    bool insert = false;            /* the table as built holds every other entry */
    if (ehn > 0) {
        insert = g->neh && g->ehdr_from == SIZE_MAX;
        if (!g->neh)
            jh__buf_zeros(&g->ehdr, 12);    /* the head, there from the first FDE on */
        if (!replace)
            eh_open(g, at);
        eh_idx(g)[at] = (struct jh__cfi_index){ .pc = f->start, .size = f->size, .off = fde_at };
        if (!insert && at < g->ehdr_from)
            g->ehdr_from = at;
    }
    if (!g->s.no_build_id) {
        jh__bid_func(&g->bid, f);
        build_note(g);
    }
    g->meta_dirty = true;           /* section sizes */
    if (may_appear && nsections(g) != before) {
        jh__elfg_build_hdr(g);
        g->hdr_dirty = g->meta_layout = true;
    }
    place(g);
    if (insert && g->ehdr_from == SIZE_MAX)     /* neither table moved (place) */
        eh_hdr_insert(g, at, replace);
    return 0;
}

int jh__elfg_spans(struct jh__elfg *g, struct jh__elfg_span *v)
{
    int n = 0;
    bool head;
    int err = build_eh_hdr(g, &head);
    if (!err && g->meta_dirty)
        err = jh__elfg_build_meta(g);
    if (err)
        return err;
    if (head || g->ehdr_head)
        v[n++] = (struct jh__elfg_span){ .off = g->chunk[G_EHDR].off, .p = g->ehdr.p, .len = 12 };
    for (int i = 0; i < JH__ELFG_NGROW; i++) {
        const struct jh__elfg_chunk *c = &g->chunk[i];
        if (sec(g, i)->len > c->synced)
            v[n++] = (struct jh__elfg_span){ .off = c->off + c->synced,
                .p = sec(g, i)->p + c->synced, .len = sec(g, i)->len - c->synced };
    }
    static const uint8_t zeros[DATA_SIZE];
    if (g->end_synced != g->end)        /* the file reaches the end of its last chunk */
        v[n++] = (struct jh__elfg_span){ .off = g->end - 1, .p = zeros, .len = 1 };
    if (g->data_dirty) {
        v[n++] = (struct jh__elfg_span){ .off = g->s.meta_off + page_of(g), .p = zeros,
                                         .len = DATA_SIZE };
    }
    if (g->meta_dirty)
        v[n++] = (struct jh__elfg_span){ .off = g->s.meta_off, .p = g->meta.p, .len = g->meta.len };
    if (g->hdr_dirty)
        v[n++] = (struct jh__elfg_span){ .off = 0, .p = g->hdr, .len = hdr_len(g) };
    if (g->note_dirty) {
        uint8_t id[JH__BUILD_ID_SIZE];
        jh__elfg_build_id(g, id);
        jh__bid_note(g->note, id);
        v[n++] = (struct jh__elfg_span){ .off = NOTE_OFF, .p = g->note,
                                         .len = JH__BUILD_ID_NOTE_SIZE };
    }
    return n;
}

struct jh__elfg_span jh__elfg_note_void(struct jh__elfg *g)
{
    static const uint8_t no_type[4];
    g->note_dirty = true;
    return (struct jh__elfg_span){ .off = NOTE_OFF + 8, .p = no_type, .len = sizeof no_type };
}

int jh__elfg_take_spare(struct jh__elfg *g, struct jh__elfg_span *v, int max)
{
    int n = 0;
    struct jh__spare_run run;
    while (n < max && jh__spare_pop(&g->spare, &run))
        v[n++] = (struct jh__elfg_span){ .off = run.off, .len = (size_t)run.len };
    return n;
}

void jh__elfg_synced(struct jh__elfg *g)
{
    g->end_synced = g->end;
    for (int i = 0; i < JH__ELFG_NGROW; i++) {
        if (g->chunk[i].old_cap)
            jh__spare_put(&g->spare, g->chunk[i].old_off, g->chunk[i].old_cap);
        g->chunk[i].old_cap = 0;
        g->chunk[i].synced = sec(g, i)->len;
    }
    g->hdr_dirty = g->meta_dirty = g->data_dirty = g->note_dirty = g->ehdr_head = false;
}

void jh__elfg_room(const struct jh__elfg *g, uint64_t room[JH__ELFG_NGROW])
{
    for (int i = 0; i < JH__ELFG_NGROW; i++) {
        uint64_t twice = 2 * (uint64_t)sec((struct jh__elfg *)g, i)->len;
        room[i] = g->chunk[i].cap < twice ? g->chunk[i].cap : twice;
    }
}

void jh__elfg_all_dirty(struct jh__elfg *g)
{
    g->end_synced = 0;
    for (int i = 0; i < JH__ELFG_NGROW; i++)
        g->chunk[i].synced = 0;
    g->hdr_dirty = g->meta_dirty = g->meta_layout = g->note_dirty = true;
    g->data_dirty = g->s.rw_addr != 0;
}

bool jh__elfg_eh_chunk(const struct jh__elfg *g, int k, uint64_t *addr, uint64_t *off,
                       uint64_t *len)
{
    if (!arena(g) || k < 0 || k > 2)
        return false;
    if (k == 2) {
        *addr = addr_of(g, 0);
        *off = 0;
        *len = page_of(g);
        return true;
    }
    const struct jh__elfg_chunk *c = &g->chunk[k ? G_EH : G_EHDR];
    *addr = addr_of(g, c->off);
    *off = c->off;
    *len = c->cap;
    return true;
}

uint64_t jh__elfg_eh_reach(const struct jh__elfg *g)
{
    uint64_t end = 0;
    for (int i = G_EH; i <= G_EHDR && g->neh; i++)
        if (g->chunk[i].off + g->chunk[i].cap > end)
            end = g->chunk[i].off + g->chunk[i].cap;
    return end ? page_of(g) + (end - g->s.meta_off) : 0;
}

void jh__elfg_set_eh_addr(struct jh__elfg *g, uint64_t addr)
{
    if (addr == g->s.eh_addr)
        return;
    g->s.eh_addr = addr;
    g->ehdr_from = g->neh ? 0 : SIZE_MAX;   /* the table is relative to its own address */
    jh__elfg_build_hdr(g);
    g->hdr_dirty = g->meta_dirty = g->meta_layout = true;
}

void jh__elfg_set_load(struct jh__elfg *g, uint64_t a)
{
    if (a == g->load_lo || (a && (a < g->s.lo || a >= g->s.hi || a % page_of(g))))
        return;
    g->load_lo = a;
    jh__elfg_build_hdr(g);
    g->hdr_dirty = true;
}
