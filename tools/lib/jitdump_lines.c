/* jitdump_lines.c — see jitdump_lines.h. */
#include "lib/jitdump_lines.h"

#include <string.h>

/* A file name read from the wrong place: control bytes (what `jitherald check` calls
 * line-garbage), or bytes that are not UTF-8. */
static bool garbage(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f)
            return true;
        if (p[i] < 0x80)
            continue;
        size_t k = p[i] >= 0xc2 && p[i] < 0xe0 ? 1 : p[i] >= 0xe0 && p[i] < 0xf0 ? 2 :
                   p[i] >= 0xf0 && p[i] < 0xf5 ? 3 : 0;
        if (!k || i + k >= n)
            return true;        /* not a lead byte, or cut short */
        for (size_t j = 1; j <= k; j++)
            if ((p[i + j] & 0xc0) != 0x80)
                return true;
        i += k;
    }
    return false;
}

const char *jhr_v8_script(const char *name, size_t name_len, size_t file_len)
{
    if (name_len < 4 || memcmp(name, "JS:", 3))
        return NULL;
    size_t e = name_len;
    for (int part = 0; part < 2; part++) {      /* ":COLUMN", then ":LINE" */
        size_t d = e;
        while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
            d--;
        if (d == e || d == 0 || name[d - 1] != ':')
            return NULL;
        e = d - 1;
    }
    if (file_len == 0 || file_len >= e || name[e - file_len - 1] != ' ')
        return NULL;
    return name + e - file_len;
}

/* Walk V8's entries by a name length of len (see the header): do they end where the record
 * does, each name followed by its NUL, the rest zero padding? */
static bool fixed_walk(const struct jhr_jd_rec *dbg, size_t len)
{
    const uint8_t *e = dbg->u.debug.entries;
    size_t each = 16 + len + 1, n = (size_t)dbg->u.debug.nr_entry, total = dbg->u.debug.entries_len;
    if (n == 0 || n > total / each)
        return false;
    size_t end = n * each;
    if (total - end > 7)
        return false;
    for (size_t i = 0; i < n; i++)
        if (e[i * each + 16 + len] != 0)
            return false;
    for (size_t i = end; i < total; i++)
        if (e[i])
            return false;
    return true;
}

/* The entry at index i of a fixed walk (fixed_walk checked it lies inside the record). */
static void fixed_entry(const struct jhr_jd *r, const struct jhr_jd_rec *dbg, size_t len,
                        size_t i, struct jhr_jd_line *l)
{
    jhr_jd_debug_fixed(r, dbg->u.debug.entries + i * (16 + len + 1), l);
    l->name_len = len;
}

/* Which name length makes V8's entries walk to the record's end (there is one at most for
 * a given LOAD name). */
static bool realign(const struct jhr_jd_rec *dbg, const struct jhr_jd_rec *load,
                    struct jhr_lines *ln, size_t *len)
{
    size_t n = (size_t)dbg->u.debug.nr_entry, total = dbg->u.debug.entries_len;
    for (size_t pad = 0; pad < 8 && n && pad < total; pad++) {
        if ((total - pad) % n || (total - pad) / n < 18)
            continue;
        size_t l = (total - pad) / n - 17;
        const char *f = jhr_v8_script(load->u.load.name, load->u.load.name_len, l);
        if (!f || l >= sizeof ln->file || !fixed_walk(dbg, l))
            continue;
        memcpy(ln->file, f, l);
        ln->file[l] = 0;
        *len = l;
        return true;
    }
    return false;
}

void jhr_jd_load_lines(const struct jhr_jd *r, const struct jhr_jd_rec *dbg,
                       const struct jhr_jd_rec *load, struct jhr_lines *ln)
{
    ln->n = ln->nfiles = 0;
    ln->realigned = ln->dropped = false;
    if (!dbg || dbg->id != JH__JD_CODE_DEBUG_INFO || load->id != JH__JD_CODE_LOAD ||
        dbg->u.debug.code_addr != load->u.load.code_addr)
        return;
    uint64_t a = load->u.load.code_addr, s = load->u.load.code_size;
    uint64_t n = dbg->u.debug.nr_entry;

    /* First pass, by terminators: whether the names can be trusted. A walk by the script
     * name's length that holds (realign) wins over one by terminators whose names are not
     * that script: V8's dangling bytes are sometimes printable ("$Z", and the entries after
     * it misaligned yet decodable), while a table whose names are all the script's walks the
     * same both ways. */
    size_t pos = 0, fixed = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    bool walked = true, all_script = true;
    struct jhr_jd_line l;
    for (uint64_t i = 0; i < n && walked; i++) {
        if (jhr_jd_debug_entry(r, dbg, &pos, &l) || garbage(l.name, l.name_len)) {
            walked = false;
            break;
        }
        const char *f = jhr_v8_script(load->u.load.name, load->u.load.name_len, l.name_len);
        all_script &= f && !memcmp(f, l.name, l.name_len);
    }
    if ((!walked || !all_script) && realign(dbg, load, ln, &fixed)) {
        ln->realigned = true;
    } else if (!walked) {
        ln->dropped = true;     /* the table is noise: no lines rather than wrong ones */
        return;
    }
    pos = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (ln->realigned)
            fixed_entry(r, dbg, fixed, (size_t)i, &l);
        else
            jhr_jd_debug_entry(r, dbg, &pos, &l);
        if ((ln->realigned || l.name_len) && l.addr < lo)
            lo = l.addr;
        if ((ln->realigned || l.name_len) && l.addr > hi)
            hi = l.addr;
    }
    uint64_t skew = lo <= hi && jhr_jd_line_skew(lo, hi, a, s) ? 0x40 : 0;

    pos = 0;
    for (uint64_t i = 0; i < n && ln->n < ln->cap; i++) {
        const char *file;
        if (ln->realigned) {
            fixed_entry(r, dbg, fixed, (size_t)i, &l);
            file = ln->file;
        } else {
            jhr_jd_debug_entry(r, dbg, &pos, &l);
            file = l.name;      /* NUL-terminated inside the record */
            if (!l.name_len)
                continue;       /* Erlang's */
        }
        if (l.lineno <= 0 || l.addr < a + skew || l.addr - a - skew >= s)
            continue;
        uint32_t fi = 0;
        while (fi < ln->nfiles && strcmp(ln->files[fi], file))
            fi++;
        if (fi == ln->nfiles) {
            if (fi == JHR_LINES_MAXFILES)
                continue;
            ln->files[ln->nfiles++] = file;
        }
        struct jh_line row = { (uint32_t)(l.addr - a - skew), (uint32_t)l.lineno, 0, fi };
        uint32_t k = ln->n++;
        while (k && ln->rows[k - 1].offset > row.offset) {   /* V8's go backwards, sometimes */
            ln->rows[k] = ln->rows[k - 1];
            k--;
        }
        ln->rows[k] = row;
    }
}
