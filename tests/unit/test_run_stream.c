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
    nsaid += (size_t)snprintf(said + nsaid, sizeof said - nsaid, "%" PRIx64 "+%" PRIx64 " %.*s|",
                              f->start, f->size, (int)f->name_len, f->name);
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

int main(void)
{
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
