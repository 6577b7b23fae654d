/*
 * gdb_jit.c — the JIT interface's protocol (see gdb_jit.h): list edits, debugger
 * detection, and coexisting with another JIT in the process.
 *
 * Coexisting (LLVM exports __jit_debug_descriptor@@LLVM_14): ours is a separate descriptor
 * and hook, reached internally through hidden aliases so the dynamic linker can never bind
 * our list edits to someone else's list (whose lock we do not hold). GDB reads a descriptor
 * in every objfile, so it sees both. LLDB watches only the first it finds: the channel warns
 * naming the other library when it comes first. Statically linked, LLVM's listener may
 * resolve the symbols to ours and edit our list under its own lock: we notice foreign
 * entries and warn (docs/gdb.md).
 */
#include "channels/gdb_jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/lock.h"
#include "fmt/arch.h"
#include "fmt/elf_image.h"
#include "jitherald.h"

/* Version 1 statically: the debugger checks it before our code ever runs.
 *
 * Its own section, JH__GDB_SECTION, which the build marks executable in the shared
 * library's section header only (scripts/gdb-section.sh; the segment, and so the page,
 * stays read-write and not executable). Why: when the program's executable defines
 * __jit_debug_descriptor too (PHP does), gdb 13 takes a data symbol of a shared library to
 * have been copied into the executable (a copy relocation) and reads the executable's
 * descriptor instead of ours, so none of our code is ever seen. gdb decides "data" from
 * the flags of the symbol's section: in a section flagged executable it is a text symbol,
 * read where it is. The symbol itself (global, STT_OBJECT, versioned, in .dynsym) and its
 * address are unchanged, which is all lldb, LLVM and dlsym look at; strip keeps section
 * flags. Details and gdb's source lines: docs/gdb.md, "A program with its own descriptor". */
JH_API __attribute__((section(JH__GDB_SECTION)))
struct jit_descriptor __jit_debug_descriptor = { 1, JIT_NOACTION, NULL, NULL };

/* The debugger's breakpoint lives here: never inlined, never folded into another empty
 * function (the asm with a memory clobber keeps a body and orders the stores before it). */
JH_API __attribute__((noinline, used)) void __jit_debug_register_code(void)
{
    __asm__ volatile("" ::: "memory");
}

extern struct jit_descriptor jh__gdb_descriptor
    __attribute__((alias("__jit_debug_descriptor"), visibility("hidden")));
extern void jh__gdb_register_code(void)
    __attribute__((alias("__jit_debug_register_code"), visibility("hidden")));

JH__LOCK_DEFINE(static, list_lock, "gdb list")

static inline void compiler_barrier(void) { __asm__ volatile("" ::: "memory"); }

/* ---- list edits: list_lock held, each announced at once ---- */
static void list_add(struct jit_code_entry *ce)
{
    struct jit_descriptor *d = &jh__gdb_descriptor;
    ce->prev_entry = NULL;
    ce->next_entry = d->first_entry;
    compiler_barrier();         /* the entry is complete before anything points at it */
    if (ce->next_entry)
        ce->next_entry->prev_entry = ce;
    d->first_entry = ce;
    d->relevant_entry = ce;
    d->action_flag = JIT_REGISTER;
    jh__gdb_register_code();
}

static void list_remove(struct jit_code_entry *ce)
{
    struct jit_descriptor *d = &jh__gdb_descriptor;
    if (ce->prev_entry)
        ce->prev_entry->next_entry = ce->next_entry;
    else
        d->first_entry = ce->next_entry;
    if (ce->next_entry)
        ce->next_entry->prev_entry = ce->prev_entry;
    d->relevant_entry = ce;
    d->action_flag = JIT_UNREGISTER;
    jh__gdb_register_code();
}

/* Is a debugger listening? It has a breakpoint on the hook while the process runs (gdb
 * and lldb insert breakpoints on resume and remove them on stop), so our own code reads
 * the trap instruction there. One load; uprobes on the hook look the same (harmless). */
bool jh__gdb_listening(void)
{
    const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)&jh__gdb_register_code;
    const struct jh__arch *a = JH__ARCH_HOST;
    for (unsigned i = 0; i < a->brk_len; i++)
        if (p[i] != a->brk[i])
            return false;
    return true;
}

static _Atomic bool listening;   /* what jh__gdb_listening said last time; list_lock for writes */

/* A debugger attached since we last looked. gdb read the whole list on attach, but LLDB 14
 * loses what it read then (attaching resets its module list after its JIT loader ran), so
 * announce every image again: unregister + register, which leaves gdb's view unchanged.
 * Few images (packing), so a few dozen stops, once per attach. list_lock held. */
static void reannounce_all(void)
{
    struct jit_descriptor *d = &jh__gdb_descriptor;
    size_t n = 0;
    for (struct jit_code_entry *ce = d->first_entry; ce; ce = ce->next_entry)
        n++;
    struct jit_code_entry **all = n ? malloc(n * sizeof *all) : NULL;
    if (!all)
        return;
    n = 0;
    for (struct jit_code_entry *ce = d->first_entry; ce; ce = ce->next_entry)
        all[n++] = ce;
    for (size_t i = n; i-- > 0;) {      /* oldest first, so the list keeps its order */
        list_remove(all[i]);
        list_add(all[i]);
    }
    free(all);
}

/* Ready-made objects registered (jh__gdb_object_add; list_lock). */
static size_t nobjects;

static void check_debugger_locked(void)
{
    bool now = jh__gdb_listening();
    /* While ready-made objects are listed, the re-announcement waits for them to go:
     * announcing thousands of one-module objects again costs two stops each, and gdb
     * (which reads the list on attach and needs none of it) re-reads each object, walking
     * all the others, at every stop. LLDB 14 attaching then sees only later registrations
     * (jitherald.h, jh_gdb_object_add). */
    if (now && nobjects)
        return;
    if (now && !atomic_load_explicit(&listening, memory_order_relaxed))
        reannounce_all();
    atomic_store_explicit(&listening, now, memory_order_relaxed);
}

void jh__gdb_check_debugger(void)
{
    if (jh__gdb_listening() == atomic_load_explicit(&listening, memory_order_relaxed))
        return;
    jh__lock(&list_lock);
    check_debugger_locked();
    jh__unlock(&list_lock);
}

/* Entries we linked, all contexts (list_lock). A list longer than that has another JIT's
 * entries in it: statically linked next to us, its listener resolved the descriptor to
 * ours and edits it under its own lock (docs/gdb.md). Checked after 256 edits, or as many
 * as the list holds if more, so the walk costs each edit O(1): every 256 edits it was 7
 * us per edit with 20,000 one-module objects listed (issue 30); said once. */
static size_t our_entries;
static size_t edits_left;
static _Atomic int foreign;     /* 0 no, 1 found, 2 reported */

static void check_foreign(void)
{
    if (edits_left) {
        edits_left--;
        return;
    }
    if (atomic_load_explicit(&foreign, memory_order_relaxed))
        return;
    edits_left = (our_entries > 256 ? our_entries : 256) - 1;
    size_t n = 0;
    for (struct jit_code_entry *ce = jh__gdb_descriptor.first_entry; ce; ce = ce->next_entry)
        n++;
    if (n != our_entries)
        atomic_store_explicit(&foreign, 1, memory_order_relaxed);
}

void jh__gdb_report_foreign(const struct jh__diag *d)
{
    int one = 1;
    if (atomic_load_explicit(&foreign, memory_order_relaxed) == 1 &&
        atomic_compare_exchange_strong(&foreign, &one, 2))
        jh__diag(d, JH_LOG_WARN, "gdb: another JIT adds entries to jitherald's "
                 "__jit_debug_descriptor list (statically linked with us?) under its own lock: "
                 "concurrent registrations can corrupt it; link libjitherald.so instead");
}

/* A fact about the process, not the context: said once (the first context to see it).
 * gdb reads a descriptor in every objfile, ours included even when the executable has one
 * of its own (see the descriptor's section above); lldb takes the first hook and the first
 * descriptor it finds, in load order: the executable's, or a library loaded before us. */
void jh__gdb_warn_shadowed(const struct jh__diag *d)
{
    static atomic_bool told;
    void *first = dlsym(RTLD_DEFAULT, "__jit_debug_descriptor");
    Dl_info other;
    if (first && first != (void *)&jh__gdb_descriptor && dladdr(first, &other) &&
        !atomic_exchange(&told, true))
        jh__diag(d, JH_LOG_WARN, "gdb: %s also defines __jit_debug_descriptor and comes "
                 "first: gdb names the code of both, lldb only that one's",
                 other.dli_fname ? other.dli_fname : "another library");
}

void jh__gdb_image_free(struct jh__gdb_image *im)
{
    if (im && im->map)
        munmap(im->map, im->map_len);
    free(im);
}

#define HEAD JH__GDB_HEAD

struct jh__gdb_image *jh__gdb_image_of(struct jh__buf *b)
{
    struct jh__gdb_image *im = (struct jh__gdb_image *)(void *)b->p;
    *im = (struct jh__gdb_image){ .ce = { .symfile_addr = (const char *)b->p + HEAD,
                                          .symfile_size = b->len - HEAD } };
    return im;
}

int jh__gdb_image_build(struct jh__gdb_image **out, const struct jh__func *const *fns, size_t n,
                        bool (*join_ok)(void *arg, const struct jh__func *a, const struct jh__func *b), void *join_arg,
                        struct jh__elf_scratch *scratch, const uint64_t *fn_bid)
{
    /* no program headers: neither debugger needs them (measured, see elf_image.h); symbols
     * a debugger can break on; the core's entries, their CFI validated */
    struct jh__elf_spec spec = { .arch = JH__ARCH_HOST, .fns = fns, .nfns = n,
                                 .flags = JH__ELF_NO_PHDRS | JH__ELF_SYMBOLS |
                                          JH__ELF_CFI_CHECKED,
                                 .join_gap = JH__GDB_JOIN_GAP, .join_ok = join_ok,
                                 .join_arg = join_arg, .scratch = scratch, .fn_bid = fn_bid };
    struct jh__buf b = { .len = HEAD };     /* the image allocates HEAD + its size */
    int err = jh__elf_image(&b, &spec, NULL);
    if (err) {
        free(b.p);
        return err;
    }
    *out = jh__gdb_image_of(&b);
    return 0;
}

void jh__gdb_publish(struct jh__gdb_image *add, struct jh__gdb_image *const *drop, size_t ndrop)
{
    jh__lock(&list_lock);
    check_debugger_locked();
    if (add) {
        list_add(&add->ce);
        our_entries++;
    }
    for (size_t i = 0; i < ndrop; i++) {
        if (drop[i]) {
            list_remove(&drop[i]->ce);
            our_entries--;
        }
    }
    check_foreign();
    jh__gdb_descriptor.relevant_entry = NULL;
    jh__gdb_descriptor.action_flag = JIT_NOACTION;
    jh__unlock(&list_lock);
    for (size_t i = 0; i < ndrop; i++)
        jh__gdb_image_free(drop[i]);
}

void jh__gdb_republish(struct jit_code_entry *add, struct jit_code_entry *drop)
{
    jh__lock(&list_lock);
    check_debugger_locked();
    list_add(add);
    list_remove(drop);
    check_foreign();
    jh__gdb_descriptor.relevant_entry = NULL;
    jh__gdb_descriptor.action_flag = JIT_NOACTION;
    jh__unlock(&list_lock);
}

/* A ready-made object: its entry only; the bytes are the caller's. */
int jh__gdb_object_add(const void *elf, size_t len, struct jit_code_entry **out)
{
    struct jit_code_entry *ce = calloc(1, sizeof *ce);
    if (!ce)
        return -ENOMEM;
    ce->symfile_addr = elf;
    ce->symfile_size = len;
    jh__lock(&list_lock);
    nobjects++;
    check_debugger_locked();
    list_add(ce);
    our_entries++;
    check_foreign();
    jh__gdb_descriptor.relevant_entry = NULL;
    jh__gdb_descriptor.action_flag = JIT_NOACTION;
    jh__unlock(&list_lock);
    *out = ce;
    return 0;
}

void jh__gdb_object_remove(struct jit_code_entry *ce)
{
    jh__lock(&list_lock);
    list_remove(ce);
    our_entries--;
    nobjects--;
    check_debugger_locked();        /* the last one gone: a waiting re-announcement runs */
    check_foreign();
    jh__gdb_descriptor.relevant_entry = NULL;
    jh__gdb_descriptor.action_flag = JIT_NOACTION;
    jh__unlock(&list_lock);
    free(ce);
}
