/*
 * pkeys.c — see preload.h (jhp_pkeys_open). Why: node 20 tags its wasm code with a memory
 * protection key (--wasm-memory-protection-keys, on by default), and a thread reads such
 * pages only while its PKRU register allows that key. jitherald reads the code it announces
 * (the frame guess, elfmap's copy, the audit log's bytes) in the VM's thread that wrote the
 * line, whose rights at that moment are the VM's business: for the length of an
 * announcement (no VM code runs meanwhile in this thread: a signal handler starts with the
 * kernel's default rights, and sigreturn gives back ours) every key's access-disable bit
 * is cleared — reading only, write-disable bits are kept — and the
 * thread's own value comes back after. process_vm_readv ignores keys, so the readability
 * probe cannot tell; a thread that could not read the code would fault (issue 22, defect
 * 5: the follower thread of old, created before the VM allocated its key, did).
 * Where the CPU or the kernel has no protection keys (no OSPKE), this does nothing: the
 * instructions would fault, and no page can carry a key anyway.
 */
#include "preload.h"

#if defined(__x86_64__)
#include <cpuid.h>

static int ospke = -1;          /* -1 not asked yet */

static bool have_keys(void)
{
    if (ospke < 0) {
        unsigned a, b, c, d;
        ospke = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 4)) ? 1 : 0;
    }
    return ospke == 1;
}

static uint32_t rdpkru(void)
{
    uint32_t eax, edx;
    __asm__ volatile(".byte 0x0f, 0x01, 0xee" : "=a"(eax), "=d"(edx) : "c"(0));
    return eax;
}

static void wrpkru(uint32_t v)
{
    __asm__ volatile(".byte 0x0f, 0x01, 0xef" : : "a"(v), "c"(0), "d"(0) : "memory");
}
#else
static bool have_keys(void) { return false; }
static uint32_t rdpkru(void) { return 0; }
static void wrpkru(uint32_t v) { (void)v; }
#endif

/* PKRU: two bits per key, access-disable (bit 2k) and write-disable (bit 2k+1). */
uint32_t jhp_pkru_readable(uint32_t pkru)
{
    return pkru & ~0x55555555u;
}

uint32_t jhp_pkeys_open(void)
{
    if (!have_keys())
        return 0;
    uint32_t old = rdpkru(), want = jhp_pkru_readable(old);
    if (want != old)
        wrpkru(want);
    return old;
}

void jhp_pkeys_close(uint32_t saved)
{
    if (have_keys() && rdpkru() != saved)
        wrpkru(saved);
}
