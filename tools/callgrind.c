/* callgrind.c — not written yet. */
#include <stdio.h>
#include "cli.h"

int jh_cmd_callgrind(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "jitherald callgrind: not implemented yet\n");
    return 2;
}
