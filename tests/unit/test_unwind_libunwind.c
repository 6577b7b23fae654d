/*
 * test_unwind_libunwind.c — unwind_groups.c with nongnu libunwind loaded (dlopen
 * RTLD_GLOBAL, as if the program were linked with -lunwind): the same runs also go to its
 * _U_dyn_register list as tables carved near the code, and after every churn phase
 * unw_get_proc_info_by_ip must give each live function's start (and none for a removed
 * one after a flush), besides libgcc's _Unwind_Find_FDE. Under make test-arm64 the arm64
 * library is not in qemu's sysroot: it is loaded from $JH_ARM64_DEBS (scripts/arm64-debs.sh
 * unpacks Debian's there), its liblzma first, by path, so that its DT_NEEDED finds it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fmt/arch.h"
#include "unwind_groups.h"

static void *open_libunwind(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_GLOBAL);
    const char *debs = getenv("JH_ARM64_DEBS");
    if (!h && debs && *debs) {
        char p[512];
        snprintf(p, sizeof p, "%s/lib/aarch64-linux-gnu/liblzma.so.5", debs);
        dlopen(p, RTLD_NOW | RTLD_GLOBAL);
        snprintf(p, sizeof p, "%s/usr/lib/aarch64-linux-gnu/libunwind.so.8", debs);
        h = dlopen(p, RTLD_NOW | RTLD_GLOBAL);
    }
    return h;
}

int main(void)
{
    /* libunwind's local names carry the architecture as uname -m says it: _ULx86_64_... */
    char as_name[64], pi_name[64];
    snprintf(as_name, sizeof as_name, "_UL%s_local_addr_space", JH__ARCH_HOST->log_name);
    snprintf(pi_name, sizeof pi_name, "_UL%s_get_proc_info_by_ip", JH__ARCH_HOST->log_name);
    void *h = open_libunwind();
    void **as = h ? dlsym(h, as_name) : NULL;
    proc_info_fn *pi = h ? (proc_info_fn *)dlsym(h, pi_name) : NULL;
    if (!as || !pi)
        SKIP("nongnu libunwind (libunwind.so.8, Debian libunwind8; for arm64: "
             "scripts/arm64-debs.sh, $JH_ARM64_DEBS) not found: run scripts/install-deps.sh test");
    struct unwind_groups cfg = { .n = 6000, .unw_proc_info = pi, .unw_as = *as };
    return unwind_groups_run(&cfg);
}
