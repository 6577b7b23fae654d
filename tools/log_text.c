/*
 * log_text.c — the text views of `jitherald log FILE ...` (cmd_log.c): info, list,
 * events, code and show. Everything printed from the log goes through jhr_text_safe or
 * comes from the model, whose strings are already free of control characters.
 *
 *     $ jitherald log minijit-4242.jhlog events compile
 *          3    0.000515  4242  event        compile name="c" code=0x7f6d77e00000[c+0x0] ...
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_present.h"
#include "lib/text.h"

static void print_attrs_resolved(FILE *f, const struct jhr_al *lf, const struct jhr_mp *attrs, size_t at)
{
    const uint8_t *it = attrs->p;
    struct jhr_mp k, v;
    for (uint32_t i = 0; i < attrs->n && jhr_mp_next(attrs, &it, &k) == 0 && jhr_mp_next(attrs, &it, &v) == 0; i++) {
        fputc(' ', f);
        if (k.t == JHR_MP_STR)
            jhr_text_safe(f, k.p, k.n);
        fputc('=', f);
        jhr_mp_print(f, &v, 1);
        uint64_t a;
        const struct jhr_al_mem *m;
        const struct jhr_al_fn *fn;
        if (!jhr_mp_addr(&v, &a) || !jhr_al_resolve(lf, a, at, &m, &fn))
            continue;
        if (m)
            fprintf(f, "[%s, %u B logged]", m->hint ? m->hint : "memory", m->size);
        else
            fprintf(f, "[%s+0x%" PRIx64 "]", fn->name, a - fn->cur_start);
    }
}

void jhc_log_record(FILE *f, const struct jhr_al *lf, size_t i)
{
    const struct jhr_al_rec *r = &lf->recs[i];
    fprintf(f, "%6zu %11.6f %6u  %-12s", i, jhr_al_secs(lf, r->time), r->thread, jhr_al_kind_name(r->kind));
    const struct jhr_al_fn *fn = r->ref >= 0 && r->kind >= JHR_AL_CODE_ADD && r->kind <= JHR_AL_CODE_PATCHED
                            ? &lf->fns[r->ref] : NULL;
    struct jhr_mp v;
    uint64_t u;
    const char *s;
    uint32_t n;
    switch (r->kind) {
    case JHR_AL_HEADER:
        fprintf(f, " %s pid %" PRIu64 " version %" PRIu64, lf->engine ? lf->engine : "?", lf->pid, lf->version);
        break;
    case JHR_AL_MEMORY: {
        const struct jhr_al_mem *m = &lf->mems[r->ref];
        fprintf(f, " 0x%" PRIx64 " %u B %s", m->addr, m->size, m->hint ? m->hint : "");
        break;
    }
    case JHR_AL_EVENT:
        if (jhr_mp_get_str(&r->map, JH__AL_K_EVENT, &s, &n)) {
            fputc(' ', f);
            jhr_text_safe(f, s, n);
        }
        if (jhr_mp_get(&r->map, JH__AL_K_ATTRS, &v) == 0 && v.t == JHR_MP_MAP)
            print_attrs_resolved(f, lf, &v, i);
        break;
    case JHR_AL_CODE_ADD: {
        uint32_t line;
        const char *file = jhr_al_fn_line(fn, 0, &line);
        fprintf(f, " #%" PRIu64 " %s 0x%" PRIx64 " %" PRIu64 " B", fn->id, fn->name, fn->start, fn->size);
        if (file)
            fprintf(f, " %s:%u", file, line);
        break;
    }
    case JHR_AL_CODE_REMOVE:
    case JHR_AL_CODE_MOVE:
    case JHR_AL_CODE_PATCHED:
        if (fn)
            fprintf(f, " #%" PRIu64 " %s", fn->id, fn->name);
        if (r->kind == JHR_AL_CODE_MOVE && jhr_mp_get_u64(&r->map, JH__AL_K_OLD_START, &u))
            fprintf(f, " 0x%" PRIx64, u);
        if (r->kind == JHR_AL_CODE_MOVE && jhr_mp_get_u64(&r->map, JH__AL_K_START, &u))
            fprintf(f, " -> 0x%" PRIx64, u);
        if (r->kind == JHR_AL_CODE_PATCHED && jhr_mp_get_u64(&r->map, JH__AL_K_ADDRESS, &u) &&
            jhr_mp_get(&r->map, JH__AL_K_DATA, &v) == 0)
            fprintf(f, " %u B at 0x%" PRIx64, v.n, u);
        break;
    case JHR_AL_LIMIT:
        if (jhr_mp_get_u64(&r->map, JH__AL_K_LIMIT, &u))
            fprintf(f, " the log reached its limit of %" PRIu64 " bytes: later records dropped", u);
        break;
    case JHR_AL_CLOSE:
        fprintf(f, " dropped %" PRIu64, lf->dropped);
        break;
    case JHR_AL_UNKNOWN:
        fputc(' ', f);
        jhr_mp_print(f, &r->map, 0);
        break;
    }
    fputc('\n', f);
}

size_t jhc_log_events(FILE *f, const struct jhr_al *lf, const char *only)
{
    size_t shown = 0;
    for (size_t i = 0; i < lf->nrecs; i++) {
        const char *s;
        uint32_t n;
        if (only && !(jhr_mp_get_str(&lf->recs[i].map, JH__AL_K_EVENT, &s, &n) &&
                      strlen(only) == n && !memcmp(only, s, n)))
            continue;
        if (lf->recs[i].kind == JHR_AL_EVENT || lf->recs[i].kind == JHR_AL_LIMIT) {
            jhc_log_record(f, lf, i);
            shown++;
        }
    }
    return shown;
}

void jhc_log_info(FILE *f, const struct jhr_al *lf)
{
    size_t nev = 0, live = 0;
    for (size_t i = 0; i < lf->nrecs; i++)
        nev += lf->recs[i].kind == JHR_AL_EVENT;
    for (size_t i = 0; i < lf->nfns; i++)
        live += !lf->fns[i].removed;
    fprintf(f, "audit log version %" PRIu64 ": engine %s, pid %" PRIu64, lf->version,
            lf->engine ? lf->engine : "?", lf->pid);
    if (lf->parent_pid)
        fprintf(f, " (fork child of %" PRIu64 ")", lf->parent_pid);
    fprintf(f, ", %s", lf->arch ? lf->arch : "?");
    if (lf->pac_mask)
        fprintf(f, " (signed code addresses: PAC mask 0x%" PRIx64 ")", lf->pac_mask);
    fputc('\n', f);
    fprintf(f, "executable: %s\n", lf->exe ? lf->exe : "?");
    fprintf(f, "%zu records: %zu functions (%zu live at the end), %zu memory snapshots, %zu events\n",
            lf->nrecs, lf->nfns, live, lf->nmems, nev);
    if (lf->nrecs)
        fprintf(f, "spans %.6f s from %" PRIu64 ".%09" PRIu64 " s of CLOCK_MONOTONIC (perf "
                "script's times with perf record -k 1)\n", jhr_al_secs(lf, lf->recs[lf->nrecs - 1].time),
                lf->t0 / 1000000000, lf->t0 % 1000000000);
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
    jhc_log_cfiles(f, lf, false);
}

void jhc_log_cfiles(FILE *f, const struct jhr_al *lf, bool missing)
{
    for (size_t i = 0; i < lf->ncfiles; i++) {
        const struct jhr_al_cfile *cf = &lf->cfiles[i];
        if (missing && cf->nread == cf->nfns)
            continue;
        char id[2 * JH__AL_BUILD_ID_MAX + 1];
        for (uint32_t k = 0; k < cf->idlen; k++)
            snprintf(id + 2 * k, 3, "%02x", cf->id[k]);
        id[2 * cf->idlen] = 0;
        fprintf(f, "%scode of %zu function(s) recorded as lying in %s, build-id %s: ",
                missing ? "jitherald log: " : "", cf->nfns, cf->path, id);
        if (cf->nread == cf->nfns)
            fprintf(f, "read from %s\n", cf->read);
        else
            fprintf(f, "%zu read%s%s; %s\n", cf->nread, cf->read ? " from " : "",
                    cf->read ? cf->read : "", cf->why ? cf->why : "not found");
    }
}

size_t jhc_log_code(FILE *f, const struct jhr_al *lf, const char *only)
{
    size_t named = 0;
    for (size_t i = 0; i < lf->nfns && only; i++)
        named += !strcmp(lf->fns[i].name, only);
    if (only && !named)
        return 0;
    fprintf(f, "%6s %11s  %-8s %5s  %-24s %-18s %8s  %s\n", "rec", "time(s)", "what", "id", "name",
            "address", "size", "source");
    for (size_t i = 0; i < lf->nrecs; i++) {
        const struct jhr_al_rec *r = &lf->recs[i];
        if (r->kind < JHR_AL_CODE_ADD || r->kind > JHR_AL_CODE_PATCHED || r->ref < 0)
            continue;
        const struct jhr_al_fn *fn = &lf->fns[r->ref];
        if (only && strcmp(fn->name, only))
            continue;
        static const char *what[] = { "add", "remove", "move", "patch" };
        uint64_t addr = fn->start;
        if (r->kind == JHR_AL_CODE_MOVE || r->kind == JHR_AL_CODE_REMOVE)
            jhr_mp_get_u64(&r->map, JH__AL_K_START, &addr);
        if (r->kind == JHR_AL_CODE_PATCHED)
            jhr_mp_get_u64(&r->map, JH__AL_K_ADDRESS, &addr);
        uint32_t line = 0;
        const char *file = jhr_al_fn_line(fn, 0, &line);
        fprintf(f, "%6zu %11.6f  %-8s %5" PRIu64 "  %-24s 0x%-16" PRIx64 " %8" PRIu64 "  ", i,
                jhr_al_secs(lf, r->time), what[r->kind - JHR_AL_CODE_ADD], fn->id, fn->name, addr, fn->size);
        if (file)
            fprintf(f, "%s:%u", file, line);
        fputc('\n', f);
    }
    size_t live = 0;
    for (size_t i = 0; i < lf->nfns; i++)
        live += !lf->fns[i].removed;
    fprintf(f, "\n%zu functions added, %zu removed, %zu live at the end of the log\n", lf->nfns,
            lf->nfns - live, live);
    return only ? named : lf->nfns + 1;
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

int jhc_log_show(FILE *out, const struct jhr_al *lf, const char *what, const char *vm,
                 const char *type, size_t at)
{
    uint64_t addr;
    const struct jhr_al_fn *fn = NULL;
    const struct jhr_al_mem *m = NULL;
    if (parse_addr(what, &addr) == 0) {
        m = jhr_al_mem_at(lf, addr, 1, at);
        if (m && m->addr != addr)
            m = NULL;
        if (!m)
            fn = jhr_al_fn_at(lf, jhr_al_strip(lf, addr), at);
        if (!m && !fn)
            m = jhr_al_mem_at(lf, addr, 1, at);
    } else {
        fn = jhr_al_fn_named(lf, what);
    }
    if (fn)
        return jhc_disasm_print(lf, fn, out, false) < 0 ? 1 : 0;
    if (!m) {
        fprintf(stderr, "jitherald log: nothing named or at '%s' in the log\n", what);
        return 1;
    }
    char err[512];
    struct jhc_types *dt = vm ? jhc_types_open(vm, err, sizeof err) : NULL;
    if (vm && !dt)
        fprintf(stderr, "jitherald log: %s\n", err);
    struct jhr_al_mem copy = *m;
    if (type)
        copy.hint = (char *)type;
    int rc = 0;
    if (!dt || jhc_types_print(dt, lf, &copy, at, out, false) < 0) {
        if (!dt && vm == NULL)
            fprintf(stderr, "jitherald log: no --vm binary to read types from: showing bytes\n");
        fprintf(out, "%s @ 0x%" PRIx64 ", %u bytes (record %zu, %.6f s)\n", m->hint ? m->hint : "memory",
                m->addr, m->size, m->rec, jhr_al_secs(lf, m->time));
        for (uint32_t i = 0; i < m->size; i += 16) {
            fprintf(out, "  %08x ", i);
            for (uint32_t j = i; j < i + 16 && j < m->size; j++)
                fprintf(out, " %02x", m->data[j]);
            fputc('\n', out);
        }
        rc = dt ? 1 : 0;
    }
    jhc_types_close(dt);
    return rc;
}
