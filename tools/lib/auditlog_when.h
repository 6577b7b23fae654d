/*
 * auditlog_when.h — "which function was at this address at that time", for samples that
 * carry a CLOCK_MONOTONIC time (perf record -k 1) rather than a record index. Every place
 * a function occupied, from its code_add or code_move record to its next move or its
 * removal, is one residency; a sample is resolved against the residency alive at the
 * last record written at or before its time. A JIT that reuses addresses (frees code and
 * compiles other code there) so gets each sample's name right where a perf map, which
 * holds every name ever given to a range, cannot.
 *
 *     struct jhr_al_when w;
 *     if (jhr_al_when_build(&w, &lf) < 0) ...;         // -ENOMEM
 *     bool live;
 *     const struct jhr_al_fn *fn = jhr_al_when_fn(&w, ip, sample_time, &live);
 *     jhr_al_when_free(&w);
 *
 * Records of different threads may be written slightly out of time order
 * (docs/auditlog-format.md): the time of record i is taken as the latest time of records
 * 0..i, so "the records written by time t" is a prefix of the log.
 */
#ifndef JHR_AUDITLOG_WHEN_H
#define JHR_AUDITLOG_WHEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/auditlog_read.h"

struct jhr_al_stay {            /* one residency */
    uint64_t start, size;
    size_t from, to;            /* records [from, to): to is SIZE_MAX while still there */
    size_t fn;                  /* index into lf->fns */
};

struct jhr_al_when {
    const struct jhr_al *lf;
    uint64_t *tmax;             /* per record: the latest time up to it */
    struct jhr_al_stay *stays;  /* sorted by start, then from */
    size_t nstays;
    uint64_t maxsize;
};

int jhr_al_when_build(struct jhr_al_when *w, const struct jhr_al *lf);
void jhr_al_when_free(struct jhr_al_when *w);
/* The index of the last record written at or before time t; SIZE_MAX when t precedes
 * them all. */
size_t jhr_al_when_rec(const struct jhr_al_when *w, uint64_t t);
/* The function whose code held addr at time t (*live: true), else the one that held it
 * nearest in records before or after t (*live: false; a sample taken just before the code
 * was announced, or just after it was removed), else NULL. */
const struct jhr_al_fn *jhr_al_when_fn(const struct jhr_al_when *w, uint64_t addr, uint64_t t,
                                       bool *live);

/* Every function that ever held addr, oldest first, up to max of them into out: how many
 * there were (may exceed max). For a profile with no times (callgrind). */
size_t jhr_al_when_all(const struct jhr_al_when *w, uint64_t addr, const struct jhr_al_fn **out,
                       size_t max);

#endif
