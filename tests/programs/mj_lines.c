/*
 * mj_lines.c — the demo JIT's own line tables, the truth the line checks compare with:
 *
 *     mj_lines PROGRAM.mini   ->   one row per line-table row: NAME OFFSET(hex) LINE
 *
 * It compiles the program with minijit's compiler and announces nothing (no jitherald
 * context), so what it prints comes from the compiler alone, never from an encoder or a
 * reader of jitherald's: a line address shifted by an encoder shows as a difference. The
 * code, hence every offset, is the same as in the demo JIT's own runs of the program.
 */
#include <stdio.h>
#include <stdlib.h>

#include "minijit.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mj_lines PROGRAM.mini\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    static char src[1 << 20];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = 0;
    char err[256];
    mj_program *p = mj_compile(src, argv[1], NULL, err, sizeof err);
    if (!p) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (int i = 0; i < mj_function_count(p); i++) {
        const struct mj_function *fn = mj_function_at(p, i);
        for (uint32_t k = 0; k < fn->nlines; k++)
            printf("%s %x %u\n", fn->name, fn->lines[k].offset, fn->lines[k].line);
    }
    mj_free(p);
    return 0;
}
