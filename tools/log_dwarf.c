/*
 * log_dwarf.c — a logged memory block decoded as the C type its hint names, using the
 * DWARF type information of the VM's own binary (libdw), RaptorJIT-Studio style:
 *
 *     $ jitherald log minijit-4242.jhlog show 0x55d0c0a8e2a0 --vm ./minijit
 *     struct mj_function @ 0x55d0c0a8e2a0, 96 bytes (record 5, 0.000433 s)
 *       name = 0x55d0c0a8e300 -> "fib"
 *       nparams = 1
 *       code = 0x7f3a1c000000 -> fib+0x0
 *       next = 0x55d0c0a8e1a0 -> struct mj_function {
 *         ...
 *
 * Pointers are followed into other memory logged up to the same moment (the latest
 * snapshot at or before the record being shown): a char pointer shows the string, a struct
 * pointer the struct (to a small depth, never twice the same), a code pointer the logged
 * function it points into. Every field's offset and size is checked against the snapshot
 * before its bytes are read: a hint that lies, or a binary that does not match, shows
 * "(outside the snapshot)" and never reads past the logged bytes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/files.h"
#include "log_present.h"
#include "lib/files.h"
#include "lib/text.h"

#ifdef JH_HAVE_LIBDW
#include <elfutils/libdw.h>

#include <dwarf.h>

#include "log_libs.h"

/* libdw, opened at the first type asked for rather than linked: linked, it and what it
 * links (libelf, libz, liblzma, libbz2) were loaded and relocated at every start of the
 * CLI, `jitherald run` included, which starts before every VM it runs and needs none of
 * them. elfutils has kept the soname libdw.so.1 since its first release. */
#define DW_SONAME "libdw.so.1"
#define DW_FUNCS(X) \
    X(dwarf_aggregate_size) X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_begin) \
    X(dwarf_bitsize) X(dwarf_bytesize) X(dwarf_child) X(dwarf_diename) \
    X(dwarf_end) X(dwarf_errmsg) X(dwarf_formref_die) X(dwarf_formsdata) \
    X(dwarf_formudata) X(dwarf_hasattr) X(dwarf_nextcu) X(dwarf_offdie) \
    X(dwarf_peel_type) X(dwarf_siblingof) X(dwarf_tag)
static struct {
#define X(f) __typeof__(f) *f;
    DW_FUNCS(X)
#undef X
} dw_api;

#define X(f) #f,
static const char *const dw_names[] = { DW_FUNCS(X) };
#undef X
#define X(f) (void **)&dw_api.f,
static void **const dw_slots[] = { DW_FUNCS(X) };
#undef X
static struct jhc_lib dw_lib = { DW_SONAME, dw_names, dw_slots,
                                 sizeof dw_names / sizeof dw_names[0], 0 };

static bool dw_loaded(void)
{
    return jhc_lib_load(&dw_lib);
}

struct jhc_types {
    int fd;
    Dwarf *dw;
    struct { char *hint; Dwarf_Die die; bool found; } cache[32];   /* hint -> type */
    unsigned ncache;
};

struct jhc_types *jhc_types_open(const char *vm, char *err, size_t errlen)
{
    if (!dw_loaded()) {
        snprintf(err, errlen, "cannot read types from %s: %s could not be loaded", vm,
                 DW_SONAME);
        return NULL;
    }
    int fd = jh__open_regular(vm, 0);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", vm, jhr_file_error(fd));
        return NULL;
    }
    Dwarf *dw = dw_api.dwarf_begin(fd, DWARF_C_READ);
    if (!dw) {
        snprintf(err, errlen, "%s: no DWARF debug information (%s)", vm, dw_api.dwarf_errmsg(-1));
        close(fd);
        return NULL;
    }
    struct jhc_types *dt = calloc(1, sizeof *dt);
    if (!dt) {
        dw_api.dwarf_end(dw);
        close(fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    dt->fd = fd;
    dt->dw = dw;
    return dt;
}

void jhc_types_close(struct jhc_types *dt)
{
    if (!dt)
        return;
    for (unsigned i = 0; i < dt->ncache && i < 32; i++)
        free(dt->cache[i].hint);
    dw_api.dwarf_end(dt->dw);
    close(dt->fd);
    free(dt);
}

/* "struct foo" / "union foo" / "enum foo" / "foo" (typedef or base type). */
static int find_type_uncached(struct jhc_types *dt, const char *hint, Dwarf_Die *out)
{
    int want = 0;
    const char *name = hint;
    while (*name == ' ')
        name++;
    if (!strncmp(name, "struct ", 7)) { want = DW_TAG_structure_type; name += 7; }
    else if (!strncmp(name, "union ", 6)) { want = DW_TAG_union_type; name += 6; }
    else if (!strncmp(name, "enum ", 5)) { want = DW_TAG_enumeration_type; name += 5; }
    while (*name == ' ')
        name++;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dw_api.dwarf_nextcu(dt->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu, d;
        if (dw_api.dwarf_offdie(dt->dw, off + hsize, &cu) && dw_api.dwarf_child(&cu, &d) == 0) {
            do {
                int tag = dw_api.dwarf_tag(&d);
                const char *n = dw_api.dwarf_diename(&d);
                if (!n || strcmp(n, name) || dw_api.dwarf_hasattr(&d, DW_AT_declaration))
                    continue;
                if (want ? tag == want : (tag == DW_TAG_typedef || tag == DW_TAG_base_type ||
                                          tag == DW_TAG_structure_type)) {
                    *out = d;
                    return 0;
                }
            } while (dw_api.dwarf_siblingof(&d, &d) == 0);
        }
        off = next;
    }
    return -1;
}

/* A report decodes hundreds of snapshots of a few types: scan the units once per type. */
static int find_type(struct jhc_types *dt, const char *hint, Dwarf_Die *out)
{
    unsigned n = dt->ncache < 32 ? dt->ncache : 32;
    for (unsigned i = 0; i < n; i++)
        if (dt->cache[i].hint && !strcmp(dt->cache[i].hint, hint)) {
            *out = dt->cache[i].die;
            return dt->cache[i].found ? 0 : -1;
        }
    int rc = find_type_uncached(dt, hint, out);
    unsigned slot = dt->ncache++ % 32;
    if (dt->ncache > 32)
        free(dt->cache[slot].hint);
    dt->cache[slot].hint = strdup(hint);
    dt->cache[slot].found = rc == 0;
    if (rc == 0)
        dt->cache[slot].die = *out;
    return rc;
}

static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    return dw_api.dwarf_attr_integrate(die, DW_AT_type, &a) && dw_api.dwarf_formref_die(&a, out) ? 0 : -1;
}

static bool attr_u(Dwarf_Die *die, unsigned name, Dwarf_Word *v)
{
    Dwarf_Attribute a;
    return dw_api.dwarf_attr_integrate(die, name, &a) && dw_api.dwarf_formudata(&a, v) == 0;
}

/* The type as written, for display: "struct foo *", "uint32_t", "char [16]". */
static void type_name(Dwarf_Die *t, char *buf, size_t len, int depth)
{
    const char *n = dw_api.dwarf_diename(t);
    Dwarf_Die sub;
    int tag = dw_api.dwarf_tag(t);
    if (depth > 6) {
        snprintf(buf, len, "...");
        return;
    }
    switch (tag) {
    case DW_TAG_structure_type: snprintf(buf, len, "struct %s", n ? n : "<anon>"); return;
    case DW_TAG_union_type: snprintf(buf, len, "union %s", n ? n : "<anon>"); return;
    case DW_TAG_enumeration_type: snprintf(buf, len, "enum %s", n ? n : "<anon>"); return;
    case DW_TAG_pointer_type:
        if (type_of(t, &sub) == 0) {
            type_name(&sub, buf, len, depth + 1);
            size_t k = strlen(buf);
            snprintf(buf + k, len - k, " *");
        } else {
            snprintf(buf, len, "void *");
        }
        return;
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
        if (type_of(t, &sub) == 0) {
            type_name(&sub, buf, len, depth + 1);
        } else {
            snprintf(buf, len, "void");
        }
        return;
    case DW_TAG_array_type:
        if (type_of(t, &sub) == 0)
            type_name(&sub, buf, len, depth + 1);
        else
            snprintf(buf, len, "?");
        size_t k = strlen(buf);
        snprintf(buf + k, len - k, " []");
        return;
    case DW_TAG_subroutine_type: snprintf(buf, len, "function"); return;
    default: snprintf(buf, len, "%s", n ? n : "?");
    }
}

struct ctx {
    struct jhc_types *dt;
    const struct jhr_al *lf;
    size_t at;
    FILE *f;
    uint64_t seen[8];           /* structs being printed: never twice (cycles) */
    int nseen;
};

static void indent(FILE *f, int n) { fprintf(f, "%*s", 2 * n, ""); }

static uint64_t load(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    memcpy(&v, p, n < 8 ? n : 8);   /* the VM's byte order is ours (checked by arch) */
    return v;
}

static void print_value(struct ctx *c, Dwarf_Die *type, const uint8_t *p, size_t avail,
                        uint64_t addr, int depth);

static void print_string_at(struct ctx *c, uint64_t a)
{
    const struct jhr_al_mem *m = jhr_al_mem_at(c->lf, a, 1, c->at);
    if (!m) {
        fprintf(c->f, " (string not logged)");
        return;
    }
    const uint8_t *s = m->data + (a - m->addr);
    size_t max = m->size - (a - m->addr), n = 0;
    while (n < max && n < 200 && s[n])
        n++;
    fputs(" -> \"", c->f);
    for (size_t i = 0; i < n; i++)
        fprintf(c->f, s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' ? "%c" : "\\x%02x", s[i]);
    fputs(n == max ? "\"... (snapshot ends)" : "\"", c->f);
}

static void print_pointer(struct ctx *c, Dwarf_Die *type, uint64_t v, int depth)
{
    fprintf(c->f, "0x%" PRIx64, v);
    if (!v)
        return;
    Dwarf_Die to, peeled;
    uint64_t code = jhr_al_strip(c->lf, v);     /* a signed return or function address */
    const struct jhr_al_fn *fn = jhr_al_fn_at(c->lf, code, c->at);
    if (fn) {
        if (code != v)
            fprintf(c->f, " (signed: 0x%" PRIx64 ")", code);
        fprintf(c->f, " -> %s+0x%" PRIx64, fn->name, code - fn->cur_start);
        return;
    }
    if (type_of(type, &to) < 0 || dw_api.dwarf_peel_type(&to, &peeled) != 0)
        return;
    int tag = dw_api.dwarf_tag(&peeled);
    Dwarf_Word enc = 0;
    if (tag == DW_TAG_base_type && attr_u(&peeled, DW_AT_encoding, &enc) &&
        (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char) && dw_api.dwarf_bytesize(&peeled) == 1) {
        print_string_at(c, v);
        return;
    }
    if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
        return;
    int size = dw_api.dwarf_bytesize(&peeled);
    const struct jhr_al_mem *m = size > 0 ? jhr_al_mem_at(c->lf, v, (uint64_t)size, c->at) : NULL;
    if (!m)
        return;
    for (int i = 0; i < c->nseen; i++)
        if (c->seen[i] == v) {
            fprintf(c->f, " (shown above)");
            return;
        }
    if (depth >= 3 || c->nseen == 8) {
        fprintf(c->f, " (logged: show 0x%" PRIx64 ")", v);
        return;
    }
    fprintf(c->f, " -> ");
    print_value(c, &peeled, m->data + (v - m->addr), m->size - (v - m->addr), v, depth);
}

static void print_members(struct ctx *c, Dwarf_Die *st, const uint8_t *p, size_t avail,
                          uint64_t addr, int depth)
{
    Dwarf_Die mem, mt;
    if (dw_api.dwarf_child(st, &mem) != 0)
        return;
    do {
        if (dw_api.dwarf_tag(&mem) != DW_TAG_member)
            continue;
        const char *name = dw_api.dwarf_diename(&mem);
        Dwarf_Word off = 0;
        attr_u(&mem, DW_AT_data_member_location, &off);
        indent(c->f, depth + 1);
        fprintf(c->f, "%s = ", name ? name : "<anon>");
        if (type_of(&mem, &mt) < 0) {
            fprintf(c->f, "?\n");
            continue;
        }
        int bits = dw_api.dwarf_bitsize(&mem);
        if (bits > 0) {
            Dwarf_Word bo = 0;
            if (!attr_u(&mem, DW_AT_data_bit_offset, &bo))
                bo = off * 8;
            if (bits > 64 || bo / 8 >= avail) {
                fprintf(c->f, "(outside the snapshot)\n");
                continue;
            }
            size_t nb = (bo % 8 + (size_t)bits + 7) / 8;
            if (bo / 8 + nb > avail) {
                fprintf(c->f, "(outside the snapshot)\n");
                continue;
            }
            unsigned __int128 w = 0;
            for (size_t i = 0; i < nb; i++)
                w |= (unsigned __int128)p[bo / 8 + i] << (8 * i);
            uint64_t v = (uint64_t)(w >> (bo % 8)) & (bits == 64 ? ~0ull : ((1ull << bits) - 1));
            fprintf(c->f, "%" PRIu64 "\n", v);
            continue;
        }
        if (off > avail) {
            fprintf(c->f, "(outside the snapshot)\n");
            continue;
        }
        print_value(c, &mt, p + off, avail - off, addr + off, depth + 1);
        fputc('\n', c->f);
    } while (dw_api.dwarf_siblingof(&mem, &mem) == 0);
}

static void print_value(struct ctx *c, Dwarf_Die *type, const uint8_t *p, size_t avail,
                        uint64_t addr, int depth)
{
    Dwarf_Die t, sub;
    if (dw_api.dwarf_peel_type(type, &t) != 0) {
        fprintf(c->f, "?");
        return;
    }
    int tag = dw_api.dwarf_tag(&t);
    Dwarf_Word size = 0;
    if (dw_api.dwarf_aggregate_size(&t, &size) != 0)
        size = 0;
    if (tag == DW_TAG_subroutine_type)
        size = 0;
    if (size > avail) {
        fprintf(c->f, "(outside the snapshot: %" PRIu64 " bytes needed, %zu logged)", (uint64_t)size, avail);
        return;
    }
    char tn[256];
    switch (tag) {
    case DW_TAG_base_type: {
        Dwarf_Word enc = 0;
        attr_u(&t, DW_AT_encoding, &enc);
        if (enc == DW_ATE_float && size == 8) {
            double d;
            memcpy(&d, p, 8);
            fprintf(c->f, "%g", d);
        } else if (enc == DW_ATE_float && size == 4) {
            float fl;
            memcpy(&fl, p, 4);
            fprintf(c->f, "%g", fl);
        } else if (enc == DW_ATE_boolean) {
            fprintf(c->f, "%s", load(p, size) ? "true" : "false");
        } else if ((enc == DW_ATE_signed || enc == DW_ATE_signed_char) && size && size <= 8) {
            int sh = 64 - 8 * (int)size;
            int64_t v = sh ? (int64_t)(load(p, size) << sh) >> sh : (int64_t)load(p, size);
            fprintf(c->f, "%" PRId64, v);
        } else if (size && size <= 8) {
            fprintf(c->f, "%" PRIu64, load(p, size));
        } else {
            fprintf(c->f, "<%" PRIu64 " bytes>", (uint64_t)size);
        }
        break;
    }
    case DW_TAG_enumeration_type: {
        int64_t v = size && size <= 8 ? (int64_t)load(p, size) : 0;
        if (size == 4)
            v = (int32_t)v;
        fprintf(c->f, "%" PRId64, v);
        Dwarf_Die e;
        if (dw_api.dwarf_child(&t, &e) == 0) {
            do {
                Dwarf_Attribute a;
                Dwarf_Sword sv;
                if (dw_api.dwarf_tag(&e) == DW_TAG_enumerator && dw_api.dwarf_attr(&e, DW_AT_const_value, &a) &&
                    dw_api.dwarf_formsdata(&a, &sv) == 0 && sv == v) {
                    fprintf(c->f, " (%s)", dw_api.dwarf_diename(&e) ? dw_api.dwarf_diename(&e) : "?");
                    break;
                }
            } while (dw_api.dwarf_siblingof(&e, &e) == 0);
        }
        break;
    }
    case DW_TAG_pointer_type:
        print_pointer(c, &t, load(p, size ? size : 8), depth);
        break;
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
        type_name(&t, tn, sizeof tn, 0);
        fprintf(c->f, "%s {\n", tn);
        if (c->nseen < 8)
            c->seen[c->nseen++] = addr;
        print_members(c, &t, p, avail, addr, depth);
        indent(c->f, depth);
        fputc('}', c->f);
        break;
    case DW_TAG_array_type: {
        Dwarf_Die et, ep;
        if (type_of(&t, &et) < 0 || dw_api.dwarf_peel_type(&et, &ep) != 0) {
            fprintf(c->f, "?");
            break;
        }
        Dwarf_Word esize = 0;
        if (dw_api.dwarf_aggregate_size(&ep, &esize) != 0 || esize == 0) {
            fprintf(c->f, "[?]");
            break;
        }
        uint64_t n = size / esize;
        Dwarf_Word enc = 0;
        if (dw_api.dwarf_tag(&ep) == DW_TAG_base_type && esize == 1 && attr_u(&ep, DW_AT_encoding, &enc) &&
            (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char)) {
            fputc('"', c->f);
            for (uint64_t i = 0; i < n && p[i]; i++)
                fprintf(c->f, p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' ? "%c" : "\\x%02x", p[i]);
            fputc('"', c->f);
            break;
        }
        fputc('[', c->f);
        for (uint64_t i = 0; i < n && i < 16; i++) {
            if (i)
                fputs(", ", c->f);
            print_value(c, &ep, p + i * esize, avail - i * esize, addr + i * esize, depth + 1);
        }
        fputs(n > 16 ? ", ...]" : "]", c->f);
        break;
    }
    default:
        (void)sub;
        type_name(&t, tn, sizeof tn, 0);
        fprintf(c->f, "<%s>", tn);
    }
}

int jhc_types_print(struct jhc_types *dt, const struct jhr_al *lf, const struct jhr_al_mem *m,
                size_t at, FILE *out, bool html)
{
    Dwarf_Die type;
    if (!m->hint || find_type(dt, m->hint, &type) < 0) {
        const char *h = m->hint ? m->hint : "(no hint)";
        if (html) {
            fputs("<p class=warn>type ", out);
            jhr_html_escape(out, h, strlen(h));
            fputs(" not found in the VM binary's DWARF</p>\n", out);
        } else {
            fprintf(out, "type %s not found in the VM binary's DWARF\n", h);
        }
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = html ? open_memstream(&text, &len) : out;
    if (!f)
        return -1;
    struct ctx c = { .dt = dt, .lf = lf, .at = at < m->rec ? m->rec : at, .f = f };
    fprintf(f, "0x%" PRIx64 ": %u bytes logged at %.6f s (record %zu), as %s\n", m->addr, m->size,
            jhr_al_secs(lf, m->time), m->rec, m->hint);
    print_value(&c, &type, m->data, m->size, m->addr, 0);
    fputc('\n', f);
    if (html) {
        fclose(f);
        fputs("<pre class=struct>", out);
        jhr_html_escape(out, text, len);
        fputs("</pre>\n", out);
        free(text);
    }
    return 0;
}

#else /* !JH_HAVE_LIBDW */

struct jhc_types *jhc_types_open(const char *vm, char *err, size_t errlen)
{
    snprintf(err, errlen, "built without libdw: cannot read types from %s", vm);
    return NULL;
}

void jhc_types_close(struct jhc_types *dt) { (void)dt; }

int jhc_types_print(struct jhc_types *dt, const struct jhr_al *lf, const struct jhr_al_mem *m,
                size_t at, FILE *out, bool html)
{
    (void)dt; (void)lf; (void)m; (void)at; (void)out; (void)html;
    return -1;
}
#endif
