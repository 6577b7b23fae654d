/*
 * cfa.cc — an FDE's call-frame instructions rewritten for struct jh_code's raw-CFI
 * contract (include/jitherald.h): FDE instructions run after a CIE with code alignment 1,
 * data alignment -8, return address register 16 (x86-64) or 30 (arm64) and initial rules
 * CFA = rsp+8, rip at cfa-8 (x86-64) or CFA = sp (arm64).
 *
 *     $ JITHERALD=gdb JITHERALD_DEBUG=1 ./my-llvm-jit
 *     jitherald-llvm: object 0x55d0c8e4b2a0: no unwind rules for 1 function: offset -12
 *     not a multiple of 8
 *
 * LLVM's CIEs are exactly the contract's, and then the FDE's bytes are passed on as they
 * are. Any other CIE is translated: its initial instructions are put in front of the
 * FDE's, every factored operand is re-encoded for the contract's factors, and a register
 * the contract's CIE gives a rule but this CIE does not becomes DW_CFA_undefined. Refused:
 * another return address register, an offset the new factor does not divide,
 * DW_CFA_restore after a translated CIE (it would restore the contract's rule, not this
 * CIE's), DW_CFA_set_loc (jitherald takes advances only), an opcode we do not know.
 * tests/unit/llvm/cies.s has a CIE of each kind.
 */
#include <vector>

#include "bytes.h"
#include "herald.h"

namespace jitherald_llvm {
namespace {

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
bool encode(const std::vector<Insn> &prog, const CieRules &c, std::vector<uint8_t> &o, std::string &why)
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

} // namespace

bool translate_cfa(const CieRules &c, bool arm64, const uint8_t *p, size_t n,
                   std::vector<uint8_t> &out, std::string &why)
{
    const Contract &k = arm64 ? ARM64 : X86_64;
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

} // namespace jitherald_llvm
