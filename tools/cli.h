/*
 * cli.h — the `jitherald` command's subcommands, one file each (cmd_*.c), over the reader
 * library in tools/lib/ (whose names start with jhr_; the CLI's own start with jhc_). Each
 * returns the process exit status, the same in every command:
 *   0  success;
 *   1  the input has a problem, named on stderr: malformed, or not the kind of file the
 *      command reads (the message says what it is, from its magic: lib/filekind.h), or
 *      nothing in it matches what was asked (`log FILE code nosuchfn`);
 *   2  usage error (unknown command or option, missing or extra argument), or a file that
 *      cannot be read or written (missing, a directory, permission denied).
 * Every message on stderr begins with "jitherald COMMAND: " and, when it is about a file,
 * the file's name; errors about files are worded about files (lib/files.h).
 */
#ifndef JHC_CLI_H
#define JHC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int jhc_cmd_inspect(int argc, char **argv);   /* cmd_inspect.c: decode a jitdump / perf map */
int jhc_cmd_check(int argc, char **argv);     /* cmd_check.c: validate as perf reads it */
int jhc_cmd_callgrind(int argc, char **argv); /* cmd_callgrind.c: name JIT code in callgrind.out */
int jhc_cmd_clean(int argc, char **argv);     /* cmd_clean.c: remove old elfmap/jitdump files */
int jhc_cmd_log(int argc, char **argv);       /* cmd_log.c: read an audit log */
int jhc_cmd_run(int argc, char **argv);       /* cmd_run.c: a command with the preload library */
int jhc_cmd_core(int argc, char **argv);      /* cmd_core.c: gdb commands for a core's JIT images */
int jhc_cmd_attach(int argc, char **argv);    /* cmd_attach.c: channels on/off in a running JIT */

/* cmd_check.c: check FILE (a jitdump or a perf map) as `cmd` does; print: list every record
 * too (inspect). */
int jhc_check_file(const char *cmd, int argc, char **argv, bool print);

/* main.c: the end of every usage error (after the line saying what was wrong): the
 * command's one usage line and "see 'jitherald CMD --help'" (cmd NULL: jitherald's own).
 * Returns 2, the exit status of a usage error. */
int jhc_usage_error(const char *cmd, const char *usage_line);

/* main.c: "jitherald CMD: PATH: not WANT: it is <kind> (read it with `...`)", the kind
 * found from the file's first bytes p[0..n). */
void jhc_wrong_kind(const char *cmd, const char *path, const char *want, const uint8_t *p,
                    size_t n);

#endif
