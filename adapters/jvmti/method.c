/* method.c — see method.h.
 *
 * Lines. HotSpot passes no jvmtiAddrLocationMap (map_length is 0); what it has is in
 * compile_info: one JVMTI_CMLR_INLINE_INFO record listing the nmethod's PcDescs, each a pc
 * with the stack of (method, bci) pairs inlined there, innermost first. A PcDesc's pc is
 * where execution resumes: after a call, the return address. So a PcDesc describes the
 * code *before* its pc, back to the previous PcDesc: the row for pc[i] starts at pc[i-1].
 * That is what a debugger or unwinder looks up for every frame but the innermost (the
 * return address minus 1, jitherald.h: struct jh_line), so a backtrace names the line of
 * each call exactly. A perf sample between two PcDescs gets the line of the next one: the
 * one that statement's code leads to. Rows take the innermost method's line and file, as
 * perf's own agent (tools/perf/jvmti/libjvmti.c) does: code inlined from another class
 * shows that class's file and line, inside the compiled method's name.
 *
 * Files: the declaring class's package path and its SourceFile attribute,
 * "pkg/sub/Hot.java", which is where javac's -sourcepath expects it: gdb's
 * `directory SRC_ROOT` and perf's source views find it from the source root.
 */
#include "method.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/prologue.h"

/* One method's line table and source file, fetched once per description. */
struct src {
    jmethodID method;
    jvmtiLineNumberEntry *table;
    jint ntable;
    int file;                   /* index into the description's files, -1: unknown */
};

struct builder {
    jvmtiEnv *jvmti;
    struct jhj_method *m;
    struct src *srcs;
    size_t nsrcs, cap;
    int err;
};

static void deallocate(jvmtiEnv *jvmti, void *p)
{
    if (p)
        (*jvmti)->Deallocate(jvmti, p);
}

/* "Lpkg/sub/Class;" -> "pkg.sub.Class" (dots) or "pkg/sub/Class" (slashes), malloc'd. */
static char *class_name(const char *sig, char sep)
{
    size_t n = strlen(sig);
    if (n >= 2 && sig[0] == 'L' && sig[n - 1] == ';') {
        sig++;
        n -= 2;
    }
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++)
        s[i] = sig[i] == '/' ? sep : sig[i];
    s[n] = 0;
    return s;
}

static char *class_sig(jvmtiEnv *jvmti, jmethodID method)
{
    jclass cls;
    char *sig = NULL, *out = NULL;
    if ((*jvmti)->GetMethodDeclaringClass(jvmti, method, &cls) != JVMTI_ERROR_NONE)
        return NULL;
    if ((*jvmti)->GetClassSignature(jvmti, cls, &sig, NULL) == JVMTI_ERROR_NONE)
        out = strdup(sig);
    deallocate(jvmti, sig);
    return out;
}

static char *method_name(jvmtiEnv *jvmti, jmethodID method)
{
    char *sig = class_sig(jvmti, method), *name = NULL, *out = NULL;
    char *cls = sig ? class_name(sig, '.') : NULL;
    if (cls && (*jvmti)->GetMethodName(jvmti, method, &name, NULL, NULL) == JVMTI_ERROR_NONE) {
        size_t n = strlen(cls) + 1 + strlen(name) + 1;
        if ((out = malloc(n)))
            snprintf(out, n, "%s.%s", cls, name);
    }
    deallocate(jvmti, name);
    free(cls);
    free(sig);
    return out;
}

/* The file index of method's source, adding "pkg/File.java" to the files; -1 when the
 * class has no SourceFile attribute (or on a failure, recorded in b->err). */
static int source_file(struct builder *b, jmethodID method)
{
    jclass cls;
    char *file = NULL, *sig = NULL;
    int idx = -1;
    if ((*b->jvmti)->GetMethodDeclaringClass(b->jvmti, method, &cls) != JVMTI_ERROR_NONE ||
        (*b->jvmti)->GetSourceFileName(b->jvmti, cls, &file) != JVMTI_ERROR_NONE)
        return -1;
    char *path = NULL;
    if ((*b->jvmti)->GetClassSignature(b->jvmti, cls, &sig, NULL) == JVMTI_ERROR_NONE) {
        char *cls_path = class_name(sig, '/');
        char *slash = cls_path ? strrchr(cls_path, '/') : NULL;
        size_t dir = slash ? (size_t)(slash - cls_path) + 1 : 0;
        size_t n = dir + strlen(file) + 1;
        if (cls_path && (path = malloc(n)))
            snprintf(path, n, "%.*s%s", (int)dir, cls_path, file);
        free(cls_path);
    }
    deallocate(b->jvmti, sig);
    deallocate(b->jvmti, file);
    if (!path) {
        b->err = -ENOMEM;
        return -1;
    }
    struct jhj_method *m = b->m;
    for (uint32_t i = 0; i < m->nfiles; i++)
        if (!strcmp(m->files[i], path)) {
            free(path);
            return (int)i;
        }
    char **f = realloc(m->files, (m->nfiles + 1) * sizeof *f);
    if (!f) {
        free(path);
        b->err = -ENOMEM;
        return -1;
    }
    m->files = f;
    f[m->nfiles] = path;
    idx = (int)m->nfiles++;
    return idx;
}

static struct src *source(struct builder *b, jmethodID method)
{
    for (size_t i = 0; i < b->nsrcs; i++)
        if (b->srcs[i].method == method)
            return &b->srcs[i];
    if (b->nsrcs == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        struct src *s = realloc(b->srcs, cap * sizeof *s);
        if (!s) {
            b->err = -ENOMEM;
            return NULL;
        }
        b->srcs = s;
        b->cap = cap;
    }
    struct src *s = &b->srcs[b->nsrcs++];
    *s = (struct src){ .method = method, .file = -1 };
    /* Native and abstract methods, and classes compiled without -g:lines, have none. */
    if ((*b->jvmti)->GetLineNumberTable(b->jvmti, method, &s->ntable, &s->table) !=
        JVMTI_ERROR_NONE) {
        s->table = NULL;
        s->ntable = 0;
        return s;
    }
    s->file = source_file(b, method);
    return s;
}

/* The line of bci in s's table (the entry with the greatest start <= bci; a negative bci,
 * HotSpot's "before the first bytecode", takes the first line), or 0. */
static uint32_t line_of(const struct src *s, jint bci)
{
    jlocation best = -1;
    uint32_t line = 0;
    for (jint i = 0; i < s->ntable; i++) {
        jlocation at = s->table[i].start_location;
        if ((at <= bci || bci < 0) && (best < 0 || (bci < 0 ? at < best : at > best))) {
            best = at;
            line = (uint32_t)s->table[i].line_number;
        }
    }
    return line;
}

struct pc_row {
    uint32_t end;               /* the PcDesc's pc, as an offset from the code's start */
    uint32_t line, file;
};

static int by_end(const void *a, const void *b)
{
    uint32_t x = ((const struct pc_row *)a)->end, y = ((const struct pc_row *)b)->end;
    return x < y ? -1 : x > y;
}

static int lines(struct builder *b, const uint8_t *start, uint32_t size, const void *info)
{
    size_t npcs = 0;
    const jvmtiCompiledMethodLoadRecordHeader *h;
    for (h = info; h; h = h->next)
        if (h->kind == JVMTI_CMLR_INLINE_INFO)
            npcs += (size_t)((const jvmtiCompiledMethodLoadInlineRecord *)h)->numpcs;
    if (!npcs)
        return 0;
    struct pc_row *rows = malloc(npcs * sizeof *rows);
    if (!rows)
        return -ENOMEM;
    size_t n = 0;
    for (h = info; h; h = h->next) {
        if (h->kind != JVMTI_CMLR_INLINE_INFO)
            continue;
        const jvmtiCompiledMethodLoadInlineRecord *r = (const void *)h;
        for (jint i = 0; i < r->numpcs; i++) {
            const PCStackInfo *pc = &r->pcinfo[i];
            const uint8_t *p = pc->pc;
            if (p <= start || p > start + size || pc->numstackframes < 1)
                continue;
            struct src *s = source(b, pc->methods[0]);
            if (!s)
                break;
            uint32_t line = line_of(s, pc->bcis[0]);
            if (line && s->file >= 0)
                rows[n++] = (struct pc_row){ (uint32_t)(p - start), line, (uint32_t)s->file };
        }
    }
    qsort(rows, n, sizeof *rows, by_end);
    struct jhj_method *m = b->m;
    if (n && !(m->lines = malloc(n * sizeof *m->lines))) {
        free(rows);
        return -ENOMEM;
    }
    uint32_t nl = 0, from = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && rows[i].end == rows[i - 1].end)
            continue;           /* two PcDescs at one pc: the first says it */
        struct jh_line *last = nl ? &m->lines[nl - 1] : NULL;
        if (!last || last->line != rows[i].line || last->file != rows[i].file)
            m->lines[nl++] = (struct jh_line){ .offset = from, .line = rows[i].line,
                                               .file = rows[i].file };
        from = rows[i].end;
    }
    free(rows);
    m->code.lines = m->lines;
    m->code.nlines = nl;
    return b->err;
}

int jhj_method_describe(jvmtiEnv *jvmti, jmethodID method, const void *code_addr,
                        jint code_size, const void *compile_info, bool frame_pointer,
                        struct jhj_method *out)
{
    memset(out, 0, sizeof *out);
    if (code_size <= 0)
        return -EINVAL;
    if (!(out->name = method_name(jvmti, method)))
        return -EINVAL;
    out->code = (struct jh_code){ .sz = sizeof out->code, .name = out->name,
                                  .start = code_addr, .size = (size_t)code_size };
    struct builder b = { .jvmti = jvmti, .m = out };
    int err = lines(&b, code_addr, (uint32_t)code_size, compile_info);
    for (size_t i = 0; i < b.nsrcs; i++)
        deallocate(jvmti, b.srcs[i].table);
    free(b.srcs);
    if (err < 0) {
        jhj_method_free(out);
        return err;
    }
    out->code.files = (const char *const *)out->files;
    out->code.nfiles = out->nfiles;
    /* HotSpot's x86-64 nmethods begin with the inline-cache check of the unverified entry
     * and, at the verified entry, the stack bang: neither moves rsp (CFA = rsp + 8 holds,
     * as prologue.h assumes). Then C1 and C2 push rbp and, only under
     * -XX:+PreserveFramePointer, copy rsp into it; with that flag rbp is no allocatable
     * register, so it stays the frame pointer to the epilogue. Native wrappers always
     * `enter`. Without the copy there is no frame pointer to describe, and the code gets
     * no unwind information: a debugger's own analysis, never a wrong rule of ours. A C2
     * method that makes no call and needs no stack bang saves rbp with a `mov` instead of
     * a push: it is left undescribed too (docs/jvmti.md). */
    struct jhr_frame f;
    if (frame_pointer &&
        jhr_prologue_frame(code_addr, (size_t)code_size, &f) == JHR_FRAME_PUSH) {
        out->code.unwind = JH_UNWIND_FRAME_POINTER;
        out->code.fp_push_end = f.push_end;
        out->code.fp_set_end = f.set_end;
    }
    return 0;
}

void jhj_method_free(struct jhj_method *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->nfiles; i++)
        free(m->files[i]);
    free(m->files);
    free(m->lines);
    free(m->name);
    memset(m, 0, sizeof *m);
}
