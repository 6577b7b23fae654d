/* main.c — `jitherald`: the offline tools. One subcommand per file (cmd_*.c); see cli.h.
 * The table below is the only list of commands: `jitherald --help` prints it, and
 * tests/integration/man_pages.sh fails when jitherald(1) (docs/man/jitherald.1) misses one
 * of them or an option of one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jitherald.h"
#include "lib/filekind.h"

static const struct {
    const char *name, *args, *help;
    int (*fn)(int, char **);
} cmds[] = {
    { "inspect", "FILE", "decode a jitdump or perf map, record by record", jhc_cmd_inspect },
    { "check", "FILE", "validate a jitdump or perf map as perf reads it", jhc_cmd_check },
    { "callgrind", "IN OUT", "name JIT code in a callgrind.out file", jhc_cmd_callgrind },
    { "clean", "[DIR]", "remove files of processes that are gone", jhc_cmd_clean },
    { "log", "FILE [CMD]", "read an audit log (jitherald log --help)", jhc_cmd_log },
    { "core", "CORE", "gdb commands naming a core dump's JIT code", jhc_cmd_core },
    { "run", "-c CH CMD", "run a VM: its perf map and jitdump feed channels CH", jhc_cmd_run },
    { "attach", "PID [-c CH]", "switch channels on and off in a running JIT", jhc_cmd_attach },
};

#define USAGE "usage: jitherald COMMAND [ARGS]"

static int help(void)
{
    FILE *f = stdout;
    fprintf(f, USAGE "\n"
            "       jitherald COMMAND --help\n"
            "       jitherald --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-9s %-11s %s\n", cmds[i].name, cmds[i].args, cmds[i].help);
    fprintf(f, "\nexit status: 0 success; 1 the input has a problem (named on stderr); "
            "2 usage error,\nor a file that cannot be read or written.\n");
    return 0;
}

int jhc_usage_error(const char *cmd, const char *usage_line)
{
    fprintf(stderr, "%s\nsee 'jitherald %s%s--help'\n", usage_line, cmd ? cmd : "",
            cmd ? " " : "");
    return 2;
}

void jhc_wrong_kind(const char *cmd, const char *path, const char *want, const uint8_t *p,
                    size_t n)
{
    enum jhr_kind k = jhr_kind_of(p, n);
    const char *reader = jhr_kind_reader(k);
    fprintf(stderr, "jitherald %s: %s: not %s: it is %s", cmd, path, want, jhr_kind_name(k));
    if (reader) {
        fprintf(stderr, " (read it with `");
        fprintf(stderr, reader, path);
        fprintf(stderr, "`)");
    }
    fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return jhc_usage_error(NULL, USAGE);
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
        !strcmp(argv[1], "version")) {
        printf("jitherald %s\n", jh_version());
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            /* `jitherald help CMD` is `jitherald CMD --help` */
            char *sub[] = { argv[2], "--help", NULL };
            for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
                if (!strcmp(argv[2], cmds[i].name))
                    return cmds[i].fn(2, sub);
            fprintf(stderr, "jitherald: unknown command '%s'\n", argv[2]);
            return jhc_usage_error(NULL, USAGE);
        }
        return help();
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "jitherald: unknown command '%s'\n", argv[1]);
    return jhc_usage_error(NULL, USAGE);
}
