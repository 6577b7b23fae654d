/* cli.h — the `jitherald` command's subcommands, one file each under tools/. Each returns
 * the process exit status: 0 ok, 1 the input has a problem (reported), 2 usage/IO error. */
#ifndef JH_CLI_H
#define JH_CLI_H

int jh_cmd_inspect(int argc, char **argv);   /* inspect.c: decode a jitdump / perf map */
int jh_cmd_check(int argc, char **argv);     /* inspect.c: validate against perf's rules */
int jh_cmd_callgrind(int argc, char **argv); /* callgrind.c: name JIT code in callgrind.out */
int jh_cmd_clean(int argc, char **argv);     /* clean.c: remove old elfmap/jitdump files */
int jh_cmd_log(int argc, char **argv);       /* log.c: read an audit log */

#endif
