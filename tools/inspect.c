/* inspect.c — not written yet. */
#include <stdio.h>
#include "cli.h"

int jh_cmd_inspect(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "jitherald inspect: not implemented yet\n");
    return 2;
}

int jh_cmd_check(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "jitherald check: not implemented yet\n");
    return 2;
}
