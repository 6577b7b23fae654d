/*
 * guard.c — see preload.h. Why interpose the VM's page calls:
 *
 * 1. elfmap replaces announced code pages by a private mapping of a file holding the same
 *    bytes, and relies on its caller holding the code lock, so that no byte is written
 *    between its snapshot and the swap (docs/elfmap.md, "contract"). A VM that does not
 *    know about jitherald cannot take part, but every way it has to make a page writable,
 *    unmap it or map over it goes through these calls. They are kept apart from the swaps
 *    without a lock held across the VM's call: each VM call publishes its range (an
 *    intent) for the time of its system call; a swap publishes its window and waits for
 *    the intents in flight there to end; a VM call whose range meets a swap in progress
 *    waits for it to end first. Sequentially consistent stores and loads on both sides
 *    (Dekker's rule): no VM call and no swap on the same pages can both miss the other.
 *    The waits are short (one system call, one swap); a swap that waited 100 ms for an
 *    intent (a thread stopped in its call, or one a signal handler left by longjmp) is
 *    skipped. A VM call waits for a swap 1 s at most: the swapping thread allocates, and
 *    an allocator that calls madvise under its own lock (tcmalloc) would otherwise wait
 *    for a swap that waits for that lock. Past that, the call goes on and elfmap swaps no
 *    more pages in this process (said once). A signal handler in the middle of one of
 *    these calls publishes an intent of its own: nothing is held that it could wait for
 *    forever.
 * 2. Code the VM unmaps, maps over, moves or frees (madvise) is gone: what was announced
 *    there is removed (jhp_forget), so a reused page is named again (issue 22, defect 7)
 *    and freed code reads zeros (elfmap gives emptied pages back to anonymous memory
 *    before the VM's madvise, defect 8). With elfmap, the removal happens inside the
 *    VM's intent, after an munmap (the pages are gone: nothing to give back) and before a
 *    madvise; new code announced there meanwhile waits for it.
 * 3. A jitdump is found as perf finds it: the VM maps it executable (hear.c hears it).
 * What remains is what does not call libc: a raw `syscall` instruction, or code written
 * through a second, shared mapping of the same memory (elfmap never swaps shared pages,
 * nor writable ones: docs/run.md, "what is not covered").
 *
 * The calls reach the kernel by syscall(2), not through dlsym(RTLD_NEXT): dlsym may
 * allocate, and an allocation may mmap, before this library's constructor has run.
 */
#include "preload.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <valgrind/valgrind.h>

#include "base/clock.h"

atomic_bool jhp_guard_on;

#define INTENTS 64
#define SWAP_WAIT_NS (100ull * 1000 * 1000)
#define VM_WAIT_NS (1000ull * 1000 * 1000)

/* A VM call's range while it is in flight: hi 0 free, 1 being claimed. */
struct intent {
    _Atomic uint64_t lo, hi;
};
static struct intent intents[INTENTS];
static _Atomic uint64_t swap_lo, swap_hi;  /* the swap in progress: hi 0 none */
static atomic_bool swaps_off;               /* a VM call waited VM_WAIT_NS: no more swaps */

static bool meets(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi)
{
    return a < hi && lo < b;
}

static void pause_briefly(unsigned *spins)
{
    if (++*spins < 64) {
        sched_yield();
    } else {
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
}

/* A VM call on [lo, hi) begins: the slot to end it with, or -1 (no guard). */
static int intent_begin(uint64_t lo, uint64_t hi)
{
    if (jhp_inside || !atomic_load(&jhp_guard_on) || hi <= lo)
        return -1;
    unsigned spins = 0;
    uint64_t deadline = 0;
    for (;;) {
        while (meets(lo, hi, atomic_load(&swap_lo), atomic_load(&swap_hi)) &&
               !atomic_load(&swaps_off)) {
            if (!deadline)
                deadline = jh__now_ns() + VM_WAIT_NS;
            else if (jh__now_ns() > deadline && !atomic_exchange(&swaps_off, true))
                jhp_warn("elfmap: a page call of the VM waited 1 s for a swap (its allocator "
                         "under a lock the swap needs?): no more pages are swapped here");
            pause_briefly(&spins);
        }
        for (int i = 0; i < INTENTS; i++) {
            uint64_t zero = 0;
            if (!atomic_compare_exchange_strong(&intents[i].hi, &zero, 1))
                continue;
            atomic_store(&intents[i].lo, lo);
            atomic_store(&intents[i].hi, hi);
            if (!meets(lo, hi, atomic_load(&swap_lo), atomic_load(&swap_hi)) ||
                atomic_load(&swaps_off))
                return i;
            atomic_store(&intents[i].hi, 0);    /* a swap began meanwhile: after it */
            break;
        }
        pause_briefly(&spins);
    }
}

static void intent_end(int i)
{
    if (i >= 0)
        atomic_store(&intents[i].hi, 0);
}

bool jhp_swap_begin(uint64_t lo, uint64_t hi)
{
    if (atomic_load(&swaps_off))
        return false;
    atomic_store(&swap_lo, lo);
    atomic_store(&swap_hi, hi);
    uint64_t deadline = jh__now_ns() + SWAP_WAIT_NS;
    unsigned spins = 0;
    for (int i = 0; i < INTENTS; i++) {
        for (;;) {
            uint64_t h = atomic_load(&intents[i].hi);
            if (!h || (h != 1 && !meets(lo, hi, atomic_load(&intents[i].lo), h)))
                break;
            if (jh__now_ns() > deadline) {
                jhp_swap_end();
                return false;
            }
            pause_briefly(&spins);
        }
    }
    return true;
}

void jhp_swap_end(void)
{
    atomic_store(&swap_hi, 0);
}

void jhp_guard_child(void)
{
    /* The threads whose calls were in flight do not exist here. */
    for (int i = 0; i < INTENTS; i++)
        atomic_store(&intents[i].hi, 0);
    atomic_store(&swap_hi, 0);
}

/*
 * Pages found readable, until the VM's next page call: every interposed call that could
 * take a page away counts itself here before its system call, so a page found readable at
 * the count of now has not been unmapped or protected since (what another thread does
 * meanwhile, the probe could not have seen either). VMs put many functions on a page:
 * Erlang's 16,575 functions cost a probe (a process_vm_readv) each, 10% of its run.
 */
static _Atomic uint64_t page_calls;
#define KNOWN 256
static struct { _Atomic uint64_t page, calls; } known[KNOWN];

static void page_call(void) { atomic_fetch_add(&page_calls, 1); }

bool jhp_readable(uint64_t start, uint64_t size)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t first = start / (uint64_t)pg, last = (start + size - 1) / (uint64_t)pg;
    uint64_t now = atomic_load(&page_calls) + 1;    /* + 1: 0 means never */
    bool all_known = last - first < KNOWN;
    for (uint64_t p = first; p <= last && all_known; p++)
        all_known = atomic_load(&known[p % KNOWN].page) == p &&
                    atomic_load(&known[p % KNOWN].calls) == now;
    if (all_known)
        return true;
    uint64_t a = first * (uint64_t)pg, end = start + size;
    static uint8_t sink[1024];          /* under the lock: not on the VM thread's stack */
    static struct iovec local[1024], remote[1024];
    while (a < end) {
        int n = 0;
        for (; n < 1024 && a < end; n++, a += (uint64_t)pg) {
            local[n] = (struct iovec){ &sink[n], 1 };
            remote[n] = (struct iovec){ (void *)(uintptr_t)(a < start ? start : a), 1 };
        }
        /* reads up to the first page that cannot be read */
        if (process_vm_readv(jhp_pid, local, (unsigned long)n, remote, (unsigned long)n, 0) != n)
            return false;
    }
    for (uint64_t p = first; p <= last && last - first < KNOWN; p++) {
        atomic_store(&known[p % KNOWN].calls, 0);
        atomic_store(&known[p % KNOWN].page, p);
        atomic_store(&known[p % KNOWN].calls, now);
    }
    return true;
}

/* ---- the interposed calls ----------------------------------------------------------- */

#define JHP_EXPORT __attribute__((visibility("default")))

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static uint64_t u(const void *p) { return (uint64_t)(uintptr_t)p; }

JHP_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    /* Only a fixed mapping can replace code; a new one lands where nothing is. */
    bool over = (flags & MAP_FIXED) && !jhp_inside && jhp_cfg.channels;
    if (flags & MAP_FIXED)
        page_call();
    int slot = over ? intent_begin(u(addr), u(addr) + len) : -1;
    if (over && slot < 0)
        jhp_forget(u(addr), len);
    void *p = raw_mmap(addr, len, prot, flags, fd, off);
    if (slot >= 0 && p != MAP_FAILED)
        jhp_forget(u(addr), len);
    intent_end(slot);
    if (p != MAP_FAILED && fd >= 0 && (prot & PROT_EXEC))
        jhp_hear_mapped(fd);
    return p;
}

JHP_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

JHP_EXPORT int munmap(void *addr, size_t len)
{
    page_call();
    bool mine = !jhp_inside && jhp_cfg.channels;
    int slot = mine ? intent_begin(u(addr), u(addr) + len) : -1;
    if (mine && slot < 0)
        jhp_forget(u(addr), len);
    int rc = (int)syscall(SYS_munmap, addr, len);
    if (slot >= 0 && rc == 0)
        jhp_forget(u(addr), len);       /* the pages are gone: nothing to give back */
    intent_end(slot);
    return rc;
}

JHP_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    page_call();
    bool mine = !jhp_inside && jhp_cfg.channels;
    int a = mine ? intent_begin(u(old), u(old) + old_len) : -1;
    int b = mine && new_addr ? intent_begin(u(new_addr), u(new_addr) + new_len) : -1;
    if (mine && a < 0) {
        jhp_forget(u(old), old_len);
        if (new_addr)
            jhp_forget(u(new_addr), new_len);
    }
    void *p = (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
    /* The code moved with its mapping, or the mapping shrank: either way it is not where it
     * was announced. (What was at the new place, under MREMAP_FIXED, is gone too.) */
    if (a >= 0 && p != MAP_FAILED) {
        jhp_forget(u(old), old_len);
        if (new_addr)
            jhp_forget(u(new_addr), new_len);
    }
    intent_end(b);
    intent_end(a);
    return p;
}

/* Code made executable again may have been rewritten while it was writable. Valgrind
 * watches anonymous code for that, but not code in a file mapping, which a swapped page
 * is (--smc-check=all-non-file): its translations of the range go. Natively this is a
 * few instructions that do nothing. */
static void after_protect(void *addr, size_t len, int prot, int rc)
{
    if (rc == 0 && (prot & PROT_EXEC) && RUNNING_ON_VALGRIND)
        VALGRIND_DISCARD_TRANSLATIONS(addr, len);
}

JHP_EXPORT int mprotect(void *addr, size_t len, int prot)
{
    page_call();
    int slot = intent_begin(u(addr), u(addr) + len);
    int rc = (int)syscall(SYS_mprotect, addr, len, prot);
    intent_end(slot);
    after_protect(addr, len, prot, rc);
    return rc;
}

/* Ranges the VM tagged with a protection key other than 0: elfmap's swap maps a file
 * there, whose pages carry key 0, and would take the VM's protection off (announce.c
 * leaves them to the other channels). A few ranges at most in practice (node: its wasm
 * code space); past KEYED, any range counts as tagged. */
#define KEYED 32
static struct { _Atomic uint64_t lo, hi; } keyed[KEYED];
static atomic_bool keyed_full;

bool jhp_keyed(uint64_t lo, uint64_t hi)
{
    if (atomic_load_explicit(&keyed_full, memory_order_relaxed))
        return true;
    for (int i = 0; i < KEYED; i++)
        if (meets(lo, hi, atomic_load(&keyed[i].lo), atomic_load(&keyed[i].hi)))
            return true;
    return false;
}

static void tag(uint64_t lo, uint64_t hi, int pkey)
{
    for (int i = 0; i < KEYED && !pkey; i++)        /* key 0 again: no longer tagged there */
        if (atomic_load(&keyed[i].lo) >= lo && atomic_load(&keyed[i].hi) <= hi)
            atomic_store(&keyed[i].hi, 0);
    for (int i = 0; i < KEYED && pkey; i++) {
        uint64_t zero = 0;
        if (atomic_compare_exchange_strong(&keyed[i].hi, &zero, hi)) {
            atomic_store(&keyed[i].lo, lo);
            return;
        }
    }
    if (pkey)
        atomic_store(&keyed_full, true);
}

#ifdef SYS_pkey_mprotect
JHP_EXPORT int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
    page_call();
    int slot = intent_begin(u(addr), u(addr) + len);
    int rc = (int)syscall(SYS_pkey_mprotect, addr, len, prot, pkey);
    if (rc == 0)
        tag(u(addr), u(addr) + len, pkey);
    intent_end(slot);
    after_protect(addr, len, prot, rc);
    return rc;
}
#endif

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

/* Advice after which the pages read zeros (or the file's bytes, for a file mapping: what
 * elfmap's pages must not do to a VM that allocated anonymous memory). */
static bool frees(int advice)
{
    return advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE ||
           advice == MADV_DONTNEED_LOCKED;
}

JHP_EXPORT int madvise(void *addr, size_t len, int advice)
{
    if (frees(advice))
        page_call();
    bool mine = frees(advice) && !jhp_inside && jhp_cfg.channels;
    int slot = mine ? intent_begin(u(addr), u(addr) + len) : -1;
    if (mine)
        jhp_forget(u(addr), len);       /* before: the emptied pages become anonymous */
    int rc = (int)syscall(SYS_madvise, addr, len, advice);
    intent_end(slot);
    return rc;
}
