/*
 * elfmap_valgrind.c — under valgrind, callgrind's final dump still finds every image.
 *
 * Callgrind names a function when it first runs it, but looks up the file and line of each
 * of its instructions only when it writes the profile, at exit. By then valgrind has
 * dropped the symbols of every image whose code the JIT unmapped (LuaJIT frees its code
 * areas in lua_close, after the adapter's jh_close) or whose R+W page went: each such
 * function's cost then lands on a second row, "???:TRACE_1 ..." without its file and
 * image, beside "./hot.lua:TRACE_1 ... [jit-4242-2.elf]".
 *
 * So under valgrind elfmap keeps its images' R+W pages until exit (jh_close leaves them),
 * remembers each image still mapping code when the context closes, and at exit
 * maps each one back over its code's addresses, read+exec, where those are free again
 * (never over anything: MAP_FIXED_NOREPLACE), with a new R+W page from a reservation of
 * its own: valgrind reads the image once more and the dump finds every line. Code removed
 * before the close is back in anonymous memory by then (or its addresses hold newer
 * code): its lines stay unknown to the dump, as for any code unmapped before exit. The library stays loaded until
 * exit under valgrind (LuaJIT's FFI dlcloses it in lua_close, before freeing its code),
 * so that the exit handler runs after the JIT is done.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/lock.h"
#include "base/vec.h"
#include "channels/elfmap.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct vg_run {
    uintptr_t lo, hi;
    uint64_t off;
};

struct vg_image {
    char *path;
    struct vg_run *runs;
    size_t nruns;
    uint64_t rw_off;
};

JH__LOCK_DEFINE(static, vg_lock, "elfmap valgrind")
static struct {
    struct vg_image *a;
    size_t n, cap;
    bool armed;
} vg;

/* Map img back where its code was, where that is free: 1 if any of it was. */
static int remap(const struct vg_image *img, uint8_t *rw)
{
    int fd = open(img->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int any = 0;
    for (size_t i = 0; i < img->nruns; i++) {
        const struct vg_run *r = &img->runs[i];
        void *p = mmap((void *)r->lo, r->hi - r->lo, PROT_READ | PROT_EXEC,
                       MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, (off_t)r->off);
        if (p == (void *)r->lo)
            any = 1;
        else if (p != MAP_FAILED)
            munmap(p, r->hi - r->lo);   /* a kernel that took the address as a hint */
    }
    if (any && mmap(rw, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_FIXED, fd, (off_t)img->rw_off) == MAP_FAILED)
        any = 0;
    close(fd);
    return any;
}

static void vg_exit(void)
{
    jh__lock(&vg_lock);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* One reservation for all the R+W pages: it fits no small gap, so no page of it
     * overlaps a mapping valgrind remembers of another object (see jh__em_rw_get). */
    uint8_t *rw = vg.n ? mmap(NULL, vg.n * page, PROT_NONE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : MAP_FAILED;
    /* Newest first: where two images held the same addresses, the later code's wins. */
    for (size_t i = vg.n; rw != MAP_FAILED && i-- > 0;)
        remap(&vg.a[i], rw + i * page);
    jh__unlock(&vg_lock);
}

/* Keep the library loaded until exit, and run vg_exit then. */
static void arm(void)
{
    Dl_info info;
    if (dladdr((void *)vg_exit, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    atexit(vg_exit);
    vg.armed = true;
}

void jh__em_vg_remember(struct elfmap *m, const struct region *r)
{
    if (!m->valgrind || !r->path || r->foreign)
        return;
    struct vg_image img = { .rw_off = em_rw_off(m) };
    size_t cap = 0;
    for (uintptr_t a = span_lo(r), lo; next_run(m, r, &a, &lo);) {
        if (JH__VEC_RESERVE(img.runs, cap, img.nruns + 1))
            goto fail;
        img.runs[img.nruns++] = (struct vg_run){ lo, a, off_of(m, r, lo) };
    }
    if (!img.nruns || !(img.path = strdup(r->path)))
        goto fail;
    jh__lock(&vg_lock);
    if (!vg.armed)
        arm();
    if (JH__VEC_RESERVE(vg.a, vg.cap, vg.n + 1) == 0) {
        vg.a[vg.n++] = img;
        img.path = NULL;
        img.runs = NULL;
    }
    jh__unlock(&vg_lock);
fail:
    free(img.path);
    free(img.runs);
}
