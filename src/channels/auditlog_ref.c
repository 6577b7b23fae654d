/*
 * auditlog_ref.c — code the audit log records by reference to a file instead of copying it.
 *
 *     $ jitherald run -c auditlog -- node -e 1
 *     $ jitherald log run-4242.jhlog show Builtin:ArrayPrototypePush
 *     Builtin:ArrayPrototypePush  #209  0x19011c0  2416 bytes  added 0.024021 s, ...
 *       code: /usr/bin/node at offset 0x15011c0, build-id ebeaf2df...: read from /usr/bin/node
 *            19011c0:  55                             push rbp
 *
 * V8 lists its ~2,200 builtins at start: 1.26 MB of code that lies in node's own text.
 * Copying their bytes into the log was 1.26 of its 2.2 MB and about half of its cost at
 * node's start (docs/run.md). Code that is, byte for byte, part of an executable segment
 * a loaded object maps from its file (the program or a library) is recorded as where it
 * lies: the file's path, its GNU build-id and the offset (docs/auditlog-format.md,
 * `code_file`). "Byte for byte" is checked, not assumed: the code is compared with the
 * file itself (a read-only mapping of the segment, taken once per object; its pages are
 * the page cache the object's own mapping uses, so no I/O). Code a JIT patched in place
 * (mprotect, then a store: a private copy of the page) differs and is copied, and so is
 * anything outside a loaded object (JIT code, elfmap's images, memfd).
 *
 * The object's build-id is read from its notes in memory, and the file opened must hold
 * the same notes: a file replaced on disk since the program started gives no reference.
 * Linux only (the loader's dl_iterate_phdr); elsewhere everything is copied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/os.h"
#include "channels/auditlog.h"
#include "fmt/build_id.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define AL_OBJS 16

/* One executable segment of a loaded object, as met. */
struct al_obj {
    uint64_t lo, hi;                /* its file-backed part in memory */
    const uint8_t *file;            /* the file's bytes for lo: NULL when unusable */
    void *map;
    size_t map_len;
    uint64_t off;                   /* file offset of lo */
    char *path;
    size_t path_len;
    uint8_t id[JH__AL_BUILD_ID_MAX];
    uint32_t idlen;
};

struct al_objs {
    struct al_obj o[AL_OBJS];
    unsigned n;
};

/* What dl_iterate_phdr found for an address. */
struct seg_find {
    uint64_t addr;
    bool found;
    bool main;                      /* the program itself (the loader names it "") */
    char name[PATH_MAX];
    uint64_t lo, hi, off;
    const uint8_t *notes;           /* the object's PT_NOTE, in memory */
    uint64_t notes_len, notes_off;
    uint8_t id[JH__AL_BUILD_ID_MAX];
};

static int find_seg(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct seg_find *f = arg;
    const ElfW(Phdr) *text = NULL, *note = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && f->addr >= lo &&
            f->addr - lo < ph->p_filesz)
            text = ph;
        else if (ph->p_type == PT_NOTE && !note &&
                 jh__note_build_id((const uint8_t *)(uintptr_t)lo, ph->p_filesz, f->id))
            note = ph;      /* the one holding the build-id (another holds properties) */
    }
    if (!text)
        return 0;
    f->found = true;
    f->main = !info->dlpi_name || !info->dlpi_name[0];
    snprintf(f->name, sizeof f->name, "%s", f->main ? "" : info->dlpi_name);
    f->lo = info->dlpi_addr + text->p_vaddr;
    f->hi = f->lo + text->p_filesz;
    f->off = text->p_offset;
    if (note) {
        f->notes = (const uint8_t *)(uintptr_t)(info->dlpi_addr + note->p_vaddr);
        f->notes_len = note->p_filesz;
        f->notes_off = note->p_offset;
    }
    return 1;
}

/* The file behind f, checked and mapped into o (o->file stays NULL when it cannot be:
 * no build-id, not a regular file, notes that differ from the loaded object's). */
static void take(struct al_obj *o, const struct seg_find *f)
{
    char path[PATH_MAX];
    if (f->main)
        jh__exe_path(path, sizeof path);
    else
        snprintf(path, sizeof path, "%s", f->name);
    o->lo = f->lo, o->hi = f->hi, o->off = f->off;
    if (!f->notes || !(o->idlen = jh__note_build_id(f->notes, f->notes_len, o->id)) || path[0] != '/')
        return;     /* (the vdso, an object without a build-id) */
    /* the program's own inode, even if a new one now lies at its path */
    int fd = open(f->main ? "/proc/self/exe" : path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    struct stat sb;
    uint8_t *notes = f->notes_len <= 4096 ? malloc(f->notes_len ? f->notes_len : 1) : NULL;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t moff = f->off & ~(uint64_t)(page - 1), mlen = f->off - moff + (f->hi - f->lo);
    if (notes && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
        (uint64_t)sb.st_size >= f->off + (f->hi - f->lo) &&
        pread(fd, notes, f->notes_len, (off_t)f->notes_off) == (ssize_t)f->notes_len &&
        !memcmp(notes, f->notes, f->notes_len)) {
        void *m = mmap(NULL, mlen, PROT_READ, MAP_PRIVATE, fd, (off_t)moff);
        if (m != MAP_FAILED && (o->path = strdup(path))) {
            o->map = m, o->map_len = mlen;
            o->path_len = strlen(o->path);
            o->file = (const uint8_t *)m + (f->off - moff);
        } else if (m != MAP_FAILED) {
            munmap(m, mlen);
        }
    }
    free(notes);
    close(fd);
}

/* The segment holding [start, start + size), met before or now; NULL if none. */
static const struct al_obj *obj_for(struct al_state *st, uint64_t start, uint64_t size)
{
    struct al_objs *os = st->objs;
    for (unsigned i = 0; os && i < os->n; i++)
        if (start >= os->o[i].lo && start < os->o[i].hi)
            return size <= os->o[i].hi - start ? &os->o[i] : NULL;
#ifdef DLFO_STRUCT_HAS_EH_DBASE
    struct dl_find_object r;        /* lock-free: JIT code costs no walk of the objects */
    if (_dl_find_object((void *)(uintptr_t)start, &r) != 0)
        return NULL;
#endif
    struct seg_find f = { .addr = start };
    if (!dl_iterate_phdr(find_seg, &f) || !f.found)
        return NULL;
    if (!os && !(os = st->objs = calloc(1, sizeof *os)))
        return NULL;
    if (os->n == AL_OBJS)
        return NULL;                /* so many objects with code in them: copied */
    struct al_obj *o = &os->o[os->n++];
    take(o, &f);
    return size <= o->hi - start ? o : NULL;
}

bool jh__al_code_ref(struct al_state *st, uint64_t start, uint64_t size, struct jh__al_ref *ref)
{
    const struct al_obj *o = obj_for(st, start, size);
    if (!o || !o->file || memcmp((const void *)(uintptr_t)start, o->file + (start - o->lo), size))
        return false;
    ref->path = o->path;
    ref->path_len = o->path_len;
    ref->build_id = o->id;
    ref->build_id_len = o->idlen;
    ref->offset = o->off + (start - o->lo);
    return true;
}

void jh__al_refs_free(struct al_state *st)
{
    struct al_objs *os = st->objs;
    for (unsigned i = 0; os && i < os->n; i++) {
        if (os->o[i].map)
            munmap(os->o[i].map, os->o[i].map_len);
        free(os->o[i].path);
    }
    free(os);
    st->objs = NULL;
}

#else

bool jh__al_code_ref(struct al_state *st, uint64_t start, uint64_t size, struct jh__al_ref *ref)
{
    (void)st, (void)start, (void)size, (void)ref;
    return false;
}

void jh__al_refs_free(struct al_state *st)
{
    (void)st;
}

#endif
