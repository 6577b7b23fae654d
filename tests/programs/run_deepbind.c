/*
 * run_deepbind.c — a VM whose JIT lives in a plugin loaded with RTLD_DEEPBIND, as PHP loads
 * opcache.so, for tests/integration/run_deepbind.sh. It knows nothing of jitherald. First
 * it loads the plugin by its bare name, which only this program's RUNPATH finds (so a
 * dlopen interposer that hid the caller from libc would fail it), and unloads it; then
 * loads it again by path with RTLD_DEEPBIND and runs its JIT (run_deepbind_vm.c), which
 * writes a perf map line with fopen + fprintf and calls the code.
 */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    void *h = dlopen("run_deepbind_vm.so", RTLD_LAZY);
    if (!h) {
        fprintf(stderr, "by bare name, through the program's RUNPATH: %s\n", dlerror());
        return 2;
    }
    dlclose(h);
    char exe[PATH_MAX], path[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return 3;
    exe[n] = 0;
    snprintf(path, sizeof path, "%s/deepbind/run_deepbind_vm.so", dirname(exe));
    h = dlopen(path, RTLD_NOW | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 4;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "vm_run");
    return run ? run() : 5;
}
