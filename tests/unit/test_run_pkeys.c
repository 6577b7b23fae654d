/*
 * test_run_pkeys.c — jitherald run reads the VM's code in the VM's thread, which may be
 * denied reading pages tagged with a protection key (node's wasm code): for the length of
 * an announcement the preload clears every key's access-disable bit, keeps the
 * write-disable bits, and gives the thread its own value back (adapters/preload/pkeys.c;
 * issue 22, defect 5). The arithmetic is checked everywhere; the register itself only
 * where the CPU and kernel have protection keys (this says which).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "preload.h"

int main(void)
{
    /* two bits per key: access-disable (2k), write-disable (2k+1) */
    CHECK_EQ(jhp_pkru_readable(0x55555554u), 0);            /* the kernel's default */
    CHECK_EQ(jhp_pkru_readable(0xfffffffcu), 0xaaaaaaa8u);  /* every key: read only */
    CHECK_EQ(jhp_pkru_readable(0x00000008u), 0x00000008u);  /* key 1 write-disabled: kept */
    CHECK_EQ(jhp_pkru_readable(0x00000004u), 0);            /* key 1 access-disabled */
    CHECK_EQ(jhp_pkru_readable(0), 0);

#if !defined(__x86_64__)
    /* PKRU is x86-64's (arm64's overlays are other registers): the preload does nothing */
    CHECK_EQ(jhp_pkeys_open(), 0);
    jhp_pkeys_close(0);
    printf("NOTE: not x86-64: the register part runs where the CPU has PKU\n");
    return check_done();
#else
    long pg = sysconf(_SC_PAGESIZE);
    int k = (int)syscall(SYS_pkey_alloc, 0, 0);
    if (k < 0) {
        /* no keys: open/close must do nothing (the instructions would fault) */
        CHECK_EQ(jhp_pkeys_open(), 0);
        jhp_pkeys_close(0);
        printf("NOTE: no protection keys on this machine (pkey_alloc: %s): the register part "
               "runs where the CPU has PKU\n", strerror(errno));
        return check_done();
    }
    volatile uint8_t *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 42;
    CHECK_EQ(syscall(SYS_pkey_mprotect, p, pg, PROT_READ, k), 0);
    uint32_t eax, edx;
    __asm__ volatile(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
    uint32_t denied = eax | 1u << (2 * k);
    __asm__ volatile(".byte 0x0f,0x01,0xef" : : "a"(denied), "c"(0), "d"(0) : "memory");
    uint32_t saved = jhp_pkeys_open();
    CHECK_EQ(saved, denied);
    CHECK_EQ(p[0], 42);                         /* readable meanwhile: no fault */
    jhp_pkeys_close(saved);
    __asm__ volatile(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
    CHECK_EQ(eax, denied);                      /* the thread's own rights back */
    printf("protection keys: key %d read during an announcement, the thread's rights restored\n", k);
    return check_done();
#endif
}
