/* log.c — not written yet. */
#include <stdio.h>
#include "cli.h"

int jh_cmd_log(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "jitherald log: not implemented yet\n");
    return 2;
}
