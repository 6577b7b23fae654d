/*
 * eh_frame.cc — the unwind rules of an LLVM object, from the object's own .eh_frame: one
 * per FDE, at load addresses, with the CIE's personality routine and the FDE's LSDA.
 *
 *     $ JITHERALD=gdb gdb -batch -ex 'break leaf' -ex run -ex bt --args ./llvm_jit ...
 *     #0  leaf () at tests/programs/llvm/chain.c:6
 *     #1  0x00007ffff7f7b01a in middle () at tests/programs/llvm/chain.c:13   <- frameless
 *     #2  0x00007ffff7f8000c in jit_entry () at tests/programs/llvm/entry.c:7    at -O1: the
 *     #3  0x000055555555b757 in call (o=..., addr=...) at tests/programs/llvm_jit.cc:114  CFI
 *
 * The .eh_frame is read from the relocatable object, not from memory: MCJIT tells its
 * listeners before it relocates anything, and JITLink splits the section into one block
 * per record and may drop records of dead functions. Every pointer field that has a
 * relocation is replaced by its target, S + A with S at its load address, so the record's
 * pointers come out absolute whatever their encoding (pcrel, absptr); no byte is written.
 * The instructions go through cfa.cc, which passes LLVM's as they are and translates or
 * refuses others. Refused here already (the function keeps its name and lines, loses its
 * unwind rules, and a note says why): a signal frame ('S'), 64-bit DWARF records, a
 * relocation type we do not know, an architecture without a CFI contract.
 */
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <llvm/ADT/Triple.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>

#include "bytes.h"
#include "herald.h"

namespace jitherald_llvm {
namespace {

using llvm::object::ObjectFile;
using llvm::object::SectionRef;

enum : uint8_t {
    PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02, PE_udata4 = 0x03, PE_udata8 = 0x04,
    PE_sleb128 = 0x09, PE_sdata2 = 0x0a, PE_sdata4 = 0x0b, PE_sdata8 = 0x0c,
    PE_pcrel = 0x10, PE_indirect = 0x80, PE_omit = 0xff
};

/* A relocation's target LLVM did not place with this object: a symbol of a section it
 * did not load (RuntimeDyld leaves out the section of the weak, hidden
 * DW.ref.__gxx_personality_v0 slot clang emits beside C++ code), or an undefined one. */
struct Away {
    llvm::object::SymbolRef sym;
    int64_t addend = 0;
};

/* The section's relocations: field offset -> S + A, S at its load address. */
struct Targets {
    std::map<uint64_t, uint64_t> at;
    std::map<uint64_t, Away> away;
    std::string problem;
};

Targets relocation_targets(const ObjectFile &obj, const SectionRef &eh,
                           const llvm::LoadedObjectInfo &loads)
{
    Targets t;
    bool x86 = obj.getArch() == llvm::Triple::x86_64;
    for (const SectionRef &rs : obj.sections()) {
        auto target = rs.getRelocatedSection();
        if (!target) {
            llvm::consumeError(target.takeError());
            continue;
        }
        if (*target == obj.section_end() || **target != eh)
            continue;
        for (const llvm::object::RelocationRef &r : rs.relocations()) {
            uint64_t type = r.getType();
            bool known = x86 ? type == llvm::ELF::R_X86_64_PC32 || type == llvm::ELF::R_X86_64_64 ||
                                   type == llvm::ELF::R_X86_64_PC64 || type == llvm::ELF::R_X86_64_32 ||
                                   type == llvm::ELF::R_X86_64_32S
                             : type == llvm::ELF::R_AARCH64_PREL32 || type == llvm::ELF::R_AARCH64_ABS64 ||
                                   type == llvm::ELF::R_AARCH64_PREL64 || type == llvm::ELF::R_AARCH64_ABS32;
            if (!known) {
                t.problem = "relocation type " + std::to_string(type) + " in .eh_frame";
                return t;
            }
            int64_t addend = 0;
            if (llvm::isa<llvm::object::ELFObjectFileBase>(&obj)) {
                auto a = llvm::object::ELFRelocationRef(r).getAddend();
                if (a)
                    addend = *a;
                else
                    llvm::consumeError(a.takeError());
            }
            uint64_t s = 0;
            auto sym = r.getSymbol();
            if (sym != obj.symbol_end()) {
                auto sec = sym->getSection();
                auto addr = sym->getAddress();
                if (!sec || !addr) {
                    if (!sec)
                        llvm::consumeError(sec.takeError());
                    if (!addr)
                        llvm::consumeError(addr.takeError());
                    continue;
                }
                uint64_t load = *sec == obj.section_end() ? 0 : loads.getSectionLoadAddress(**sec);
                if (!load) {                /* undefined, or a section LLVM did not load */
                    t.away[r.getOffset()] = Away{*sym, addend};
                    continue;
                }
                s = load + *addr - (*sec)->getAddress();
            }
            t.at[r.getOffset()] = s + uint64_t(addend);
        }
    }
    return t;
}

struct Cie {
    bool ok = false;            /* its FDEs can be translated */
    bool readable = false;      /* its FDEs can be read (pc, LSDA), whether or not ok */
    std::string why;
    CieRules rules;             /* factors, return address register, initial program */
    uint8_t fde_enc = PE_absptr, lsda_enc = PE_omit;
    bool z = false;
    uint64_t personality_slot = 0;      /* address of the pointer (indirect) */
    uint64_t personality = 0;
    uint64_t personality_field = 0;     /* offset of the pointer field in .eh_frame */
    bool personality_indirect = false;
};

/* A pointer field: its relocation target if it has one, else the value read (pcrel
 * without a relocation means within the section, which no record of ours points to). */
bool read_ptr(Reader &r, uint8_t enc, const Targets &t, uint64_t &v)
{
    uint64_t at = r.pos();
    switch (enc & 0x0f) {
    case PE_absptr: v = r.fixed(8); break;
    case PE_udata2: v = r.fixed(2); break;
    case PE_udata4: v = r.fixed(4); break;
    case PE_udata8: case PE_sdata8: v = r.fixed(8); break;
    case PE_sdata2: v = uint64_t(int64_t(int16_t(r.fixed(2)))); break;
    case PE_sdata4: v = uint64_t(int64_t(int32_t(r.fixed(4)))); break;
    case PE_uleb128: v = r.uleb(); break;
    case PE_sleb128: v = uint64_t(r.sleb()); break;
    default: return false;
    }
    if (r.bad || (enc & 0x70) > PE_pcrel)
        return false;
    auto it = t.at.find(at);
    if (it != t.at.end())
        v = it->second;
    else if (enc & PE_pcrel)
        v = 0;          /* relative to a section we did not place: unknown */
    return true;
}

Cie parse_cie(Reader r, const Targets &t)
{
    Cie c;
    int version = int(r.fixed(1));
    std::string aug = r.cstr();
    if (version != 1 && version != 3)
        return c.why = "CIE version " + std::to_string(version), c;
    c.rules.code_align = r.uleb();
    c.rules.data_align = r.sleb();
    c.rules.ra = version == 1 ? r.fixed(1) : r.uleb();
    if (!aug.empty() && aug[0] == 'z') {
        c.z = true;
        uint64_t len = r.uleb();
        if (r.bad || len > uint64_t(r.end - r.p))
            return c.why = "CIE augmentation cut short", c;
        Reader a{r.base, r.p, r.p + len};
        r.p += len;
        for (size_t i = 1; i < aug.size(); i++) {
            switch (aug[i]) {
            case 'R': c.fde_enc = uint8_t(a.fixed(1)); break;
            case 'L': c.lsda_enc = uint8_t(a.fixed(1)); break;
            case 'P': {
                uint8_t enc = uint8_t(a.fixed(1));
                uint64_t v = 0;
                c.personality_field = a.pos();
                c.personality_indirect = enc & PE_indirect;
                if (!read_ptr(a, enc, t, v))
                    return c.why = "personality pointer encoding", c;
                if (enc & PE_indirect)
                    c.personality_slot = v;
                else
                    c.personality = v;
                break;
            }
            case 'S': c.why = "signal frame CIE ('S')"; break;   /* read on: the FDEs name their code */
            case 'B': case 'G': break;      /* arm64 pointer authentication, memory tags */
            default: return c.why = "CIE augmentation \"" + aug + "\"", c;
            }
        }
        if (a.bad)
            return c.why = "CIE augmentation data", c;
    } else if (!aug.empty()) {
        return c.why = "CIE augmentation \"" + aug + "\"", c;
    }
    if (r.bad)
        return c.why = "CIE cut short", c;
    c.rules.init = r.p;
    c.rules.init_len = size_t(r.end - r.p);
    c.ok = c.why.empty();
    c.readable = true;
    return c;
}

/* The personality routine behind an indirect pointer: the slot LLVM filled in (ORC tells
 * us after relocating), or, before relocation (MCJIT), the symbol the slot's relocation
 * names, looked up in the process. Only reads memory inside a loaded section of obj. */
uint64_t personality_at(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads, uint64_t slot)
{
    for (const SectionRef &s : obj.sections()) {
        uint64_t load = loads.getSectionLoadAddress(s);
        if (!load || slot < load || slot + 8 > load + s.getSize())
            continue;
        uint64_t v = 0;
        std::memcpy(&v, reinterpret_cast<const void *>(slot), sizeof v);
        if (v)
            return v;
        for (const SectionRef &rs : obj.sections()) {
            auto target = rs.getRelocatedSection();
            if (!target) {
                llvm::consumeError(target.takeError());
                continue;
            }
            if (*target == obj.section_end() || **target != s)
                continue;
            for (const llvm::object::RelocationRef &r : rs.relocations()) {
                if (r.getOffset() != slot - load || r.getSymbol() == obj.symbol_end())
                    continue;
                auto name = r.getSymbol()->getName();
                if (!name) {
                    llvm::consumeError(name.takeError());
                    return 0;
                }
                return uint64_t(reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, name->str().c_str())));
            }
        }
        return 0;
    }
    return 0;
}

/* The process's address of the symbol a relocation names, by name (dlsym): for what the
 * object takes from outside, such as the C++ runtime's personality routine. */
uint64_t process_symbol(const llvm::object::SymbolRef &sym)
{
    auto name = sym.getName();
    if (!name) {
        llvm::consumeError(name.takeError());
        return 0;
    }
    return uint64_t(reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, name->str().c_str())));
}

/* The personality routine when its pointer field targets a symbol LLVM did not place: for
 * an indirect pointer to a slot in a section of obj LLVM left out, the symbol the slot's
 * own relocation names (DW.ref.__gxx_personality_v0 -> __gxx_personality_v0), looked up in
 * the process; for a direct one, the symbol itself. 0 when neither can be named. */
uint64_t personality_away(const ObjectFile &obj, const Away &a, bool indirect)
{
    if (!indirect)
        return a.addend == 0 ? process_symbol(a.sym) : 0;
    auto sec = a.sym.getSection();
    auto addr = a.sym.getAddress();
    if (!sec || !addr) {
        if (!sec)
            llvm::consumeError(sec.takeError());
        if (!addr)
            llvm::consumeError(addr.takeError());
        return 0;
    }
    if (*sec == obj.section_end())
        return 0;       /* a slot outside the object: nothing to read it from */
    uint64_t off = *addr - (*sec)->getAddress() + uint64_t(a.addend);
    for (const SectionRef &rs : obj.sections()) {
        auto target = rs.getRelocatedSection();
        if (!target) {
            llvm::consumeError(target.takeError());
            continue;
        }
        if (*target == obj.section_end() || **target != **sec)
            continue;
        for (const llvm::object::RelocationRef &r : rs.relocations()) {
            if (r.getOffset() != off || r.getSymbol() == obj.symbol_end())
                continue;
            if (llvm::isa<llvm::object::ELFObjectFileBase>(&obj)) {
                auto ad = llvm::object::ELFRelocationRef(r).getAddend();
                if (!ad) {
                    llvm::consumeError(ad.takeError());
                    return 0;
                }
                if (*ad != 0)
                    return 0;
            }
            return process_symbol(*r.getSymbol());
        }
    }
    return 0;
}

} // namespace

std::vector<Frame> read_eh_frame(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                                 std::vector<std::string> &notes)
{
    std::vector<Frame> frames;
    bool arm64 = obj.getArch() == llvm::Triple::aarch64;
    bool known_arch = arm64 || obj.getArch() == llvm::Triple::x86_64;
    for (const SectionRef &eh : obj.sections()) {
        auto name = eh.getName();
        if (!name) {
            llvm::consumeError(name.takeError());
            continue;
        }
        if (*name != ".eh_frame")
            continue;
        if (!known_arch) {
            notes.push_back(".eh_frame of an architecture jitherald has no CFI contract for");
            return frames;
        }
        auto contents = eh.getContents();
        if (!contents) {
            llvm::consumeError(contents.takeError());
            notes.push_back(".eh_frame unreadable");
            return frames;
        }
        Targets t = relocation_targets(obj, eh, loads);
        if (!t.problem.empty()) {
            notes.push_back("no unwind rules: " + t.problem);
            return frames;
        }
        const uint8_t *base = reinterpret_cast<const uint8_t *>(contents->data());
        size_t n = contents->size();
        std::map<uint64_t, Cie> cies;
        std::map<std::string, unsigned> refused;
        for (uint64_t pos = 0; pos + 4 <= n;) {
            Reader r{base, base + pos, base + n};
            uint64_t len = r.fixed(4);
            if (len == 0)
                break;
            if (len == 0xffffffffu || len > n - pos - 4) {
                notes.push_back(len == 0xffffffffu ? "64-bit DWARF .eh_frame" : ".eh_frame record cut short");
                break;
            }
            uint64_t end = pos + 4 + len;
            r.end = base + end;
            uint64_t id_at = r.pos();
            uint64_t id = r.fixed(4);
            if (id != 0 && id <= id_at) {
                uint64_t cie_at = id_at - id;
                auto it = cies.find(cie_at);
                if (it == cies.end()) {
                    Reader cr{base, base + cie_at, base + n};
                    uint64_t cl = cr.fixed(4);
                    Cie c;
                    if (!cr.bad && cl != 0 && cl <= n - cie_at - 4 && cr.fixed(4) == 0) {
                        cr.end = base + cie_at + 4 + cl;
                        c = parse_cie(cr, t);
                    } else {
                        c.why = "FDE without a CIE";
                    }
                    if (c.ok && c.personality_slot)
                        c.personality = personality_at(obj, loads, c.personality_slot);
                    if (c.ok && c.personality_field && !c.personality) {
                        auto away = t.away.find(c.personality_field);
                        if (!c.personality_slot && away != t.away.end())
                            c.personality = personality_away(obj, away->second, c.personality_indirect);
                        /* its FDEs would unwind without running their landing pads */
                        if (!c.personality) {
                            c.ok = false;
                            c.why = "personality routine not found";
                        }
                    }
                    it = cies.emplace(cie_at, c).first;
                }
                const Cie &c = it->second;
                Frame f;
                std::string why = c.why;
                bool ok = c.readable && read_ptr(r, c.fde_enc, t, f.start) &&
                          read_ptr(r, uint8_t(c.fde_enc & 0x0f), t, f.size);
                if (ok && c.z) {
                    uint64_t alen = r.uleb();
                    const uint8_t *aend = r.p + alen;
                    if (r.bad || alen > uint64_t(r.end - r.p))
                        ok = false;
                    else if (c.lsda_enc != PE_omit && !read_ptr(r, c.lsda_enc, t, f.lsda))
                        ok = false;
                    r.p = aend;
                }
                if (!ok && why.empty())
                    why = "FDE cut short";
                if (ok && !c.ok)
                    ok = false;
                else if (ok && f.start && !translate_cfa(c.rules, arm64, r.p, size_t(r.end - r.p), f.cfi, why))
                    ok = false;
                if (ok && f.start) {
                    f.personality = c.personality;
                    frames.push_back(std::move(f));
                } else if (!ok && f.start) {
                    refused[why]++;
                }
            }
            pos = end;
        }
        for (auto &w : refused)
            notes.push_back("no unwind rules for " + std::to_string(w.second) +
                            (w.second == 1 ? " function: " : " functions: ") + w.first);
    }
    std::sort(frames.begin(), frames.end(),
              [](const Frame &a, const Frame &b) { return a.start < b.start; });
    return frames;
}

} // namespace jitherald_llvm
