/*
 * perfdata_read.c — perf.data read natively (perfdata_read.h).
 *
 * The layout, from perf's util/header.h and the kernel's uapi perf_event.h:
 *
 *     perf_file_header  "PERFILE2", size (104), attr_size, {attrs}, {data}, {event_types},
 *                       feature bits (the feature sections after the data: not needed)
 *     attrs             attr_size bytes each: perf_event_attr (attr.size bytes of it) and a
 *                       {offset, size} section of that event's sample ids
 *     data              records: u32 type, u16 misc, u16 size, then size - 8 bytes
 *
 * A sample's fields follow sample_type's bits in bit order; everything this reader needs
 * (ip, tid, time, period, call chain) comes before the variable-sized tails it never
 * parses (raw, branch stack, registers, user stack), so a sample is read up to its call
 * chain and the rest skipped by the record's size. With several events the sample says
 * which by its id: first (PERF_SAMPLE_IDENTIFIER), or at ID's place when every event has
 * the same layout, which perf makes so.
 */
#include "lib/perfdata_read.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR_SIZE 104            /* sizeof(struct perf_file_header) */
#define ATTR_VER0 64            /* PERF_ATTR_SIZE_VER0 */
#define MAX_ATTRS 4096
#define REC_COMPRESSED 81

enum {
    S_IP = 1 << 0, S_TID = 1 << 1, S_TIME = 1 << 2, S_ADDR = 1 << 3, S_READ = 1 << 4,
    S_CALLCHAIN = 1 << 5, S_ID = 1 << 6, S_CPU = 1 << 7, S_PERIOD = 1 << 8,
    S_STREAM_ID = 1 << 9, S_IDENTIFIER = 1 << 16,
};
enum { R_TIME_ENABLED = 1, R_TIME_RUNNING = 2, R_ID = 4, R_GROUP = 8, R_LOST = 16 };

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A {offset, size} section that lies inside the file. */
static bool section(const uint8_t *p, size_t filesize, uint64_t *off, uint64_t *size)
{
    *off = le64(p);
    *size = le64(p + 8);
    return *off <= filesize && *size <= filesize - *off;
}

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct id_attr { uint64_t id, attr; };

/* id -> attribute, as two parallel arrays sorted by id (built in pairs, then split). */
static int index_ids(struct jhr_pd *pd)
{
    size_t n = 0;
    for (size_t a = 0; a < pd->nattrs; a++)
        n += pd->attrs[a].nids;
    if (!n)
        return 0;
    struct id_attr *t = malloc(n * sizeof *t);
    pd->id_keys = malloc(n * sizeof *pd->id_keys);
    pd->id_attr = malloc(n * sizeof *pd->id_attr);
    if (!t || !pd->id_keys || !pd->id_attr) {
        free(t);
        return -1;
    }
    size_t k = 0;
    for (size_t a = 0; a < pd->nattrs; a++)
        for (uint64_t i = 0; i < pd->attrs[a].nids; i++)
            t[k++] = (struct id_attr){ le64(pd->data + pd->attrs[a].ids_off + 8 * i), a };
    qsort(t, n, sizeof *t, cmp_id);     /* the id is the first member */
    for (size_t i = 0; i < n; i++) {
        pd->id_keys[i] = t[i].id;
        pd->id_attr[i] = (uint32_t)t[i].attr;
    }
    pd->nid = n;
    free(t);
    return 0;
}

int jhr_pd_open(struct jhr_pd *pd, const uint8_t *data, size_t size, char *err, size_t errlen)
{
    memset(pd, 0, sizeof *pd);
    pd->data = data;
    pd->size = size;
    if (size < 16 || memcmp(data, "PERFILE2", 8)) {
        if (size >= 8 && !memcmp(data, "2ELIFREP", 8))
            return fail(err, errlen, "perf.data of a big-endian machine: not supported");
        return fail(err, errlen, "not a perf.data file (no PERFILE2 magic)");
    }
    uint64_t hsize = le64(data + 8);
    if (hsize == 16)
        return fail(err, errlen, "a pipe-mode perf.data (perf record -o -): record to a file, "
                    "or convert it with perf inject -i - -o perf.data");
    if (hsize < HDR_SIZE || size < HDR_SIZE)
        return fail(err, errlen, "perf.data header too short (%llu bytes)",
                    (unsigned long long)hsize);
    uint64_t attr_size = le64(data + 16), aoff, asize, doff, dsize;
    if (!section(data + 24, size, &aoff, &asize))
        return fail(err, errlen, "perf.data header: the attributes lie outside the file");
    if (!section(data + 40, size, &doff, &dsize)) {
        if (doff > size)
            return fail(err, errlen, "perf.data header: the data lies outside the file");
        dsize = size - doff;            /* a copy cut short: read what is there */
        pd->cut = true;
    }
    if (attr_size < ATTR_VER0 + 16 || attr_size > 4096 || asize % attr_size ||
        !asize || asize / attr_size > MAX_ATTRS)
        return fail(err, errlen, "perf.data header: attributes of %llu bytes in %llu",
                    (unsigned long long)attr_size, (unsigned long long)asize);
    pd->data_off = doff;
    pd->data_size = dsize;
    pd->nattrs = asize / attr_size;
    if (!(pd->attrs = calloc(pd->nattrs, sizeof *pd->attrs)))
        return fail(err, errlen, "out of memory");
    pd->same_layout = true;
    for (size_t a = 0; a < pd->nattrs; a++) {
        const uint8_t *p = data + aoff + a * attr_size;
        struct jhr_pd_attr *at = &pd->attrs[a];
        /* attr.size says how much of the struct this perf wrote: fields past it are 0 */
        uint8_t buf[ATTR_VER0 + 40] = { 0 };
        uint32_t len = le32(p + 4);
        if (len < ATTR_VER0 || len > attr_size - 16)
            len = (uint32_t)(attr_size - 16);
        memcpy(buf, p, len < sizeof buf ? len : sizeof buf);
        at->type = le32(buf);
        at->config = le64(buf + 8);
        at->sample_type = le64(buf + 24);
        at->read_format = le64(buf + 32);
        at->flags = le64(buf + 40);
        at->sample_id_all = at->flags >> 18 & 1;
        at->use_clockid = at->flags >> 25 & 1;
        at->clockid = (int32_t)le32(buf + 92);
        uint64_t ioff, isize;
        if (!section(p + attr_size - 16, size, &ioff, &isize) || isize % 8) {
            jhr_pd_free(pd);
            return fail(err, errlen, "perf.data: the sample ids of event %zu lie outside the file", a);
        }
        at->ids_off = ioff;
        at->nids = isize / 8;
        if (at->sample_type != pd->attrs[0].sample_type || at->read_format != pd->attrs[0].read_format)
            pd->same_layout = false;
    }
    if (!pd->same_layout) {
        for (size_t a = 0; a < pd->nattrs; a++)
            if (!(pd->attrs[a].sample_type & S_IDENTIFIER)) {
                jhr_pd_free(pd);
                return fail(err, errlen, "perf.data: events of different layouts without "
                            "PERF_SAMPLE_IDENTIFIER: their samples cannot be told apart");
            }
    }
    if (index_ids(pd) < 0) {
        jhr_pd_free(pd);
        return fail(err, errlen, "out of memory");
    }
    return 0;
}

void jhr_pd_free(struct jhr_pd *pd)
{
    free(pd->attrs);
    free(pd->id_keys);
    free(pd->id_attr);
    pd->attrs = NULL;
    pd->id_keys = NULL;
    pd->id_attr = NULL;
}

/* The attribute a sample id names; the first when there is no index, -1 when unknown. */
static long attr_of(const struct jhr_pd *pd, uint64_t id)
{
    if (!pd->nid || pd->nattrs == 1)
        return 0;
    size_t lo = 0, hi = pd->nid;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pd->id_keys[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < pd->nid && pd->id_keys[lo] == id ? (long)pd->id_attr[lo] : -1;
}

/* A cursor over one record's body: every read is checked against its end. */
struct cur { const uint8_t *p, *end; bool bad; };

static uint64_t take64(struct cur *c)
{
    if (c->end - c->p < 8) {
        c->bad = true;
        return 0;
    }
    uint64_t v = le64(c->p);
    c->p += 8;
    return v;
}

static void skip64(struct cur *c, uint64_t n)
{
    if (n > (uint64_t)(c->end - c->p) / 8) {
        c->bad = true;
        return;
    }
    c->p += n * 8;
}

static int sample(struct jhr_pd *pd, struct cur *c, struct jhr_pd_sample *s)
{
    uint64_t st = pd->attrs[0].sample_type;
    long a = 0;
    if (st & S_IDENTIFIER) {
        s->id = take64(c);
        if (c->bad || (a = attr_of(pd, s->id)) < 0) {
            pd->unknown_id += !c->bad;
            return -1;
        }
        st = pd->attrs[a].sample_type;
    }
    const struct jhr_pd_attr *at = &pd->attrs[a];
    if (st & S_IP)
        s->ip = take64(c);
    if (st & S_TID) {
        uint64_t v = take64(c);
        s->pid = (uint32_t)v;
        s->tid = (uint32_t)(v >> 32);
    }
    if (st & S_TIME)
        s->time = take64(c);
    if (st & S_ADDR)
        take64(c);
    if (st & S_ID) {
        s->id = take64(c);
        if (!(st & S_IDENTIFIER) && (a = attr_of(pd, s->id)) < 0) {
            pd->unknown_id += !c->bad;
            return -1;
        }
    }
    if (st & S_STREAM_ID)
        take64(c);
    if (st & S_CPU)
        take64(c);
    s->period = st & S_PERIOD ? take64(c) : 1;
    if (st & S_READ) {
        uint64_t rf = at->read_format;
        uint64_t per = 1 + !!(rf & R_ID) + !!(rf & R_LOST);
        uint64_t nr = rf & R_GROUP ? take64(c) : 1;
        skip64(c, !!(rf & R_TIME_ENABLED) + !!(rf & R_TIME_RUNNING));
        if (nr > (uint64_t)(c->end - c->p) / 8 / per)
            c->bad = true;
        else
            skip64(c, nr * per);
    }
    if (st & S_CALLCHAIN) {
        uint64_t nr = take64(c);
        const uint8_t *chain = c->p;
        skip64(c, nr);
        if (!c->bad) {
            s->nchain = (uint32_t)nr;
            s->chain = chain;
        }
    }
    s->attr = (uint32_t)a;
    return c->bad ? -1 : 0;
}

static int mapping(const struct cur *c, uint32_t type, struct jhr_pd_map *m)
{
    size_t fixed = type == JHR_PD_MMAP ? 32 : 64;
    if ((size_t)(c->end - c->p) < fixed + 1)
        return -1;
    const uint8_t *p = c->p;
    m->pid = le32(p);
    m->tid = le32(p + 4);
    m->addr = le64(p + 8);
    m->len = le64(p + 16);
    m->pgoff = le64(p + 24);
    m->prot = type == JHR_PD_MMAP2 ? le32(p + 56) : 0;
    /* the name is NUL-padded to 8 bytes; sample_id_all fields may follow it */
    const uint8_t *name = p + fixed;
    if (!memchr(name, 0, (size_t)(c->end - name)))
        return -1;
    m->name = (const char *)name;
    return 0;
}

int jhr_pd_next(struct jhr_pd *pd, size_t *pos, struct jhr_pd_ev *ev)
{
    memset(ev, 0, sizeof *ev);
    if (*pos >= pd->data_size)
        return 0;
    const uint8_t *p = pd->data + pd->data_off + *pos;
    size_t left = (size_t)(pd->data_size - *pos);
    if (left < 8) {
        pd->bad++;
        return -1;
    }
    uint16_t size = (uint16_t)(p[6] | p[7] << 8);
    if (size < 8 || size > left) {
        pd->bad++;
        return -1;
    }
    *pos += size;
    ev->type = le32(p);
    ev->misc = (uint16_t)(p[4] | p[5] << 8);
    struct cur c = { p + 8, p + size, false };
    if (ev->type == JHR_PD_SAMPLE) {
        ev->s.cpumode = ev->misc & 7;
        if (sample(pd, &c, &ev->s) < 0) {
            pd->bad += c.bad;
            ev->type = 0;               /* skipped: its size still delimits it */
        }
    } else if (ev->type == JHR_PD_MMAP || ev->type == JHR_PD_MMAP2) {
        if (mapping(&c, ev->type, &ev->m) < 0) {
            pd->bad++;
            ev->type = 0;
        }
    } else if (ev->type == REC_COMPRESSED) {
        pd->compressed++;
    }
    return 1;
}

uint64_t jhr_pd_chain(const struct jhr_pd_sample *s, uint32_t i)
{
    return i < s->nchain ? le64(s->chain + 8 * (size_t)i) : 0;
}

bool jhr_pd_monotonic(const struct jhr_pd *pd)
{
    for (size_t a = 0; a < pd->nattrs; a++)
        if (!pd->attrs[a].use_clockid || pd->attrs[a].clockid != 1 /* CLOCK_MONOTONIC */)
            return false;
    return pd->nattrs > 0;
}
