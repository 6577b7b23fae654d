/* gdb_view.c — see gdb_view.h. */
#include "gdb_view.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channels/gdb_jit.h"

struct sym *view;
size_t nview, nimages;
static size_t view_cap;

static void add_sym(uintptr_t addr, uint64_t size, const char *name, const void *image)
{
    if (nview == view_cap) {
        view_cap = view_cap ? 2 * view_cap : 1024;
        view = realloc(view, view_cap * sizeof *view);
    }
    view[nview].addr = addr;
    view[nview].size = size;
    view[nview].image = image;
    snprintf(view[nview].name, sizeof view[nview].name, "%s", name);
    nview++;
}

/* A failed check: counted, and said with its line. */
#define BAD(cond) do { if (!(cond)) { bad++; fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

/* Read every image in the list as an attaching debugger would: list order, ELF symtab. */
int snapshot(void)
{
    int bad = 0;
    nview = nimages = 0;
    const struct jit_code_entry *prev = NULL;
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce;
         ce = ce->next_entry) {
        BAD(ce->prev_entry == prev);
        prev = ce;
        nimages++;
        const uint8_t *p = (const uint8_t *)ce->symfile_addr;
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
        if (ce->symfile_size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
            bad++, fprintf(stderr, "gdb_view: image is not ELF\n");
            continue;
        }
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
        size_t nsec = elf_shnum(p);
        BAD(eh->e_shoff + nsec * sizeof *sh <= ce->symfile_size);
        for (size_t i = 0; i < nsec; i++) {
            if (sh[i].sh_type != SHT_SYMTAB)
                continue;
            const Elf64_Sym *sym = (const Elf64_Sym *)(p + sh[i].sh_offset);
            const char *str = (const char *)(p + sh[sh[i].sh_link].sh_offset);
            for (size_t k = 1; k < sh[i].sh_size / sizeof *sym; k++) {
                const Elf64_Shdr *text = &sh[sym[k].st_shndx];
                BAD(sym[k].st_value >= text->sh_addr &&
                      sym[k].st_value + sym[k].st_size <= text->sh_addr + text->sh_size);
                add_sym(sym[k].st_value, sym[k].st_size, str + sym[k].st_name, p);
            }
        }
    }
    BAD(__jit_debug_descriptor.version == 1);
    return bad;
}

int count_named(const char *name, uintptr_t addr)
{
    int n = 0;
    for (size_t i = 0; i < nview; i++)
        n += !strcmp(view[i].name, name) && (!addr || view[i].addr == addr);
    return n;
}

const void *image_naming(const char *name)
{
    for (size_t i = 0; i < nview; i++)
        if (!strcmp(view[i].name, name))
            return view[i].image;
    return NULL;
}

size_t elf_shnum(const void *image)
{
    const Elf64_Ehdr *eh = image;
    if (eh->e_shnum || !eh->e_shoff)
        return eh->e_shnum;
    return ((const Elf64_Shdr *)(const void *)((const uint8_t *)image + eh->e_shoff))->sh_size;
}
