/* chain.c — see chain.h. */
#include "chain.h"

#include <execinfo.h>
#include <stdio.h>
#include <string.h>

const char *const chain_source =
    "fn d(x) {\n    return callback(x + 1) + 1\n}\n"
    "fn c(x) {\n    return d(x + 1) + 1\n}\n"
    "fn b(x) {\n    return c(x + 1) + 1\n}\n"
    "fn a(x) {\n    return b(x + 1) + 1\n}\n"
    "fn main() {\n    return a(1) + 1\n}\n";

static const char *const order[] = { "d", "c", "b", "a", "main" };

mj_program *chain_compile(jh_ctx *jh, const char *file)
{
    char err[256];
    mj_program *p = mj_compile(chain_source, file, jh, err, sizeof err);
    if (!p)
        fprintf(stderr, "compile: %s\n", err);
    return p;
}

jh_ctx *chain_open(unsigned channels)
{
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = channels,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    int err = jh_open(&jh, &o);
    if (err)
        fprintf(stderr, "jh_open: %s\n", jh_strerror(err));
    return jh;
}

void chain_walk_begin(struct chain_walk *w, const mj_program *p, const char *entry,
                      const void *root, chain_enclosing_fn *enclosing)
{
    memset(w, 0, sizeof *w);
    w->p = p;
    w->order = order;
    w->want = 5;
    while (w->want > 1 && strcmp(order[w->want - 1], entry))
        w->want--;
    w->root = root;
    w->enclosing = enclosing ? enclosing : _Unwind_FindEnclosingFunction;
}

const struct mj_function *chain_walk_next(const struct chain_walk *w)
{
    return w->found < w->want ? mj_function_get(w->p, w->order[w->found]) : NULL;
}

static bool inside(const struct mj_function *f, uintptr_t ra)
{
    /* a return address: just after the call, so possibly one past the end */
    return f && ra > (uintptr_t)f->code && ra <= (uintptr_t)f->code + f->code_size;
}

void chain_walk_pc(struct chain_walk *w, uintptr_t ra)
{
    if (inside(chain_walk_next(w), ra)) {
        w->found++;
    } else {
        for (int k = 0; k < mj_function_count(w->p); k++)
            if (inside(mj_function_at(w->p, k), ra))
                w->stray++;
    }
    if (w->found == w->want && w->enclosing((void *)(ra - 1)) == w->root)
        w->root_reached = true;
}

bool chain_walk_complete(const struct chain_walk *w)
{
    return w->found == w->want && w->root_reached;
}

const char *chain_walk_summary(const struct chain_walk *w, int frames, char *buf, size_t len)
{
    snprintf(buf, len, "%d frames, %d of %d JIT frames in order%s, root %s", frames, w->found,
             w->want, w->stray ? " (and some out of order)" : "",
             w->root_reached ? "reached" : "NOT reached");
    return buf;
}

struct collect {
    void **pcs;
    int n, max;
    chain_getip_fn *getip;
};

static _Unwind_Reason_Code collect(struct _Unwind_Context *uc, void *arg)
{
    struct collect *c = arg;
    if (c->n == c->max)
        return _URC_END_OF_STACK;
    c->pcs[c->n++] = (void *)c->getip(uc);
    return _URC_NO_REASON;
}

static uintptr_t own_getip(struct _Unwind_Context *uc)
{
    return _Unwind_GetIP(uc);
}

int chain_unwind_backtrace(void **pcs, int max, chain_trace_fn *trace, chain_getip_fn *getip)
{
    struct collect c = { pcs, 0, max, trace && getip ? getip : own_getip };
    (trace && getip ? trace : _Unwind_Backtrace)(collect, &c);
    return c.n;
}

int chain_collect(int mode, void **pcs, int max)
{
    if (mode == CHAIN_BACKTRACE)
        return backtrace(pcs, max);
    if (mode == CHAIN_UNWIND_BACKTRACE)
        return chain_unwind_backtrace(pcs, max, NULL, NULL);
    return 0;
}

bool chain_check(const mj_program *p, const char *entry, const void *root,
                 chain_enclosing_fn *enclosing, void *const *pcs, int n, const char *what,
                 bool quiet)
{
    struct chain_walk w;
    chain_walk_begin(&w, p, entry, root, enclosing);
    for (int i = 0; i < n; i++)
        chain_walk_pc(&w, (uintptr_t)pcs[i]);
    if (!quiet) {
        char buf[128];
        printf("%s: %s\n", what, chain_walk_summary(&w, n, buf, sizeof buf));
    }
    return chain_walk_complete(&w);
}
