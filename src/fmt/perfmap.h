/*
 * perfmap.h — one line of a perf map (/tmp/perf-<pid>.map), the text format perf, bcc,
 * bpftrace and samply read to name code in anonymous executable memory:
 *     START SIZE name\n
 * lowercase hex without 0x (older perf, ddprof and blazesym reject 0x), the name is the rest
 * of the line. perf drops the last character of every line, so every line ends in \n, and a
 * name may not contain one: control characters become '?'. Names longer than
 * JH__PERFMAP_NAME_MAX bytes are cut (perf's own symbol names stay well below).
 * perf (6.1 and today's tools/perf/util/symbol.c, dso__load_perf_map: `if (len + 2 >=
 * line_len) continue;`) skips a line whose name is shorter than 3 bytes, so a function
 * named "a" was never named in perf report: shorter names are padded with spaces to
 * JH__PERFMAP_NAME_MIN bytes (perf shows "a  "), and an empty name is written as "?".
 * Shared by the perfmap channel and `jitherald log FILE to-perfmap`.
 */
#ifndef JH__FMT_PERFMAP_H
#define JH__FMT_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define JH__PERFMAP_NAME_MAX 4000
#define JH__PERFMAP_NAME_MIN 3

/* Write the line into out[0..cap) (not NUL-terminated) and return its length; when that is
 * more than cap, nothing useful was written: call again with that much room. */
size_t jh__perfmap_line(char *out, size_t cap, uint64_t start, uint64_t size, const char *name);

#endif
