/*
 * churn_rows.c — one function, many images: what a tracing JIT does to the code that stays.
 * A 64 KiB W^X area gets functions top-down (each below the last, most on pages already
 * mapped from an image file); hot_0 is patched after every new function; now and then a
 * function is removed and a new one of another size written over its bytes (which makes
 * elfmap start a new generation of the image). Everything runs between the changes, so
 * profiles hold samples of hot_0 from every state of its page.
 *
 *     churn_rows [ROUNDS [CALLS]]      default 24 rounds, 4000 calls per live function
 *
 * Used by tests/integration/rows_perf.sh and rows_callgrind.sh: hot_0 (and every other
 * function) must be one row in `perf report --sort sym` and one entry in callgrind_annotate.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

#define AREA (64 * 1024)
#define MAXF 64

struct fn {
    uint8_t *p;
    size_t size;
    uint64_t id;
    int live;
    char name[32];
};

static uint8_t *area;
static struct fn fns[MAXF];
static int nfns;
static size_t top = AREA;
static jh_ctx *jh;
static const char *const files[] = { "rows.x" };

static void writable(int on)
{
    mprotect(area, AREA, on ? PROT_READ | PROT_WRITE : PROT_READ | PROT_EXEC);
}

/* nops, then: mov ecx, n; 1: dec ecx; jnz 1b; ret */
static void emit(uint8_t *p, size_t size, uint32_t n)
{
    memset(p, 0x90, size - 10);
    uint8_t *q = p + size - 10;
    q[0] = 0xb9;
    memcpy(q + 1, &n, 4);
    q[5] = 0xff;
    q[6] = 0xc9;
    q[7] = 0x75;
    q[8] = 0xfc;
    q[9] = 0xc3;
}

static void announce(struct fn *f)
{
    struct jh_line lines[2] = { { .offset = 0, .line = 1 + (uint32_t)(f - fns) },
                                { .offset = (uint32_t)f->size - 10, .line = 100 } };
    struct jh_code c = { .sz = sizeof c, .name = f->name, .start = f->p, .size = f->size,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 2 };
    if (jh_code_add(jh, &c, &f->id) != 0) {
        fprintf(stderr, "jh_code_add %s failed\n", f->name);
        exit(1);
    }
    f->live = 1;
}

static struct fn *new_fn(const char *prefix, uint8_t *at, size_t size, uint32_t n)
{
    struct fn *f = &fns[nfns];
    snprintf(f->name, sizeof f->name, "%s_%d", prefix, nfns);
    nfns++;
    f->p = at;
    f->size = size;
    writable(1);
    emit(at, size, n);
    writable(0);
    announce(f);
    return f;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 24;
    int calls = argc > 2 ? atoi(argv[2]) : 4000;
    struct jh_options o = { .sz = sizeof o, .engine = "rows" };
    if (jh_open(&jh, &o) != 0)
        return 1;
    area = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return 1;
    memset(area, 0xcc, AREA);
    writable(0);

    /* not flush with the end of the mapping: valgrind 3.19 reads past a block's last
     * instruction and dies (SIGSEGV in valgrind itself) when nothing is mapped there */
    top -= 128;
    new_fn("hot", area + top, 64, 20000);
    for (int r = 1; r <= rounds && nfns < MAXF - 1; r++) {
        size_t size = 48 + 16 * (size_t)(r % 5);
        if (r % 4 == 0 && fns[nfns - 2].live) {
            /* the room of an earlier function, taken by a smaller one */
            struct fn *old = &fns[nfns - 2];
            jh_code_remove(jh, old->id);
            old->live = 0;
            new_fn("reuse", old->p + 16, old->size - 16, 3000);
        } else {
            top -= size;
            new_fn("hot", area + top, size, 3000);
        }
        /* hot_0's loop count patched: the parent of a new side trace, say */
        writable(1);
        uint32_t n = 20000 + (uint32_t)r;
        memcpy(fns[0].p + fns[0].size - 9, &n, 4);
        writable(0);
        jh_code_patched(jh, fns[0].p + fns[0].size - 9, 4);
        for (int k = 0; k < calls; k++)
            for (int i = 0; i < nfns; i++)
                if (fns[i].live)
                    ((void (*)(void))(void *)fns[i].p)();
    }
    int live = 0;
    for (int i = 0; i < nfns; i++)
        live += fns[i].live;
    printf("%d functions, %d live\n", nfns, live);
    jh_close(jh);
    return 0;
}
