/*
 * callgrind_cost.h — a callgrind profile's cost per function, for the first event (Ir by
 * default): self (the cost lines of its fn= blocks) and inclusive (self plus the cost of
 * the calls it makes, as callgrind writes after each calls= line). `jitherald log FILE
 * profile callgrind.out.PID` names the functions callgrind could only call by address.
 *
 *     struct jhr_cgc c = { 0 };
 *     if (jhr_cgc_read(&c, text, len) == 0)
 *         for (size_t i = 0; i < c.nfns; i++) printf("%s %llu\n", c.fns[i].name, ...);
 *     jhr_cgc_free(&c);
 *
 * Names are interned: a function that has several fn= blocks (several files, parts) is one
 * entry. Name compression ("(id) name", then "(id)") is shared by fn= and cfn= as callgrind
 * writes it. Lines the reader does not need are skipped; it never reads past len.
 */
#ifndef JHR_CALLGRIND_COST_H
#define JHR_CALLGRIND_COST_H

#include <stddef.h>
#include <stdint.h>

#include "lib/itab.h"

struct jhr_cgc_fn {
    char *name;
    uint64_t self, incl;
};

struct jhr_cgc {
    struct jhr_cgc_fn *fns;
    size_t nfns, cap;
    struct jhr_itab by_name;
    size_t *by_id;              /* compressed id -> fns index + 1 (0: undefined) */
    size_t nids;
    char event[32];             /* the first event's name ("Ir") */
    uint64_t total;             /* sum of the self costs */
};

/* 0, -ENOMEM, or JH_EFORMAT when it has no events: line (not a callgrind profile). */
int jhr_cgc_read(struct jhr_cgc *c, const char *text, size_t len);
void jhr_cgc_free(struct jhr_cgc *c);

#endif
