/*
 * test_run_stream.c — the preload reads a perf map line that it printed itself (V8's
 * vfprintf: adapters/preload/writes.c) from the numbers it printed rather than from the
 * text (stream.c, jhp_stream_map_line; issue 30). What it announces, and counts, must be
 * what the map's reader makes of the same text fed as bytes (jhp_stream_feed): for the
 * usual lines and for every line the reader refuses or skips, and it must leave to the
 * reader what it cannot read alone (a partial line pending, a newline in the name).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "stream.h"

/* ---- what stream.c calls: the announcements recorded ---- */
struct jhp_stats jhp_st;
static char said[8192];
static size_t nsaid;
void jhp_announce(const struct jhp_fn *f)
{
    nsaid += (size_t)snprintf(said + nsaid, sizeof said - nsaid, "%" PRIx64 "+%" PRIx64 " %.*s",
                              f->start, f->size, (int)f->name_len, f->name);
    if (f->eh_frame_len)        /* (a jitdump's: the .eh_frame its UNWINDING_INFO gave) */
        nsaid += (size_t)snprintf(said + nsaid, sizeof said - nsaid, " eh_frame %zu %02x",
                                  f->eh_frame_len, f->eh_frame[0]);
    nsaid += (size_t)snprintf(said + nsaid, sizeof said - nsaid, "|");
}
void jhp_announce_move(uint64_t old_start, uint64_t new_start, uint64_t size)
{
    (void)old_start, (void)new_start, (void)size;
}
void jhp_warn(const char *fmt, ...) { (void)fmt; }
static int heard_something;
void jhp_heard_something(void) { heard_something++; }

/* What each way makes of one line: the announcements and the counts. */
struct seen {
    char said[1024];
    uint64_t lines, malformed, pos;
    int heard;
};

static struct jhp_stream *fresh(const char *path)
{
    struct jhp_stream *s = jhp_stream_get(JHP_MAP, path);
    jhp_stream_reset(s);
    return s;
}

static void take_seen(struct seen *o, struct jhp_stream *s)
{
    snprintf(o->said, sizeof o->said, "%.*s", (int)nsaid, said);
    o->lines = jhp_st.map_lines, o->malformed = jhp_st.malformed;
    o->pos = atomic_load(&s->pos), o->heard = heard_something;
    nsaid = 0, heard_something = 0;
    memset(&jhp_st, 0, sizeof jhp_st);
}

/* The line V8 prints (start, size, name) both ways: the same outcome; whether the fields
 * were used. */
static int both(uint64_t start, uint64_t size, const char *name)
{
    char text[512];
    int n = snprintf(text, sizeof text, "%lx %lx %s\n", (unsigned long)start,
                     (unsigned long)size, name);
    struct seen a, b;
    struct jhp_stream *s = fresh("/tmp/perf-1.map");
    jhp_stream_feed(s, text, (size_t)n);
    take_seen(&a, s);
    s = fresh("/tmp/perf-2.map");
    struct jhp_map_line l = { start, size, text + n - 1 - strlen(name), strlen(name), text,
                              (size_t)n };
    bool used = jhp_stream_map_line(s, &l);
    if (!used)
        jhp_stream_feed(s, text, (size_t)n);
    take_seen(&b, s);
    CHECK(strcmp(a.said, b.said) == 0);
    CHECK_EQ(a.lines, b.lines);
    CHECK_EQ(a.malformed, b.malformed);
    CHECK_EQ(a.pos, b.pos);
    CHECK_EQ(a.heard, b.heard);
    if (strcmp(a.said, b.said) || a.lines != b.lines || a.malformed != b.malformed)
        fprintf(stderr, "  \"%s\": text [%s] %" PRIu64 "/%" PRIu64 ", fields [%s] %" PRIu64
                "/%" PRIu64 "\n", text, a.said, a.lines, a.malformed, b.said, b.lines,
                b.malformed);
    return used;
}

/* ---- the jitdump: an UNWINDING_INFO with no .eh_frame (V8's before each LOAD) is not read
 * when its last piece comes (stream.c, empty_unwind); what is announced and counted must be
 * what reading it gives, as when the whole file comes in one write ---- */
static size_t put(uint8_t *b, size_t at, uint64_t v, int w)
{
    memcpy(b + at, &v, (size_t)w);      /* (little-endian host: the low bytes) */
    return at + (size_t)w;
}

/* UNWINDING_INFO with unwinding_size us and eh_frame_hdr_size hs over data bytes, then a
 * LOAD of "f<i>" saying code_size (its 8 bytes of code: read without the reader when it
 * comes in pieces, stream.c's load_alone); the pieces each record is written in (V8's: the fixed part, the
 * rest, a LOAD's name's NUL alone) end at cuts[]. */
static size_t dump_pair(uint8_t *b, size_t len, uint64_t us, uint64_t hs, uint32_t data,
                        unsigned i, uint64_t code_size, size_t *cuts, size_t *nc)
{
    uint32_t total = 16 + 24 + data;
    size_t at = put(b, len, 4, 4);
    at = put(b, at, total, 4);
    at = put(b, at, 0, 8);
    at = put(b, at, us, 8);
    at = put(b, at, hs, 8);
    at = put(b, at, 4096, 8);
    cuts[(*nc)++] = at;
    for (uint32_t k = 0; k < data; k++)
        b[at + k] = (uint8_t)(0x10 + i + k);
    len += total;
    cuts[(*nc)++] = len;
    char name[16];
    int nl = snprintf(name, sizeof name, "f%u", i) + 1;
    total = (uint32_t)(16 + 40 + nl + 8);
    at = put(b, len, 0, 4);
    at = put(b, at, total, 4);
    at = put(b, at, 0, 8);
    at = put(b, at, 1, 4);
    at = put(b, at, 1, 4);
    at = put(b, at, 0x10000 + i * 0x100, 8);
    at = put(b, at, 0x10000 + i * 0x100, 8);
    at = put(b, at, code_size, 8);     /* (8 bytes of code follow the name) */
    at = put(b, at, i, 8);
    cuts[(*nc)++] = at;
    memcpy(b + at, name, (size_t)nl - 1);
    cuts[(*nc)++] = at + (size_t)nl - 1;
    cuts[(*nc)++] = at + (size_t)nl;
    memset(b + at + nl, 0x90, 8);
    len += total;
    cuts[(*nc)++] = len;
    return len;
}

static void dump_fed(struct seen *o, const uint8_t *b, size_t len, const size_t *cuts,
                     size_t nc, size_t every)
{
    struct jhp_stream *s = jhp_stream_get(JHP_DUMP, "/tmp/jit-2.dump");
    jhp_stream_reset(s);
    size_t off = 0;
    for (size_t k = 0; off < len; k++) {
        size_t end = every ? off + every : k < nc ? cuts[k] : len;
        end = end < len ? end : len;
        jhp_stream_feed(s, b + off, end - off);
        off = end;
    }
    take_seen(o, s);
}

static void dump_ways(void)
{
    static uint8_t b[4096];
    size_t cuts[64], nc = 0, len = 0;
    len = put(b, len, 0x4A695444, 4);
    len = put(b, len, 1, 4);
    len = put(b, len, 40, 4);
    len = put(b, len, 62, 4);
    len = put(b, len, 0, 4);
    len = put(b, len, 1, 4);
    len = put(b, len, 0, 8);
    len = put(b, len, 0, 8);
    cuts[nc++] = len;
    len = dump_pair(b, len, 20, 20, 24, 0, 8, cuts, &nc);      /* V8's: none */
    len = dump_pair(b, len, 44, 20, 48, 1, 8, cuts, &nc);      /* an .eh_frame of 24 bytes */
    len = dump_pair(b, len, 0, 0, 0, 2, 8, cuts, &nc);         /* nothing at all */
    len = dump_pair(b, len, 10, 20, 24, 3, 8, cuts, &nc);      /* header larger: refused */
    len = dump_pair(b, len, 30, 30, 24, 4, 8, cuts, &nc);      /* more than its data: refused */
    len = dump_pair(b, len, 24, 24, 24, 5, 8, cuts, &nc);      /* exactly its data */
    len = dump_pair(b, len, 32, 20, 40, 6, 8, cuts, &nc);      /* another .eh_frame */
    len = dump_pair(b, len, 20, 20, 24, 7, 8, cuts, &nc);      /* none: the last one's is gone */
    len = dump_pair(b, len, 20, 20, 24, 8, 9, cuts, &nc);      /* code past the record: refused */
    len = dump_pair(b, len, 44, 20, 48, 9, 4, cuts, &nc);      /* code inside: the LOAD's own */
    struct seen whole, pieces, bytes;
    dump_fed(&whole, b, len, NULL, 0, len);
    dump_fed(&pieces, b, len, cuts, nc, 0);
    dump_fed(&bytes, b, len, NULL, 0, 1);
    CHECK(strstr(whole.said, "10100+8 f1 eh_frame 24 11|") != NULL);
    CHECK(strstr(whole.said, "10600+8 f6 eh_frame 12 16|") != NULL);
    CHECK(strstr(whole.said, "10700+8 f7|") != NULL);
    CHECK(strstr(whole.said, "f8") == NULL);
    CHECK(strstr(whole.said, "10900+4 f9 eh_frame 24 19|") != NULL);
    CHECK_EQ(whole.malformed, 3);
    CHECK(!strcmp(whole.said, pieces.said) && !strcmp(whole.said, bytes.said));
    CHECK_EQ(pieces.malformed, whole.malformed);
    CHECK_EQ(bytes.malformed, whole.malformed);
    CHECK(whole.pos == len && pieces.pos == len && bytes.pos == len);
    if (strcmp(whole.said, pieces.said) || strcmp(whole.said, bytes.said))
        fprintf(stderr, "  whole:  %s\n  pieces: %s\n  bytes:  %s\n", whole.said, pieces.said,
                bytes.said);
}

int main(void)
{
    dump_ways();
    /* V8's lines: read from the fields */
    CHECK(both(0x7f12a0b3c040ull, 0x1a4, "Builtin:Abort"));
    CHECK(both(0x1000, 0x10, "JS:~f /tmp/app.js:4:15"));
    CHECK(both(0, 1, "at zero"));                                /* (refused by announce) */
    CHECK(both(~0ull, 0xffffffffu, "wraps"));                    /* malformed */
    CHECK(both(0x2000, 0, "size zero"));                         /* counted, skipped */
    CHECK(both(0x2000, 8, "a\rb"));                              /* CR: malformed */
    CHECK(both(0x2000, 8, ""));                                  /* empty: malformed */
    CHECK(both(0x2000, 8, " two  spaces "));
    /* a newline in the name: two lines of text, the reader's */
    CHECK(!both(0x2000, 8, "one\ntwo"));
    CHECK(!both(0x2000, 8, "one\n"));

    /* a partial line pending: the text goes after it, through the reader */
    struct jhp_stream *s = fresh("/tmp/perf-3.map");
    jhp_stream_feed(s, "3000 10 fir", 11);
    struct jhp_map_line l = { 0x4000, 0x10, "st", 2, "4000 10 st\n", 11 };
    CHECK(!jhp_stream_map_line(s, &l));
    jhp_stream_feed(s, "st\n", 3);
    CHECK(strstr(said, "3000+10 first|") != NULL);
    nsaid = 0;
    /* not a map */
    struct jhp_stream *d = jhp_stream_get(JHP_DUMP, "/tmp/jit-1.dump");
    struct jhp_map_line m = { 0x1000, 0x10, "f", 1, "1000 10 f\n", 10 };
    CHECK(!jhp_stream_map_line(d, &m));
    CHECK_EQ(nsaid, 0);
    return check_done();
}
