/*
 * test_gdb_hook.c — the gdb channel calls __jit_debug_register_code once per edit of the
 * list, with the descriptor set as the JIT interface says, seen the way a debugger sees it:
 * a software breakpoint (int3) on the hook's first byte, planted as gdb and lldb plant it.
 * The SIGTRAP handler stands in for the debugger. At each stop it reads action_flag and
 * relevant_entry and the list, and checks that the list changed since the last stop by
 * exactly that entry (added for JIT_REGISTER, gone for JIT_UNREGISTER), the entry's image
 * an ELF file; then it puts the original byte back, single-steps it (the trap flag) and
 * plants the int3 again. Between API calls the test checks that the list is what the last
 * stop saw: an edit with no call after it shows there. So a channel that stopped calling
 * the hook, called it twice for one edit or before an edit, fails here, with no debugger
 * installed (gdb_*.sh and lldb_*.sh skip where theirs is missing). x86-64 Linux only.
 *
 * The library sees the int3 as a debugger listening (jh__gdb_listening), as it would.
 */
#include <elf.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "channels/gdb_jit.h"
#include "check.h"
#include "jitherald.h"

#if defined(__x86_64__) && defined(__linux__)

enum { MAXE = 4096, FN_SIZE = 32, N = 200 };

/* ---- the stand-in debugger (runs in the SIGTRAP handler: plain memory only) ---- */
static volatile uint8_t *hook;
static uint8_t hook_byte;
static volatile int stepping;
static const struct jit_code_entry *seen[MAXE];     /* the list at the last stop */
static size_t nseen;
static volatile long stops, registers, unregisters, bad_stops;
static volatile uint32_t last_action;                /* what the last stop read */
static const struct jit_code_entry *volatile last_rel;
static char bad_why[160];

/* The int3 goes into code: a plain store there is one TSan instruments, and its shadow of
 * the executable's text is read-only (it crashed). The store is done in asm. */
static void poke(volatile uint8_t *p, uint8_t v)
{
    __asm__ volatile("movb %1, %0" : "=m"(*p) : "q"(v) : "memory");
}

static void bad(const char *why)
{
    if (!bad_stops++)
        snprintf(bad_why, sizeof bad_why, "stop %ld: %s", stops, why);
}

static size_t list_now(const struct jit_code_entry **out)
{
    size_t n = 0;
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce && n < MAXE;
         ce = ce->next_entry)
        out[n++] = ce;
    return n;
}

static int in(const struct jit_code_entry *const *v, size_t n, const struct jit_code_entry *e)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == e)
            return 1;
    return 0;
}

/* What the debugger knows: the functions named "fNNN" in every image it read (at a
 * JIT_REGISTER stop, or on attaching), as they were when it read them. */
enum { KNOWN = 20000 };
static volatile uint8_t known[KNOWN];
static volatile long big_reads;         /* images of more than 64 functions read */

static void learn(const struct jit_code_entry *ce)
{
    const uint8_t *p = (const uint8_t *)ce->symfile_addr;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    if (ce->symfile_size < sizeof *eh || !eh->e_shoff ||
        eh->e_shoff + eh->e_shnum * sizeof(Elf64_Shdr) > ce->symfile_size)
        return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
    for (size_t i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(p + sh[i].sh_offset);
        const char *str = (const char *)p + sh[sh[i].sh_link].sh_offset;
        big_reads += sh[i].sh_size / sizeof *sym > 64;
        for (size_t k = 1; k < sh[i].sh_size / sizeof *sym; k++) {
            const char *name = str + sym[k].st_name;
            unsigned v = 0;
            if (name[0] != 'f' || !name[1])
                continue;
            for (name++; *name >= '0' && *name <= '9'; name++)
                v = v * 10 + (unsigned)(*name - '0');
            if (!*name && v < KNOWN)
                known[v] = 1;
        }
    }
}

static void at_stop(void)
{
    static const struct jit_code_entry *now[MAXE];
    size_t n = list_now(now);
    const struct jit_code_entry *rel = __jit_debug_descriptor.relevant_entry;
    uint32_t action = __jit_debug_descriptor.action_flag;
    stops++;
    last_action = action;
    last_rel = rel;
    if (__jit_debug_descriptor.version != 1)
        bad("descriptor version is not 1");
    if (!rel) {
        bad("relevant_entry is NULL");
        return;
    }
    if (action == JIT_REGISTER) {
        registers++;
        learn(rel);
        if (!in(now, n, rel) || in(seen, nseen, rel) || n != nseen + 1)
            bad("JIT_REGISTER: the list did not gain exactly relevant_entry since the last stop");
        if (rel->symfile_size < SELFMAG || memcmp(rel->symfile_addr, ELFMAG, SELFMAG))
            bad("JIT_REGISTER: the entry's image is not ELF");
    } else if (action == JIT_UNREGISTER) {
        unregisters++;
        if (in(now, n, rel) || !in(seen, nseen, rel) || n + 1 != nseen)
            bad("JIT_UNREGISTER: the list did not lose exactly relevant_entry since the last stop");
    } else {
        bad("action_flag is neither JIT_REGISTER nor JIT_UNREGISTER");
    }
    for (size_t i = 0; i < n; i++)
        if (i + 1 < n ? now[i]->next_entry != now[i + 1] || now[i + 1]->prev_entry != now[i]
                      : now[i]->next_entry != NULL)
            bad("the list's links are inconsistent");
    memcpy(seen, now, n * sizeof *now);
    nseen = n;
}

/* int3 hit: RIP is past it. Run the original first instruction with the trap flag set; the
 * single-step trap that follows plants the int3 again. */
static void on_trap(int sig, siginfo_t *si, void *ucv)
{
    (void)sig, (void)si;
    ucontext_t *uc = ucv;
    greg_t *g = uc->uc_mcontext.gregs;
    if (stepping) {
        poke(hook, 0xcc);
        g[REG_EFL] &= ~0x100;
        stepping = 0;
    } else if ((uintptr_t)g[REG_RIP] - 1 == (uintptr_t)hook) {
        at_stop();
        poke(hook, hook_byte);
        g[REG_RIP] -= 1;
        g[REG_EFL] |= 0x100;
        stepping = 1;
    } else {
        static const char msg[] = "test_gdb_hook: SIGTRAP not from the hook\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(3);
    }
}

static int plant(void)
{
    hook = (volatile uint8_t *)(uintptr_t)&__jit_debug_register_code;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)hook & ~(uintptr_t)(pg - 1);
    if (mprotect((void *)page, (size_t)pg * 2, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return -1;
    struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTRAP, &sa, NULL) != 0)
        return -1;
    hook_byte = *hook;
    return 0;
}

static void arm(void) { poke(hook, 0xcc); }
static void disarm(void) { poke(hook, hook_byte); }

/* The list is what the last stop saw: no edit went unannounced since. */
static void announced(const char *when)
{
    static const struct jit_code_entry *now[MAXE];
    size_t n = list_now(now);
    int same = n == nseen && !memcmp(now, seen, n * sizeof *now);
    if (!same)
        fprintf(stderr, "%s: the list changed without a call of the hook\n", when);
    CHECK(same);
}

/* ---- the JIT side ---- */
static int image_names(const struct jit_code_entry *ce, const char *name)
{
    const char *p = ce->symfile_addr, *end = p + ce->symfile_size;
    size_t len = strlen(name) + 1;
    for (; p + len <= end; p++)
        if (!memcmp(p, name, len) && (p == ce->symfile_addr || p[-1] == 0))
            return 1;
    return 0;
}

static int listed(const char *name)
{
    int n = 0;
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce; ce = ce->next_entry)
        n += image_names(ce, name);
    return n;
}

static uint64_t add(jh_ctx *jh, uint8_t *at, const char *name)
{
    struct jh_code c = { .sz = sizeof c, .name = name, .start = at, .size = FN_SIZE };
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(jh, &c, &id), 0);
    return id;
}

/* n functions' room of code (each a ret) and a context with the gdb channel alone; NULL
 * (a check failed) when either could not be had. */
static uint8_t *open_code(size_t n, uint32_t batch, jh_ctx **jh)
{
    uint8_t *code = mmap(NULL, n * FN_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
    CHECK(code != MAP_FAILED);
    if (code == MAP_FAILED)
        return NULL;
    memset(code, 0xc3, n * FN_SIZE);
    *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB, .flags = JH_OPT_IGNORE_ENV,
                            .engine = "test", .gdb_batch = batch };
    CHECK_EQ(jh_open(jh, &o), 0);
    return code;
}

static void run(uint32_t batch, const char *mode)
{
    jh_ctx *jh;
    uint8_t *code = open_code(N, batch, &jh);
    if (!code)
        return;
    if (!jh)
        return;
    static uint64_t ids[N];
    char name[32];
    long before = stops;
    ids[0] = add(jh, code, "first");
    if (batch == 0) {
        /* immediate: the one new image announced before jh_code_add returns */
        CHECK_EQ(stops - before, 1);
        CHECK_EQ(last_action, JIT_REGISTER);
        CHECK(last_rel && image_names(last_rel, "first"));
    } else {
        CHECK_EQ(stops - before, 0);        /* deferred: nothing until jh_flush */
        CHECK_EQ(listed("first"), 0);
        CHECK_EQ(jh_flush(jh), 0);
        CHECK_EQ(stops - before, 1);
    }
    CHECK_EQ(listed("first"), 1);
    announced("after the first function");
    for (int i = 1; i < N; i++) {
        snprintf(name, sizeof name, "f%d", i);
        ids[i] = add(jh, code + (size_t)i * FN_SIZE, name);
        announced("after jh_code_add");
        if (batch && i % 50 == 0)
            CHECK_EQ(jh_flush(jh), 0);
    }
    CHECK_EQ(jh_flush(jh), 0);
    announced("after jh_flush");
    CHECK_EQ(listed("f1"), 1);
    CHECK_EQ(listed("f199"), 1);
    for (int i = 0; i < N; i += 2) {
        CHECK_EQ(jh_code_remove(jh, ids[i]), 0);
        announced("after jh_code_remove");
    }
    CHECK_EQ(jh_flush(jh), 0);
    announced("after removals and jh_flush");
    CHECK_EQ(listed("first"), 0);
    CHECK_EQ(listed("f199"), 1);
    long regs = registers, unregs = unregisters;
    jh_close(jh);
    announced("after jh_close");
    CHECK(__jit_debug_descriptor.first_entry == NULL);
    CHECK(unregisters > unregs && registers == regs);   /* close only unregisters */
    CHECK_EQ(registers, unregisters);                   /* every image went, each once */
    printf("%s: %ld stops (%ld JIT_REGISTER, %ld JIT_UNREGISTER) for %d functions\n", mode,
           stops, registers, unregisters, N);
    munmap(code, N * FN_SIZE);
}

/* ---- a debugger attaching at any instruction ----
 * ptrace attach stops the process wherever it is; the debugger reads the whole list once,
 * plants its breakpoint on the hook and lets the process go on. Here a second thread
 * sends a signal at a random moment while the JIT adds code in a loop (mostly inside
 * jh_code_add, so mostly halfway through an append to the growing image); the handler, on
 * the JIT's thread, is the debugger. Every function must be known to it once its
 * jh_code_add has returned: the one being appended when it came too (gdb_grow.c has the
 * image read again then). */
static volatile int attached;
static pthread_t jit_thread;
static volatile unsigned attach_after_us;

static void on_attach(int sig)
{
    (void)sig;
    nseen = list_now(seen);
    for (size_t i = 0; i < nseen; i++)
        learn(seen[i]);
    arm();
    attached = 1;
}

static void *attacher(void *arg)
{
    (void)arg;
    usleep(attach_after_us);
    pthread_kill(jit_thread, SIGUSR1);
    return NULL;
}

static void late_attach(unsigned trial)
{
    enum { M = 20000 };
    jh_ctx *jh;
    uint8_t *code = open_code(M, 0, &jh);
    if (!code)
        return;
    memset((void *)known, 0, sizeof known);
    attached = 0;
    jit_thread = pthread_self();
    attach_after_us = 100 + trial * 397 % 3000;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, attacher, NULL), 0);
    char name[32];
    int missed = 0, after = -1;
    long reads_then = -1;
    for (int i = 0; i < M; i++) {
        snprintf(name, sizeof name, "f%d", i);
        add(jh, code + (size_t)(M - 1 - i) * FN_SIZE, name);     /* top-down, as LuaJIT */
        if (attached && after < 0)
            after = i;
        if (attached)
            for (int k = 0; k <= i; k++)
                missed += !known[k];
        if (attached && i == after + 3)
            reads_then = big_reads;
        if (attached && i > after + 60)
            break;
    }
    /* a debugger it sees makes the channel stop growing the image: it is not read again
     * at every add (each add announces it anew while it grows, gdb_grow.c) */
    CHECK_EQ(big_reads, reads_then);
    pthread_join(t, NULL);
    CHECK(after >= 0);
    CHECK_EQ(missed, 0);
    if (missed)
        fprintf(stderr, "late attach at function %d: %d functions unknown to the debugger\n",
                after, missed);
    jh_close(jh);
    disarm();
    munmap(code, M * FN_SIZE);
}

int main(void)
{
    if (plant() != 0)
        SKIP("cannot make the hook's page writable to plant a breakpoint (mprotect refused)");
    struct sigaction sa = { .sa_handler = on_attach };
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    for (unsigned trial = 0; trial < 12; trial++)
        late_attach(trial);
    stops = registers = unregisters = 0;
    arm();
    run(0, "immediate");
    CHECK(stops > 0);
    stops = registers = unregisters = 0;
    run(64 | JH_GDB_DEFER, "deferred");
    if (bad_stops)
        fprintf(stderr, "%ld bad stops, first: %s\n", (long)bad_stops, bad_why);
    CHECK_EQ(bad_stops, 0);
    return check_done();
}

#else
int main(void)
{
    SKIP("the int3 breakpoint on the hook is written for x86-64 Linux");
}
#endif
