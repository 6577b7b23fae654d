/*
 * deepbind.c — see preload.h. A library loaded with RTLD_DEEPBIND looks up its symbols in
 * its own scope first, so its calls of fopen, fprintf, write, mmap... bind to libc past
 * LD_PRELOAD and nothing it writes or maps would be heard. PHP loads opcache.so, which
 * holds its JIT and writes its perf map and jitdump, that way:
 *
 *     $ jitherald run -c gdb -- gdb --args php -d opcache.jit_debug=0x10 ... script.php
 *     (gdb) break TRACE_1_spin_4        # pending; hit once the tracing JIT compiled it
 *
 * So dlopen is interposed. After a load with RTLD_DEEPBIND, every GOT slot of the loaded
 * object (a relocation against an undefined function that left libc's definition there,
 * or the object's own PLT while not yet bound) whose symbol this library interposes is
 * pointed at our definition, which is what LD_PRELOAD gives every other object. The list of those calls is this library's own dynamic symbol table: one
 * list, no copy. Slots in the object's RELRO region (read-only since relocation; BIND_NOW)
 * are made writable for the store and read-only again. Only the object the call names is
 * rebound, not the libraries it brings in with it.
 *
 * Every other dlopen goes on with a jump, not a call (deepbind_jump.c), so libc still
 * sees the program as the caller: the caller's DT_RUNPATH and namespace decide where a bare
 * file name is looked for. A RTLD_DEEPBIND load is done from here, so a bare name in it is
 * looked for with this library's search path (PHP passes full paths). dlmopen is not
 * interposed.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

/* libc's dlopen, once known; dlopen's jump (deepbind_jump.c) goes there */
void *jhp_next_dlopen;

static void *next_dlopen(void)
{
    void *p = __atomic_load_n(&jhp_next_dlopen, __ATOMIC_RELAXED);
    if (!p) {
        p = dlsym(RTLD_NEXT, "dlopen");
        __atomic_store_n(&jhp_next_dlopen, p, __ATOMIC_RELAXED);
    }
    return p;
}

__attribute__((constructor)) static void deepbind_init(void) { next_dlopen(); }

/* This library's own definition of NAME, or NULL (libc's, or nobody's). */
static void *ours(void *self, const void *self_base, const char *name)
{
    if (!strcmp(name, "dlopen"))
        return NULL;
    void *p = dlsym(self, name);
    Dl_info i;
    return p && dladdr(p, &i) && i.dli_fbase == self_base ? p : NULL;
}

/* Does the slot hold what RTLD_DEEPBIND gave it instead of ours: the next definition
 * (libc's), or, not yet bound (lazy binding), an address inside the object itself (its
 * PLT)? Only such a slot is a word of the GOT; no relocation type is looked at. */
static bool bound_past_us(const struct link_map *lm, uintptr_t slot, const char *name)
{
    void *v = *(void *const *)slot;
    if (v && v == dlsym(RTLD_NEXT, name))
        return true;
    Dl_info i;
    return v && dladdr(v, &i) && (uintptr_t)i.dli_fbase == lm->l_addr && lm->l_addr;
}

struct relro { uintptr_t base, lo, hi; };

static int find_relro(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct relro *r = arg;
    if (info->dlpi_addr != r->base)
        return 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            r->lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            r->hi = r->lo + info->dlpi_phdr[i].p_memsz;
        }
    return 1;
}

static void store(uintptr_t slot, void *fn, const struct relro *r)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t page = slot & ~(uintptr_t)(pg - 1);
    bool ro = slot >= r->lo && slot < r->hi;
    /* by system call: our own mprotect is one of the calls the guard keeps apart */
    if (ro && syscall(SYS_mprotect, page, pg, PROT_READ | PROT_WRITE))
        return;
    __atomic_store_n((void **)slot, fn, __ATOMIC_RELAXED);
    if (ro)
        syscall(SYS_mprotect, page, pg, PROT_READ);
}

/* A d_ptr of the dynamic section: glibc relocates them in place where the section is
 * writable, not where it is read-only; either way an address inside the object. */
static uintptr_t dyn_ptr(const struct link_map *lm, ElfW(Addr) v)
{
    return v < lm->l_addr ? lm->l_addr + v : v;
}

static unsigned rebind(void *handle)
{
    struct link_map *lm;
    Dl_info me;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !dladdr((void *)&rebind, &me))
        return 0;
    void *self = dlopen(me.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    if (!self)
        return 0;
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    const ElfW(Rela) *rel[2] = { NULL, NULL };
    size_t relsz[2] = { 0, 0 };
    bool rela_plt = true;
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: sym = (const ElfW(Sym) *)dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_STRTAB: str = (const char *)dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_JMPREL: rel[0] = (const ElfW(Rela) *)dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: relsz[0] = d->d_un.d_val; break;
        case DT_RELA: rel[1] = (const ElfW(Rela) *)dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_RELASZ: relsz[1] = d->d_un.d_val; break;
        case DT_PLTREL: rela_plt = d->d_un.d_val == DT_RELA; break;
        }
    }
    unsigned n = 0;
    if (sym && str && rela_plt) {
        struct relro r = { .base = lm->l_addr };
        dl_iterate_phdr(find_relro, &r);
        for (int t = 0; t < 2; t++) {
            for (size_t i = 0; rel[t] && i < relsz[t] / sizeof *rel[t]; i++) {
                const ElfW(Rela) *e = &rel[t][i];
                const ElfW(Sym) *s = &sym[_ElfW(ELF, __ELF_NATIVE_CLASS, R_SYM)(e->r_info)];
                if (s->st_shndx != SHN_UNDEF || _ElfW(ELF, __ELF_NATIVE_CLASS, ST_TYPE)(s->st_info) != STT_FUNC)
                    continue;
                const char *name = str + s->st_name;
                void *fn = ours(self, me.dli_fbase, name);
                uintptr_t slot = lm->l_addr + e->r_offset;
                if (fn && bound_past_us(lm, slot, name)) {
                    store(slot, fn, &r);
                    n++;
                }
            }
        }
    }
    dlclose(self);
    return n;
}

/* The trampoline's way for a RTLD_DEEPBIND load (and for any load before our constructor:
 * then the caller is us). */
void *jhp_dlopen_deep(const char *file, int mode)
{
    void *(*real)(const char *, int) = (void *(*)(const char *, int))next_dlopen();
    if (!real)
        return NULL;
    void *h = real(file, mode);
    if (h && (mode & RTLD_DEEPBIND) && jhp_cfg.channels) {
        jhp_inside++;
        unsigned n = rebind(h);
        jhp_inside--;
        if (jhp_cfg.debug)
            jhp_warn("%s loaded with RTLD_DEEPBIND: %u of its calls bound to jitherald run's",
                     file ? file : "(main)", n);
    }
    return h;
}
