/* clean.c — not written yet. */
#include <stdio.h>
#include "cli.h"

int jh_cmd_clean(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "jitherald clean: not implemented yet\n");
    return 2;
}
