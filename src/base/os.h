/*
 * os.h — the few facts about the running process that each platform gets its own way
 * (os.c: POSIX, os_win.c: Windows), so that nothing above src/base asks the system itself.
 */
#ifndef JH__BASE_OS_H
#define JH__BASE_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The parent's process id, 0 where there is no such thing to ask (Windows). */
int jh__parent_pid(void);

/* When this process began (a fork child: when it was forked), in ns since 1970 (UTC),
 * rounded down to the kernel's 10 ms tick; 0 if unknown. POSIX: /proc/self/stat's start
 * time (since boot) placed on the wall clock through CLOCK_BOOTTIME. */
uint64_t jh__process_start_ns(void);

/* The running program's path into buf[0..len) (NUL-terminated, "" if unknown). */
void jh__exe_path(char *buf, size_t len);

/* A static English description of errno value e, or NULL: safe from any thread. */
const char *jh__errno_desc(int e);

/* Memory aligned to align (a power of two, a multiple of sizeof(void *)), released with
 * jh__aligned_free: Windows' C runtime has no aligned_alloc, and _aligned_malloc's memory
 * must not reach free(). */
void *jh__aligned_alloc(size_t align, size_t size);
void jh__aligned_free(void *p);

/* Can all n bytes at p be read right now, without faulting? For code a JIT may have freed
 * before telling us (jh_code_remove may follow the unmap: LuaJIT reports a flush after
 * freeing its machine code), on the few paths that read code announced earlier (a fork
 * child announcing again what is live). POSIX: process_vm_readv on ourselves, which fails
 * with EFAULT instead of raising SIGSEGV (mincore where that call is refused: seccomp);
 * Windows: VirtualQuery. */
bool jh__mem_readable(const void *p, size_t n);

/* The FDE the process's unwinder has for pc (_Unwind_Find_FDE, whichever library the
 * process resolves it to), or NULL: none, or no such unwinder (Windows). */
const void *jh__find_fde(const void *pc);

#ifdef _WIN32
/* A Windows error code (GetLastError) as the negative errno the API speaks. */
int jh__win_errno(unsigned long err);
#endif

#endif
