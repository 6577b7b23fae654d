/*
 * cmd_callgrind.c — `jitherald callgrind IN OUT`: name JIT code in a callgrind.out after the
 * run, for code the elfmap channel could not swap (RWX pages, other machines' profiles):
 *
 *     $ JITHERALD=jitdump valgrind --tool=callgrind ./minijit fib.mini 20
 *     $ callgrind_annotate callgrind.out.4242 | grep 0x
 *        412,680  ???:0x0000000004a41000'2 [???]
 *     $ jitherald callgrind callgrind.out.4242 named.out     # finds jit-4242.dump itself
 *     $ callgrind_annotate named.out | grep fib
 *        412,680  fib.mini:fib'2 [jit-4242.dump]
 *
 * The symbols come from the jitdump or perf map the run wrote (lib/symtab.h), the rewrite
 * is lib/callgrind_rewrite.h; this file finds the inputs and writes the output.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "jitherald.h"
#include "base/files.h"
#include "lib/callgrind_rewrite.h"
#include "lib/filekind.h"
#include "lib/files.h"

#define USAGE "usage: jitherald callgrind [--jitdump FILE]... [--map FILE]... IN... OUT|DIR"

static int help(void)
{
    printf("usage: jitherald callgrind [--jitdump FILE]... [--map FILE]... IN OUT\n"
            "       jitherald callgrind [--jitdump FILE]... [--map FILE]... IN... DIR\n"
            "Name JIT code in a callgrind.out (or cachegrind.out) file: functions callgrind\n"
            "shows as bare addresses get their name, source file and lines from the jitdump\n"
            "file(s) or perf map(s) written while the program ran. Without --jitdump/--map,\n"
            "uses jit-PID.dump in $JITHERALD_DIR (default /tmp/jitherald-UID) if present,\n"
            "else /tmp/perf-PID.map, PID being the one recorded in IN; a file found that way\n"
            "is read only if it is yours, not a symbolic link, and at most 1 GiB. Several INs\n"
            "(the parts of callgrind.out.PID.N, the threads of --separate-threads=yes): each is\n"
            "written to DIR under its own name. Every call and cost is kept. OUT - is\n"
            "standard output.\n"
            "Exit 1 when IN is not a callgrind/cachegrind profile or a file given is\n"
            "malformed, 2 when a file cannot be read or written.\n");
    return 0;
}

/* Files found by the profile's pid, in places other users can write to: at most this big
 * (a jitdump of 200,000 functions with their code is ~100 MiB). */
#define GUESSED_MAX ((size_t)1 << 30)

/* Load the jitdump or perf map at path. guessed: found by the pid, not named by the user:
 * it must be ours, not a symlink, at most GUESSED_MAX (lib/files.h), and a missing one is
 * not worth a word. */
static int load(struct jhr_syms *s, const char *path, bool jitdump, bool guessed)
{
    uint8_t *data;
    size_t len;
    int err = guessed ? jhr_read_guessed(path, GUESSED_MAX, &data, &len) :
                        jhr_read_file(path, &data, &len);
    if (err) {
        if (guessed && err != -ENOENT)
            fprintf(stderr, "jitherald callgrind: %s: %s (found by the profile's pid; if you "
                    "trust it, name it with %s)\n", path, jhr_file_error(err),
                    jitdump ? "--jitdump" : "--map");
        else if (!guessed)
            fprintf(stderr, "jitherald callgrind: %s: %s\n", path, jhr_file_error(err));
        return err;
    }
    size_t before = s->nfns;
    err = jitdump ? jhr_syms_load_jitdump(s, data, len) : jhr_syms_load_perfmap(s, data, len);
    if (err == JH_EFORMAT && len)
        jhc_wrong_kind("callgrind", path, jitdump ? "a jitdump" : "a perf map", data,
                       len < JHR_KIND_PEEK ? len : JHR_KIND_PEEK);
    else if (err)
        fprintf(stderr, "jitherald callgrind: %s: %s\n", path,
                err == JH_EFORMAT ? "empty file" : jh_strerror(err));
    else
        fprintf(stderr, "jitherald callgrind: %s: %zu functions\n", path, s->nfns - before);
    free(data);
    static char object[256];
    if (!err && !s->object) {
        const char *base = strrchr(path, '/');
        snprintf(object, sizeof object, "%s", base ? base + 1 : path);
        s->object = object;
    }
    return err;
}

/* The symbols for one profile when none were given: from the files its process wrote. */
static int guess_syms(struct jhr_syms *s, const char *in, const uint8_t *text, size_t len)
{
    const char *p = memmem(text, len, "\npid: ", 6);
    long pid = p ? strtol(p + 6, NULL, 10) : 0;
    char dir[4096], path[4200];
    jhr_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/jit-%ld.dump", dir, pid);
    if (pid <= 0 || load(s, path, true, true) != 0) {
        snprintf(path, sizeof path, "/tmp/perf-%ld.map", pid);
        if (pid <= 0 || load(s, path, false, true) != 0) {
            if (pid <= 0)
                fprintf(stderr, "jitherald callgrind: %s: no pid: line, so no jitdump or perf "
                        "map to look for; give one with --jitdump FILE or --map FILE\n", in);
            else
                fprintf(stderr, "jitherald callgrind: no jitdump or perf map for pid %ld; "
                        "give one with --jitdump FILE or --map FILE\n", pid);
            return 1;
        }
    }
    return 0;
}

/* OUT "-" is standard output, as everywhere in the CLI. */
static bool is_stdout(const char *path) { return !strcmp(path, "-"); }

/* Write n bytes to OUT; 0, or errno (with the message printed). */
static int write_out(const char *outp, const void *p, size_t n)
{
    errno = 0;
    FILE *f = is_stdout(outp) ? stdout : fopen(outp, "w");
    int err = !f ? errno : fwrite(p, 1, n, f) != n ? (errno ? errno : EIO) : 0;
    if (f && (f == stdout ? fflush(f) : fclose(f)) != 0 && !err)
        err = errno ? errno : EIO;
    if (err)
        fprintf(stderr, "jitherald callgrind: %s: %s\n",
                is_stdout(outp) ? "standard output" : outp, strerror(err));
    return err;
}

/* Rewrite IN into OUT with the given symbols (or, when given is NULL, those its process
 * left). An exit status. */
static int rewrite(const struct jhr_syms *given, const char *in, const char *outp)
{
    uint8_t *text;
    size_t len;
    int err = jhr_read_file(in, &text, &len);
    if (err) {
        fprintf(stderr, "jitherald callgrind: %s: %s\n", in, jhr_file_error(err));
        return 2;
    }
    if (len == 0) {         /* the base file --separate-threads=yes leaves empty */
        free(text);
        if (write_out(outp, "", 0))
            return 2;
        fprintf(stderr, "jitherald callgrind: %s: empty, as callgrind leaves the base file "
                "with --separate-threads=yes\n", in);
        return 0;
    }
    /* IN of a kind jitherald knows and not a profile: say so before looking for its pid */
    switch (jhr_kind_of(text, len < JHR_KIND_PEEK ? len : JHR_KIND_PEEK)) {
    case JHR_KIND_CALLGRIND:
        break;
    case JHR_KIND_TEXT:     /* a profile has an events: line (callgrind_annotate needs it) */
        if ((len >= 7 && !memcmp(text, "events:", 7)) || memmem(text, len, "\nevents:", 8))
            break;
        /* fall through */
    default:
        jhc_wrong_kind("callgrind", in, "a callgrind/cachegrind profile", text,
                       len < JHR_KIND_PEEK ? len : JHR_KIND_PEEK);
        free(text);
        return 1;
    }
    struct jhr_syms guessed = { 0 };
    const struct jhr_syms *s = given;
    if (!given) {
        if ((err = guess_syms(&guessed, in, text, len))) {
            free(text);
            jhr_syms_free(&guessed);
            return err;
        }
        jhr_syms_finish(&guessed);
        s = &guessed;
    }
    struct jh__buf ob = { 0 };
    struct jhr_cg_stats st;
    err = jhr_cg_rewrite((const char *)text, len, s, &ob, &st);
    free(text);
    jhr_syms_free(&guessed);
    int rc = 0;
    if (err) {
        fprintf(stderr, "jitherald callgrind: %s: %s\n", in,
                err == JH_EFORMAT ? "not a callgrind/cachegrind profile" : jh_strerror(err));
        rc = err == JH_EFORMAT ? 1 : 2;
    } else if (write_out(outp, ob.p, ob.len)) {
        rc = 2;
    } else {
        fprintf(stderr, "jitherald callgrind: %s: %zu address-named blocks named, %zu calls "
                "kept\n", in, st.fns_named, st.calls);
    }
    jh__buf_free(&ob);
    return rc;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int jhc_cmd_callgrind(int argc, char **argv)
{
    struct jhr_syms s = { 0 };
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int npos = 0, rc = 2;
    bool explicit_src = false;
    if (!pos)
        return 2;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--jitdump") || !strcmp(argv[i], "--map")) && i + 1 == argc) {
            fprintf(stderr, "jitherald callgrind: %s needs a FILE\n", argv[i]);
            rc = jhc_usage_error("callgrind", USAGE);
            goto out;
        } else if (!strcmp(argv[i], "--jitdump") || !strcmp(argv[i], "--map")) {
            /* a file given and unusable ends the command: naming nothing would pass for
             * a profile without JIT code */
            int err = load(&s, argv[i + 1], argv[i][2] == 'j', false);
            if (err) {
                rc = err == JH_EFORMAT ? 1 : 2;
                goto out;
            }
            explicit_src = true;
            i++;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            rc = help();
            goto out;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "jitherald callgrind: unknown option %s\n", argv[i]);
            rc = jhc_usage_error("callgrind", USAGE);
            goto out;
        } else {
            pos[npos++] = argv[i];
        }
    }
    if (npos < 2) {
        if (npos == 1)
            fprintf(stderr, "jitherald callgrind: no OUT after %s\n", pos[0]);
        rc = jhc_usage_error("callgrind", USAGE);
        goto out;
    }
    const char *dest = pos[npos - 1];
    bool to_dir = npos > 2 || (!is_stdout(dest) && is_dir(dest));
    if (npos > 2 && (is_stdout(dest) || !is_dir(dest))) {
        fprintf(stderr, "jitherald callgrind: %s: not a directory (several inputs go to a "
                "directory, each under its own name)\n", dest);
        goto out;
    }
    jhr_syms_finish(&s);
    rc = 0;
    for (int i = 0; i < npos - 1; i++) {
        char path[4200];
        const char *outp = dest;
        if (to_dir) {
            const char *base = strrchr(pos[i], '/');
            snprintf(path, sizeof path, "%s/%s", dest, base ? base + 1 : pos[i]);
            outp = path;
        }
        int r = rewrite(explicit_src ? &s : NULL, pos[i], outp);
        if (r > rc)
            rc = r;
    }
out:
    free(pos);
    jhr_syms_free(&s);
    return rc;
}
