/*
 * cli.h — the `jitherald` command's subcommands, one file each (cmd_*.c), over the reader
 * library in tools/lib/ (whose names start with jhr_; the CLI's own start with jhc_). Each
 * returns the process exit status: 0 ok, 1 the input has a problem (reported), 2 usage/IO
 * error.
 */
#ifndef JHC_CLI_H
#define JHC_CLI_H

#include <stdbool.h>

int jhc_cmd_inspect(int argc, char **argv);   /* cmd_inspect.c: decode a jitdump / perf map */
int jhc_cmd_check(int argc, char **argv);     /* cmd_check.c: validate as perf reads it */
int jhc_cmd_callgrind(int argc, char **argv); /* cmd_callgrind.c: name JIT code in callgrind.out */
int jhc_cmd_clean(int argc, char **argv);     /* cmd_clean.c: remove old elfmap/jitdump files */
int jhc_cmd_log(int argc, char **argv);       /* cmd_log.c: read an audit log */

/* cmd_check.c: check FILE (a jitdump or a perf map) as `cmd` does; print: list every record
 * too (inspect). */
int jhc_check_file(const char *cmd, int argc, char **argv, bool print);

#endif
