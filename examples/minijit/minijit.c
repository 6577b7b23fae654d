/*
 * minijit.c — programs: compile, publish into the arena, announce to jitherald, run.
 *
 * This is the part a JIT author would copy: the jh_code_add call that tells every tool
 * about a function, made after its bytes are executable and before anything can call it.
 *
 *     $ JITHERALD=perfmap minijit fib.mini &     $ cat /tmp/perf-$!.map
 *                                                7f3a12400000 8f fib
 *                                                7f3a12400090 62 main
 */
#include "mj_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mj_program {
    jh_ctx *jh;
    char *filename;
    const char *files[1];       /* what the line tables' file 0 is */
    unsigned flags;
    struct mj__unit unit;
    struct mj_function *fns;    /* unit.nfns of them */
};

typedef int64_t mj_hook_fn(int64_t);
typedef void mj_print_fn(int64_t);
static _Atomic(mj_hook_fn *) callback_hook;
static _Atomic(mj_print_fn *) print_hook;

void mj_set_callback(int64_t (*cb)(int64_t)) { atomic_store(&callback_hook, cb); }
void mj_set_print(void (*fn)(int64_t)) { atomic_store(&print_hook, fn); }

/*
 * The builtins are ordinary C functions called from JIT code. noinline and the empty asm
 * after the call keep each a real frame (no tail call), so a backtrace from the hook reads
 * hook <- mj__builtin_callback <- JIT frames <- mj_call <- main.
 */
__attribute__((noinline)) int64_t mj__builtin_print(int64_t x)
{
    mj_print_fn *fn = atomic_load(&print_hook);
    if (fn) {
        fn(x);
    } else {
        printf("%" PRId64 "\n", x);
        fflush(stdout);         /* tests kill or attach to us: show output as it happens */
    }
    __asm__ volatile("" ::: "memory");
    return x;
}

__attribute__((noinline)) int64_t mj__builtin_callback(int64_t x)
{
    mj_hook_fn *cb = atomic_load(&callback_hook);
    int64_t r = cb ? cb(x) : x;
    __asm__ volatile("" ::: "memory");
    return r;
}

/* Runs under the arena lock, with the bytes already read+exec. */
static int announce(void *arg, size_t i, void *code)
{
    mj_program *p = arg;
    struct mj__unit_fn *u = &p->unit.fns[i];
    struct mj_function *f = &p->fns[i];

    f->code = code;
    p->unit.table[i] = code;
    if (!p->jh)
        return 0;
    /* Every function ends with `leave; ret` (mj__x_epilogue): the ret runs with the frame
     * torn down. */
    struct jh_epilogue epi = { (uint32_t)u->len - 1, (uint32_t)u->len };
    struct jh_code c = {
        .sz = sizeof c, .name = f->name, .start = code, .size = u->len,
        .files = p->files, .nfiles = 1, .lines = u->lines, .nlines = u->nlines,
        .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4,
        .epilogues = &epi, .nepilogues = 1, .prologue_end = u->prologue_end,
    };
    uint8_t cfi[MJ__X_FRAME_CFI];
    if (mj__x_no_frame_pointer()) {
        c.unwind = JH_UNWIND_CFI;
        c.cfi = cfi;
        c.cfi_len = mj__x_frame_cfi(cfi, u->len);
        c.epilogues = NULL;
        c.nepilogues = 0;
    }
    if (mj__x_no_unwind_info()) {
        c.unwind = JH_UNWIND_NONE;
        c.epilogues = NULL;
        c.nepilogues = 0;
    }
    int rc = jh_code_add(p->jh, &c, &f->jh_id);
    if (rc < 0) {
        f->code = NULL;         /* the arena takes the bytes back */
        p->unit.table[i] = NULL;
        return rc;
    }
    f->announced = 1;
    if (p->flags & MJ_LOG_STRUCTS) {
        jh_log_memory(p->jh, f, sizeof *f, "struct mj_function");
        struct jh_attr attrs[] = {
            { .key = "name", .kind = JH_ATTR_STR, .v.s = f->name },
            { .key = "code", .kind = JH_ATTR_ADDR, .v.u = (uint64_t)(uintptr_t)code },
            { .key = "size", .kind = JH_ATTR_UINT, .v.u = f->code_size },
            { .key = "line", .kind = JH_ATTR_UINT, .v.u = f->line },
            { .key = "function", .kind = JH_ATTR_ADDR, .v.u = (uint64_t)(uintptr_t)f },
        };
        jh_log_event(p->jh, "compile", attrs, sizeof attrs / sizeof *attrs);
    }
    return 0;
}

mj_program *mj_compile_ex(const char *source, const char *filename, jh_ctx *jh,
                          unsigned flags, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (!filename)
        filename = "<input>";
    if (!source) {
        snprintf(err, errlen, "%s: error: no source", filename);
        return NULL;
    }
    mj_program *p = calloc(1, sizeof *p);
    if (!p || !(p->filename = strdup(filename))) {
        free(p);
        snprintf(err, errlen, "%s: error: out of memory", filename);
        return NULL;
    }
    p->jh = jh;
    p->flags = flags;
    p->files[0] = p->filename;
    if (mj__compile_unit(source, filename, &p->unit, err, errlen) < 0) {
        free(p->filename);
        free(p);
        return NULL;
    }
    p->fns = calloc((size_t)p->unit.nfns, sizeof *p->fns);
    if (!p->fns) {
        snprintf(err, errlen, "%s: error: out of memory", filename);
        mj_free(p);
        return NULL;
    }
    for (int i = 0; i < p->unit.nfns; i++) {
        struct mj__unit_fn *u = &p->unit.fns[i];
        p->fns[i] = (struct mj_function){
            .name = u->name, .nparams = u->nparams, .line = u->line, .column = u->column,
            .end_line = u->end_line, .code_size = u->len, .nlines = u->nlines,
            .lines = u->lines, .frame_slots = u->frame_slots, .index = (uint32_t)i,
        };
    }
    size_t n = (size_t)p->unit.nfns;
    const uint8_t **bytes = malloc(n * sizeof *bytes);
    size_t *lens = malloc(n * sizeof *lens);
    void **out = malloc(n * sizeof *out);
    int rc = -ENOMEM;
    if (bytes && lens && out) {
        for (size_t i = 0; i < n; i++) {
            bytes[i] = p->unit.fns[i].code;
            lens[i] = p->unit.fns[i].len;
        }
        rc = mj__arena_publish(n, bytes, lens, out, announce, p);
    }
    free(bytes);
    free(lens);
    free(out);
    if (rc < 0) {
        int bad = 0;
        while (bad < p->unit.nfns - 1 && p->fns[bad].code)
            bad++;
        struct mj__unit_fn *u = &p->unit.fns[bad];
        snprintf(err, errlen, "%s:%u:%u: error: cannot publish function '%s': %s", filename,
                 u->line, u->column, u->name,
                 rc == -ENOMEM ? "out of code memory" : jh_strerror(rc));
        mj_free(p);
        return NULL;
    }
    for (int i = 0; i < p->unit.nfns; i++) {   /* the arena has its own copy now */
        free(p->unit.fns[i].code);
        p->unit.fns[i].code = NULL;
    }
    /* A compiled program is a batch: make it visible to every tool now (the gdb channel
     * groups functions into one image per batch) rather than at some later announcement. */
    if (jh)
        jh_flush(jh);
    return p;
}

mj_program *mj_compile(const char *source, const char *filename, jh_ctx *jh,
                       char *err, size_t errlen)
{
    return mj_compile_ex(source, filename, jh, 0, err, errlen);
}

int mj_function_count(const mj_program *p) { return p ? p->unit.nfns : 0; }

const struct mj_function *mj_function_at(const mj_program *p, int i)
{
    return p && i >= 0 && i < p->unit.nfns ? &p->fns[i] : NULL;
}

const struct mj_function *mj_function_get(const mj_program *p, const char *fn)
{
    int i = p && fn && p->fns ? mj__unit_find(&p->unit, fn) : -1;
    return i >= 0 ? &p->fns[i] : NULL;
}

void *mj_lookup(mj_program *p, const char *fn)
{
    const struct mj_function *f = mj_function_get(p, fn);
    return f ? f->code : NULL;
}

typedef int64_t mj_entry6(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);

int mj_call(mj_program *p, const char *fn, const int64_t *args, int nargs, int64_t *result)
{
    if (!p || !fn || nargs < 0 || (nargs && !args))
        return -EINVAL;
    const struct mj_function *f = mj_function_get(p, fn);
    if (!f || !f->code)
        return -ENOENT;
    int64_t a[MJ_MAX_PARAMS] = { 0 };
    for (int i = 0; i < nargs && i < MJ_MAX_PARAMS; i++)
        a[i] = args[i];
    /* Passing all six registers is harmless for a callee that reads fewer: under the SysV
     * ABI argument registers are caller-owned and nothing goes on the stack. */
    mj_entry6 *entry = (mj_entry6 *)f->code;
    int64_t r = entry(a[0], a[1], a[2], a[3], a[4], a[5]);
    if (result)
        *result = r;
    return 0;
}

int64_t mj_run(mj_program *p, const char *fn, const int64_t *args, int nargs)
{
    int64_t r = 0;
    return mj_call(p, fn, args, nargs, &r) < 0 ? 0 : r;
}

int mj_remove_all(mj_program *p)
{
    int first = 0;
    for (int i = 0; p && i < p->unit.nfns; i++) {
        struct mj_function *f = &p->fns[i];
        if (!f->announced)
            continue;
        int rc = jh_code_remove(p->jh, f->jh_id);
        f->announced = 0;
        /* With no channel live jitherald validates but stores nothing: nothing to remove. */
        if (rc == -ENOENT && !jh_channels(p->jh))
            rc = 0;
        if (rc < 0 && !first)
            first = rc;
    }
    if (p && p->jh)
        jh_flush(p->jh);
    return first;
}

struct release {
    mj_program *p;
    struct mj_function *f;
};

static void release_one(void *arg, void *code)
{
    struct release *r = arg;
    (void)code;
    if (r->f->announced) {
        jh_code_remove(r->p->jh, r->f->jh_id);
        r->f->announced = 0;
    }
}

void mj_free(mj_program *p)
{
    if (!p)
        return;
    for (int i = 0; p->fns && i < p->unit.nfns; i++) {
        struct release r = { p, &p->fns[i] };
        if (p->fns[i].code)
            mj__arena_release(p->fns[i].code, p->fns[i].code_size, release_one, &r);
    }
    mj__unit_free(&p->unit);
    free(p->fns);
    free(p->filename);
    free(p);
}

char *mj_read_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (len + 1 < cap)
            break;
        if (cap >= ((size_t)1 << 30)) {
            free(buf);
            buf = NULL;
            errno = EFBIG;
            break;
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, errlen, "%s: %s", path, !buf ? strerror(errno ? errno : ENOMEM) : "read error");
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        snprintf(err, errlen, "%s: contains a NUL byte: not a minijit program", path);
        free(buf);
        return NULL;
    }
    return buf;
}
