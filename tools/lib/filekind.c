/* filekind.c — see filekind.h. Each test is the one its format's writer guarantees: a
 * magic number where there is one, else the shape of the first line. */
#include "lib/filekind.h"

#include <stdbool.h>
#include <string.h>

static bool starts(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    return n >= k && !memcmp(p, s, k);
}

static bool is_hex(uint8_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* "[0x]HEX" followed by a space; i advanced past it. */
static bool hex_field(const uint8_t *p, size_t n, size_t *i)
{
    size_t j = *i;
    if (j + 1 < n && p[j] == '0' && (p[j + 1] == 'x' || p[j + 1] == 'X'))
        j += 2;
    size_t s = j;
    while (j < n && is_hex(p[j]))
        j++;
    if (j == s || j >= n || p[j] != ' ')
        return false;
    *i = j + 1;
    return true;
}

/* The first line of a callgrind or cachegrind profile: a format comment, or one of the
 * header lines valgrind writes first (callgrind_annotate accepts any of them). */
static bool callgrind_line(const uint8_t *p, size_t n)
{
    static const char *const heads[] = {
        "# callgrind format", "# cachegrind format", "version:", "creator:", "desc:",
        "cmd:", "events:", "pid:", "positions:",
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        if (starts(p, n, heads[i]))
            return true;
    return false;
}

enum jhr_kind jhr_kind_of(const uint8_t *p, size_t n)
{
    if (n == 0)
        return JHR_KIND_EMPTY;
    if (starts(p, n, "JiTD") || starts(p, n, "DTiJ"))
        return JHR_KIND_JITDUMP;
    if (starts(p, n, "\x7f" "ELF"))
        return JHR_KIND_ELF;
    if (starts(p, n, "PERFILE2") || starts(p, n, "2ELIFREP"))
        return JHR_KIND_PERFDATA;
    /* 0xce LEN then a fixmap or map 16/32; LEN of the header record is small */
    if (n >= 6 && p[0] == 0xce && p[1] == 0 &&
        ((p[5] & 0xf0) == 0x80 || p[5] == 0xde || p[5] == 0xdf))
        return JHR_KIND_AUDITLOG;
    bool text = true;
    for (size_t i = 0; i < n && text; i++)
        text = p[i] >= 0x20 || p[i] == '\n' || p[i] == '\t' || p[i] == '\r' || p[i] >= 0x80;
    if (!text)
        return JHR_KIND_DATA;
    if (callgrind_line(p, n))
        return JHR_KIND_CALLGRIND;
    size_t i = 0;
    if (hex_field(p, n, &i) && hex_field(p, n, &i))
        return JHR_KIND_PERFMAP;
    size_t j = 0;
    while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\n' || p[j] == '\r'))
        j++;
    if (starts(p + j, n - j, "<!DOCTYPE html") || starts(p + j, n - j, "<html"))
        return JHR_KIND_HTML;
    return JHR_KIND_TEXT;
}

const char *jhr_kind_name(enum jhr_kind k)
{
    switch (k) {
    case JHR_KIND_EMPTY: return "an empty file";
    case JHR_KIND_JITDUMP: return "a jitdump";
    case JHR_KIND_PERFMAP: return "a perf map";
    case JHR_KIND_AUDITLOG: return "an audit log";
    case JHR_KIND_CALLGRIND: return "a callgrind/cachegrind profile";
    case JHR_KIND_ELF: return "an ELF file";
    case JHR_KIND_PERFDATA: return "a perf.data file";
    case JHR_KIND_HTML: return "an HTML page";
    case JHR_KIND_TEXT: return "a text file";
    case JHR_KIND_DATA: break;
    }
    return "binary data of no format jitherald knows";
}

const char *jhr_kind_reader(enum jhr_kind k)
{
    switch (k) {
    case JHR_KIND_JITDUMP: case JHR_KIND_PERFMAP: return "jitherald inspect %s";
    case JHR_KIND_AUDITLOG: return "jitherald log %s";
    case JHR_KIND_CALLGRIND: return "jitherald callgrind %s OUT";
    case JHR_KIND_PERFDATA: return "perf report -i %s";
    default: return NULL;
    }
}
