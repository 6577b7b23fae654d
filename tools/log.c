/*
 * log.c — `jitherald log FILE COMMAND`: read an audit log written by the auditlog channel.
 *
 *     $ jitherald log /tmp/jitherald-1000/minijit-4242.jhlog code
 *     $ jitherald log minijit-4242.jhlog show fib               # disassembly + source lines
 *     $ jitherald log minijit-4242.jhlog show 0x55d0c0a8e2a0 --vm ./minijit   # a C struct
 *     $ jitherald log minijit-4242.jhlog to-perfmap > /tmp/perf-4242.map
 *     $ jitherald log minijit-4242.jhlog report -o report.html
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"

static int usage(FILE *f)
{
    fprintf(f,
        "usage: jitherald log FILE COMMAND [options]\n"
        "commands:\n"
        "  info              what the log holds, and whether it was closed or cut by a crash\n"
        "  list              every record, in order\n"
        "  events [NAME]     events (only those named NAME), with their attributes; addresses\n"
        "                    are resolved to logged memory and code\n"
        "  code [NAME]       code loads, moves, patches and unloads (of the functions NAME)\n"
        "  show ADDR|NAME    a function's code disassembled with source lines, or the memory\n"
        "                    logged at ADDR decoded as the C type of its hint (needs --vm)\n"
        "  to-perfmap        a perf map (/tmp/perf-PID.map) of the code in the log\n"
        "  to-jitdump        a jitdump (jit-PID.dump) of the code in the log (-o FILE)\n"
        "  report            one self-contained HTML page (-o FILE)\n"
        "options:\n"
        "  --vm PATH         the VM binary whose DWARF types decode memory (default: the\n"
        "                    executable named in the log, if it is still there)\n"
        "  --type TYPE       decode as TYPE instead of the logged hint (\"struct foo\")\n"
        "  --at N            show memory as it stood at record N (default: the end)\n"
        "  --no-source       do not read the source files the line tables name\n"
        "  -o FILE           output file (default: standard output)\n");
    return f == stdout ? 0 : 2;
}

static void print_attrs_resolved(FILE *f, const struct log_file *lf, const struct mpv *attrs, size_t at)
{
    const uint8_t *it = attrs->p;
    struct mpv k, v;
    for (uint32_t i = 0; i < attrs->n && mp_next(attrs, &it, &k) == 0 && mp_next(attrs, &it, &v) == 0; i++) {
        fputc(' ', f);
        if (k.t == MPV_STR)
            text_safe(f, k.p, k.n);
        fputc('=', f);
        mp_print(f, &v, 1);
        if (v.t == MPV_EXT && v.ext == 1 && v.n == 8) {
            uint64_t a = 0;
            for (int j = 0; j < 8; j++)
                a = a << 8 | v.p[j];
            const struct log_mem *m = log_mem_at(lf, a, 1, at);
            const struct log_fn *fn = log_fn_at(lf, a, at);
            if (m && m->addr == a)
                fprintf(f, "[%s, %u B logged]", m->hint ? m->hint : "memory", m->size);
            else if (fn)
                fprintf(f, "[%s+0x%" PRIx64 "]", fn->name, a - fn->cur_start);
        }
    }
}

static void print_rec(FILE *f, const struct log_file *lf, size_t i)
{
    const struct log_rec *r = &lf->recs[i];
    fprintf(f, "%6zu %11.6f %6u  %-12s", i, log_secs(lf, r->time), r->thread, log_kind_name(r->kind));
    const struct log_fn *fn = r->ref >= 0 && r->kind >= LR_CODE_ADD && r->kind <= LR_CODE_PATCHED
                            ? &lf->fns[r->ref] : NULL;
    struct mpv v;
    uint64_t u;
    const char *s;
    uint32_t n;
    switch (r->kind) {
    case LR_HEADER:
        fprintf(f, " %s pid %" PRIu64 " version %" PRIu64, lf->engine ? lf->engine : "?", lf->pid, lf->version);
        break;
    case LR_MEMORY: {
        const struct log_mem *m = &lf->mems[r->ref];
        fprintf(f, " 0x%" PRIx64 " %u B %s", m->addr, m->size, m->hint ? m->hint : "");
        break;
    }
    case LR_EVENT:
        if (mp_get_str(&r->map, "event", &s, &n)) {
            fputc(' ', f);
            text_safe(f, s, n);
        }
        if (mp_get(&r->map, "attrs", &v) == 0 && v.t == MPV_MAP)
            print_attrs_resolved(f, lf, &v, i);
        break;
    case LR_CODE_ADD: {
        uint32_t line;
        const char *file = log_fn_line(fn, 0, &line);
        fprintf(f, " #%" PRIu64 " %s 0x%" PRIx64 " %" PRIu64 " B", fn->id, fn->name, fn->start, fn->size);
        if (file)
            fprintf(f, " %s:%u", file, line);
        break;
    }
    case LR_CODE_REMOVE:
    case LR_CODE_MOVE:
    case LR_CODE_PATCHED:
        if (fn)
            fprintf(f, " #%" PRIu64 " %s", fn->id, fn->name);
        if (r->kind == LR_CODE_MOVE && mp_get_u64(&r->map, "old_start", &u))
            fprintf(f, " 0x%" PRIx64, u);
        if (r->kind == LR_CODE_MOVE && mp_get_u64(&r->map, "start", &u))
            fprintf(f, " -> 0x%" PRIx64, u);
        if (r->kind == LR_CODE_PATCHED && mp_get_u64(&r->map, "address", &u) &&
            mp_get(&r->map, "data", &v) == 0)
            fprintf(f, " %u B at 0x%" PRIx64, v.n, u);
        break;
    case LR_LIMIT:
        if (mp_get_u64(&r->map, "limit", &u))
            fprintf(f, " the log reached its limit of %" PRIu64 " bytes: later records dropped", u);
        break;
    case LR_CLOSE:
        fprintf(f, " dropped %" PRIu64, lf->dropped);
        break;
    case LR_UNKNOWN:
        fputc(' ', f);
        mp_print(f, &r->map, 0);
        break;
    }
    fputc('\n', f);
}

static void print_info(FILE *f, const struct log_file *lf)
{
    size_t nev = 0, live = 0;
    for (size_t i = 0; i < lf->nrecs; i++)
        nev += lf->recs[i].kind == LR_EVENT;
    for (size_t i = 0; i < lf->nfns; i++)
        live += !lf->fns[i].removed;
    fprintf(f, "audit log version %" PRIu64 ": engine %s, pid %" PRIu64, lf->version,
            lf->engine ? lf->engine : "?", lf->pid);
    if (lf->parent_pid)
        fprintf(f, " (fork child of %" PRIu64 ")", lf->parent_pid);
    fprintf(f, ", %s\n", lf->arch ? lf->arch : "?");
    fprintf(f, "executable: %s\n", lf->exe ? lf->exe : "?");
    fprintf(f, "%zu records: %zu functions (%zu live at the end), %zu memory snapshots, %zu events\n",
            lf->nrecs, lf->nfns, live, lf->nmems, nev);
    if (lf->nrecs)
        fprintf(f, "spans %.6f s\n", log_secs(lf, lf->recs[lf->nrecs - 1].time));
    if (lf->closed)
        fprintf(f, "closed cleanly%s\n", lf->dropped ? "" : ", nothing dropped");
    else
        fprintf(f, "NOT closed: the process ended without jh_close (crash, kill, or still running)\n");
    if (lf->limit_hit || lf->dropped)
        fprintf(f, "LIMIT: the log reached its size limit (%" PRIu64 " bytes); %" PRIu64
                " records were dropped\n", lf->limit, lf->dropped);
    if (lf->cut)
        fprintf(f, "%zu record(s) were being written when the process stopped (skipped)\n", lf->cut);
    if (lf->bad || lf->resyncs)
        fprintf(f, "damage: %zu undecodable record(s), %zu resync(s)\n", lf->bad, lf->resyncs);
}

static void print_code(FILE *f, const struct log_file *lf, const char *only)
{
    fprintf(f, "%6s %11s  %-8s %5s  %-24s %-18s %8s  %s\n", "rec", "time(s)", "what", "id", "name",
            "address", "size", "source");
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct log_rec *r = &lf->recs[i];
        if (r->kind < LR_CODE_ADD || r->kind > LR_CODE_PATCHED || r->ref < 0)
            continue;
        const struct log_fn *fn = &lf->fns[r->ref];
        if (only && strcmp(fn->name, only))
            continue;
        static const char *what[] = { "add", "remove", "move", "patch" };
        uint64_t addr = fn->start;
        if (r->kind == LR_CODE_MOVE || r->kind == LR_CODE_REMOVE)
            mp_get_u64(&r->map, "start", &addr);
        if (r->kind == LR_CODE_PATCHED)
            mp_get_u64(&r->map, "address", &addr);
        uint32_t line = 0;
        const char *file = log_fn_line(fn, 0, &line);
        fprintf(f, "%6zu %11.6f  %-8s %5" PRIu64 "  %-24s 0x%-16" PRIx64 " %8" PRIu64 "  ", i,
                log_secs(lf, r->time), what[r->kind - LR_CODE_ADD], fn->id, fn->name, addr, fn->size);
        if (file)
            fprintf(f, "%s:%u", file, line);
        fputc('\n', f);
    }
    size_t live = 0;
    for (size_t i = 0; i < lf->nfns; i++)
        live += !lf->fns[i].removed;
    fprintf(f, "\n%zu functions added, %zu removed, %zu live at the end of the log\n", lf->nfns,
            lf->nfns - live, live);
}

static int parse_addr(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int do_show(FILE *out, const struct log_file *lf, const char *what, const char *vm,
                   const char *type, size_t at)
{
    uint64_t addr;
    const struct log_fn *fn = NULL;
    const struct log_mem *m = NULL;
    if (parse_addr(what, &addr) == 0) {
        m = log_mem_at(lf, addr, 1, at);
        if (m && m->addr != addr)
            m = NULL;
        if (!m)
            fn = log_fn_at(lf, addr, at);
        if (!m && !fn)
            m = log_mem_at(lf, addr, 1, at);
    } else {
        fn = log_fn_named(lf, what);
    }
    if (fn)
        return disasm_print(lf, fn, out, false) < 0 ? 1 : 0;
    if (!m) {
        fprintf(stderr, "jitherald log: nothing named or at '%s' in the log\n", what);
        return 1;
    }
    char err[512];
    struct dwarf_types *dt = vm ? dwarf_open(vm, err, sizeof err) : NULL;
    if (vm && !dt)
        fprintf(stderr, "jitherald log: %s\n", err);
    struct log_mem copy = *m;
    if (type)
        copy.hint = (char *)type;
    int rc = 0;
    if (!dt || dwarf_print(dt, lf, &copy, at, out, false) < 0) {
        if (!dt && vm == NULL)
            fprintf(stderr, "jitherald log: no --vm binary to read types from: showing bytes\n");
        fprintf(out, "%s @ 0x%" PRIx64 ", %u bytes (record %zu, %.6f s)\n", m->hint ? m->hint : "memory",
                m->addr, m->size, m->rec, log_secs(lf, m->time));
        for (uint32_t i = 0; i < m->size; i += 16) {
            fprintf(out, "  %08x ", i);
            for (uint32_t j = i; j < i + 16 && j < m->size; j++)
                fprintf(out, " %02x", m->data[j]);
            fputc('\n', out);
        }
        rc = dt ? 1 : 0;
    }
    dwarf_close(dt);
    return rc;
}

int jh_cmd_log(int argc, char **argv)
{
    const char *file = NULL, *cmd = NULL, *arg = NULL, *vm = NULL, *type = NULL, *outpath = NULL;
    size_t at = SIZE_MAX;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout);
        if (!strcmp(a, "--no-source")) {
            log_source = false;
            continue;
        }
        if ((!strcmp(a, "--vm") || !strcmp(a, "--type") || !strcmp(a, "-o") || !strcmp(a, "--at")) && i + 1 < argc) {
            const char *v = argv[++i];
            if (a[2] == 'v') vm = v;
            else if (a[2] == 't' && a[3] == 'y') type = v;
            else if (a[1] == 'o') outpath = v;
            else at = (size_t)strtoull(v, NULL, 0);
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "jitherald log: unknown option %s\n", a);
            return usage(stderr);
        } else if (!file) {
            file = a;
        } else if (!cmd) {
            cmd = a;
        } else if (!arg) {
            arg = a;
        } else {
            return usage(stderr);
        }
    }
    if (!file)
        return usage(stderr);
    if (!cmd)
        cmd = "info";
    struct log_file lf;
    char err[512];
    if (log_open(&lf, file, err, sizeof err) < 0) {
        fprintf(stderr, "jitherald log: %s\n", err);
        return 1;
    }
    if (!vm && lf.exe && lf.exe[0] && access(lf.exe, R_OK) == 0)
        vm = lf.exe;
    FILE *out = stdout;
    if (outpath && !(out = fopen(outpath, "w"))) {
        fprintf(stderr, "jitherald log: %s: %s\n", outpath, strerror(errno));
        log_free(&lf);
        return 2;
    }
    int rc = 0;
    if (!strcmp(cmd, "info")) {
        print_info(out, &lf);
    } else if (!strcmp(cmd, "list")) {
        for (size_t i = 0; i < lf.nrecs; i++)
            print_rec(out, &lf, i);
    } else if (!strcmp(cmd, "events")) {
        for (size_t i = 0; i < lf.nrecs; i++) {
            const char *s;
            uint32_t n;
            if (arg && !(mp_get_str(&lf.recs[i].map, "event", &s, &n) && strlen(arg) == n &&
                         !memcmp(arg, s, n)))
                continue;
            if (lf.recs[i].kind == LR_EVENT || lf.recs[i].kind == LR_LIMIT)
                print_rec(out, &lf, i);
        }
    } else if (!strcmp(cmd, "code")) {
        print_code(out, &lf, arg);
    } else if (!strcmp(cmd, "show") && arg) {
        rc = do_show(out, &lf, arg, vm, type, at);
    } else if (!strcmp(cmd, "to-perfmap")) {
        rc = export_perfmap(&lf, out) < 0 ? 1 : 0;
    } else if (!strcmp(cmd, "to-jitdump")) {
        if (out == stdout && isatty(1)) {
            fprintf(stderr, "jitherald log: to-jitdump writes binary: give -o jit-PID.dump\n");
            rc = 2;
        } else {
            rc = export_jitdump(&lf, out) < 0 ? 1 : 0;
        }
    } else if (!strcmp(cmd, "report")) {
        struct dwarf_types *dt = vm ? dwarf_open(vm, err, sizeof err) : NULL;
        if (vm && !dt)
            fprintf(stderr, "jitherald log: %s (structs shown as bytes)\n", err);
        rc = report_html(&lf, dt, out) < 0 ? 1 : 0;
        dwarf_close(dt);
    } else {
        rc = usage(stderr);
    }
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "jitherald log: %s: %s\n", outpath, strerror(errno));
        rc = 2;
    } else if (out == stdout) {
        fflush(stdout);
    }
    log_free(&lf);
    return rc;
}
