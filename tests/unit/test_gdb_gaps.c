/*
 * test_gdb_gaps.c — aligned functions (gaps between them) under the gdb channel, read the
 * way a debugger does: walk __jit_debug_descriptor's list and read each image's .text
 * sections. With one section per run of adjacent functions, aligned code meant one section
 * per function and gdb went quadratic (issue: 5k 15.8 s, 20k 338 s). Now an image's section
 * may span a gap (up to JH__GDB_JOIN_GAP: functions 48 bytes apart, and 8 KiB apart as LLVM
 * places them, a module per page), so the checks are:
 *   - few sections: about one per image, not one per function;
 *   - every live function lies in the .text of exactly one image, the one naming it, also
 *     after code lands inside a gap another image spans, after moves and lazy removals,
 *     in immediate and deferred mode (LLDB gives an address to the section with the
 *     greatest start below it, so a section covering another image's code hides it).
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "channels/gdb_jit.h"
#include "check.h"
#include "gdb_view.h"
#include "jitherald.h"

enum { N = 300, BODY = 34 };
/* Bytes from one function's start to the next: 48 (aligned functions), or 8 KiB: LLVM's
 * memory managers give each module its own pages, code and data interleaved. */
static size_t SLOT;

struct live {
    uintptr_t start;
    size_t size;
    char name[16];
    uint64_t id;
    int on;
};
static struct live fn[N + 64];
static int nfn;

/* Sections and symbols of one image: is addr in a .text section; does it name `name`. */
static int text_has(const uint8_t *img, uintptr_t addr, size_t *nsec)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    int in = 0;
    for (size_t i = 0; i < elf_shnum(eh); i++) {
        if (!(sh[i].sh_flags & SHF_EXECINSTR))
            continue;
        if (nsec)
            ++*nsec;
        if (addr >= sh[i].sh_addr && addr - sh[i].sh_addr < sh[i].sh_size)
            in = 1;
    }
    return in;
}

static int names(const uint8_t *img, const char *name)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    for (size_t i = 0; i < elf_shnum(eh); i++) {
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
        const char *str = (const char *)img + sh[sh[i].sh_link].sh_offset;
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
            if (!strcmp(str + sym[k].st_name, name))
                return 1;
    }
    return 0;
}

/* The debugger's view must hold each live function in exactly one image, which names it.
 * Returns the number of .text sections in the list. */
static size_t check_view(const char *when)
{
    size_t nsec = 0, nimg = 0;
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce;
         ce = ce->next_entry) {
        nimg++;
        text_has((const uint8_t *)ce->symfile_addr, 0, &nsec);
    }
    for (int i = 0; i < nfn; i++) {
        if (!fn[i].on)
            continue;
        int holders = 0, named = 0;
        for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry; ce;
             ce = ce->next_entry) {
            const uint8_t *img = (const uint8_t *)ce->symfile_addr;
            if (text_has(img, fn[i].start, NULL)) {
                holders++;
                named += names(img, fn[i].name);
            }
        }
        if (holders != 1 || named != 1)
            fprintf(stderr, "%s: %s at %#lx: in %d images' .text, named by %d\n", when,
                    fn[i].name, (unsigned long)fn[i].start, holders, named);
        CHECK_EQ(holders, 1);
        CHECK_EQ(named, 1);
    }
    printf("%s: %zu images, %zu .text sections\n", when, nimg, nsec);
    return nsec;
}

static void add(jh_ctx *jh, uint8_t *at, size_t size)
{
    struct live *l = &fn[nfn];
    snprintf(l->name, sizeof l->name, "g%d", nfn);
    l->start = (uintptr_t)at;
    l->size = size;
    struct jh_code c = { .sz = sizeof c, .name = l->name, .start = at, .size = size,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    CHECK_EQ(jh_code_add(jh, &c, &l->id), 0);
    l->on = 1;
    nfn++;
}

/* Immediate mode promises a correct view when jh_code_* returns; deferred mode at
 * jh_flush. Check each at its promise, not later. */
static void settle(jh_ctx *jh, int defer)
{
    if (defer)
        jh_flush(jh);
}

static void run(int defer, size_t slot)
{
    SLOT = slot;
    nfn = 0;
    uint8_t *code = mmap(NULL, (N + 64) * SLOT, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    memset(code, 0xc3, (N + 64) * SLOT);
    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .channels = JH_GDB, .flags = JH_OPT_IGNORE_ENV,
                            .gdb_batch = 64 | (defer ? JH_GDB_DEFER : 0) };
    CHECK_EQ(jh_open(&jh, &o), 0);
    for (int i = 0; i < N; i++)
        add(jh, code + i * SLOT, BODY);
    jh_flush(jh);
    printf("functions %zu bytes apart\n", slot);
    size_t nsec = check_view(defer ? "deferred, aligned" : "immediate, aligned");
    CHECK(nsec < N / 10);       /* one per function was the quadratic case */

    /* The last function of an image whose next neighbour lives in another image: removing
     * it lazily must still give up the gap before it, where new code may land next. */
    int edge = -1;
    for (const struct jit_code_entry *ce = __jit_debug_descriptor.first_entry;
         ce && edge < 0; ce = ce->next_entry) {
        const uint8_t *img = (const uint8_t *)ce->symfile_addr;
        int last = -1, count = 0;
        for (int i = 0; i < nfn; i++)
            if (fn[i].on && names(img, fn[i].name) && ++count &&
                (last < 0 || fn[i].start > fn[last].start))
                last = i;
        if (count >= 64 && last > 0 && last + 1 < N && fn[last - 1].on && fn[last + 1].on &&
            !names(img, fn[last + 1].name))
            edge = last;
    }
    CHECK(edge > 0);
    if (edge > 0) {
        CHECK_EQ(jh_code_remove(jh, fn[edge].id), 0);
        fn[edge].on = 0;
        add(jh, (uint8_t *)fn[edge].start - 6, 4);
        settle(jh, defer);
        check_view("code before an image's removed last function");
    }

    /* New code inside gaps that images span: the spanning image gives the gap up. */
    for (int i = 5; i < N; i += 37)
        add(jh, code + i * SLOT + BODY + 2, 8);
    settle(jh, defer);
    check_view("code landed in gaps");

    /* Lazy removals, then code where a removed function's gap was. */
    for (int i = 3; i < N; i += 11) {
        CHECK_EQ(jh_code_remove(jh, fn[i].id), 0);
        fn[i].on = 0;
    }
    for (int i = 3; i < N; i += 33)
        add(jh, code + i * SLOT - 6, 4);
    settle(jh, defer);
    check_view("after removals, code in the freed gaps");

    /* Moves into gaps. */
    for (int i = 8; i < N; i += 41) {
        if (!fn[i].on)
            continue;
        uint8_t *to = code + (N + 2 + i % 50) * SLOT;
        CHECK_EQ(jh_code_move(jh, fn[i].id, to), 0);
        fn[i].start = (uintptr_t)to;
    }
    settle(jh, defer);
    check_view("after moves");
    jh_close(jh);
    CHECK(__jit_debug_descriptor.first_entry == NULL);
    munmap(code, (N + 64) * SLOT);
}

int main(void)
{
    run(0, 48);
    run(1, 48);
    run(0, 8192);
    run(1, 8192);
    return check_done();
}
