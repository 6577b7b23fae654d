/*
 * run_deepbind_vm.c — the plugin run_deepbind.c loads with RTLD_DEEPBIND (linked with
 * BIND_NOW and RELRO, as Debian builds PHP's opcache.so): a one-function JIT that writes
 * its perf map with fopen and fprintf, bound to libc in its own scope, and then calls
 * the function, deepbind_fn.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((visibility("default"))) int vm_run(void)
{
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return 10;
#if defined(__x86_64__)
    static const unsigned char fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x5d, 0xc3 };
#elif defined(__aarch64__)
    static const unsigned char fn[] = { 0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91,
                                        0x1f, 0x20, 0x03, 0xd5, 0xfd, 0x7b, 0xc1, 0xa8,
                                        0xc0, 0x03, 0x5f, 0xd6 };
#endif
    memcpy(code, fn, sizeof fn);
    __builtin___clear_cache((char *)code, (char *)code + sizeof fn);
    if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
        return 11;
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f)
        return 12;
    setlinebuf(f);
    fprintf(f, "%lx %zx deepbind_fn\n", (unsigned long)code, sizeof fn);
    ((void (*)(void))code)();
    fclose(f);
    unlink(path);
    return 0;
}
