/*
 * lines.cc — an object's line tables read straight from its sections, without building an
 * LLVM DWARFContext.
 *
 *     $ JITHERALD=gdb gdb -q -ex 'break work' -ex run --args ./my-llvm-jit
 *     Breakpoint 1, work (n=1000) at /src/work.c:5          <- these rows
 *
 * Why: DWARFContext::create was half of what the adapter cost per object (38 of 82 us of
 * CPU for a one-function module, issue 30): it maps and relocates every debug section and
 * parses every unit's DIEs, where the adapter wants one attribute pair of each unit's first
 * DIE and the line program. This reads exactly that: each compile unit's DW_AT_stmt_list
 * and DW_AT_comp_dir, and its line program (DWARF 2 to 5), with the relocations of
 * .debug_info, .debug_line and .debug_str_offsets applied as DWARFContext applies them
 * (symbol + addend, the symbol's section at its load address when it was loaded), and
 * gives the same rows in the same order: every valid sequence (sorted by section and end
 * address, as LLVM sorts them) without its end row; file names resolved by LLVM's own rule
 * (Prologue::getFileNameByIndex, absolute path). Anything it does not read the way LLVM
 * does (64-bit DWARF, compressed sections, split units, DW_LNE_define_file, another
 * relocation type, a malformed table) makes it return false, and object.cc asks
 * DWARFContext instead: never a different answer, at worst the old cost.
 * tests/unit/llvm/test_object.cc compares both readers row by row on clang's DWARF 4 and 5.
 */
#include <algorithm>
#include <cstring>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/Path.h>

#include "herald.h"

namespace jitherald_llvm {
namespace {

enum Sec { INFO, ABBREV, LINE, STR, LINE_STR, STR_OFFSETS, NSEC };
const char *const sec_names[NSEC] = {".debug_info", ".debug_abbrev", ".debug_line",
                                     ".debug_str", ".debug_line_str", ".debug_str_offsets"};
constexpr uint64_t UNDEF_SECTION = ~0ull;   /* object::SectionedAddress::UndefSection */

/* A bounds-checked little-endian reader: any read past the end sets bad. */
struct Reader {
    const uint8_t *p = nullptr;
    size_t n = 0, at = 0;
    bool bad = false;

    Reader(const std::vector<uint8_t> &v, size_t from = 0, size_t to = ~size_t(0))
        : p(v.data()), n(std::min(to, v.size())), at(from) { bad = from > n; }
    bool take(size_t k) {
        if (bad || k > n - at) { bad = true; return false; }
        return true;
    }
    uint64_t u(size_t k) {
        if (!take(k)) return 0;
        uint64_t v = 0;
        for (size_t i = 0; i < k; i++) v |= uint64_t(p[at + i]) << (8 * i);
        at += k;
        return v;
    }
    uint64_t uleb() {
        uint64_t v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (!take(1)) return 0;
            uint8_t b = p[at++];
            if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
    }
    int64_t sleb() {
        int64_t v = 0;
        unsigned shift = 0;
        uint8_t b;
        do {
            if (!take(1)) return 0;
            b = p[at++];
            if (shift < 64) v |= int64_t(uint64_t(b & 0x7f) << shift);
            shift += 7;
        } while (b & 0x80);
        if (shift < 64 && (b & 0x40)) v |= -(int64_t(1) << shift);
        return v;
    }
    const char *cstr() {
        if (bad || at >= n) { bad = true; return nullptr; }
        const void *z = memchr(p + at, 0, n - at);
        if (!z) { bad = true; return nullptr; }
        const char *s = reinterpret_cast<const char *>(p + at);
        at = static_cast<const uint8_t *>(z) - p + 1;
        return s;
    }
    void skip(uint64_t k) { if (take(k)) at += k; }
};

struct Sections {
    std::vector<uint8_t> data[NSEC];
    bool have[NSEC] = {};
    /* .debug_line offsets a relocation wrote, with the index of the section its symbol is
     * in: DW_LNE_set_address rows carry it, and sequences are sorted by it */
    std::vector<std::pair<uint64_t, uint64_t>> line_relocs;
};

/* A string of form `form` whose value is v (an offset, or an index for strx). */
const char *str_at(const Sections &s, uint64_t form, uint64_t v, bool have_base, uint64_t base)
{
    const std::vector<uint8_t> *sec = nullptr;
    switch (form) {
    case 0x0e: sec = &s.data[STR]; break;                       /* strp */
    case 0x1f: sec = &s.data[LINE_STR]; break;                  /* line_strp */
    case 0x1a: case 0x25: case 0x26: case 0x27: case 0x28: {    /* strx, strx1-4 */
        if (!have_base)
            return nullptr;
        Reader r(s.data[STR_OFFSETS], base + 4 * v);
        v = r.u(4);
        if (r.bad)
            return nullptr;
        sec = &s.data[STR];
        break;
    }
    default:
        return nullptr;
    }
    if (v >= sec->size() || !memchr(sec->data() + v, 0, sec->size() - v))
        return nullptr;
    return reinterpret_cast<const char *>(sec->data() + v);
}

/* Skip (or read into *val, *str) one attribute value of form `form`. false: a form we do
 * not know. */
bool form_value(Reader &r, uint64_t form, unsigned addr_size, unsigned version, uint64_t *val,
                const char **str)
{
    uint64_t v = 0;
    switch (form) {
    case 0x01: v = r.u(addr_size); break;                               /* addr */
    case 0x03: r.skip(r.u(2)); break;                                   /* block2 */
    case 0x04: r.skip(r.u(4)); break;                                   /* block4 */
    case 0x05: v = r.u(2); break;
    case 0x06: v = r.u(4); break;
    case 0x07: v = r.u(8); break;
    case 0x08: if (str) *str = r.cstr(); else r.cstr(); break;          /* string */
    case 0x09: case 0x18: r.skip(r.uleb()); break;                      /* block, exprloc */
    case 0x0a: r.skip(r.u(1)); break;                                   /* block1 */
    case 0x0b: case 0x0c: case 0x11: v = r.u(1); break;                 /* data1 flag ref1 */
    case 0x0d: v = uint64_t(r.sleb()); break;
    case 0x0e: case 0x17: case 0x1f: case 0x13: case 0x1c: case 0x1d:   /* 4-byte offsets */
        v = r.u(4); break;
    case 0x0f: case 0x15: case 0x1a: case 0x1b: case 0x22: case 0x23: v = r.uleb(); break;
    case 0x10: v = r.u(version <= 2 ? addr_size : 4); break;            /* ref_addr */
    case 0x12: v = r.u(2); break;
    case 0x14: case 0x20: case 0x24: v = r.u(8); break;
    case 0x16: return form_value(r, r.uleb(), addr_size, version, val, str);   /* indirect */
    case 0x19: case 0x21: break;                        /* flag_present, implicit_const */
    case 0x1e: r.skip(16); break;                                       /* data16 */
    case 0x25: case 0x29: v = r.u(1); break;
    case 0x26: case 0x2a: v = r.u(2); break;
    case 0x27: case 0x2b: v = r.u(3); break;
    case 0x28: case 0x2c: v = r.u(4); break;
    default: return false;
    }
    if (val)
        *val = v;
    return !r.bad;
}

/* The sections we read, copied, with their relocations applied. Straight from the ELF
 * headers: through SectionRef and RelocationRef (a name lookup per call, an Expected per
 * field) this took most of the reader's time. */
bool load_sections(const llvm::object::ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                   Sections &s)
{
    using ELFT = llvm::object::ELF64LE;
    const auto *eo = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(&obj);
    if (!eo)
        return false;
    const llvm::object::ELFFile<ELFT> &ef = eo->getELFFile();
    /* the relocation types below, as eh_frame.cc knows them: LLVM's word for the
     * architecture (the adapter sees no struct jh__arch) */
    bool x86 = obj.getArch() == llvm::Triple::x86_64;
    if (!x86 && obj.getArch() != llvm::Triple::aarch64)
        return false;
    bool rel_obj = ef.getHeader().e_type == llvm::ELF::ET_REL;
    auto secs = ef.sections();
    if (!secs) {
        llvm::consumeError(secs.takeError());
        return false;
    }
    auto shstr = ef.getSectionStringTable(*secs);
    if (!shstr) {
        llvm::consumeError(shstr.takeError());
        return false;
    }
    auto sec_of = [&](const llvm::object::ELF64LE::Shdr &h) -> int {
        auto name = ef.getSectionName(h, *shstr);
        if (!name) {
            llvm::consumeError(name.takeError());
            return -1;
        }
        if (name->startswith(".zdebug"))
            return -2;
        for (int i = 0; i < NSEC; i++)
            if (*name == sec_names[i])
                return i;
        return -1;
    };
    size_t nsec = secs->size();
    std::vector<int> which(nsec, -1);
    for (size_t k = 0; k < nsec; k++) {
        const auto &h = (*secs)[k];
        if (h.sh_type == llvm::ELF::SHT_RELA || h.sh_type == llvm::ELF::SHT_REL)
            continue;
        int i = sec_of(h);
        if (i == -2)
            return false;
        if (i < 0)
            continue;
        if (s.have[i] || (h.sh_flags & llvm::ELF::SHF_COMPRESSED) || h.sh_type == llvm::ELF::SHT_NOBITS)
            return false;
        auto data = ef.getSectionContents(h);
        if (!data) {
            llvm::consumeError(data.takeError());
            return false;
        }
        s.data[i].assign(data->begin(), data->end());
        s.have[i] = true;
        which[k] = i;
    }
    std::vector<uint64_t> load(nsec, ~0ull);    /* by section index, read when needed */
    for (const auto &h : *secs) {
        if (h.sh_type != llvm::ELF::SHT_RELA && h.sh_type != llvm::ELF::SHT_REL)
            continue;
        if (h.sh_info >= nsec || which[h.sh_info] < 0)
            continue;
        if (h.sh_type == llvm::ELF::SHT_REL || h.sh_link >= nsec)
            return false;           /* REL: the addend is in the bytes; not from LLVM */
        int target = which[h.sh_info];
        std::vector<uint8_t> &d = s.data[target];
        const auto &symtab = (*secs)[h.sh_link];
        auto relas = ef.relas(h);
        if (!relas) {
            llvm::consumeError(relas.takeError());
            return false;
        }
        for (const auto &r : *relas) {
            uint32_t type = r.getType(false), symi = r.getSymbol(false);
            uint64_t off = r.r_offset;
            unsigned size;
            if (x86)
                size = type == llvm::ELF::R_X86_64_64 ? 8 :
                       type == llvm::ELF::R_X86_64_32 || type == llvm::ELF::R_X86_64_32S ? 4 : 0;
            else
                size = type == llvm::ELF::R_AARCH64_ABS64 ? 8 :
                       type == llvm::ELF::R_AARCH64_ABS32 ? 4 : 0;
            if (!size || off > d.size() || d.size() - off < size)
                return false;
            /* what DWARFContext computes: the symbol's address in the file (st_value, plus
             * its section's sh_addr in a relocatable object), moved by where its section was
             * loaded; no symbol: 0 */
            uint64_t value = 0, secidx = UNDEF_SECTION;
            if (symi) {
                auto sym = ef.template getEntry<llvm::object::ELF64LE::Sym>(symtab, symi);
                if (!sym) {
                    llvm::consumeError(sym.takeError());
                    return false;
                }
                uint16_t shndx = (*sym)->st_shndx;
                if (shndx == llvm::ELF::SHN_XINDEX || shndx == llvm::ELF::SHN_COMMON)
                    return false;
                value = (*sym)->st_value;
                if (shndx != llvm::ELF::SHN_UNDEF && shndx < llvm::ELF::SHN_LORESERVE) {
                    if (shndx >= nsec)
                        return false;
                    const auto &in = (*secs)[shndx];
                    if (rel_obj)
                        value += in.sh_addr;
                    secidx = shndx;
                    if (load[shndx] == ~0ull)
                        load[shndx] = loads.getSectionLoadAddress(eo->toSectionRef(&in));
                    if (load[shndx])
                        value += load[shndx] - in.sh_addr;
                }
            }
            value += uint64_t(r.r_addend);
            for (unsigned i = 0; i < size; i++)
                d[off + i] = uint8_t(value >> (8 * i));
            if (target == LINE)
                s.line_relocs.emplace_back(off, secidx);
        }
    }
    std::sort(s.line_relocs.begin(), s.line_relocs.end());
    return true;
}

/* The CU's first DIE: its DW_AT_stmt_list (false when it has none) and DW_AT_comp_dir. */
bool unit_attrs(const Sections &s, Reader &info, unsigned version, unsigned addr_size,
                uint64_t abbrev_off, bool &has_stmt, uint64_t &stmt, std::string &comp_dir)
{
    has_stmt = false;
    uint64_t code = info.uleb();
    if (info.bad)
        return false;
    if (!code)
        return true;
    Reader ab(s.data[ABBREV], abbrev_off);
    for (;;) {                          /* find the declaration of `code` */
        uint64_t c = ab.uleb();
        if (ab.bad || !c)
            return false;
        ab.uleb();                      /* tag */
        ab.u(1);                        /* children */
        if (c == code)
            break;
        for (;;) {
            uint64_t at = ab.uleb(), form = ab.uleb();
            if (ab.bad)
                return false;
            if (!at && !form)
                break;
            if (form == 0x21)
                ab.sleb();
        }
    }
    uint64_t dir_form = 0, dir_val = 0, str_base = 0;
    const char *dir_str = nullptr;
    bool have_dir = false, have_base = false;
    for (;;) {
        uint64_t at = ab.uleb(), form = ab.uleb();
        if (ab.bad)
            return false;
        if (!at && !form)
            break;
        if (form == 0x21) {             /* implicit_const: the value is in the abbreviation */
            ab.sleb();
            continue;
        }
        uint64_t v = 0;
        const char *str = nullptr;
        if (!form_value(info, form, addr_size, version, &v, &str))
            return false;
        if (at == 0x10) {               /* DW_AT_stmt_list */
            if (form != 0x17 && form != 0x06 && form != 0x07)
                return false;
            has_stmt = true;
            stmt = v;
        } else if (at == 0x1b) {        /* DW_AT_comp_dir */
            have_dir = true;
            dir_form = form;
            dir_val = v;
            dir_str = str;
        } else if (at == 0x72) {        /* DW_AT_str_offsets_base */
            have_base = true;
            str_base = v;
        }
    }
    if (have_dir) {
        const char *d = dir_form == 0x08 ? dir_str : str_at(s, dir_form, dir_val, have_base, str_base);
        if (!d)
            return false;
        comp_dir = d;
    }
    return true;
}

struct FileEntry {
    const char *name;
    uint64_t dir;
};

struct Table {
    unsigned version = 0;
    std::vector<const char *> dirs;
    std::vector<FileEntry> files;
    std::string comp_dir;

    /* LLVM 14's Prologue::getFileNameByIndex with FileLineInfoKind::AbsoluteFilePath. */
    bool path(uint64_t index, std::string &out) const
    {
        const FileEntry *e;
        if (version >= 5)
            e = index < files.size() ? &files[index] : nullptr;
        else
            e = index >= 1 && index <= files.size() ? &files[index - 1] : nullptr;
        if (!e)
            return false;
        auto absolute = [](llvm::StringRef p) {
            return llvm::sys::path::is_absolute(p, llvm::sys::path::Style::posix) ||
                   llvm::sys::path::is_absolute(p, llvm::sys::path::Style::windows);
        };
        llvm::StringRef name(e->name);
        if (absolute(name)) {
            out = name.str();
            return true;
        }
        llvm::StringRef dir;
        if (version >= 5) {
            if (e->dir < dirs.size())
                dir = dirs[e->dir];
        } else if (e->dir > 0 && e->dir <= dirs.size()) {
            dir = dirs[e->dir - 1];
        }
        llvm::SmallString<128> p;
        if ((version < 5 || e->dir != 0) && !comp_dir.empty() && !absolute(dir))
            llvm::sys::path::append(p, comp_dir);
        llvm::sys::path::append(p, dir, name);
        out = std::string(p.str());
        return true;
    }
};

/* v5 directory or file entries: their format, then the entries. */
bool v5_entries(const Sections &s, Reader &r, bool files, Table &t)
{
    unsigned nfmt = unsigned(r.u(1));
    std::vector<std::pair<uint64_t, uint64_t>> fmt;
    for (unsigned i = 0; i < nfmt; i++) {
        uint64_t type = r.uleb(), form = r.uleb();
        fmt.emplace_back(type, form);
    }
    uint64_t count = r.uleb();
    if (r.bad)
        return false;
    for (uint64_t i = 0; i < count; i++) {
        const char *name = nullptr;
        uint64_t dir = 0;
        for (auto &f : fmt) {
            uint64_t v = 0;
            const char *str = nullptr;
            if (f.second == 0x0e || f.second == 0x1f) {
                v = r.u(4);
                str = str_at(s, f.second, v, false, 0);
                if (!str && f.first == 1)
                    return false;
            } else if (f.second != 0x08 && f.second != 0x0f && f.second != 0x0b &&
                       f.second != 0x05 && f.second != 0x06 && f.second != 0x07 &&
                       f.second != 0x1e && f.second != 0x09) {
                return false;           /* strx and the like: LLVM needs the unit for them */
            } else if (!form_value(r, f.second, 8, 5, &v, &str)) {
                return false;
            }
            if (f.first == 1) {         /* DW_LNCT_path */
                if (f.second != 0x08 && f.second != 0x0e && f.second != 0x1f)
                    return false;
                name = str;
            } else if (f.first == 2) {  /* DW_LNCT_directory_index */
                dir = v;
            }
        }
        if (!name)
            return false;
        if (files)
            t.files.push_back(FileEntry{name, dir});
        else
            t.dirs.push_back(name);
    }
    return !r.bad;
}

struct Seq {
    uint64_t section, high;
    size_t first, last;         /* rows[first, last): the end row excluded */
};

/* One line table at offset `off` of .debug_line: its rows of valid sequences. */
bool read_table(const Sections &s, uint64_t off, LineUnit &u, Table &t)
{
    Reader r(s.data[LINE], off);
    uint64_t len = r.u(4);
    if (r.bad || len >= 0xfffffff0)
        return false;
    size_t end = r.at + len;
    if (end > s.data[LINE].size())
        return false;
    r.n = end;
    t.version = unsigned(r.u(2));
    if (t.version < 2 || t.version > 5)
        return false;
    if (t.version >= 5) {
        unsigned asz = unsigned(r.u(1)), seg = unsigned(r.u(1));
        if (asz != 8 || seg != 0)
            return false;
    }
    uint64_t hlen = r.u(4);
    size_t prog = r.at + hlen;
    unsigned min_inst = unsigned(r.u(1));
    if (t.version >= 4 && r.u(1) != 1)      /* maximum_operations_per_instruction: VLIW */
        return false;
    bool default_stmt = r.u(1) != 0;
    (void)default_stmt;
    int line_base = int8_t(r.u(1));
    unsigned line_range = unsigned(r.u(1)), opcode_base = unsigned(r.u(1));
    if (r.bad || !line_range || !opcode_base || prog > end)
        return false;
    std::vector<uint8_t> std_len(opcode_base);
    for (unsigned i = 1; i < opcode_base; i++)
        std_len[i] = uint8_t(r.u(1));
    if (t.version >= 5) {
        if (!v5_entries(s, r, false, t) || !v5_entries(s, r, true, t))
            return false;
    } else {
        for (;;) {
            const char *d = r.cstr();
            if (!d)
                return false;
            if (!*d)
                break;
            t.dirs.push_back(d);
        }
        for (;;) {
            const char *f = r.cstr();
            if (!f)
                return false;
            if (!*f)
                break;
            uint64_t dir = r.uleb();
            r.uleb();
            r.uleb();
            t.files.push_back(FileEntry{f, dir});
        }
    }
    if (r.bad || r.at != prog)
        return false;

    /* the line program: LLVM 14's state machine, rows kept as DWARFDebugLine keeps them */
    struct State {
        uint64_t addr = 0, section = UNDEF_SECTION;
        uint32_t line = 1;
        uint16_t column = 0, file = 1;
        bool prologue_end = false;
    } st;
    std::vector<LineRow> rows;
    std::vector<Seq> seqs;
    bool empty = true;
    uint64_t low = 0;
    size_t first = 0;
    auto append = [&](bool end_seq) {
        size_t n = rows.size();
        if (empty) {
            empty = false;
            low = st.addr;
            first = n;
        }
        rows.push_back(LineRow{st.addr, st.line, st.column, st.file, st.prologue_end});
        if (end_seq) {
            if (low < st.addr)
                seqs.push_back(Seq{st.section, st.addr, first, n});
            empty = true;
        }
        st.prologue_end = false;
    };
    while (r.at < end) {
        unsigned op = unsigned(r.u(1));
        if (op >= opcode_base) {
            unsigned adj = op - opcode_base;
            st.addr += uint64_t(adj / line_range) * min_inst;
            st.line += uint32_t(line_base + int(adj % line_range));
            append(false);
            continue;
        }
        switch (op) {
        case 0: {
            uint64_t elen = r.uleb();
            if (r.bad || !elen || elen > end - r.at)
                return false;
            size_t next = r.at + elen;
            unsigned sub = unsigned(r.u(1));
            if (sub == 1) {                         /* end_sequence */
                append(true);
                st = State();
            } else if (sub == 2) {                  /* set_address */
                size_t at = r.at;
                st.addr = r.u(elen - 1);
                if (elen - 1 > 8)
                    return false;
                auto it = std::lower_bound(s.line_relocs.begin(), s.line_relocs.end(),
                                           std::make_pair(uint64_t(at), uint64_t(0)));
                st.section = it != s.line_relocs.end() && it->first == at ? it->second
                                                                         : UNDEF_SECTION;
            } else if (sub == 3) {                  /* define_file: left to LLVM */
                return false;
            }
            r.at = next;                            /* set_discriminator and others */
            break;
        }
        case 1: append(false); break;                                   /* copy */
        case 2: st.addr += r.uleb() * min_inst; break;                  /* advance_pc */
        case 3: st.line += uint32_t(r.sleb()); break;                   /* advance_line */
        case 4: st.file = uint16_t(r.uleb()); break;                    /* set_file */
        case 5: st.column = uint16_t(r.uleb()); break;                  /* set_column */
        case 6: case 7: case 11: break;     /* negate_stmt, basic_block, epilogue_begin */
        case 8: st.addr += uint64_t((255 - opcode_base) / line_range) * min_inst; break;
        case 9: st.addr += r.u(2); break;                               /* fixed_advance_pc */
        case 10: st.prologue_end = true; break;
        case 12: r.uleb(); break;                                       /* set_isa */
        default:
            for (unsigned i = 0; i < std_len[op]; i++)
                r.uleb();
        }
        if (r.bad)
            return false;
    }
    std::stable_sort(seqs.begin(), seqs.end(), [](const Seq &a, const Seq &b) {
        return a.section != b.section ? a.section < b.section : a.high < b.high;
    });
    for (const Seq &q : seqs)
        u.rows.insert(u.rows.end(), rows.begin() + q.first, rows.begin() + q.last);
    return true;
}

} // namespace

bool read_line_units(const llvm::object::ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                     std::vector<LineUnit> &units)
{
    auto s = std::make_shared<Sections>();
    if (!load_sections(obj, loads, *s))
        return false;
    if (!s->have[INFO])
        return true;
    const std::vector<uint8_t> &info = s->data[INFO];
    for (size_t off = 0; off < info.size();) {
        Reader r(info, off);
        uint64_t len = r.u(4);
        if (r.bad || len >= 0xfffffff0 || len > info.size() - r.at)
            return false;
        size_t end = r.at + len;
        r.n = end;
        unsigned version = unsigned(r.u(2)), addr_size;
        uint64_t abbrev;
        if (version >= 5) {
            unsigned type = unsigned(r.u(1));
            if (type != 1 && type != 3)         /* compile, partial; not split or type units */
                return false;
            addr_size = unsigned(r.u(1));
            abbrev = r.u(4);
        } else if (version >= 2) {
            abbrev = r.u(4);
            addr_size = unsigned(r.u(1));
        } else {
            return false;
        }
        if (r.bad || version > 5)
            return false;
        bool has_stmt;
        uint64_t stmt = 0;
        std::string comp_dir;
        if (!unit_attrs(*s, r, version, addr_size, abbrev, has_stmt, stmt, comp_dir))
            return false;
        off = end;
        if (!has_stmt)
            continue;
        if (!s->have[LINE])
            return false;
        LineUnit u;
        u.key = stmt;
        auto t = std::make_shared<Table>();
        t->comp_dir = comp_dir;
        if (!read_table(*s, stmt, u, *t))
            return false;
        /* the table's strings point into the sections: keep them alive with it */
        u.path = [s, t](uint64_t file, std::string &out) { return t->path(file, out); };
        units.push_back(std::move(u));
    }
    return true;
}

} // namespace jitherald_llvm
