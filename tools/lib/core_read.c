/* core_read.c — see core_read.h. The NT_FILE layout is the kernel's
 * (fs/binfmt_elf.c, fill_files_note): count, page size, count triples of (start, end,
 * page offset), then count NUL-terminated paths, every word 8 bytes in an ELF64 core. */
#include "lib/core_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jitherald.h"

#define NT_FILE_TYPE 0x46494c45u      /* "FILE" */

static uint64_t rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* [off, off + n) lies inside len */
static int within(uint64_t off, uint64_t n, size_t len)
{
    return off <= len && n <= len - off;
}

static int read_file_note(struct jhr_core *c, const uint8_t *d, uint64_t n)
{
    if (n < 16)
        return JH_EFORMAT;
    uint64_t count = rd(d, 8), page = rd(d + 8, 8);
    if (count > (n - 16) / 24 || page == 0 || (page & (page - 1)))
        return JH_EFORMAT;
    c->maps = calloc(count ? count : 1, sizeof *c->maps);
    if (!c->maps)
        return -ENOMEM;
    const uint8_t *names = d + 16 + count * 24, *end = d + n;
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *t = d + 16 + i * 24;
        const uint8_t *nul = memchr(names, 0, (size_t)(end - names));
        if (!nul)
            return JH_EFORMAT;
        struct jhr_core_map *m = &c->maps[c->nmaps++];
        m->start = rd(t, 8);
        m->end = rd(t + 8, 8);
        m->offset = rd(t + 16, 8) * page;
        m->path = (const char *)names;
        names = nul + 1;
        if (m->end < m->start)
            return JH_EFORMAT;
    }
    return 0;
}

static int read_notes(struct jhr_core *c, uint64_t off, uint64_t n)
{
    const uint8_t *d = c->data + off;
    uint64_t at = 0;
    while (at < n && n - at >= 12) {
        uint64_t namesz = rd(d + at, 4), descsz = rd(d + at + 4, 4), type = rd(d + at + 8, 4);
        uint64_t name_at = at + 12, desc_at = name_at + ((namesz + 3) & ~3ull);
        if (desc_at > n || descsz > n - desc_at)
            return JH_EFORMAT;
        if (type == NT_FILE_TYPE && namesz == 5 && !memcmp(d + name_at, "CORE", 5) &&
            !c->maps) {
            int err = read_file_note(c, d + desc_at, descsz);
            if (err)
                return err;
        }
        at = desc_at + ((descsz + 3) & ~3ull);
    }
    return 0;
}

int jhr_core_read(struct jhr_core *c, const uint8_t *data, size_t len)
{
    memset(c, 0, sizeof *c);
    c->data = data;
    c->len = len;
    if (len < 64 || memcmp(data, "\177ELF", 4) || data[4] != 2 /* ELFCLASS64 */ ||
        data[5] != 1 /* little-endian */ || rd(data + 16, 2) != 4 /* ET_CORE */)
        return JH_EFORMAT;
    c->machine = (uint16_t)rd(data + 18, 2);
    uint64_t phoff = rd(data + 32, 8), phentsize = rd(data + 54, 2), phnum = rd(data + 56, 2);
    if (phentsize < 56 || !within(phoff, phnum * phentsize, len))
        return JH_EFORMAT;
    c->segs = calloc(phnum ? phnum : 1, sizeof *c->segs);
    if (!c->segs)
        return -ENOMEM;
    int err = 0;
    for (uint64_t i = 0; i < phnum && !err; i++) {
        const uint8_t *ph = data + phoff + i * phentsize;
        uint64_t type = rd(ph, 4), off = rd(ph + 8, 8), vaddr = rd(ph + 16, 8);
        uint64_t filesz = rd(ph + 32, 8), memsz = rd(ph + 40, 8);
        if (!within(off, filesz, len))
            err = JH_EFORMAT;
        else if (type == 4 /* PT_NOTE */)
            err = read_notes(c, off, filesz);
        else if (type == 1 /* PT_LOAD */)
            c->segs[c->nsegs++] = (struct jhr_core_seg){ vaddr, memsz, off, filesz };
    }
    if (err)
        jhr_core_free(c);
    return err;
}

void jhr_core_free(struct jhr_core *c)
{
    free(c->maps);
    free(c->segs);
    c->maps = NULL;
    c->segs = NULL;
    c->nmaps = c->nsegs = 0;
}

size_t jhr_core_bytes(const struct jhr_core *c, uint64_t addr, const uint8_t **p)
{
    for (size_t i = 0; i < c->nsegs; i++) {
        const struct jhr_core_seg *s = &c->segs[i];
        if (addr >= s->vaddr && addr - s->vaddr < s->filesz) {
            *p = c->data + s->offset + (addr - s->vaddr);
            return (size_t)(s->filesz - (addr - s->vaddr));
        }
    }
    *p = NULL;
    return 0;
}

size_t jhr_note_build_id(const uint8_t *d, size_t n, uint8_t id[64])
{
    for (uint64_t at = 0; n - at >= 12;) {
        uint64_t namesz = rd(d + at, 4), descsz = rd(d + at + 4, 4), type = rd(d + at + 8, 4);
        uint64_t desc = at + 12 + ((namesz + 3) & ~3ull);
        if (namesz > n || desc > n || descsz > n - desc)
            return 0;
        if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && !memcmp(d + at + 12, "GNU", 4) &&
            descsz > 0 && descsz <= 64) {
            memcpy(id, d + desc, descsz);
            return (size_t)descsz;
        }
        at = desc + ((descsz + 3) & ~3ull);
        if (at > n)
            return 0;
    }
    return 0;
}

size_t jhr_core_map_build_id(const struct jhr_core *c, size_t i, uint8_t id[64])
{
    const struct jhr_core_map *m = &c->maps[i];
    const uint8_t *h;
    size_t n = m->offset ? 0 : jhr_core_bytes(c, m->start, &h);
    if (n > m->end - m->start)
        n = (size_t)(m->end - m->start);
    if (n < 64 || memcmp(h, "\177ELF", 4) || h[4] != 2 || h[5] != 1)
        return 0;
    uint64_t phoff = rd(h + 32, 8), phentsize = rd(h + 54, 2), phnum = rd(h + 56, 2);
    if (phentsize < 56 || !within(phoff, phnum * phentsize, n))
        return 0;
    for (uint64_t k = 0; k < phnum; k++) {
        const uint8_t *ph = h + phoff + k * phentsize;
        uint64_t off = rd(ph + 8, 8), filesz = rd(ph + 32, 8);
        size_t len;
        if (rd(ph, 4) == 4 /* PT_NOTE */ && within(off, filesz, n) &&
            (len = jhr_note_build_id(h + off, (size_t)filesz, id)))
            return len;
    }
    return 0;
}
