/* main.c — `jitherald`: the offline tools. One subcommand per file (cmd_*.c); see cli.h. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "jitherald.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmds[] = {
    { "inspect", jhc_cmd_inspect, "FILE          decode a jitdump or perf map" },
    { "check", jhc_cmd_check, "FILE            validate a jitdump or perf map as perf reads it" },
    { "callgrind", jhc_cmd_callgrind, "IN OUT      name JIT code in a callgrind.out file" },
    { "clean", jhc_cmd_clean, "[DIR]           remove files of processes that are gone" },
    { "log", jhc_cmd_log, "FILE CMD...       read an audit log (jitherald log --help)" },
};

static int usage(FILE *f)
{
    fprintf(f, "usage: jitherald COMMAND [ARGS]\n       jitherald --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
    return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("jitherald %s\n", jh_version());
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
        return usage(stdout);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "jitherald: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
