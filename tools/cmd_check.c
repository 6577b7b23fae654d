/*
 * cmd_check.c — `jitherald check FILE`, for the files perf reads about JIT code: jitdump
 * files (jit-<pid>.dump, recognised by their magic) and perf maps (anything else).
 *
 *     $ jitherald check /tmp/jitherald-0/jit-4242.dump
 *     /tmp/jitherald-0/jit-4242.dump: ok: jitdump, 31 records: 10 LOAD, 10 DEBUG_INFO, ...
 *     $ jitherald check broken.dump
 *     jitherald check: broken.dump: offset 0x1f0: record id 0 of 4096 bytes runs past the end of the file ...
 *
 * check: exit 0 if perf will take the whole file, 1 at the first problem (one line naming
 * the offset or line and what perf would do with it), 2 for usage or I/O errors. The
 * quirks perf takes (other JITs' files have many: docs/interop.md) are warnings on stderr,
 * one line per kind, and do not change the exit status; with --strict they are errors
 * (exit 1): the file is held to the format's specification, as jitherald's own files are.
 * `jitherald inspect` (cmd_inspect.c) is the same check with every record printed. The
 * checks themselves are lib/jitdump_check.h and lib/perfmap_read.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/files.h"
#include "lib/filekind.h"
#include "lib/files.h"
#include "lib/jitdump_check.h"
#include "lib/perfmap_read.h"

/* The first problem: on stderr, as every error (inspect's listing stops before it). */
static void problem(const char *cmd, const char *path, const char *msg, bool print)
{
    if (print)
        fflush(stdout);
    fprintf(stderr, "jitherald %s: %s: %s\n", cmd, path, msg);
}

/* The warnings collected in *warn (a memstream over buf), each line prefixed. */
static void flush_warnings(const char *cmd, const char *path, FILE **warn, char *const *buf,
                           bool print)
{
    if (!*warn || *warn == stderr)
        return;
    fclose(*warn);
    *warn = NULL;
    if (print)
        fflush(stdout);
    for (char *l = *buf; l && *l;) {
        char *nl = strchr(l, '\n');
        int n = nl ? (int)(nl - l) : (int)strlen(l);
        fprintf(stderr, "jitherald %s: %s: %.*s\n", cmd, path, n, l);
        l = nl ? nl + 1 : l + n;
    }
}

int jhc_check_file(const char *cmd, int argc, char **argv, bool print)
{
    bool quiet = false, strict = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
            quiet = true;
        else if (!strcmp(argv[i], "--strict"))
            strict = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: jitherald %s [-q] [--strict] FILE\n%s\n  FILE: a jitdump "
                   "(jit-<pid>.dump) or a perf map (perf-<pid>.map)\n  -q: no warnings, no "
                   "summary\n  --strict: the quirks perf accepts are errors too\nExit 1 at "
                   "the first problem perf would have with the file, named on stderr. A\n"
                   "jitdump cut short in its last record (its writer stopped) is a warning\n"
                   "naming the records perf can use.\n", cmd,
                   print ? "Print a jitdump or perf map record by record, checked as perf "
                           "reads it." :
                           "Check a jitdump or perf map as perf reads it.");
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "jitherald %s: unknown option %s\n", cmd, argv[i]);
            path = NULL, i = argc;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "jitherald %s: one FILE at a time (%s and %s)\n", cmd, path,
                    argv[i]);
            path = NULL, i = argc;
        }
    }
    if (!path) {
        char line[64];
        snprintf(line, sizeof line, "usage: jitherald %s [-q] [--strict] FILE", cmd);
        return jhc_usage_error(cmd, line);
    }
    uint8_t *data;
    size_t len;
    int err = jhr_read_file(path, &data, &len);
    if (err) {
        fprintf(stderr, "jitherald %s: %s: %s\n", cmd, path, jhr_file_error(err));
        return 2;
    }
    enum jhr_kind kind = jhr_kind_of(data, len < JHR_KIND_PEEK ? len : JHR_KIND_PEEK);
    if (kind != JHR_KIND_JITDUMP && kind != JHR_KIND_PERFMAP && kind != JHR_KIND_TEXT &&
        kind != JHR_KIND_EMPTY) {
        jhc_wrong_kind(cmd, path, "a jitdump or perf map", data,
                       len < JHR_KIND_PEEK ? len : JHR_KIND_PEEK);
        free(data);
        return 1;
    }
    FILE *out = print ? stdout : NULL;
    /* warnings are collected, then printed with the command and file in front */
    char *wbuf = NULL;
    size_t wlen = 0;
    bool warns = !quiet || strict;      /* -q --strict still names what --strict refuses */
    FILE *warn = warns ? open_memstream(&wbuf, &wlen) : NULL;
    if (warns && !warn)
        warn = stderr;
    int rc;
    if (jhr_jd_is_jitdump(data, len)) {
        struct jhr_jd r;
        struct jhr_jd_stats st;
        rc = jhr_jd_check(&r, data, len, out, JHR_JD_VERBOSE | (strict ? JHR_JD_STRICT : 0),
                          warn, &st);
        flush_warnings(cmd, path, &warn, &wbuf, print);
        if (rc) {
            problem(cmd, path, r.err, print);
        } else if (!quiet) {
            printf("%s: ok: jitdump, %zu records: %zu LOAD, %zu DEBUG_INFO, %zu UNWINDING_INFO, "
                   "%zu MOVE, %zu CLOSE", path, st.records, st.loads, st.debug, st.unwind,
                   st.moves, st.closes);
            if (st.unknown)
                printf(", %zu unknown", st.unknown);
            printf("; %zu line entries\n", st.lines);
        }
    } else {
        char msg[256];
        size_t n = 0;
        rc = jhr_pm_check(data, len, out, warn, strict, msg, sizeof msg, &n);
        flush_warnings(cmd, path, &warn, &wbuf, print);
        if (rc)
            problem(cmd, path, msg, print);
        else if (!quiet)
            printf("%s: ok: perf map, %zu lines\n", path, n);
    }
    free(wbuf);
    free(data);
    return rc ? 1 : 0;
}

int jhc_cmd_check(int argc, char **argv) { return jhc_check_file("check", argc, argv, false); }
