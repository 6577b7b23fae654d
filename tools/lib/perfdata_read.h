/*
 * perfdata_read.h — reading `perf record`'s output (perf.data) without perf: the header,
 * the event attributes, and the records of the data section one at a time (samples with
 * their call chains, the mappings, the rest skipped by their size). `jitherald log FILE
 * profile perf.data` joins the samples with an audit log on another machine, with no
 * perf installed.
 *
 *     struct jhr_pd pd;
 *     char err[256];
 *     if (jhr_pd_open(&pd, data, len, err, sizeof err) < 0) { puts(err); ... }
 *     struct jhr_pd_ev ev;
 *     for (size_t pos = 0; jhr_pd_next(&pd, &pos, &ev) > 0;)
 *         if (ev.type == JHR_PD_SAMPLE) printf("%llx at %llu\n", ev.s.ip, ev.s.time);
 *
 * The format is perf's tools/perf/util/header.c and include/uapi/linux/perf_event.h: a
 * header ("PERFILE2", sections for the attributes and the data), then perf_event_header
 * records whose layout each attribute's sample_type decides. Only files of a
 * little-endian machine in file mode are read (pipe mode, `perf record -o -`, and
 * compressed records, `perf record -z`, are refused by name); a file cut short is read as
 * far as it goes (cut). Every length is checked
 * against the bytes that hold it: a damaged record ends the walk (counted), never a read
 * outside the file.
 */
#ifndef JHR_PERFDATA_READ_H
#define JHR_PERFDATA_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* perf's record types this reader hands out (the kernel's numbering) */
enum { JHR_PD_MMAP = 1, JHR_PD_COMM = 3, JHR_PD_SAMPLE = 9, JHR_PD_MMAP2 = 10 };
/* perf_event_header.misc & 7 */
enum { JHR_PD_CPU_KERNEL = 1, JHR_PD_CPU_USER = 2 };
/* call chain entries at or above this are context markers (PERF_CONTEXT_*), not addresses */
#define JHR_PD_CONTEXT_MAX ((uint64_t)-4095)
#define JHR_PD_CONTEXT_USER ((uint64_t)-512)

struct jhr_pd_attr {
    uint32_t type;
    uint64_t config, sample_type, read_format, flags;
    int32_t clockid;
    bool use_clockid, sample_id_all;
    uint64_t ids_off, nids;     /* this attribute's sample ids, in the file */
};

struct jhr_pd_sample {
    uint64_t ip, time, period, id;
    uint32_t pid, tid, attr;    /* attr: index into jhr_pd.attrs */
    uint8_t cpumode;            /* JHR_PD_CPU_* */
    uint32_t nchain;            /* entries of the call chain (0: none) */
    const uint8_t *chain;       /* nchain u64, little-endian: read with jhr_pd_chain */
};

struct jhr_pd_map {             /* MMAP and MMAP2 */
    uint32_t pid, tid;
    uint64_t addr, len, pgoff;
    uint32_t prot;              /* MMAP2 only; 0 for MMAP */
    const char *name;           /* NUL-terminated inside the record (checked) */
};

struct jhr_pd_ev {
    uint32_t type;              /* JHR_PD_*, or another record type (then only misc set) */
    uint16_t misc;
    struct jhr_pd_sample s;
    struct jhr_pd_map m;
};

struct jhr_pd {
    const uint8_t *data;
    size_t size;
    uint64_t data_off, data_size;
    struct jhr_pd_attr *attrs;
    size_t nattrs;
    uint64_t *id_keys;          /* sample id -> attribute, sorted by id */
    uint32_t *id_attr;
    size_t nid;
    bool same_layout;           /* every attribute has the same sample_type */
    bool cut;                   /* the file ends before its data section does */
    /* what the walk met */
    size_t bad;                 /* records that did not decode (a walk stops at the first) */
    size_t compressed;          /* PERF_RECORD_COMPRESSED: perf record -z */
    size_t unknown_id;          /* samples whose id names no attribute */
};

/* Check the header and read the attributes (data is not copied: it must outlive pd).
 * 0, or -1 with a message in err. */
int jhr_pd_open(struct jhr_pd *pd, const uint8_t *data, size_t size, char *err, size_t errlen);
void jhr_pd_free(struct jhr_pd *pd);
/* The record at *pos (an offset into the data section, start at 0) into ev, and *pos past
 * it: 1, or 0 at the end, or -1 when the record is damaged (pd->bad counts it; the walk
 * cannot go on: sizes are what delimits records). Records perf synthesizes itself and the
 * ones this reader does not need come back with only type and misc set. */
int jhr_pd_next(struct jhr_pd *pd, size_t *pos, struct jhr_pd_ev *ev);
/* Entry i of a sample's call chain. */
uint64_t jhr_pd_chain(const struct jhr_pd_sample *s, uint32_t i);
/* Do the samples' times come from CLOCK_MONOTONIC (perf record -k 1 / -k mono)? */
bool jhr_pd_monotonic(const struct jhr_pd *pd);

#endif
