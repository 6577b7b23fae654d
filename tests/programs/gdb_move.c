/*
 * gdb_move.c — jh_code_move under a debugger, for tests/integration/gdb_move.sh: two
 * functions announced ("wanderer", "stayer"), wanderer copied one page further and moved
 * there; stop_here(old, new, other) is where the debugger looks. Then wanderer is removed
 * and flushed, and stop_here is called again. Needs JITHERALD=gdb; built -g -O0 so that
 * stop_here's arguments are there to read.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "jitherald.h"

__attribute__((noinline)) void stop_here(void *old_code, void *new_code, void *other)
{
    printf("old=%p new=%p other=%p\n", old_code, new_code, other);
    fflush(stdout);
}

int main(void)
{
    jh_ctx *jh;
    if (jh_open(&jh, NULL) < 0 || !(jh_channels(jh) & JH_GDB))
        return 2;
    unsigned char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    static const unsigned char fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x5d, 0xc3 };
    memcpy(page, fn, sizeof fn);
    memcpy(page + 64, fn, sizeof fn);
    const char *files[] = { "move.src" };
    struct jh_line lines[] = { { .offset = 0, .line = 10 }, { .offset = 4, .line = 11 } };
    struct jh_code c = { .sz = sizeof c, .name = "wanderer", .start = page, .size = sizeof fn,
                         .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
                         .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    uint64_t id, other;
    if (jh_code_add(jh, &c, &id) < 0)
        return 3;
    c.name = "stayer";
    c.start = page + 64;
    if (jh_code_add(jh, &c, &other) < 0)
        return 3;
    memcpy(page + 4096, fn, sizeof fn);
    if (jh_code_move(jh, id, page + 4096) < 0)
        return 4;
    stop_here(page, page + 4096, page + 64);
    jh_code_remove(jh, id);
    jh_flush(jh);
    stop_here(page, page + 4096, page + 64);
    jh_close(jh);
    return 0;
}
