/*
 * cmd_log.c — `jitherald log FILE COMMAND`: read an audit log written by the auditlog channel.
 *
 *     $ jitherald log /tmp/jitherald-1000/minijit-4242.jhlog code
 *     $ jitherald log minijit-4242.jhlog show fib               # disassembly + source lines
 *     $ jitherald log minijit-4242.jhlog show 0x55d0c0a8e2a0 --vm ./minijit   # a C struct
 *     $ jitherald log minijit-4242.jhlog to-perfmap > /tmp/perf-4242.map
 *     $ jitherald log minijit-4242.jhlog report -o report.html
 *     $ jitherald log minijit-4242.jhlog profile perf.data      # hot functions, by time
 *
 * The log is read into a model by lib/auditlog_read.h; the views are log_text.c (info,
 * list, events, code, show), log_disasm.c and log_dwarf.c (what show prints), log_export.c
 * (to-perfmap, to-jitdump), log_elf.c (to-elf), log_report.c (report) and log_profile.c
 * (profile). The files
 * to-jitdump and to-elf write are for the architecture the log recorded, not the host's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "cli.h"
#include "lib/files.h"
#include "lib/filekind.h"
#include "log_present.h"
#include "log_samples.h"

#define USAGE "usage: jitherald log FILE [COMMAND [ARG]] [options]"

static int help(void)
{
    printf(USAGE "\n"
        "commands:\n"
        "  info              what the log holds, and whether it was closed or cut by a crash\n"
        "                    (the default)\n"
        "  list              every record, in order\n"
        "  events [NAME]     events (only those named NAME), with their attributes; addresses\n"
        "                    are resolved to logged memory and code\n"
        "  code [NAME]       code loads, moves, patches and unloads (of the functions NAME)\n"
        "  show ADDR|NAME    a function's code disassembled with source lines, or the memory\n"
        "                    logged at ADDR decoded as the C type of its hint (needs --vm)\n"
        "  to-perfmap        a perf map of the code in the log, to standard output or -o FILE\n"
        "                    (perf reads it as /tmp/perf-PID.map)\n"
        "  to-jitdump        a jitdump of the code in the log (-o FILE; perf inject reads it\n"
        "                    as jit-PID.dump)\n"
        "  report            one self-contained HTML page (-o FILE); with --profile, the hot\n"
        "                    functions first, their compile history, disassembly with samples\n"
        "                    per instruction, a flame graph and a timeline\n"
        "  profile PERF.DATA the hot functions of a profile (perf record -k 1 [-g]), self and\n"
        "                    total, each sample named by the code at its address at its\n"
        "                    time; and how many the perf map would name otherwise. Or a\n"
        "                    callgrind.out (no time: an address reused shows all its names)\n"
        "  to-elf DIR        the elfmap channel's image files, rebuilt into DIR with the\n"
        "                    build-ids the live ones had (prints each path and id)\n"
        "options:\n"
        "  --vm PATH         the VM binary whose DWARF types decode memory (default: the\n"
        "                    executable named in the log, if it is still there)\n"
        "  --type TYPE       decode as TYPE instead of the logged hint (\"struct foo\")\n"
        "  --profile FILE    report: join a perf.data (perf record -k 1 [-g]) or callgrind.out\n"
        "  --at N            show memory as it stood at record N (default: the end)\n"
        "  --no-source       do not read the source files the line tables name\n"
        "  --source-dir DIR  read the sources the log names under DIR (repeatable; default:\n"
        "                    the current directory only, whatever else the log names)\n"
        "  -o FILE           output file (default, and -o -: standard output)\n"
        "exit status: 1 when NAME or ADDR matches nothing in the log, FILE is not an audit\n"
        "log, or to-jitdump and to-elf do not know its architecture; 2 for a usage error or\n"
        "a file that cannot be read or written.\n");
    return 0;
}

/* The commands, and how many arguments each takes: 0 none, 1 one, -1 one or none. */
static const struct {
    const char *name;
    int nargs;
} cmds[] = {
    { "info", 0 }, { "list", 0 }, { "events", -1 }, { "code", -1 }, { "show", 1 },
    { "to-perfmap", 0 }, { "to-jitdump", 0 }, { "report", 0 }, { "to-elf", 1 },
    { "profile", 1 },
};

static int bad_usage(const char *fmt, const char *a)
{
    fprintf(stderr, "jitherald log: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return jhc_usage_error("log", USAGE);
}

/* cmds[] index of name, or -1. */
static int find_cmd(const char *name)
{
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++)
        if (!strcmp(name, cmds[k].name))
            return (int)k;
    return -1;
}

/* `jitherald log report x.jhlog`, perf's order (`perf report -i FILE`): the command came
 * first and no file has its name. One line with the order that works; exit 2. */
static int wrong_order(const char *const *pos, int npos)
{
    if (npos == 1) {
        fprintf(stderr, "jitherald log: the audit log comes first: jitherald log FILE %s\n",
                pos[0]);
        return 2;
    }
    fprintf(stderr, "jitherald log: the audit log comes first: jitherald log %s", pos[npos - 1]);
    for (int k = 0; k < npos - 1; k++)
        fprintf(stderr, " %s", pos[k]);
    fprintf(stderr, "\n");
    return 2;
}

/* Open FILE as an audit log; an exit status when it is not one (said on stderr). */
static int open_log(struct jhr_al *lf, const char *file)
{
    uint8_t head[JHR_KIND_PEEK];
    int fd = jh__open_regular(file, 0);
    if (fd == -EINVAL) {
        struct stat st;
        fd = stat(file, &st) == 0 && S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    }
    if (fd < 0) {
        fprintf(stderr, "jitherald log: %s: %s\n", file, jhr_file_error(fd));
        return 2;
    }
    ssize_t n = read(fd, head, sizeof head);
    int rerr = errno;
    close(fd);
    if (n < 0) {
        fprintf(stderr, "jitherald log: %s: %s\n", file, strerror(rerr));
        return 2;
    }
    if (jhr_kind_of(head, (size_t)n) != JHR_KIND_AUDITLOG) {
        jhc_wrong_kind("log", file, "an audit log", head, (size_t)n);
        return 1;
    }
    char err[512];
    if (jhr_al_open(lf, file, err, sizeof err) < 0) {
        size_t k = strlen(file);
        bool named = !strncmp(err, file, k) && err[k] == ':';
        fprintf(stderr, "jitherald log: %s%s%s\n", named ? "" : file, named ? "" : ": ", err);
        return 1;
    }
    return 0;
}

int jhc_cmd_log(int argc, char **argv)
{
    const char *file = NULL, *cmd = NULL, *arg = NULL, *vm = NULL, *type = NULL, *outpath = NULL;
    const char *profile = NULL;
    const char *pos[8];                 /* FILE COMMAND ARG, or perf's order */
    int npos = 0;
    size_t at = SIZE_MAX;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return help();
        if (!strcmp(a, "--no-source")) {
            jhc_disasm_source = false;
            continue;
        }
        if (!strcmp(a, "--source-dir")) {
            if (i + 1 == argc)
                return bad_usage("%s needs a value", a);
            int err = jhc_source_allow(argv[++i]);
            if (err < 0) {
                fprintf(stderr, "jitherald log: --source-dir %s: %s\n", argv[i], jhr_file_error(err));
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--profile")) {
            if (i + 1 == argc)
                return bad_usage("%s needs a value", a);
            profile = argv[++i];
            continue;
        }
        if (!strcmp(a, "--vm") || !strcmp(a, "--type") || !strcmp(a, "-o") || !strcmp(a, "--at")) {
            if (i + 1 == argc)
                return bad_usage("%s needs a value", a);
            const char *v = argv[++i];
            char *end;
            if (a[2] == 'v') vm = v;
            else if (a[2] == 't' && a[3] == 'y') type = v;
            else if (a[1] == 'o') outpath = v;
            else if ((at = (size_t)strtoull(v, &end, 0)), *end || !*v || *v == '-')
                return bad_usage("--at %s: not a record number", v);
        } else if (a[0] == '-' && a[1]) {
            return bad_usage("unknown option %s", a);
        } else if (npos < (int)(sizeof pos / sizeof pos[0])) {
            pos[npos++] = a;
        } else {
            return bad_usage("unexpected argument '%s'", a);
        }
    }
    if (!npos)
        return bad_usage("no FILE%s", "");
    if (find_cmd(pos[0]) >= 0 && access(pos[0], F_OK) != 0)
        return wrong_order(pos, npos);
    file = pos[0];
    int k = npos > 1 ? find_cmd(pos[1]) : find_cmd("info");
    if (k < 0)
        return bad_usage("unknown command '%s'", pos[1]);
    cmd = cmds[k].name;
    int allowed = 2 + (cmds[k].nargs != 0);
    if (npos > allowed)
        return bad_usage("unexpected argument '%s'", pos[allowed]);
    arg = npos > 2 ? pos[2] : NULL;
    if (cmds[k].nargs == 1 && !arg)
        return bad_usage("%s needs an argument", cmd);
    if (profile && strcmp(cmd, "report"))
        return bad_usage("--profile goes with report (profile takes the file as its argument), not %s", cmd);
    struct jhr_al lf;
    int orc = open_log(&lf, file);
    if (orc)
        return orc;
    if (!vm && lf.exe && lf.exe[0] && access(lf.exe, R_OK) == 0)
        vm = lf.exe;
    /* before -o FILE or DIR is made: a refused log leaves nothing behind */
    if (strcmp(cmd, "info"))
        jhc_log_cfiles(stderr, &lf, true);  /* code whose bytes are missing: say why */
    const struct jh__arch *arch = NULL;
    if ((!strcmp(cmd, "to-jitdump") || !strcmp(cmd, "to-elf")) &&
        !(arch = jhc_log_arch(&lf, file, cmd))) {
        jhr_al_free(&lf);
        return 1;
    }
    /* the profile too: one that cannot be used leaves no report behind */
    struct jhc_samples prof;
    if (profile) {
        int prc = jhc_samples_load(&prof, &lf, profile, true);
        if (prc) {
            jhc_samples_free(&prof);
            jhr_al_free(&lf);
            return prc;
        }
    }
    FILE *out = stdout;
    if (outpath && !strcmp(outpath, "-"))
        outpath = NULL;                 /* -o -: standard output */
    if (outpath && !(out = fopen(outpath, "w"))) {
        fprintf(stderr, "jitherald log: %s: %s\n", outpath, strerror(errno));
        if (profile)
            jhc_samples_free(&prof);
        jhr_al_free(&lf);
        return 2;
    }
    int rc = 0;
    if (!strcmp(cmd, "info")) {
        jhc_log_info(out, &lf);
    } else if (!strcmp(cmd, "list")) {
        for (size_t i = 0; i < lf.nrecs; i++)
            jhc_log_record(out, &lf, i);
    } else if (!strcmp(cmd, "events")) {
        if (!jhc_log_events(out, &lf, arg) && arg) {
            fprintf(stderr, "jitherald log: %s: no event named '%s'\n", file, arg);
            rc = 1;
        }
    } else if (!strcmp(cmd, "code")) {
        if (!jhc_log_code(out, &lf, arg)) {
            fprintf(stderr, "jitherald log: %s: no code named '%s' (`jitherald log %s code` "
                    "lists it all)\n", file, arg, file);
            rc = 1;
        }
    } else if (!strcmp(cmd, "show")) {
        rc = jhc_log_show(out, &lf, arg, vm, type, at);
    } else if (!strcmp(cmd, "to-perfmap")) {
        jhc_export_perfmap(&lf, out);           /* fails only writing: see below */
    } else if (!strcmp(cmd, "to-jitdump")) {
        if (out == stdout && isatty(1)) {
            fprintf(stderr, "jitherald log: to-jitdump writes binary: give -o jit-PID.dump\n");
            rc = 2;
        } else {
            jhc_export_jitdump(&lf, arch, out);
        }
    } else if (!strcmp(cmd, "to-elf")) {
        /* DIR or an image in it that cannot be made or written: exit 2, as for -o FILE */
        rc = jhc_export_elf(&lf, arch, arg, out) < 0 ? 2 : 0;
    } else if (!strcmp(cmd, "profile")) {
        rc = jhc_log_profile(&lf, arg, out);
    } else if (!strcmp(cmd, "report")) {
        char err[512];
        struct jhc_types *dt = vm ? jhc_types_open(vm, err, sizeof err) : NULL;
        if (vm && !dt)
            fprintf(stderr, "jitherald log: %s (structs shown as bytes)\n", err);
        if (jhc_report_html(&lf, profile ? &prof : NULL, dt, out) < 0 && !ferror(out)) {
            fprintf(stderr, "jitherald log: out of memory\n");
            rc = 2;
        }
        jhc_types_close(dt);
    }
    /* Every view's only failure is a write error, named here: a full disk or a closed
     * pipe is "a file that cannot be written", exit 2. */
    errno = 0;
    int werr = fflush(out) != 0 || ferror(out) ? (errno ? errno : EIO) : 0;
    if (out != stdout && fclose(out) != 0 && !werr)
        werr = errno ? errno : EIO;
    if (werr) {
        fprintf(stderr, "jitherald log: %s: %s\n", outpath ? outpath : "standard output",
                strerror(werr));
        rc = 2;
    }
    if (profile)
        jhc_samples_free(&prof);
    jhr_al_free(&lf);
    return rc;
}
