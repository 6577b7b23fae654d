/*
 * callgrind_names.h — the names of a callgrind profile, as the rewriter (callgrind_rewrite.c)
 * reads and writes them: three id spaces (fn/cfn/jfn; fl/fi/fe/cfi/cfl/jfi; ob/cob), each
 * name defined once as "(id) name" and referred to as "(id)" (or spelled out, without
 * --compress-strings), and for function names what they become once the parts that are
 * addresses in JIT code are named. Pieces of one JIT function that get the same new name
 * share one id: the first one's.
 */
#ifndef JHR_CALLGRIND_NAMES_H
#define JHR_CALLGRIND_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/itab.h"
#include "lib/symtab.h"

enum { JHR_CG_FN, JHR_CG_FL, JHR_CG_OB, JHR_CG_NS };      /* the id spaces */

struct jhr_cg_name {
    uint64_t id;                /* 0: not compressed */
    char *str;                  /* as defined in the input (NULL until defined) */
    const struct jhr_sym_fn *jit; /* JHR_CG_FN: the JIT function its entry is in */
    uint64_t addr;              /* that entry */
    char *out;                  /* JHR_CG_FN: the name with its JIT parts named (NULL: as is) */
    size_t canon;               /* JHR_CG_FN with out: the name whose id is written for it */
    int jit_file;               /* JHR_CG_FL entries we made: strs index; else -1 */
    bool out_defined;           /* "(id) name" already written */
};

struct jhr_cg_table {
    struct jhr_cg_name *v;
    size_t n, cap;
    struct jhr_itab idx;        /* by id, or by string for names without one */
    uint64_t max_id;
};

/* Zero-initialise, set s. */
struct jhr_cg_names {
    const struct jhr_syms *s;
    struct jhr_cg_table t[JHR_CG_NS];
    struct jhr_itab canon;      /* JHR_CG_FN names with out, by out */
};

/* The id space of a key ("cfn" -> JHR_CG_FN), or -1. */
int jhr_cg_ns(const char *key, size_t n);
/* "(id) name", "(id)" or "name" in id space ns: the name's index (defining it if new),
 * -ENOMEM, or -1 for a reference to an id never defined. */
long jhr_cg_parse(struct jhr_cg_names *w, int ns, char *v);
/* A name of our own (id 0 or new), str malloc'd or NULL: its index or -ENOMEM. */
long jhr_cg_add(struct jhr_cg_table *t, uint64_t id, char *str);
void jhr_cg_names_free(struct jhr_cg_names *w);

#endif
