/*
 * unwind_detect.c — which unwinders the process has (decided once per process, at the
 * first open), how to reach them, and the hooks tests and benchmarks use to force a mode.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "fmt/cfi.h"
#include "channels/unwind.h"

static uint8_t probe_code[64] __attribute__((aligned(16)));
static uint64_t probe_run[2][32];
static void *probe_ob[2][8];

/* 1 if libgcc keeps objects in a list (GCC <= 12), 0 for the b-tree (GCC 13+), < 0 if the
 * probe could not run. */
static int probe_list(void)
{
    struct jh__func f = { .start = (uintptr_t)probe_code, .size = 16,
                             .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                             .fp_set_end = 4 };
    struct jh__cfi_opts o = { .arch = JH__ARCH_HOST, .ptr = JH__CFI_ABS };
    struct jh__buf b = { 0 };
    int n = jh__cfi_eh_frame(&b, &o, &f, 1, NULL);
    if (n != 1 || b.len > sizeof probe_run[0]) {
        jh__buf_free(&b);
        return -EPROTO;
    }
    memcpy(probe_run[0], b.p, b.len);
    memcpy(probe_run[1], b.p, b.len);
    jh__buf_free(&b);
    jh__uw.reg_info(probe_run[0], probe_ob[0]);
    jh__uw.reg_info(probe_run[1], probe_ob[1]);
    void *got = jh__uw.dereg_info(probe_run[1]);
    if (got == probe_ob[1]) {
        jh__uw.dereg_info(probe_run[0]);
        return 1;
    }
    return 0;                   /* the b-tree refused run 1 and has just dropped run 0 */
}

/* _Unwind_Find_FDE of the library that holds sym (LLVM's libunwind has its own, which
 * sees what __unw_add_dynamic_fde and its __register_frame registered), or NULL. */
static void *find_fde_of(void *sym)
{
    Dl_info info;
    if (!dladdr(sym, &info) || !info.dli_fname)
        return NULL;
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    void *f = h ? dlsym(h, "_Unwind_Find_FDE") : NULL;
    if (h)
        dlclose(h);             /* NOLOAD took a reference: the library stays loaded */
    return f;
}

/*
 * Which unwinders to feed. A process may hold both libgcc_s (libstdc++'s exceptions,
 * glibc's backtrace) and LLVM's libunwind (a library built with clang/libc++): each only
 * sees what is registered with it, so both are fed. libgcc is looked up in libgcc_s.so.1
 * itself, never through RTLD_DEFAULT alone when LLVM's libunwind is loaded, because LLVM
 * exports look-alike __register_frame* entry points with other semantics.
 */
void jh__uw_detect(void)
{
    jh__uw.page = (size_t)sysconf(_SC_PAGESIZE);
    *(void **)&jh__uw.dyn_register = dlsym(RTLD_DEFAULT, "_U_dyn_register");
    *(void **)&jh__uw.dyn_cancel = dlsym(RTLD_DEFAULT, "_U_dyn_cancel");
    jh__uw.dyn = jh__uw.dyn_register && jh__uw.dyn_cancel;

    *(void **)&jh__uw.llvm_add = dlsym(RTLD_DEFAULT, "__unw_add_dynamic_fde");
    *(void **)&jh__uw.llvm_remove = dlsym(RTLD_DEFAULT, "__unw_remove_dynamic_fde");
    jh__uw.llvm = jh__uw.llvm_add && jh__uw.llvm_remove && (!jh__uw.forced || jh__uw.forced == JH__UW_LLVM);
    if (jh__uw.llvm)
        jh__uw.find_fde_llvm = find_fde_of((void *)jh__uw.llvm_add);
    if (jh__uw.forced == JH__UW_LLVM)
        return;
    /* A C program may not have libgcc_s loaded yet: glibc's backtrace() dlopens the same
     * file when first called, so registering there is registering with it. */
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h && !jh__uw.llvm)
        h = dlopen("libgcc_s.so.1", RTLD_NOW);
    if (!h && jh__uw.llvm)
        return;
    if (!h)
        h = RTLD_DEFAULT;       /* no libgcc_s: maybe a static libgcc_eh the program exports */
    *(void **)&jh__uw.reg_info = dlsym(h, "__register_frame_info");
    *(void **)&jh__uw.dereg_info = dlsym(h, "__deregister_frame_info");
    *(void **)&jh__uw.reg_frame = dlsym(h, "__register_frame");
    *(void **)&jh__uw.dereg_frame = dlsym(h, "__deregister_frame");
    if (!jh__uw.reg_info || !jh__uw.dereg_info || !jh__uw.reg_frame || !jh__uw.dereg_frame)
        return;
    *(void **)&jh__uw.find_fde_gcc = dlsym(h, "_Unwind_Find_FDE");
    if (jh__uw.find_fde_gcc == jh__uw.find_fde_llvm)
        jh__uw.find_fde_llvm = NULL;    /* one library: ask it once */
    int list = probe_list();
    if (list < 0)
        return;
    if (jh__uw.forced == JH__UW_PERFN)
        jh__uw.mode = JH__UW_PERFN;
    else if (jh__uw.forced == JH__UW_LIST)
        jh__uw.mode = list ? JH__UW_LIST : JH__UW_NONE;
    else
        jh__uw.mode = list ? JH__UW_LIST : JH__UW_PERFN;
}


const char *jh__uw_mode_name(int m)
{
    static const char *const names[] = { "no libgcc", "libgcc (grouped runs)",
                                         "libgcc b-tree (one run per function)" };
    return m >= 0 && m <= JH__UW_PERFN ? names[m] : "?";
}

/* ---- for tests and benchmarks --------------------------------------------------------- */
void jh__unwind_get_stats(struct jh__unwind_stats *st)
{
    jh__lock(&jh__uw_lock);
    memset(st, 0, sizeof *st);
    st->mode = jh__uw.mode == JH__UW_NONE && jh__uw.llvm ? JH__UW_LLVM : jh__uw.mode;
    st->llvm = jh__uw.llvm;
    st->libunwind = jh__uw.dyn;
    st->segments = jh__uw.nseg;
    for (size_t i = 0; i < jh__uw.nseg; i++)
        if (jh__uw.seg[i]->n > st->largest)
            st->largest = jh__uw.seg[i]->n;
    st->live = jh__uw.live;
    st->dead = jh__uw.dead;
    st->fdes_copied = jh__uw.copied;
    st->rebuilds = jh__uw.rebuilds;
    st->retired = jh__uw.retired.len - jh__uw.retired.head + jh__uw.uncancel.len - jh__uw.uncancel.head;
    st->shadowed = jh__uw.shadowed;
    st->hosted = jh__uw.hosted;
    st->fill_grown = jh__uw.fill_grown;
    st->fdes_reused = jh__uw.reused;
    jh__unlock(&jh__uw_lock);
}

int jh__unwind_force_mode(int mode)
{
    jh__lock(&jh__uw_lock);
    int err = jh__uw.detected ? -EBUSY : 0;
    if (!err)
        jh__uw.forced = mode;
    jh__unlock(&jh__uw_lock);
    return err;
}

void jh__unwind_tune(size_t max_fdes, size_t max_runs)
{
    jh__lock(&jh__uw_lock);
    if (max_fdes)
        jh__uw.max_fdes = max_fdes;
    if (max_runs)
        jh__uw.max_runs = max_runs;
    jh__unlock(&jh__uw_lock);
}

