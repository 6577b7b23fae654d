/*
 * elfmap_witness.c — see elfmap_witness.h. A profiler's view, rebuilt by hand: the mapping
 * from /proc/self/maps, the file's program headers, .symtab and bytes.
 */
#include "elfmap_witness.h"

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ew_verdict_str(enum ew_verdict v)
{
    switch (v) {
    case EW_OK: return "named, same bytes";
    case EW_ANON: return "not in a file mapping";
    case EW_NOFILE: return "mapped from a file that is not a readable ELF image";
    case EW_NOSYM: return "the image has no symbol with that name, address and size";
    case EW_BYTES: return "the image's bytes differ from the code";
    case EW_NVERDICT: break;
    }
    return "?";
}

/* The mapping holding addr: its start, file offset and path ("" when anonymous). */
static bool mapping(uintptr_t addr, uintptr_t *start, uint64_t *off, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    bool found = false;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        unsigned long long o;
        int n = 0;
        if (sscanf(line, "%lx-%lx %*4s %llx %*s %*s %n", &s, &e, &o, &n) < 3)
            continue;
        if (addr < s || addr >= e)
            continue;
        char *p = line + n;
        p[strcspn(p, "\n")] = 0;
        snprintf(path, len, "%s", p);
        *start = s;
        *off = o;
        found = true;
        break;
    }
    if (f)
        fclose(f);
    return found;
}

static enum ew_verdict in_file(const struct ew_fn *fn, const uint8_t *img, size_t size,
                               uint64_t foff)
{
    const Elf64_Ehdr *eh = (const void *)img;
    uintptr_t addr = (uintptr_t)fn->addr;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_shoff > size ||
        eh->e_shnum > (size - eh->e_shoff) / sizeof(Elf64_Shdr) || eh->e_phoff > size ||
        eh->e_phnum > (size - eh->e_phoff) / sizeof(Elf64_Phdr))
        return EW_NOFILE;
    /* perf maps an address to a file offset through the PT_LOAD that covers it; that must
     * agree with where the kernel maps the file, or perf names the wrong bytes. */
    const Elf64_Phdr *ph = (const void *)(img + eh->e_phoff);
    bool covered = false;
    for (int i = 0; i < eh->e_phnum && !covered; i++)
        covered = ph[i].p_type == PT_LOAD && addr >= ph[i].p_vaddr &&
                  addr + fn->size <= ph[i].p_vaddr + ph[i].p_filesz &&
                  addr - ph[i].p_vaddr + ph[i].p_offset == foff;
    if (!covered)
        return EW_NOSYM;
    const Elf64_Shdr *sh = (const void *)(img + eh->e_shoff);
    bool named = false;
    for (int i = 0; i < eh->e_shnum && !named; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum ||
            sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
            continue;
        const Elf64_Shdr *st = &sh[sh[i].sh_link];
        if (st->sh_offset > size || st->sh_size > size - st->sh_offset)
            continue;
        const char *strs = (const char *)img + st->sh_offset;
        const Elf64_Sym *sym = (const void *)(img + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym && !named; k++)
            named = ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_value == addr &&
                    sym[k].st_size == fn->size && sym[k].st_name < st->sh_size &&
                    !strncmp(strs + sym[k].st_name, fn->name, st->sh_size - sym[k].st_name);
    }
    if (!named)
        return EW_NOSYM;
    if (foff > size || fn->size > size - foff || memcmp(img + foff, fn->addr, fn->size))
        return EW_BYTES;
    return EW_OK;
}

enum ew_verdict ew_check_one(const struct ew_fn *fn, char *path_out, size_t pathlen)
{
    char path[4096];
    uintptr_t start = 0;
    uint64_t off = 0;
    if (!mapping((uintptr_t)fn->addr, &start, &off, path, sizeof path) || path[0] != '/')
        return EW_ANON;
    if (path_out)
        snprintf(path_out, pathlen, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || st.st_size <= 0) {
        if (fd >= 0)
            close(fd);
        return EW_NOFILE;
    }
    void *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (img == MAP_FAILED)
        return EW_NOFILE;
    enum ew_verdict v = in_file(fn, img, (size_t)st.st_size,
                                off + ((uintptr_t)fn->addr - start));
    munmap(img, (size_t)st.st_size);
    return v;
}

int ew_mapping_of(const void *addr, char perms[5], char *path, size_t pathlen)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        int n = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &s, &e, perms, &n) < 3)
            continue;
        if ((uintptr_t)addr >= s && (uintptr_t)addr < e) {
            char *p = line + n;
            p[strcspn(p, "\n")] = 0;
            snprintf(path, pathlen, "%s", p);
            found = 1;
            break;
        }
    }
    if (f)
        fclose(f);
    return found;
}

size_t ew_check(const struct ew_fn *fns, size_t n, size_t *counts)
{
    size_t ok = 0;
    if (counts)
        memset(counts, 0, EW_NVERDICT * sizeof *counts);
    for (size_t i = 0; i < n; i++) {
        enum ew_verdict v = ew_check_one(&fns[i], NULL, 0);
        ok += v == EW_OK;
        if (counts)
            counts[v]++;
    }
    return ok;
}

void ew_emit_ret(uint8_t *p, uint32_t v)
{
    p[0] = 0xb8;
    memcpy(p + 1, &v, 4);
    p[5] = 0xc3;
}
