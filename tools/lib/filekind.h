/*
 * filekind.h — what kind of file this is, from its first bytes (its magic), so that a
 * command given the wrong file says what the file is instead of failing on line 1:
 *
 *     $ jitherald inspect minijit-4242.jhlog
 *     jitherald inspect: minijit-4242.jhlog: not a jitdump or perf map: an audit log (read it
 *     with `jitherald log minijit-4242.jhlog`)
 */
#ifndef JHR_FILEKIND_H
#define JHR_FILEKIND_H

#include <stddef.h>
#include <stdint.h>

enum jhr_kind {
    JHR_KIND_EMPTY,
    JHR_KIND_JITDUMP,     /* "JiTD" in either byte order (perf's util/jitdump.h) */
    JHR_KIND_PERFMAP,     /* "START SIZE name" lines, START and SIZE hex */
    JHR_KIND_AUDITLOG,    /* a frame 0xce LEN(4) around a msgpack map (auditlog-format.md) */
    JHR_KIND_CALLGRIND,   /* callgrind's or cachegrind's text profile */
    JHR_KIND_ELF,         /* "\x7fELF" */
    JHR_KIND_PERFDATA,    /* perf record's output ("PERFILE2") */
    JHR_KIND_HTML,        /* e.g. `jitherald log FILE report` */
    JHR_KIND_TEXT,        /* other text */
    JHR_KIND_DATA,        /* other bytes */
};

/* How many leading bytes jhr_kind_of looks at (fewer is fine for a shorter file). */
#define JHR_KIND_PEEK 4096

/* The kind of a file that begins with p[0..n) (n = the file's first bytes, up to
 * JHR_KIND_PEEK; the whole file when it is shorter). */
enum jhr_kind jhr_kind_of(const uint8_t *p, size_t n);
/* Its name with an article ("an audit log", "an ELF file"). */
const char *jhr_kind_name(enum jhr_kind k);
/* The command that reads a file of this kind, with %s for the file ("jitherald log %s"),
 * or NULL. */
const char *jhr_kind_reader(enum jhr_kind k);

#endif
