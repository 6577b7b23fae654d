/*
 * arch.h — the one description of an instruction set architecture, which every encoder and
 * reader that depends on one takes as a parameter: the CFI encoder (register numbers, the
 * CIE's rules, the frame record of a frame-pointer prologue), the ELF writers and jitdump's
 * header (e_machine), the audit log (its "arch" string), the GDB channel (the breakpoint a
 * debugger plants on the hook). A file written on another machine names its architecture
 * (an audit log's "arch", an ELF's or a jitdump's e_machine): look it up here, and encode
 * with what the file says, never with the host's.
 *
 * This header and arch.c are the only places in src/, tools/ and adapters/ that ask which
 * architecture the compiler targets (`__x86_64__`, `__aarch64__`...) or spell an ELF
 * machine: scripts/check-layers.sh fails on any other (a few files of one architecture's
 * instructions are allowed there, each with its reason). Supporting another architecture
 * starts with an instance in arch.c.
 *
 * The values are the psABIs' and DWARF's (x86-64 psABI 3.6.2 "DWARF Register Number
 * Mapping"; AArch64's "DWARF for the Arm 64-bit Architecture", 4.1), and what GCC's own
 * CIEs say on each: `readelf --debug-dump=frames /bin/true` on the machine shows them.
 */
#ifndef JH__FMT_ARCH_H
#define JH__FMT_ARCH_H

#include <stdbool.h>
#include <stdint.h>

struct jh__arch {
    const char *name;           /* for people: "x86-64", "arm64" */
    const char *log_name;       /* the audit log's "arch" (uname -m): "x86_64", "aarch64" */
    uint16_t e_machine;         /* ELF e_machine; jitdump's header holds it too */
    uint8_t ptr_size;           /* bytes in an address */
    /* DWARF register numbers */
    uint8_t ra;                 /* the return address column */
    uint8_t sp, fp;
    const char *const *reg_names;   /* by DWARF number, as readelf names them; for readers */
    uint8_t nreg_names;
    /* The CIE every FDE jitherald writes runs after: the rules at a function's first
     * instruction. x86-64: `call` pushed the return address, CFA = rsp+8, ra at cfa-8.
     * arm64: `bl` left it in x30, CFA = sp+0. */
    uint8_t code_align;         /* code alignment factor */
    int8_t data_align;          /* data alignment factor (offsets are multiples of it) */
    uint8_t entry_cfa;          /* CFA = sp + entry_cfa */
    uint8_t entry_ra;           /* ra at cfa - entry_ra; 0: still in register ra */
    /* The frame record a frame-pointer prologue builds (`push rbp; mov rbp, rsp`,
     * `stp x29, x30, [sp, #-16]!; mov x29, sp`): once pushed CFA = sp + frame_cfa, once set
     * CFA = fp + frame_cfa; the caller's fp at cfa - frame_fp, ra at cfa - frame_ra. */
    uint8_t frame_cfa, frame_fp, frame_ra;
    /* The software breakpoint a debugger writes over an instruction, as it lies in memory */
    uint8_t brk[4];
    uint8_t brk_len;
    /* Return addresses may be signed (arm64 pointer authentication, PAC-RET): the CFI
     * says where with DW_CFA_AARCH64_negate_ra_state (the opcode of GNU_window_save), and
     * a CIE with augmentation 'B' for the B key. */
    bool pac;
    /* Linux's mmap/mprotect bit that makes a page BTI-guarded (arm64 PROT_BTI: an indirect
     * branch must land on a `bti`/`paciasp` landing pad there), 0 where there is none. */
    unsigned prot_bti;
};

extern const struct jh__arch jh__arch_x86_64, jh__arch_arm64;

/* Every architecture jitherald knows, ended by NULL (for lookups and error messages). */
extern const struct jh__arch *const jh__arch_list[];

/* The architecture this code was compiled for: the one the library describes its own
 * process with. An architecture arch.c does not describe is a compile-time error, not a
 * silently wrong CIE. */
#if defined(__x86_64__) || defined(_M_X64)
#define JH__ARCH_HOST (&jh__arch_x86_64)
#elif defined(__aarch64__) || defined(_M_ARM64)
#define JH__ARCH_HOST (&jh__arch_arm64)
#else
#error "jitherald knows x86-64 and arm64 only: describe this architecture in src/fmt/arch.c"
#endif

/* What only the running CPU knows about the host architecture (Linux; 0 and false
 * elsewhere). The bits of a code address that hold a pointer-authentication code, as
 * stripping one (XPACLRI) clears them: 0 when return addresses are never signed here
 * (not arm64, or no PAC). Offline tools strip signed addresses with it (the audit log's
 * header records it). */
uint64_t jh__arch_host_pac_mask(void);
/* Does the CPU enforce BTI on pages mapped with prot_bti (arm64 HWCAP2_BTI)? */
bool jh__arch_host_bti(void);
/* What to add to the protection of an executable mapping that holds no code meant to run
 * (jitdump's marker page: perf needs it PROT_EXEC, and it holds copies of the JIT's code),
 * so that an indirect branch can land there only on a landing pad: prot_bti where the CPU
 * enforces BTI, else 0. */
int jh__arch_host_guard_prot(void);

/* The architecture of ELF e_machine, or NULL when jitherald does not know it. */
const struct jh__arch *jh__arch_by_machine(unsigned e_machine);
/* The architecture of an audit log's "arch" string (log_name), or NULL (name NULL too). */
const struct jh__arch *jh__arch_by_name(const char *log_name);

#endif
