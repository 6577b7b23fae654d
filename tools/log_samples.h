/*
 * log_samples.h — a profile's samples attributed by the audit log: one model, built once
 * (log_samples.c from perf.data, log_profile_cg.c from callgrind.out) and presented as
 * text (`jitherald log F profile`, log_profile.c) and as the HTML report
 * (`jitherald log F report --profile`, log_report.c). Each perf sample is named by the code
 * that was at its address at the sample's time (lib/auditlog_when.h), and checked against
 * the name perf shows through the perf map (lib/perfmap_pick.h).
 *
 *     struct jhc_samples s;
 *     int rc = jhc_samples_load(&s, &lf, "perf.data", true);   // exit status, said on stderr
 *     for (size_t k = 0; k < s.nrows; k++) use(&s.rows[s.order[k]]);   // hottest first
 *     jhc_samples_free(&s);
 *
 * With `detail` the model also keeps what only the report shows: samples per instruction
 * of each JIT function, the call tree (flame graph) and each sample's time and kind.
 */
#ifndef JHC_LOG_SAMPLES_H
#define JHC_LOG_SAMPLES_H

#include "lib/auditlog_when.h"
#include "lib/itab.h"
#include "lib/perfdata_read.h"
#include "lib/perfmap_pick.h"

enum { JHC_ROW_JIT, JHC_ROW_MAP, JHC_ROW_OTHER };

struct jhc_row {
    const char *name;           /* a function, a mapping's path, or "[kernel]"... */
    int kind;
    uint64_t self, total, stamp;
    uint64_t wrong;             /* self samples the perf map names otherwise */
    const char *wrong_as;       /* the name it shows for the first of them (NULL: none) */
    bool wrong_many;            /* ... and some other name for others */
    bool shared;                /* callgrind: cost of an address several functions held */
    size_t fn;                  /* JIT: the lf->fns index last seen under this name */
};

/* The call tree, outermost frame first: node 0 is the root (every sample). */
struct jhc_node { size_t parent, row; uint64_t count; };

struct jhc_map { uint64_t addr, end; const char *name; size_t seq; };

struct jhc_samples {
    const struct jhr_al *lf;
    const char *path;
    uint8_t *data;              /* the profile's bytes (names point into them) */
    size_t len;
    bool cg;                    /* a callgrind profile: no time, no chains */
    char event[32];             /* "cpu-clock", "Ir"... */
    struct jhr_pd pd;
    struct jhr_al_when when;
    struct jhr_pmpick pick;
    bool timed;                 /* sample times are CLOCK_MONOTONIC */
    bool detail;
    struct jhc_row *rows;
    size_t nrows, caprows;
    size_t *order;              /* rows by self, then total (jhc_samples_load sorts) */
    struct jhr_itab names;
    char **owned;               /* names made here (callgrind's "a | b") */
    size_t nowned;
    struct jhc_map *maps;
    size_t nmaps, capmaps;
    uint64_t sample_no;
    uint64_t samples, ours, other_pid, other_event, jit, jit_near, wrong, chains, shared;
    /* detail */
    uint32_t **ipc;             /* per lf->fns index: samples per byte offset, or NULL */
    struct jhc_node *nodes;
    size_t nnodes, capnodes;
    struct jhr_itab kids;
    uint64_t *times;            /* per sample: its time, and its row's kind (tkind) */
    uint8_t *tkind;
    size_t ntimes, captimes;
};

/* Read the profile at path (perf.data or callgrind.out) against lf. The exit status of
 * `jitherald log`: 0, 1 (not a profile, or none of its samples are the log's process),
 * 2 (unreadable, out of memory); said on stderr. s is freed by jhc_samples_free whatever
 * the result. */
int jhc_samples_load(struct jhc_samples *s, const struct jhr_al *lf, const char *path,
                     bool detail);
void jhc_samples_free(struct jhc_samples *s);
/* The row named name of that kind, made on first use; NULL when memory runs out. */
struct jhc_row *jhc_samples_row(struct jhc_samples *s, int kind, const char *name);

/* log_profile_cg.c: fill s (rows, event, counts) from a callgrind profile in s->data. */
int jhc_samples_cg(struct jhc_samples *s);

#endif
