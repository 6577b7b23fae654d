/*
 * stream.h — a heard file's stream (stream.c), and the one path of it every write takes,
 * inline where the VM's write is heard (hear.h, jhp_hear): node writes its jitdump in
 * ~25,000 pieces at its start, most of them kept and nothing more (issue 30: a call and
 * its frame per piece were a tenth of hearing them). Internal to the preload.
 */
#ifndef JHP_STREAM_H
#define JHP_STREAM_H

#include <limits.h>
#include <string.h>

#include "preload.h"
#include "lib/jitdump_read.h"

/* A line or record longer than this is not a VM's: it is skipped. */
#define MAX_PENDING (64u << 20)

struct jhp_stream {
    enum jhp_kind kind;
    char path[PATH_MAX];
    _Atomic uint64_t pos;       /* bytes of the file heard (pwrite at the end: hear.c) */
    uint8_t *buf;               /* bytes heard and not used yet: a partial line or record */
    size_t len, cap;
    /* jitdump: what buf must hold before anything in it can be read (the header, a
     * record's prefix, the record whose prefix says how long it is), cap at least that,
     * or 0. A write that leaves buf short of it is only kept (node writes each record in
     * ~6 pieces, a byte at a time through fputc among them): no parse, no copy of the
     * reader's state. */
    size_t want;
    bool at_prefix;             /* want is the next record's prefix */
    bool skip_line;             /* dropping an overlong line up to its newline */
    bool broken;                /* a record of impossible size: the rest is not read */
    /* the jitdump's header once read, and what waits for the next LOAD */
    bool have_hdr;
    struct jhr_jd hdr;
    uint8_t *dbg, *unw;         /* a DEBUG_INFO record; an UNWINDING_INFO's .eh_frame */
    size_t dbg_len, unw_len, dbg_cap, unw_cap;
};

/* pos moves on (only writers change it, all under the lock: no read-modify-write). */
static inline uint64_t jhp_stream_heard(struct jhp_stream *s, size_t n)
{
    uint64_t pos = atomic_load_explicit(&s->pos, memory_order_relaxed);
    atomic_store_explicit(&s->pos, pos + n, memory_order_relaxed);
    return pos;
}

/* The record buf begins with has its prefix in buf[0..len), and is longer: it is what buf
 * waits for now. */
static inline bool jhp_stream_prefix(struct jhp_stream *s, size_t len)
{
    uint32_t total;
    memcpy(&total, s->buf + 4, 4);
    if (s->hdr.swap)
        total = __builtin_bswap32(total);
    if (total <= len || total > s->cap || total > MAX_PENDING)
        return false;                   /* complete, no room yet, or wrong: dump_records */
    s->want = total;
    s->at_prefix = false;
    return true;
}

/* n bytes that complete nothing (a piece of a jitdump record, the rest of which is still
 * to come): kept, true; false, and nothing done, otherwise. */
static inline bool jhp_stream_keep(struct jhp_stream *s, const void *p, size_t n)
{
    /* (want is 0 but while the jitdump waits) */
    size_t len = s->len + n;
    bool prefix = len >= s->want;
    if (prefix && !(s->at_prefix && n <= s->cap - s->len))
        return false;
    if (n == 1)
        s->buf[s->len] = *(const uint8_t *)p;           /* fputc's */
    else
        memcpy(s->buf + s->len, p, n);
    /* V8 writes a record's prefix with its fixed part, in one piece: its size is known at
     * once, and the name, the code and the padding after it are kept */
    if (prefix && !jhp_stream_prefix(s, len))
        return false;                   /* (the bytes past len: appended again) */
    jhp_stream_heard(s, n);
    s->len = len;
    return true;
}

/* Everything else: lines and records to read (jhp_lock held). */
void jhp_stream_take(struct jhp_stream *s, const void *p, size_t n);

/* n more bytes the VM wrote to s (jhp_lock held): every line or record they complete
 * announced. errno is left as it was. */
static inline void jhp_stream_feed(struct jhp_stream *s, const void *p, size_t n)
{
    if (!jhp_stream_keep(s, p, n))
        jhp_stream_take(s, p, n);
}

#endif
