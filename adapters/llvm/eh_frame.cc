/*
 * eh_frame.cc — an LLVM object's own .eh_frame, relocated, for jh_code's JH_UNWIND_EH_FRAME:
 * the library reads its records and translates each function's FDE (src/fmt/eh_frame.c, the
 * one translator every JIT and `jitherald run` share); this file does only LLVM's part.
 *
 *     $ JITHERALD=gdb gdb -batch -ex 'break leaf' -ex run -ex bt --args ./llvm_jit ...
 *     #0  leaf () at tests/programs/llvm/chain.c:6
 *     #1  0x00007ffff7f7b01a in middle () at tests/programs/llvm/chain.c:13   <- frameless
 *     #2  0x00007ffff7f8000c in jit_entry () at tests/programs/llvm/entry.c:7    at -O1: the
 *     #3  0x000055555555b757 in call (o=..., addr=...) at tests/programs/llvm_jit.cc:114  CFI
 *
 * The .eh_frame is read from the relocatable object, not from memory: MCJIT tells its
 * listeners before it relocates anything, and JITLink splits the section into one block per
 * record and may drop records of dead functions. So the section's bytes are copied and every
 * relocation applied to the copy, with each target at its load address, as if the copy lay
 * at the section's load address (or, when LLVM did not load it, at the object's lowest
 * loaded section, so that 32-bit pc-relative pointers reach the code). A target that is a
 * personality's pointer slot (the weak, hidden DW.ref.__gxx_personality_v0 clang emits for an
 * indirect personality: RuntimeDyld may not load its section, and before relocation it
 * holds zeros) gets a slot of its own after the records, holding the process's address of
 * the symbol the slot names; an undefined target is the process's symbol of that name.
 * Refused here (the object's functions keep names and lines, lose unwind rules, and a note
 * says why): a relocation type we do not know, a target out of reach of its field.
 */
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <llvm/ADT/Triple.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>

#include "herald.h"

namespace jitherald_llvm {
namespace {

using llvm::object::ObjectFile;
using llvm::object::RelocationRef;
using llvm::object::SectionRef;
using llvm::object::SymbolRef;

int64_t addend_of(const ObjectFile &obj, const RelocationRef &r)
{
    if (!llvm::isa<llvm::object::ELFObjectFileBase>(&obj))
        return 0;
    auto a = llvm::object::ELFRelocationRef(r).getAddend();
    if (a)
        return *a;
    llvm::consumeError(a.takeError());
    return 0;
}

/* The process's address of a symbol, by name (dlsym): what the object takes from outside,
 * such as the C++ runtime's personality routine. 0: none. */
uint64_t process_symbol(const SymbolRef &sym)
{
    auto name = sym.getName();
    if (!name) {
        llvm::consumeError(name.takeError());
        return 0;
    }
    return uint64_t(reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, name->str().c_str())));
}

/* The relocations that apply to section s, by offset. */
template <typename Fn> void each_relocation(const ObjectFile &obj, const SectionRef &s, Fn fn)
{
    for (const SectionRef &rs : obj.sections()) {
        auto target = rs.getRelocatedSection();
        if (!target) {
            llvm::consumeError(target.takeError());
            continue;
        }
        if (*target == obj.section_end() || **target != s)
            continue;
        for (const RelocationRef &r : rs.relocations())
            fn(r);
    }
}

/* A symbol that is a personality's pointer slot (DW.ref.<routine>, as clang and GCC name
 * them): the symbol its own relocation (addend 0) names, in the process. 0: not one. */
uint64_t slot_target(const ObjectFile &obj, const SymbolRef &sym, int64_t addend)
{
    auto name = sym.getName();
    if (!name) {
        llvm::consumeError(name.takeError());
        return 0;
    }
    if (!name->startswith("DW.ref."))
        return 0;
    auto sec = sym.getSection();
    auto addr = sym.getAddress();
    if (!sec || !addr) {
        if (!sec)
            llvm::consumeError(sec.takeError());
        if (!addr)
            llvm::consumeError(addr.takeError());
        return 0;
    }
    if (*sec == obj.section_end() || (*sec)->isText())
        return 0;
    uint64_t off = *addr - (*sec)->getAddress() + uint64_t(addend), v = 0;
    each_relocation(obj, **sec, [&](const RelocationRef &r) {
        if (!v && r.getOffset() == off && r.getSymbol() != obj.symbol_end() &&
            addend_of(obj, r) == 0)
            v = process_symbol(*r.getSymbol());
    });
    return v;
}

/* Little-endian store of the low n bytes of v. */
void store(std::vector<uint8_t> &b, uint64_t at, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[at + i] = uint8_t(v >> (8 * i));
}

} // namespace

bool relocated_eh_frame(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                        std::vector<uint8_t> &out, uint64_t &addr,
                        std::vector<std::string> &notes)
{
    bool x86 = obj.getArch() == llvm::Triple::x86_64;
    bool arm64 = obj.getArch() == llvm::Triple::aarch64;
    for (const SectionRef &eh : obj.sections()) {
        auto name = eh.getName();
        if (!name) {
            llvm::consumeError(name.takeError());
            continue;
        }
        if (*name != ".eh_frame")
            continue;
        if (!x86 && !arm64) {
            notes.push_back(".eh_frame of an architecture jitherald does not describe");
            return false;
        }
        auto contents = eh.getContents();
        if (!contents) {
            llvm::consumeError(contents.takeError());
            notes.push_back(".eh_frame unreadable");
            return false;
        }
        addr = loads.getSectionLoadAddress(eh);
        if (!addr)
            for (const SectionRef &s : obj.sections()) {
                uint64_t a = loads.getSectionLoadAddress(s);
                if (a && (!addr || a < addr))
                    addr = a;
            }
        out.assign(contents->bytes_begin(), contents->bytes_end());
        out.resize(out.size() + 4, 0);          /* a terminator, whatever LLVM left */
        std::map<std::pair<uint64_t, int64_t>, uint64_t> slots;   /* (symbol, addend) -> offset */
        std::string problem;
        each_relocation(obj, eh, [&](const RelocationRef &r) {
            if (!problem.empty())
                return;
            uint64_t type = r.getType(), off = r.getOffset();
            size_t width;
            bool pcrel;
            using namespace llvm::ELF;
            if (x86 ? type == R_X86_64_PC32 : type == R_AARCH64_PREL32)
                width = 4, pcrel = true;
            else if (x86 ? type == R_X86_64_PC64 : type == R_AARCH64_PREL64)
                width = 8, pcrel = true;
            else if (x86 ? type == R_X86_64_64 : type == R_AARCH64_ABS64)
                width = 8, pcrel = false;
            else if (x86 ? type == R_X86_64_32 || type == R_X86_64_32S : type == R_AARCH64_ABS32)
                width = 4, pcrel = false;
            else
                return void(problem = "relocation type " + std::to_string(type) + " in .eh_frame");
            if (off + width > out.size() - 4)
                return void(problem = "a relocation outside .eh_frame");
            int64_t addend = addend_of(obj, r);
            uint64_t s = 0;
            auto sym = r.getSymbol();
            if (sym != obj.symbol_end()) {
                auto sec = sym->getSection();
                auto a = sym->getAddress();
                if (!sec || !a) {
                    if (!sec)
                        llvm::consumeError(sec.takeError());
                    if (!a)
                        llvm::consumeError(a.takeError());
                    return;
                }
                uint64_t load = *sec == obj.section_end() ? 0 : loads.getSectionLoadAddress(**sec);
                uint64_t named = slot_target(obj, *sym, addend);
                if (named) {                    /* a pointer slot: one of our own */
                    auto key = std::make_pair(uint64_t(sym->getRawDataRefImpl().p), addend);
                    auto it = slots.find(key);
                    if (it == slots.end()) {
                        out.resize((out.size() + 7) & ~size_t(7));
                        it = slots.emplace(key, out.size()).first;
                        out.resize(out.size() + 8);
                        store(out, it->second, named, 8);
                    }
                    s = addr + it->second;
                    addend = 0;
                } else if (load) {
                    s = load + *a - (*sec)->getAddress();
                } else if (*sec == obj.section_end()) {
                    s = process_symbol(*sym);   /* undefined: the process's */
                } else {
                    return;                     /* a section LLVM left out: unknown */
                }
            }
            uint64_t v = s + uint64_t(addend) - (pcrel ? addr + off : 0);
            if (width == 4 && (pcrel || type == R_X86_64_32S)
                    ? int64_t(v) != int64_t(int32_t(uint32_t(v)))
                    : width == 4 && v > 0xffffffffu)
                return void(problem = "a target out of reach of its 32-bit field");
            store(out, off, v, width);
        });
        if (!problem.empty()) {
            notes.push_back("no unwind rules: " + problem);
            out.clear();
            return false;
        }
        return true;
    }
    return false;
}

} // namespace jitherald_llvm
