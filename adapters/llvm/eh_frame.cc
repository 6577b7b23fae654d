/*
 * eh_frame.cc — the unwind rules of an LLVM object, from the object's own .eh_frame,
 * translated to struct jh_code's raw-CFI contract.
 *
 *     $ JITHERALD=gdb gdb -batch -ex 'break leaf' -ex run -ex bt --args ./llvm_jit ...
 *     #0  leaf (n=3) at chain.c:4
 *     #1  0x00007ffff7fb8031 in middle (n=3) at chain.c:9     <- frameless at -O1: CFI only
 *     #2  0x00007ffff7fb8063 in jit_entry (n=3) at entry.c:6
 *     #3  0x0000555555558a1e in main (...) at llvm_jit.cc:210
 *
 * The .eh_frame is read from the relocatable object, not from memory: MCJIT tells its
 * listeners before it relocates anything, and JITLink splits the section into one block
 * per record and may drop records of dead functions. Every pointer field that has a
 * relocation is replaced by its target, S + A with S at its load address, so the record's
 * pointers come out absolute whatever the encoding (pcrel, absptr); no byte is written.
 *
 * The contract (include/jitherald.h): FDE instructions run after a CIE with code alignment
 * 1, data alignment -8, return address register 16 (x86-64) or 30 (arm64) and initial
 * rules CFA = rsp+8, rip at cfa-8 (x86-64) or CFA = sp (arm64). LLVM's CIEs are exactly
 * that, and then the FDE's bytes are passed on as they are. Any other CIE is translated:
 * its initial instructions are put in front of the FDE's, every factored operand is
 * re-encoded for the contract's factors, and a register the contract's CIE gives a rule
 * but this CIE does not becomes DW_CFA_undefined. Refused (the function keeps its name
 * and lines, loses its unwind rules, and a note says why): another return address
 * register, an offset the new factor does not divide, DW_CFA_restore after a translated
 * CIE (it would restore the contract's rule), DW_CFA_set_loc, a signal frame ('S'),
 * 64-bit DWARF records, a relocation type we do not know.
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
using llvm::object::SectionRef;

enum : uint8_t {
    PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02, PE_udata4 = 0x03, PE_udata8 = 0x04,
    PE_sleb128 = 0x09, PE_sdata2 = 0x0a, PE_sdata4 = 0x0b, PE_sdata8 = 0x0c,
    PE_pcrel = 0x10, PE_indirect = 0x80, PE_omit = 0xff
};

enum : uint8_t {
    CFA_advance_loc = 0x40, CFA_offset = 0x80, CFA_restore = 0xc0, CFA_nop = 0x00,
    CFA_set_loc = 0x01, CFA_advance_loc1 = 0x02, CFA_advance_loc2 = 0x03,
    CFA_advance_loc4 = 0x04, CFA_offset_extended = 0x05, CFA_restore_extended = 0x06,
    CFA_undefined = 0x07, CFA_same_value = 0x08, CFA_register = 0x09,
    CFA_remember_state = 0x0a, CFA_restore_state = 0x0b, CFA_def_cfa = 0x0c,
    CFA_def_cfa_register = 0x0d, CFA_def_cfa_offset = 0x0e, CFA_def_cfa_expression = 0x0f,
    CFA_expression = 0x10, CFA_offset_extended_sf = 0x11, CFA_def_cfa_sf = 0x12,
    CFA_def_cfa_offset_sf = 0x13, CFA_val_offset = 0x14, CFA_val_offset_sf = 0x15,
    CFA_val_expression = 0x16, CFA_GNU_window_save = 0x2d, CFA_GNU_args_size = 0x2e,
    CFA_GNU_negative_offset_extended = 0x2f
};

/* What jh_code's CIE says, per architecture. */
struct Contract {
    uint64_t ra;
    uint64_t cfa_reg;
    uint64_t cfa_off;
    bool ra_at_cfa_minus_8;
};
constexpr Contract X86_64{16, 7, 8, true};
constexpr Contract ARM64{30, 31, 0, false};
constexpr int64_t DATA_ALIGN = -8;

/* A bounds-checked reader; any overrun sets bad and reads zeros from then on. */
struct Reader {
    const uint8_t *base, *p, *end;
    bool bad = false;

    uint64_t pos() const { return uint64_t(p - base); }
    bool need(size_t n)
    {
        if (bad || size_t(end - p) < n)
            return !(bad = true);
        return true;
    }
    uint64_t fixed(size_t n)
    {
        uint64_t v = 0;
        if (!need(n))
            return 0;
        for (size_t i = 0; i < n; i++)
            v |= uint64_t(p[i]) << (8 * i);
        p += n;
        return v;
    }
    uint64_t uleb()
    {
        uint64_t v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (!need(1) || shift > 63)
                return bad = true, 0;
            uint8_t b = *p++;
            v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80))
                return v;
        }
    }
    int64_t sleb()
    {
        uint64_t v = 0;
        unsigned shift = 0;
        uint8_t b;
        do {
            if (!need(1) || shift > 63)
                return bad = true, 0;
            b = *p++;
            v |= uint64_t(b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        if (shift < 64 && (b & 0x40))
            v |= ~uint64_t(0) << shift;
        return int64_t(v);
    }
    std::string cstr()
    {
        const uint8_t *z = p;
        while (z < end && *z)
            z++;
        if (z == end)
            return bad = true, std::string();
        std::string s(reinterpret_cast<const char *>(p), size_t(z - p));
        p = z + 1;
        return s;
    }
};

/* The section's relocations: field offset -> S + A, S at its load address. */
struct Targets {
    std::map<uint64_t, uint64_t> at;
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
                if (*sec == obj.section_end())
                    continue;               /* undefined: no target we can name */
                uint64_t load = loads.getSectionLoadAddress(**sec);
                if (!load)
                    continue;               /* a section LLVM did not load (dead code) */
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
    uint64_t code_align = 1;
    int64_t data_align = DATA_ALIGN;
    uint64_t ra = 0;
    uint8_t fde_enc = PE_absptr, lsda_enc = PE_omit;
    bool z = false;
    uint64_t personality_slot = 0;      /* address of the pointer (indirect) */
    uint64_t personality = 0;
    const uint8_t *init = nullptr;
    size_t init_len = 0;
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
    c.code_align = r.uleb();
    c.data_align = r.sleb();
    c.ra = version == 1 ? r.fixed(1) : r.uleb();
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
    c.init = r.p;
    c.init_len = size_t(r.end - r.p);
    c.ok = c.why.empty();
    c.readable = true;
    return c;
}

/* One decoded call-frame instruction; operands as in the DWARF spec. */
struct Insn {
    uint8_t op = 0;
    uint64_t reg = 0, a = 0;
    int64_t s = 0;
    const uint8_t *blk = nullptr;
    size_t blk_len = 0;
};

/* Decode a program; false on anything we cannot pass on (set_loc, unknown, cut short). */
bool decode(const uint8_t *p, size_t n, std::vector<Insn> &out, std::string &why)
{
    Reader r{p, p, p + n};
    while (r.p < r.end && !r.bad) {
        Insn in;
        uint8_t b = uint8_t(r.fixed(1));
        switch (b & 0xc0) {
        case CFA_advance_loc: in.op = CFA_advance_loc; in.a = b & 0x3f; out.push_back(in); continue;
        case CFA_offset: in.op = CFA_offset; in.reg = b & 0x3f; in.a = r.uleb(); out.push_back(in); continue;
        case CFA_restore: in.op = CFA_restore; in.reg = b & 0x3f; out.push_back(in); continue;
        }
        in.op = b;
        switch (b) {
        case CFA_nop: continue;
        case CFA_remember_state: case CFA_restore_state: case CFA_GNU_window_save: break;
        case CFA_advance_loc1: in.a = r.fixed(1); break;
        case CFA_advance_loc2: in.a = r.fixed(2); break;
        case CFA_advance_loc4: in.a = r.fixed(4); break;
        case CFA_restore_extended: case CFA_undefined: case CFA_same_value:
        case CFA_def_cfa_register: in.reg = r.uleb(); break;
        case CFA_def_cfa_offset: case CFA_GNU_args_size: in.a = r.uleb(); break;
        case CFA_def_cfa_offset_sf: in.s = r.sleb(); break;
        case CFA_offset_extended: case CFA_register: case CFA_def_cfa: case CFA_val_offset:
        case CFA_GNU_negative_offset_extended: in.reg = r.uleb(); in.a = r.uleb(); break;
        case CFA_offset_extended_sf: case CFA_def_cfa_sf: case CFA_val_offset_sf:
            in.reg = r.uleb(); in.s = r.sleb(); break;
        case CFA_def_cfa_expression: in.blk_len = r.uleb(); break;
        case CFA_expression: case CFA_val_expression: in.reg = r.uleb(); in.blk_len = r.uleb(); break;
        case CFA_set_loc: why = "DW_CFA_set_loc"; return false;
        default: why = "call-frame opcode " + std::to_string(b); return false;
        }
        if (in.blk_len) {
            if (!r.need(in.blk_len))
                break;
            in.blk = r.p;
            r.p += in.blk_len;
        }
        out.push_back(in);
    }
    if (r.bad)
        why = "call-frame instructions cut short";
    return !r.bad;
}

void put_uleb(std::vector<uint8_t> &o, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        o.push_back(uint8_t(b | (v ? 0x80 : 0)));
    } while (v);
}

void put_sleb(std::vector<uint8_t> &o, int64_t v)
{
    for (;;) {
        uint8_t b = v & 0x7f;
        v >>= 7;
        bool done = (v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40));
        o.push_back(uint8_t(b | (done ? 0 : 0x80)));
        if (done)
            return;
    }
}

/* Re-encode a program for code alignment 1 and data alignment -8 from the CIE's factors. */
bool encode(const std::vector<Insn> &prog, const Cie &c, std::vector<uint8_t> &o, std::string &why)
{
    /* a factored offset, in bytes, as a multiple of -8 */
    auto refactor = [&](int64_t factored, int64_t &out) {
        __int128 bytes = __int128(factored) * c.data_align;
        if (bytes % DATA_ALIGN) {
            why = "offset " + std::to_string(int64_t(bytes)) + " not a multiple of 8";
            return false;
        }
        out = int64_t(bytes / DATA_ALIGN);
        return true;
    };
    for (const Insn &in : prog) {
        int64_t f = 0;
        switch (in.op) {
        case CFA_advance_loc: case CFA_advance_loc1: case CFA_advance_loc2: case CFA_advance_loc4: {
            uint64_t d = in.a * c.code_align;
            if (d < 0x40) {
                o.push_back(uint8_t(CFA_advance_loc | d));
            } else if (d <= 0xff) {
                o.push_back(CFA_advance_loc1);
                o.push_back(uint8_t(d));
            } else if (d <= 0xffff) {
                o.push_back(CFA_advance_loc2);
                o.push_back(uint8_t(d));
                o.push_back(uint8_t(d >> 8));
            } else if (d <= 0xffffffffu) {
                o.push_back(CFA_advance_loc4);
                for (int i = 0; i < 4; i++)
                    o.push_back(uint8_t(d >> (8 * i)));
            } else {
                return why = "advance beyond 4 GiB", false;
            }
            break;
        }
        case CFA_offset: case CFA_offset_extended: case CFA_offset_extended_sf:
        case CFA_val_offset: case CFA_val_offset_sf: case CFA_GNU_negative_offset_extended: {
            int64_t v = in.op == CFA_offset_extended_sf || in.op == CFA_val_offset_sf ? in.s
                        : in.op == CFA_GNU_negative_offset_extended ? -int64_t(in.a)
                                                                    : int64_t(in.a);
            if (!refactor(v, f))
                return false;
            bool val = in.op == CFA_val_offset || in.op == CFA_val_offset_sf;
            if (!val && f >= 0 && in.reg < 64) {
                o.push_back(uint8_t(CFA_offset | in.reg));
                put_uleb(o, uint64_t(f));
            } else {
                o.push_back(val ? CFA_val_offset_sf : CFA_offset_extended_sf);
                put_uleb(o, in.reg);
                put_sleb(o, f);
            }
            break;
        }
        case CFA_def_cfa_sf: case CFA_def_cfa_offset_sf:
            /* factored: the byte offset is s * data_align; write it unfactored */
            if (__int128(in.s) * c.data_align < 0) {
                if (!refactor(in.s, f))
                    return false;
                o.push_back(in.op);
                if (in.op == CFA_def_cfa_sf)
                    put_uleb(o, in.reg);
                put_sleb(o, f);
                break;
            }
            o.push_back(in.op == CFA_def_cfa_sf ? CFA_def_cfa : CFA_def_cfa_offset);
            if (in.op == CFA_def_cfa_sf)
                put_uleb(o, in.reg);
            put_uleb(o, uint64_t(in.s * c.data_align));
            break;
        case CFA_restore:
            if (in.reg < 64) {
                o.push_back(uint8_t(CFA_restore | in.reg));
                break;
            }
            [[fallthrough]];
        default:
            if (in.op == CFA_restore) {
                o.push_back(CFA_restore_extended);
            } else {
                o.push_back(in.op);
            }
            switch (in.op) {
            case CFA_restore: case CFA_restore_extended: case CFA_undefined: case CFA_same_value:
            case CFA_def_cfa_register:
                put_uleb(o, in.reg); break;
            case CFA_def_cfa_offset: case CFA_GNU_args_size: put_uleb(o, in.a); break;
            case CFA_register: case CFA_def_cfa: put_uleb(o, in.reg); put_uleb(o, in.a); break;
            case CFA_def_cfa_expression: put_uleb(o, in.blk_len); break;
            case CFA_expression: case CFA_val_expression:
                put_uleb(o, in.reg); put_uleb(o, in.blk_len); break;
            default: break;
            }
            o.insert(o.end(), in.blk, in.blk + in.blk_len);
        }
    }
    return true;
}

/* Does the CIE's initial program set exactly what the contract's CIE sets? */
bool initial_is_contract(const std::vector<Insn> &init, const Contract &k)
{
    size_t want = k.ra_at_cfa_minus_8 ? 2 : 1;
    if (init.size() != want || init[0].op != CFA_def_cfa || init[0].reg != k.cfa_reg ||
        init[0].a != k.cfa_off)
        return false;
    return !k.ra_at_cfa_minus_8 ||
           ((init[1].op == CFA_offset || init[1].op == CFA_offset_extended) &&
            init[1].reg == k.ra && init[1].a == 1);
}

bool sets_rule(const std::vector<Insn> &prog, uint64_t reg)
{
    for (const Insn &in : prog)
        if (in.reg == reg && in.op != CFA_def_cfa && in.op != CFA_def_cfa_register &&
            in.op != CFA_def_cfa_sf && in.op != CFA_advance_loc)
            return true;
    return false;
}

/* The FDE's instructions under the contract's CIE, or false with why. */
bool translate(const Cie &c, const Contract &k, const uint8_t *p, size_t n,
               std::vector<uint8_t> &out, std::string &why)
{
    if (c.ra != k.ra)
        return why = "return address in register " + std::to_string(c.ra), false;
    std::vector<Insn> init, prog;
    if (!decode(c.init, c.init_len, init, why) || !decode(p, n, prog, why))
        return false;
    if (c.code_align == 1 && c.data_align == DATA_ALIGN && initial_is_contract(init, k)) {
        out.assign(p, p + n);       /* LLVM's CIE: the FDE's bytes as they are */
        return true;
    }
    bool same_start = initial_is_contract(init, k);
    if (!same_start)
        for (const Insn &in : prog)
            if (in.op == CFA_restore || in.op == CFA_restore_extended)
                return why = "DW_CFA_restore under a CIE whose initial rules differ", false;
    out.clear();
    if (!same_start) {
        if (k.ra_at_cfa_minus_8 && !sets_rule(init, k.ra)) {
            out.push_back(CFA_undefined);
            put_uleb(out, k.ra);
        }
        if (!encode(init, c, out, why))
            return false;
    }
    return encode(prog, c, out, why);
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

} // namespace

std::vector<Frame> read_eh_frame(const ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                                 std::vector<std::string> &notes)
{
    std::vector<Frame> frames;
    const Contract *k = obj.getArch() == llvm::Triple::x86_64    ? &X86_64
                        : obj.getArch() == llvm::Triple::aarch64 ? &ARM64
                                                                 : nullptr;
    for (const SectionRef &eh : obj.sections()) {
        auto name = eh.getName();
        if (!name) {
            llvm::consumeError(name.takeError());
            continue;
        }
        if (*name != ".eh_frame")
            continue;
        if (!k) {
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
                else if (ok && f.start && !translate(c, *k, r.p, size_t(r.end - r.p), f.cfi, why))
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
