/*
 * object.cc — the functions of an object LLVM has loaded: names and sizes from its symbol
 * table, lines from its DWARF, unwind rules from eh_frame.cc, all at load addresses.
 *
 *     $ JITHERALD=jitdump perf record -k 1 ./llvm_jit work.ll && perf inject --jit ...
 *     $ perf report --sort sym,srcline
 *         91.20%  [.] work        hot.h:3        <- inlined from a header: every file
 *          6.02%  [.] work        work.c:5
 *
 * The object is the relocatable file LLVM compiled (ET_REL: every section at address 0),
 * and loads says where each section landed. The line tables are read with the debug
 * sections' relocations applied at those addresses (lines.cc, or LLVM's DWARFContext with
 * a LoadedObjectInfo for what lines.cc leaves to it), so line-table rows come out at load
 * addresses, in whatever section the function is: one .text, or -ffunction-sections. Rows
 * are assigned to functions by address in one pass over every compile unit's table, not
 * by a lookup per function.
 */
#include <algorithm>
#include <cstring>
#include <map>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/SymbolSize.h>

#include "herald.h"

namespace jitherald_llvm {
namespace {

using llvm::object::ObjectFile;
using llvm::object::SymbolRef;

struct Sym {
    uint64_t start, size;
    bool global;
    std::string name;
};

/* The same as the SymbolRef loop below, straight from a 64-bit little-endian ELF's
 * .symtab (what LLVM emits on x86-64 and arm64): through SymbolRef every field is a lookup
 * returning an Expected, 5-6 us of an object's cost (issue 30). SymbolRef's rules kept:
 * ST_Function is STT_FUNC; defined, in a section (not SHN_ABS/COMMON); SF_Global is any
 * binding but STB_LOCAL; the address is st_value, plus sh_addr in a relocatable object,
 * less the section's sh_addr. false: something it leaves to the SymbolRef loop (extended
 * section indices, a symbol without st_size, a malformed table). */
bool functions_raw(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads, std::vector<Sym> &out)
{
    const auto *eo = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(&obj);
    if (!eo)
        return false;
    const auto &ef = eo->getELFFile();
    auto secs = ef.sections();
    if (!secs) {
        llvm::consumeError(secs.takeError());
        return false;
    }
    const llvm::object::ELF64LE::Shdr *symtab = nullptr;
    for (const auto &h : *secs) {
        if (h.sh_type == llvm::ELF::SHT_SYMTAB_SHNDX)
            return false;
        if (h.sh_type == llvm::ELF::SHT_SYMTAB)
            symtab = &h;
    }
    if (!symtab)
        return true;                /* no symbols: no functions, as the loop finds */
    auto syms = ef.symbols(symtab);
    auto strs = ef.getStringTableForSymtab(*symtab, *secs);
    if (!syms || !strs) {
        llvm::consumeError(syms.takeError());
        llvm::consumeError(strs.takeError());
        return false;
    }
    bool rel_obj = ef.getHeader().e_type == llvm::ELF::ET_REL;
    size_t nsec = secs->size();
    std::vector<uint64_t> load(nsec, ~0ull);    /* by section index, asked once */
    for (const auto &sym : *syms) {
        if (sym.getType() != llvm::ELF::STT_FUNC || sym.st_shndx == llvm::ELF::SHN_UNDEF ||
            sym.st_shndx >= llvm::ELF::SHN_LORESERVE)
            continue;
        if (sym.st_shndx >= nsec || sym.st_name >= strs->size())
            return false;
        const char *name = strs->data() + sym.st_name;
        size_t len = strnlen(name, strs->size() - sym.st_name);
        if (!len)
            continue;
        if (!sym.st_size)
            return false;           /* computeSymbolSizes: the loop below does it */
        const auto &sec = (*secs)[sym.st_shndx];
        if (load[sym.st_shndx] == ~0ull)
            load[sym.st_shndx] = loads.getSectionLoadAddress(eo->toSectionRef(&sec));
        uint64_t at = load[sym.st_shndx];
        if (!at)
            continue;
        uint64_t addr = sym.st_value + (rel_obj ? sec.sh_addr : 0);
        out.push_back(Sym{at + addr - sec.sh_addr, sym.st_size,
                          sym.getBinding() != llvm::ELF::STB_LOCAL, std::string(name, len)});
    }
    return true;
}

/* The functions through LLVM's SymbolRef: any object file, any symbol table. */
void functions_symbolref(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                         std::vector<Sym> &out)
{
    std::vector<std::pair<SymbolRef, uint64_t>> sizes;
    bool have_sizes = false;
    for (const SymbolRef &s : obj.symbols()) {
        auto type = s.getType();
        auto flags = s.getFlags();
        auto sec = s.getSection();
        auto addr = s.getAddress();
        auto name = s.getName();
        if (!type || !flags || !sec || !addr || !name) {
            llvm::consumeError(type.takeError());
            llvm::consumeError(flags.takeError());
            llvm::consumeError(sec.takeError());
            llvm::consumeError(addr.takeError());
            llvm::consumeError(name.takeError());
            continue;
        }
        if (*type != SymbolRef::ST_Function || (*flags & SymbolRef::SF_Undefined) ||
            *sec == obj.section_end() || name->empty())
            continue;
        uint64_t load = loads.getSectionLoadAddress(**sec);
        if (!load)
            continue;
        uint64_t size = 0;
        if (llvm::isa<llvm::object::ELFObjectFileBase>(&obj))
            size = llvm::object::ELFSymbolRef(s).getSize();
        if (!size) {
            /* no st_size (hand-written assembly): up to the next symbol, as LLVM's own
             * listeners do */
            if (!have_sizes) {
                sizes = llvm::object::computeSymbolSizes(obj);
                have_sizes = true;
            }
            for (auto &p : sizes)
                if (p.first == s)
                    size = p.second;
        }
        if (!size)
            continue;
        out.push_back(Sym{load + *addr - (*sec)->getAddress(), size,
                          (*flags & SymbolRef::SF_Global) != 0, name->str()});
    }
}

/* Defined functions in loaded sections, at their load addresses; where several names
 * share an address (C++ constructor aliases C1/C2), the first global one in name order. */
std::vector<Sym> functions(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads)
{
    std::vector<Sym> out;
    if (!functions_raw(obj, loads, out)) {
        out.clear();
        functions_symbolref(obj, loads, out);
    }
    std::sort(out.begin(), out.end(), [](const Sym &a, const Sym &b) {
        if (a.start != b.start)
            return a.start < b.start;
        if (a.global != b.global)
            return a.global;
        return a.name < b.name;
    });
    std::vector<Sym> kept;
    for (Sym &s : out)
        if (kept.empty() || s.start >= kept.back().start + kept.back().size)
            kept.push_back(std::move(s));
    return kept;
}

/* Human names: C++ (and Rust, D...) demangled by LLVM's demangler, C names as they are.
 * llvm::demangle tries Itanium (_Z, __Z), Rust (_R, __R), D (_D) and then Microsoft's
 * scheme on every name, allocating as it goes: 3 us a module for "f123". Names that start
 * with none of '_', '?', '.' are no mangling it knows (Microsoft's needs '?' or '.', the
 * others '_'), and it returns them unchanged: skip it for those. */
std::string demangled(const std::string &name)
{
    if (name.empty() || (name[0] != '_' && name[0] != '?' && name[0] != '.'))
        return name;
    std::string d = llvm::demangle(name);
    return d.empty() ? name : d;
}

/* Every compile unit's line table through LLVM's DWARFContext, which applies the debug
 * sections' relocations with the load addresses: the reference lines.cc matches, and its
 * fallback. problems counts what LLVM complained about. */
std::vector<LineUnit> dwarf_context_units(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                                          unsigned &problems)
{
    auto silent = [](llvm::Error e) { llvm::consumeError(std::move(e)); };
    auto count = [&problems](llvm::Error e) {
        problems++;
        llvm::consumeError(std::move(e));
    };
    std::shared_ptr<llvm::DWARFContext> dw = llvm::DWARFContext::create(
        obj, llvm::DWARFContext::ProcessDebugRelocations::Process, &loads, "", count, silent);
    std::vector<LineUnit> units;
    for (const auto &cu : dw->compile_units()) {
        auto table = dw->getLineTableForUnit(cu.get(), count);
        if (!table) {
            count(table.takeError());
            continue;
        }
        const llvm::DWARFDebugLine::LineTable *lt = *table;
        if (!lt)
            continue;
        LineUnit u;
        /* DWARFContext parses a table shared by several units once */
        u.key = uint64_t(uintptr_t(lt));
        std::string comp_dir = cu->getCompilationDir() ? cu->getCompilationDir() : "";
        for (const auto &seq : lt->Sequences) {
            if (!seq.isValid())
                continue;
            for (unsigned i = seq.FirstRowIndex; i + 1 < seq.LastRowIndex; i++) {
                const auto &row = lt->Rows[i];
                if (!row.EndSequence)
                    u.rows.push_back(LineRow{row.Address.Address, row.Line, row.Column,
                                             row.File, row.PrologueEnd != 0});
            }
        }
        u.path = [dw, lt, comp_dir](uint64_t file, std::string &path) {
            return lt->getFileNameByIndex(
                file, comp_dir, llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath, path);
        };
        units.push_back(std::move(u));
    }
    return units;
}

/* One pass over every compile unit's line table: each row's range goes to the function
 * holding its first byte. */
void add_lines(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads, Object &o,
               std::vector<std::string> &notes, Lines how)
{
    unsigned problems = 0;
    std::vector<LineUnit> units;
    if (how != Lines::FAST || !read_line_units(obj, loads, units)) {
        units.clear();
        units = dwarf_context_units(obj, loads, problems);
    }
    std::map<std::pair<uint64_t, uint64_t>, uint32_t> file_ids;
    std::map<std::string, uint32_t> by_name;
    /* most rows name the file of the row before: asked of the maps only when it changes */
    uint64_t last_unit = 0, last_file = ~0ull;
    uint32_t last_id = 0;
    auto func_at = [&o](uint64_t a) -> Func * {
        auto it = std::upper_bound(o.funcs.begin(), o.funcs.end(), a,
                                   [](uint64_t v, const Func &f) { return v < f.start; });
        if (it == o.funcs.begin())
            return nullptr;
        --it;
        return a - it->start < it->size ? &*it : nullptr;
    };
    for (const LineUnit &u : units) {
        for (const LineRow &row : u.rows) {
            Func *f = func_at(row.addr);
            if (!f)
                continue;
            uint32_t off = uint32_t(row.addr - f->start);
            if (u.key != last_unit || row.file != last_file) {
                auto key = std::make_pair(u.key, uint64_t(row.file));
                auto fid = file_ids.find(key);
                if (fid == file_ids.end()) {
                    std::string path;
                    if (!u.path(row.file, path))
                        path = "<unknown>";
                    auto named = by_name.emplace(path, uint32_t(o.files.size()));
                    if (named.second)
                        o.files.push_back(path);
                    fid = file_ids.emplace(key, named.first->second).first;
                }
                last_unit = u.key;
                last_file = row.file;
                last_id = fid->second;
            }
            /* file: index into the object's files for now; made per function below */
            f->lines.push_back(jh_line{off, row.line, row.column, last_id});
            if (row.prologue_end && !f->prologue_end && off)
                f->prologue_end = off;
        }
    }
    /* Each function's own file list, and its rows in address order. */
    for (Func &f : o.funcs) {
        std::stable_sort(f.lines.begin(), f.lines.end(),
                         [](const jh_line &a, const jh_line &b) { return a.offset < b.offset; });
        /* a function names a few files: a scan, not a map, and only when the file changes */
        uint32_t was = ~0u, now = 0;
        for (jh_line &l : f.lines) {
            if (l.file != was) {
                was = l.file;
                auto it = std::find(f.files.begin(), f.files.end(), l.file);
                if (it == f.files.end())
                    it = f.files.insert(it, l.file);
                now = uint32_t(it - f.files.begin());
            }
            l.file = now;
        }
    }
    if (problems)
        notes.push_back(std::to_string(problems) + " DWARF problem(s) while reading lines");
}

} // namespace

Object describe(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads, Lines how)
{
    Object o;
    for (Sym &s : functions(obj, loads)) {
        Func f;
        f.start = s.start;
        f.size = s.size;
        f.display = demangled(s.name);
        f.name = std::move(s.name);
        o.funcs.push_back(std::move(f));
    }
    if (o.funcs.empty())
        return o;
    add_lines(obj, loads, o, o.notes, how);
    if (!relocated_eh_frame(obj, loads, o.eh_frame, o.eh_frame_addr, o.notes))
        o.eh_frame.clear();
    return o;
}

} // namespace jitherald_llvm
