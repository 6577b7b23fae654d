/*
 * jitherald.h — make JIT-compiled code known to every tool that looks at a process.
 *
 * Describe each piece of machine code once (name, address, size, source lines, how to
 * unwind its frame) and jitherald tells perf, gdb, lldb, valgrind, the process's own
 * unwinder and an audit log about it, through whichever channels are switched on.
 *
 *     jh_ctx *jh;
 *     struct jh_options o = { .sz = sizeof o, .engine = "myvm" };   // channels from $JITHERALD
 *     if (jh_open(&jh, &o) < 0) ...;                                 // failing channels are not fatal
 *     struct jh_line lines[] = { { .offset = 0, .line = 3, .file = 0 }, { 9, 4, 0, 0 } };
 *     const char *files[] = { "fib.mini" };
 *     struct jh_code c = { .sz = sizeof c, .name = "fib", .start = code, .size = len,
 *                          .files = files, .nfiles = 1, .lines = lines, .nlines = 2,
 *                          .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
 *     uint64_t id;
 *     jh_code_add(jh, &c, &id);        // after the bytes are written, before they run
 *     ...
 *     jh_code_remove(jh, id);          // before the memory is reused (may follow munmap)
 *     jh_close(jh);
 *
 * Conventions for every function below:
 *   - int results are 0 on success or a negative errno (-EINVAL, -ENOMEM, ...) or one of the
 *     JH_E* codes; jh_strerror() names both.
 *   - Everything passed in is copied before the call returns; jitherald keeps no pointer to
 *     caller memory except the code itself (which it reads, and never writes, except the
 *     elfmap channel's documented page swap).
 *   - A channel that fails (cannot create its file, disk full, debugger interface taken)
 *     is reported once, naming the cause and the fix, through the log callback (else on
 *     stderr), switched off, and the other channels carry on; the JIT's call still
 *     succeeds. A channel that leaves code out (elfmap and writable pages) says so the same
 *     way. jh_channels() tells which channels are live.
 *   - Thread safety: every function may be called from any thread at any time on the same
 *     context, except jh_close(), which must not race with other calls on that context.
 *   - fork(): a child inherits the context. On its first jitherald call the child's
 *     per-process files (perf map, jitdump, audit log) are started afresh under the child's
 *     pid and re-announce the code that is live; in-memory registrations (debugger, unwinder)
 *     are inherited as they are; the child's other threads wait for that (a jh_log_* from a
 *     signal handler on the very thread doing it is dropped). When the child's first call
 *     is a jh_log_*, which may come from a signal handler, only the audit log restarts
 *     there, async-signal-safely (system calls, no allocation, no thread; the live code's
 *     bytes copied rather than recorded by reference); the control socket and the other
 *     files start at the child's first other call. A child that only calls exec() pays
 *     nothing.
 *   - Windows x64 (make win64; docs/windows.md): the same API, with the channels Windows has
 *     consumers for, JH_UNWIND and JH_AUDITLOG; the others are never live there.
 */
#ifndef JITHERALD_H
#define JITHERALD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports: on ELF, default visibility (everything else is hidden); on
 * Windows, jitherald.dll exports exactly these functions through its .def file, so the
 * declarations need nothing (link libjitherald.dll.a, or libjitherald.a to link statically). */
#if defined(__GNUC__) && !defined(_WIN32)
#define JH_API __attribute__((visibility("default")))
#else
#define JH_API
#endif

#define JH_VERSION_MAJOR 0
#define JH_VERSION_MINOR 1
#define JH_VERSION_PATCH 0
#define JH_VERSION_STRING "0.1.0"

/* Returns JH_VERSION_STRING of the library actually linked. */
JH_API const char *jh_version(void);

typedef struct jh_ctx jh_ctx;

/* Channels: which tools get told. */
enum {
    JH_PERFMAP  = 1 << 0, /* /tmp/perf-<pid>.map: perf report/top, bcc, bpftrace, samply */
    JH_JITDUMP  = 1 << 1, /* jit-<pid>.dump for `perf record -k 1` + `perf inject --jit` */
    JH_GDB      = 1 << 2, /* GDB/LLDB JIT interface with in-memory ELF + DWARF images */
    JH_UNWIND   = 1 << 3, /* the process's own unwinder: C++ exceptions, backtrace();
                             Windows: SEH, C++ exceptions, longjmp, RtlVirtualUnwind */
    JH_ELFMAP   = 1 << 4, /* code pages re-mapped from ELF files: perf and valgrind, no post-processing */
    JH_AUDITLOG = 1 << 5, /* always-on flight recorder, read offline with `jitherald log` */
    JH_ALL      = 0x3f
};

/* Flags for jh_options.flags. */
enum {
    JH_OPT_IGNORE_ENV = 1 << 0, /* read no JITHERALD* configuration variable (JITHERALD,
                                   JITHERALD_DIR, JITHERALD_GDB_BATCH, JITHERALD_GDB_DEFER,
                                   JITHERALD_AUDITLOG_HELPER, JITHERALD_AUDITLOG_REFS,
                                   JITHERALD_ELFMAP_FREEZE);
                                   JITHERALD_DEBUG, which only
                                   shows diagnostics, is still read */
    JH_OPT_STRICT     = 1 << 1, /* jh_open fails if any requested channel cannot start */
    JH_OPT_CODE_BTI   = 1 << 2  /* arm64: the JIT maps its code PROT_BTI (indirect branches
                                   must land on `bti`/`paciasp`). The elfmap channel maps its
                                   images over BTI-guarded code PROT_BTI too, and never over
                                   unguarded code. Linux tells jitherald this itself (the
                                   "bt" flag of /proc/self/smaps, read when this flag is not
                                   set); set it to spare that read, and where /proc cannot
                                   tell (qemu-user answers smaps with the host's mappings).
                                   Set it only if every page you announce is PROT_BTI: the
                                   flag is believed, not checked, and an image mapped
                                   PROT_BTI over code without landing pads makes its next
                                   indirect branch there trap (SIGILL).
                                   What BTI asks of the JIT is its own, not jitherald's: a
                                   landing pad at every target of an indirect branch (`bti c`
                                   or `paciasp` where `blr` calls, `bti j` where `br` jumps,
                                   `bti jc` for both; `bti j` at a catch or cleanup that an
                                   unwinder enters, as GCC marks its own), and the code's
                                   pages mapped or mprotect()ed PROT_BTI before jh_code_add.
                                   Descriptions say nothing of BTI: the unwind channel works
                                   alike on guarded code. jitherald's own executable mapping,
                                   jitdump's marker page, is PROT_BTI wherever the CPU
                                   enforces BTI, flag or not. A no-op on other
                                   architectures. */,
    JH_OPT_STANDBY    = 1 << 3  /* retain each function's description (name, lines, unwind
                                   info; never the code bytes, which stay the JIT's) while
                                   no channel is on, so that a channel switched on later by
                                   jh_channels_set() or `jitherald attach` hears every
                                   function live then, as if it had been on from the start.
                                   Without it, a context with no channel keeps nothing: its
                                   calls cost a few nanoseconds, and a channel switched on
                                   later hears only what comes after. $JITHERALD names it
                                   "standby" (JITHERALD=standby, or standby,gdb to start with
                                   gdb on). A process with a context in standby listens for
                                   `jitherald attach PID` (docs/attach.md; JITHERALD_ATTACH=0:
                                   it does not) */,
    JH_OPT_CODE_RWX   = 1 << 4  /* the JIT keeps its code pages writable and executable
                                   (as HotSpot, Mono and node do). What it promises: every
                                   write to the mappings that hold announced code (code,
                                   data and free room alike: elfmap re-maps a mapping of up
                                   to 1 MiB whole) and every change of their protection is
                                   made under one code lock, and jh_code_add, jh_code_patched, jh_code_move,
                                   jh_code_remove and jh_code_remove_range on that code are
                                   called under that same lock; after changing announced
                                   bytes it calls jh_code_patched. The elfmap channel then
                                   maps its images over RWX code too, inside those calls
                                   only, as private RWX file mappings: the JIT's later
                                   writes land in copy-on-write pages of its own, a fork
                                   child never shares them.
                                   jh_channels_set (`jitherald attach`), which runs without
                                   the JIT's lock, neither maps RWX code (code live when
                                   elfmap is switched on stays anonymous until the next
                                   jh_code_add on its pages, said once) nor gives it back
                                   when elfmap is switched off (it stays a private file
                                   mapping, as after jh_close). A JIT that breaks the promise
                                   may lose a write made while one of those calls copies and
                                   re-maps the page, or find elfmap stopped with an error
                                   where it noticed the bytes change. Without this flag
                                   writable code is left anonymous (docs/elfmap.md,
                                   "Writable and shared code pages") */
};

/* jh_options.gdb_batch: new code reaches debuggers at jh_flush(), not at each add. */
#define JH_GDB_DEFER 0x80000000u

/* Log levels passed to jh_options.log. */
enum { JH_LOG_ERROR = 0, JH_LOG_WARN = 1, JH_LOG_INFO = 2, JH_LOG_DEBUG = 3 };

typedef void jh_log_fn(void *arg, int level, const char *msg);

/*
 * Options for jh_open(). Zero-initialise, set .sz = sizeof(struct jh_options), fill in what
 * you need. A caller built against a newer header may pass a larger struct: the bytes past
 * what this library knows must then be zero, or jh_open() returns -EINVAL.
 */
struct jh_options {
    size_t sz;
    /* Channels to start. Ignored when the environment variable JITHERALD is set and
     * non-empty (unless JH_OPT_IGNORE_ENV): then it is a comma-separated list of
     * perfmap,jitdump,gdb,unwind,elfmap,auditlog, or "all", or "none". 0 here and no
     * JITHERALD means no channel: every call then costs a few nanoseconds. A channel not
     * built for this platform (Windows: all but unwind and auditlog) is reported when asked
     * for by name (with JH_OPT_STRICT, jh_open fails); "all" and JH_ALL mean the others. */
    unsigned channels;
    /* Directory for jitdump, elfmap and audit-log files. $JITHERALD_DIR wins when set;
     * default /tmp/jitherald-<uid> (created 0700; refused if owned by someone else or a
     * symlink), on Windows %TEMP%\jitherald. The perf map always goes to /tmp, where perf
     * looks for it. */
    const char *dir;
    /* Name of the JIT engine, used in file names and logs ("jit" if NULL). */
    const char *engine;
    unsigned flags;         /* JH_OPT_* */
    /* Where jitherald's diagnostics go: every level to this callback when set. NULL:
     * stderr, for JH_LOG_ERROR (a channel cannot serve: it cannot start, or stops) and
     * JH_LOG_WARN (a channel leaves something out: code it skips, a file it cannot make),
     * each said once per cause with the fix ("set JITHERALD_DIR to a directory you can
     * write", "mprotect them PROT_READ|PROT_EXEC"); info and debug too when
     * JITHERALD_DEBUG=1. Called from inside jitherald calls, with a context lock held: it
     * must not call jitherald. */
    jh_log_fn *log;
    void *log_arg;
    /* GDB channel: functions per in-memory image (0: default 1024; $JITHERALD_GDB_BATCH
     * wins). By default each jh_code_add is visible to an attached debugger before it
     * returns (about two debugger stops per function while one listens). OR in
     * JH_GDB_DEFER to register new code as one image at jh_flush() or every gdb_batch
     * functions instead (one stop per image): then call jh_flush() before running new
     * code. See docs/gdb.md. */
    uint32_t gdb_batch;
    /* Audit log: size limit in bytes for the log file (0: default 256 MiB). */
    uint64_t auditlog_limit;
    /* The channels `jitherald attach` may switch on this context (0: every channel; a
     * value with no channel bit, such as 1u << 31: none). A program with several contexts
     * for the same code, each feeding other tools, keeps each channel to one of them
     * (jitherald run's preload does). jh_channels_set itself is not limited. */
    unsigned attach_channels;
};

/* One row of a line table: code at `offset` (bytes from the start of the code) and
 * following, up to the next row, comes from files[file]:line:column (column 0: unknown).
 * A return address points after its call, so for every frame but the innermost, debuggers
 * and unwinders (gdb, lldb, libgcc's and libunwind's FDE lookup) look up the return
 * address minus 1: the line a backtrace shows for a caller is the row covering the call
 * instruction's last byte. Start a call's row at or before the call; a row that begins
 * exactly at the return address describes the code after the call, not the call. */
struct jh_line {
    uint32_t offset;
    uint32_t line;
    uint32_t column;
    uint32_t file;
};

/* How a debugger or unwinder finds the caller's frame while the pc is in this code. */
enum jh_unwind_kind {
    JH_UNWIND_NONE = 0,           /* unknown: tools fall back to their own heuristics,
                                     which in frameless code take whatever sits at the
                                     stack pointer for the return address; to have
                                     unwinders end at this frame instead (gdb's bt stops
                                     there, libgcc reports the end of the stack), say
                                     JH_UNWIND_CFI with DW_CFA_undefined of the return
                                     address: { 0x07, 16 } (x86-64), { 0x07, 30 } (arm64) */
    JH_UNWIND_FRAME_POINTER = 1,  /* standard prologue: push rbp; mov rbp,rsp (x86-64) or
                                     stp x29,x30,[sp,#-16]!; mov x29,sp (arm64); the frame
                                     pointer stays valid until the epilogue (see epilogues) */
    JH_UNWIND_CFI = 2,            /* raw DWARF call-frame instructions (after the CIE's) */
    JH_UNWIND_FRAMELESS = 3,      /* no frame of its own, described without DWARF: the CFA
                                     (the stack pointer before the call into the frame's
                                     function, where the return address sits just below on
                                     x86-64) is sp + a constant that changes at given
                                     offsets, and the caller's callee-saved registers sit at
                                     fixed CFA offsets (see cfa_offset) */
    JH_UNWIND_EH_FRAME = 4        /* the .eh_frame the JIT's compiler emitted for the code
                                     (a CIE and the FDE that begins at start): jitherald
                                     reads and translates it (see eh_frame) */
};

/* JH_UNWIND_FRAMELESS: from `offset` (bytes from the start of the code) on, CFA = sp +
 * cfa_offset, until the next step. */
struct jh_cfa_step {
    uint32_t offset;
    uint32_t cfa_offset;
};

/* JH_UNWIND_FRAMELESS: the caller's value of DWARF register `reg` is saved at CFA +
 * cfa_offset (negative, a multiple of 8) for the whole code. DWARF numbers, x86-64:
 * rbx 3, rbp 6, r12-r15 12-15 (the return address, 16, is always at CFA-8); arm64: x19-x28
 * 19-28, x29 (fp) 29, x30 (lr) 30 (list x30 wherever the return address was saved: arm64's
 * starts out in x30, not on the stack). */
struct jh_saved_reg {
    uint32_t reg;
    int32_t cfa_offset;
};

/* JH_UNWIND_FRAME_POINTER: [start, end) is an epilogue's tail, where the frame is already
 * torn down: start is just after `pop rbp` or `leave` (x86-64) / `ldp x29,x30,[sp],#16`
 * (arm64), end just after the `ret` (or the tail jump). There the CFA is sp + 8 (sp on
 * arm64) and the frame pointer holds the caller's again. */
struct jh_epilogue {
    uint32_t start, end;
};
/* A range of bytes of the code, [start, end), as offsets from its start. */
struct jh_range {
    uint32_t start, end;
};
/* jh_code.ra_key: which key signs the return address (arm64 PAC-RET). */
enum { JH_PAC_KEY_A = 0, JH_PAC_KEY_B = 1 };
/* On Windows x64 the unwind channel turns these into UNWIND_INFO: FRAME_POINTER always
 * (epilogues need nothing there: Windows reads them from the instructions); CFI and
 * FRAMELESS when Windows unwind codes can say it (a fixed frame, registers pushed before
 * the frame pointer is set: docs/windows.md; not code running inside a host's frame),
 * else the function gets none and a warning names the row, while jh_code_add still
 * succeeds; NONE registers nothing (a leaf to Windows). Personalities are not passed on:
 * a DWARF personality routine is no Windows language handler. */

/*
 * A piece of machine code. Zero-initialise, set .sz = sizeof(struct jh_code).
 * Only name, start and size are required. As with jh_options, fields are only ever
 * appended: a caller built against an older header (smaller sz) has each field it knows
 * read and the others taken as zero; a caller built against a newer one must leave the
 * bytes this library does not know zero, or jh_code_add returns -EINVAL.
 */
struct jh_code {
    size_t sz;
    const char *name;           /* any bytes but NUL; sanitised per channel as needed */
    /* First byte of the code, already written. elfmap re-maps the code's pages from a file
     * only if, when announced, they are private, readable and executable and not writable
     * (W^X: r-x); code on writable+executable pages (as HotSpot, Mono and node keep theirs)
     * or shared ones is left anonymous, said once per cause (the warning names the fix):
     * valgrind then shows it as ???, and perf names it only through perfmap or jitdump. */
    const void *start;
    size_t size;                /* bytes, > 0 */
    /* Source file names, referred to by jh_line.file; copied. Used as given: an absolute
     * path is found by every tool from anywhere; a relative one is shown as it is and
     * resolved by each tool against its own current directory (gdb's `list`: its source
     * path, `directory DIR` adds one; perf annotate's source view; jitherald writes no
     * DW_AT_comp_dir, as it cannot know what the JIT meant it relative to). Pass absolute
     * paths, or names relative to where the user runs the tools. */
    const char *const *files;
    uint32_t nfiles;
    const struct jh_line *lines; /* sorted by offset (non-decreasing), offsets < size */
    uint32_t nlines;
    enum jh_unwind_kind unwind;
    /* JH_UNWIND_FRAME_POINTER: offset just after `push rbp`, and just after `mov rbp,rsp`
     * (0 < fp_push_end <= fp_set_end <= size). */
    uint32_t fp_push_end, fp_set_end;
    /* JH_UNWIND_CFI: DWARF CFA instructions for an FDE whose CIE says: code alignment 1,
     * data alignment -8, return address register 16 (x86-64) / 30 (arm64), initial rule
     * CFA = rsp+8, ra at cfa-8. Advance instructions count bytes from `start`. */
    const uint8_t *cfi;
    size_t cfi_len;

    /* ---- Added after 0.1.0. Everything below is optional: zero means "not given". ---- */

    /* The name debuggers and symbol tables use, for `break`: gdb cannot break on a name
     * with spaces or colons (`break TRACE_1 x.lua:10` stays pending forever). NULL: derived
     * from name, every run of bytes other than [A-Za-z0-9_] becoming one '_' ("TRACE_1
     * x.lua:10" -> "TRACE_1_x_lua_10"; a name made of those already is used as it is). Any
     * bytes but NUL, not empty: a C++ JIT passes the mangled name, which gdb and lldb
     * demangle. Where each name goes: the perf map, jitdump and elfmap images (perf,
     * valgrind) and the audit log show `name`; the debugger images (gdb, lldb) carry
     * `symbol` in their symbol table and `name` in their DWARF, so a backtrace shows
     * `name` and `break <symbol>` (pending before the code exists, too) stops in it. */
    const char *symbol;
    /* The offset where the function's body starts, after the prologue that sets up its
     * frame (< size): gdb's and lldb's `break name` stop there. Without it, gdb puts the
     * breakpoint at the second row of the line table, which for a function whose first
     * statement is a loop is the loop head: it stops on every iteration. Needs lines: it
     * becomes a line-table row (of the line covering that offset) flagged prologue_end. */
    uint32_t prologue_end;
    /* JH_UNWIND_FRAMELESS: CFA = sp + cfa_offset at the first byte (8 on x86-64 for code
     * entered by a call; 0 on arm64), then as each step says (sorted by offset, each
     * offset < size and greater than the one before); the callee-saved registers the
     * caller will want back, at fixed offsets from the CFA. Example, a LuaJIT trace running
     * inside the interpreter's frame (CFA = rsp + 80 there) that starts with `sub rsp,16`
     * and ends with `add rsp,16; jmp ...`:
     *     .cfa_offset = 80, .cfa_steps = { {4, 96}, {size - 5, 80} }, .ncfa_steps = 2,
     *     .saved_regs = { {6, -16}, {3, -24}, {15, -32}, {14, -40} }, .nsaved_regs = 4 */
    uint32_t cfa_offset;
    uint32_t ncfa_steps;
    const struct jh_cfa_step *cfa_steps;
    const struct jh_saved_reg *saved_regs;
    uint32_t nsaved_regs;
    /* JH_UNWIND_FRAME_POINTER: the epilogues' tails, sorted, after fp_set_end, not
     * overlapping, end <= size. `pop rbp; ret` and `leave; ret` epilogues are fine without
     * them for everything that unwinds from call sites: exceptions, backtrace(), a
     * debugger's outer frames, perf's frame-pointer call graphs. Only a frame stopped
     * between the `pop rbp`/`leave` and the `ret` (a profiler's sample, a debugger
     * stepping) needs them: the frame pointer already holds the caller's, so an unwinder
     * following the CFI takes the caller's caller for the caller (libgcc from a signal
     * handler does: tests/unit/test_cfi_frameless.c; perf --call-graph dwarf reads the same
     * rules). gdb 13 is right at a `ret` either way, by its own analysis of JIT code (but
     * not at a tail jump). */
    uint32_t nepilogues;
    const struct jh_epilogue *epilogues;
    /* Exceptions through this code (the unwind channel only; any unwind kind but NONE):
     * the personality routine the unwinder calls for its frames (__gxx_personality_v0 for
     * C++ landing pads, or the JIT's own), and the language-specific data it is handed
     * (what the personality expects: for __gxx_personality_v0, a .gcc_except_table
     * LSDA). The JIT keeps both alive while the code is registered. NULL: no personality,
     * exceptions pass through the frames.
     * The unwind channel never shadows unwind information the process already has: code
     * for which the process's unwinders (libgcc's, LLVM's libunwind) already find an FDE
     * when it is announced (the JIT registered its own, as LuaJIT does over each machine
     * code area with its personality; a loaded object) is left to it, with one
     * informational diagnostic per context. A JIT that wants jitherald's description to be
     * the one used registers nothing of its own there and passes its personality here —
     * or, where it registered one FDE over a whole region (LuaJIT), passes that FDE's own
     * personality here: the function is then described by jitherald with it (exceptions
     * still reach the JIT; backtrace() walks through), and the rest of the region keeps
     * the JIT's FDE (libgcc up to GCC 12; elsewhere left to the JIT's: docs/unwind.md). */
    const void *personality;
    const void *lsda;
    /* JH_UNWIND_EH_FRAME: bytes of an .eh_frame (a whole section is fine, up to 16 MiB)
     * holding the FDE whose pc_begin is `start` and its CIE, as a compiler emits them for
     * the code (LLVM's objects, a jitdump's UNWINDING_INFO), relocated: their pointers
     * are absolute or relative to where the bytes lie at eh_frame_addr (0: at eh_frame,
     * the bytes are in place). The FDE's range must not exceed size. jitherald translates
     * the FDE once, when the code is announced, into its own description (what
     * JH_UNWIND_CFI takes, with the CIE's initial rules and factors folded in), so every
     * channel sees the same frame; the CIE's personality routine (read from its slot when
     * indirect: from these bytes when the slot lies in them, so an adapter may place one
     * after the records) and the FDE's LSDA are used unless personality/lsda above are set. The
     * bytes are not kept. Refused (-EINVAL, the log callback says why): another return
     * address column than the architecture's, a signal frame ('S'), arm64's B-key ('B')
     * and memory-tagging ('G') augmentations, DW_CFA_set_loc, a rule the translation
     * cannot express (an offset that is not a multiple of 8, DW_CFA_restore under a CIE
     * whose initial rules are not the architecture's usual ones). */
    const uint8_t *eh_frame;
    size_t eh_frame_len;
    uintptr_t eh_frame_addr;
    /* arm64 pointer authentication of the return address (PAC-RET): where the code's
     * return address — in x30, and in the frame where it is saved — is signed. Each
     * range runs from just after the signing instruction (paciasp/pacibsp, or
     * pacia/pacib x30, sp) to just after the authenticating one (autiasp/autibsp,
     * autia/autib x30, sp), sorted, not overlapping; code that follows a `ret` and goes on
     * with the function is a new range (from where it is signed again: usually right
     * after the `ret`, since the body before it was). Unwinders then authenticate the
     * return address with the key ra_key (JH_PAC_KEY_A, B) and the CFA as modifier, as
     * the instructions do; without this they would return to a signed address and
     * crash, or treat an unsigned one as signed. The key must be the one the code signs
     * with. arm64 only (-EINVAL elsewhere); any unwind kind but NONE: with JH_UNWIND_CFI
     * the JIT's own instructions say where instead (DW_CFA_AARCH64_negate_ra_state,
     * 0x2d), and with JH_UNWIND_EH_FRAME its CIE's 'B' says the key, so only ra_key is
     * read with CFI and neither with EH_FRAME. Example, a frame-record function with one
     * exit (paciasp; stp x29,x30,[sp,#-16]!; mov x29,sp; ...; ldp x29,x30,[sp],#16;
     * autiasp; ret at size-4): .ra_signed = { {4, size - 4} }, .nra_signed = 1. */
    uint32_t nra_signed;
    const struct jh_range *ra_signed;
    uint32_t ra_key;
};

/* Errors of our own (negative, below any errno). */
enum {
    JH_EOVERLAP  = -4096, /* the range overlaps code that is still registered */
    JH_ECHANNEL  = -4097, /* JH_OPT_STRICT: a requested channel could not start */
    JH_EFORMAT   = -4098  /* a file being read is malformed */
};

/*
 * Open a context. opts may be NULL (channels from $JITHERALD only). On success *ctx is
 * set and 0 returned, even if some channels failed (unless JH_OPT_STRICT): see
 * jh_channels(). Several contexts may coexist in one process (one per JIT engine).
 * Thread-safe.
 */
JH_API int jh_open(jh_ctx **ctx, const struct jh_options *opts);

/* Bit set of the channels currently live on ctx (JH_PERFMAP...). */
JH_API unsigned jh_channels(const jh_ctx *ctx);

/*
 * Switch channels on and off in a running process: afterwards exactly the channels in
 * `channels` (JH_PERFMAP...) are live, as far as they can start. A channel switched on
 * hears every function live now (the rundown: same names, lines and unwind info as if it
 * had been on from the start; code removed before never appears) — all of them when the
 * context has retained them, that is, when it was opened with a channel live or with
 * JH_OPT_STANDBY, or after an earlier jh_channels_set (from then on it retains; code added
 * before that, while nothing was retained, is said once to be missing). A channel switched
 * off gives back what it holds: debugger images unregistered, unwinder registrations
 * removed, elfmap's pages anonymous memory again with the same bytes and protections (but
 * RWX code, JH_OPT_CODE_RWX, which stays mapped from elfmap's files, private), its
 * files closed (left for the tools). The audit log, switched off, stops recording but
 * keeps its file open until jh_close (jh_log_* may be using it without a lock); switched on
 * again, it records the rundown. Adds, moves, patches and removes in other threads are
 * neither lost nor doubled (they wait for the context lock). Returns the channels live
 * now (>= 0), -EINVAL (ctx NULL, bits no channel has), or the first channel's error when
 * one could not start (reported, the others carry on). Thread-safe; `jitherald attach PID`
 * calls it from outside.
 */
JH_API int jh_channels_set(jh_ctx *ctx, unsigned channels);

/*
 * Announce code. Call after the bytes are in place and before they first run (tools that
 * copy the bytes, jitdump and elfmap, read them now). The code's range must not overlap
 * code still registered on this context. *id (if id is not NULL) receives an identifier
 * never reused by this context. Returns -EINVAL for a malformed description (NULL or empty
 * name, NULL start, size 0 or wrapping, a line out of range or out of order, a file index
 * >= nfiles, bad unwind description), JH_EOVERLAP, -ENOMEM. Which field of which function
 * and why ("jh_code_add("fib"): -EINVAL: lines[3].offset 0x10 comes before lines[2].offset
 * 0x20") goes to the log callback at JH_LOG_INFO, or to stderr with JITHERALD_DEBUG=1;
 * jh_open says the same of a refused jh_options.
 * With no channel live, the description is validated but not stored, and ranges are not
 * checked for overlap. Thread-safe.
 * elfmap: the code's pages (if private, r-x: W^X; a mapping of up to 1 MiB whole) may be
 * re-mapped from a file with the same bytes before this returns; call this,
 * jh_code_patched and jh_code_move while no other thread can make those pages writable,
 * e.g. under your code lock (docs/elfmap.md, "contract"). Every ELF image jitherald writes
 * (elfmap's files, the gdb channel's images) carries a GNU build-id derived from the
 * functions it holds, their bytes as announced and patched, names, lines and unwind
 * descriptions: what you pass here may be published by id (docs/buildid.md).
 */
JH_API int jh_code_add(jh_ctx *ctx, const struct jh_code *code, uint64_t *id);

/*
 * Announce n pieces of code at once: as jh_code_add for each of codes[0..n), in that
 * order, under one lock, each channel told where the batch begins and ends, so that it
 * may build once what it would build per function (the unwind channel: one run for the
 * batch's functions where they lie apart from other code; the gdb channel: one image for
 * the batch, one debugger stop, unless JH_GDB_DEFER defers it to jh_flush() as usual;
 * `jitherald run` hands them V8's 2,200 builtins in three calls). Every function is visible to every tool when this
 * returns, as if added one by one; the result for each tool is the same. ids (if not
 * NULL) receives each code's identifier, as jh_code_add's *id, or 0 for a code refused
 * (0 is never an identifier); rc (if not NULL) each code's result, as jh_code_add would
 * return it. Returns how many were added, or -EINVAL (ctx NULL, codes NULL with n > 0,
 * n > INT_MAX). The library's copies of up to 64 consecutive descriptions share one
 * allocation, freed when the last of them is removed. Thread-safe.
 */
JH_API int jh_code_add_many(jh_ctx *ctx, const struct jh_code *codes, size_t n, uint64_t *ids,
                            int *rc);

/*
 * The code registered as id is going away. Call it before the memory is used for anything
 * else (new code, data); it may come after the memory was freed or unmapped (LuaJIT
 * reports a flush after unmapping its machine code): no channel reads the code here, nor
 * in jh_close, nor in a fork child announcing again what is live (code it cannot read is
 * left out). -ENOENT for an id that is not live (never handed out, or already removed),
 * whether or not a channel is live. Thread-safe.
 */
JH_API int jh_code_remove(jh_ctx *ctx, uint64_t id);

/*
 * Every piece of live code overlapping [start, start+len) is going away: the JIT freed or
 * reused a whole area (unmapped it, flushed a code cache), or, like `jitherald run`, it
 * learns of new code over old code without being told which old code went. As
 * jh_code_remove for each, reading no code. Returns how many were removed (0 if none),
 * or -EINVAL (len 0, or the range wraps). Code added while no channel was live is not
 * stored, so not found here (its ids stay valid for jh_code_remove). Thread-safe.
 * O(k log n) for k removed of n live.
 */
JH_API int jh_code_remove_range(jh_ctx *ctx, const void *start, size_t len);

/*
 * The code registered as id has been copied to new_start (same size, same bytes) and the
 * old copy will no longer run. JH_EOVERLAP if the new range overlaps other live code,
 * -ENOENT for an id that is not live. Thread-safe.
 */
JH_API int jh_code_move(jh_ctx *ctx, uint64_t id, const void *new_start);

/*
 * The JIT rewrote bytes [addr, addr+len) of code it announced (patched a call site, a
 * guard...). Channels that copied the bytes refresh them, and a function stays one
 * function for the tools (elfmap writes the new bytes into its image file and tells
 * valgrind to discard its translations, which it must: valgrind does not watch file-backed
 * code for self-modification; jitdump writes the function again under the same code_index;
 * the audit log records the new bytes). -ENOENT if the range is not inside live code.
 * Thread-safe.
 */
JH_API int jh_code_patched(jh_ctx *ctx, const void *addr, size_t len);

/*
 * Push out anything batched (debugger images, unwind tables, file buffers) so that every
 * tool sees all code announced so far. Channels flush on their own as needed; call this
 * at a quiet point (after a compile batch) to choose when that work is done. Thread-safe;
 * it may be called without the code lock elfmap asks for (it maps nothing).
 */
JH_API int jh_flush(jh_ctx *ctx);

/*
 * Look up the live code containing addr. Fills what is non-NULL: *id, *start, *size, and
 * the name into name[0..name_len) (NUL-terminated, truncated if needed). -ENOENT if none
 * (always, for code added while no channel was live: it is not stored). Thread-safe.
 */
JH_API int jh_lookup(jh_ctx *ctx, const void *addr, uint64_t *id, const void **start,
                     size_t *size, char *name, size_t name_len);

/*
 * The frame of code the process already has unwind information for (an FDE its unwinder
 * finds at pc: a loaded object's .eh_frame, or one the JIT registered), read and
 * translated as JH_UNWIND_EH_FRAME is, for a JIT whose code runs inside such a frame (a
 * LuaJIT trace inside the interpreter's): at pc, is the CFA sp plus a constant, with the
 * caller's registers saved at fixed CFA offsets? Then flags has JH_FRAME_PLAIN, and
 * cfa_offset and saved_regs say so as JH_UNWIND_FRAMELESS takes them (saved_regs: room
 * for nsaved_regs on entry, how many on return; the return address's own rule is left
 * out). Whatever the rules, the FDE's range and its CIE's personality routine (NULL:
 * none). Set sz = sizeof(struct jh_frame). 0; -ENOENT: no FDE covers pc, or no unwinder
 * with _Unwind_Find_FDE is loaded; -EINVAL: a bad argument or records that do not read
 * (the log callback of no context hears it: nothing to say it to); -ENOSPC: more saved
 * registers than nsaved_regs (nsaved_regs then says how many). Reads only the FDE and
 * its CIE. Thread-safe; needs no context.
 */
enum { JH_FRAME_PLAIN = 1 };
struct jh_frame {
    size_t sz;
    uint32_t flags;
    uint32_t cfa_offset;
    struct jh_saved_reg *saved_regs;
    uint32_t nsaved_regs;
    const void *fde_start;
    size_t fde_size;
    const void *personality;
};
JH_API int jh_frame_at(const void *pc, struct jh_frame *out);

/*
 * Unregister everything, flush and close the channels' files, free the context. Accepts
 * NULL. Must not race with other calls on the same context. Code still registered may be
 * freed already (see jh_code_remove): it is not read.
 */
JH_API void jh_close(jh_ctx *ctx);

/* ---- Ready-made debugger objects (JH_GDB) -------------------------------------------- */

/*
 * An engine that already builds an ELF object per compiled module for debuggers (LLVM's
 * RuntimeDyld: LoadedObjectInfo::getObjectForDebug, what LLVM's own GDB listener registers)
 * can have it registered as it is with the GDB JIT interface, on jitherald's descriptor and
 * under its lock: gdb (and LLDB) read it like any JIT image, attaching later included, and
 * nothing is encoded. It costs a list edit, not a description; but every such object is an
 * objfile of its own in gdb, which makes each later registration slower while a debugger
 * listens. So register objects only while jh_gdb_listening() says no debugger listens and
 * gdb is the only channel live; while one listens announce new code with jh_code_add
 * (packed images); when another channel comes on, announce the objects' code with
 * jh_code_add and remove them (its rundown has only what jh_code_add announced). The LLVM
 * adapter does exactly that (adapters/llvm/README.md). While any object is registered,
 * the re-announcement LLDB 14 needs on attach (it drops what it read then) does not
 * happen: an LLDB attaching later sees only what is registered after it attached.
 *
 * jh_gdb_object_add: elf (len bytes, an ELF file image whose SHF_ALLOC sections carry their
 * load addresses; a relocatable object is fine, gdb applies its relocations) is registered
 * before the call returns; *obj receives the handle. The bytes are NOT copied: keep them
 * alive and unchanged until jh_gdb_object_remove returns. -EINVAL (ctx, elf or obj NULL; len
 * shorter than an ELF header or elf without the ELF magic: the field and why go to the log
 * callback at JH_LOG_INFO), -ENODEV (the gdb channel is not live on ctx), -ENOMEM.
 * jh_gdb_object_remove: unregisters obj and frees the handle (not the bytes); -EINVAL for a
 * NULL ctx or obj. An object stays registered until removed, whatever happens to the
 * channels (jh_channels_set, jh_close do not remove it): remove them before jh_close.
 * Both thread-safe; after fork() the child inherits the registrations as they are.
 * Windows: -ENODEV (no gdb channel).
 */
typedef struct jh_gdb_object jh_gdb_object;
JH_API int jh_gdb_object_add(jh_ctx *ctx, const void *elf, size_t len, jh_gdb_object **obj);
JH_API int jh_gdb_object_remove(jh_ctx *ctx, jh_gdb_object *obj);

/* 1 when a debugger listens to the GDB JIT interface now (it has its breakpoint on
 * __jit_debug_register_code), else 0; one memory load, for a per-module check.
 * Thread-safe. */
JH_API int jh_gdb_listening(void);

/* A static English description of err (a negative errno or JH_E*). Never NULL. */
JH_API const char *jh_strerror(int err);

/* ---- Audit log: the VM's own facts (JH_AUDITLOG; no-ops returning 0 when it is off) --- */

/* An attribute of an event. */
enum jh_attr_kind {
    JH_ATTR_INT = 0,   /* .i */
    JH_ATTR_UINT = 1,  /* .u */
    JH_ATTR_DOUBLE = 2,/* .d */
    JH_ATTR_STR = 3,   /* .s, copied */
    JH_ATTR_ADDR = 4   /* .u: an address, typically of memory logged with jh_log_memory */
};
struct jh_attr {
    const char *key;
    enum jh_attr_kind kind;
    union { int64_t i; uint64_t u; double d; const char *s; } v;
};

/*
 * Snapshot size bytes at addr into the audit log, tagged with type_hint (a C type name
 * such as "struct proto", used offline to decode the bytes with the VM binary's DWARF
 * types; may be NULL). Thread-safe.
 *
 * Both jh_log_* may be called from a signal handler (a profiler's, a crash handler's) that
 * interrupts any thread, one inside a jitherald call included: they never wait for a
 * jitherald lock that thread may hold. A record that would have to (the thread was growing
 * the log file, or is in fork(), or is restarting a fork child's log) is dropped and
 * counted in the log's close record. They leave errno as they found it. A fork child's
 * first jh_log_* starts the child's log in the handler too, without allocating (see
 * fork() above). The call whose record passes the end of what the log's
 * file has ready (every 64-256 KiB of records) prepares the next stretch itself, in the
 * handler too: fallocate, a pwritev of zeros and MADV_POPULATE_WRITE, 64-256 µs, every
 * signal blocked for the first two. Their stack is small enough for a crash handler's
 * alternate stack of SIGSTKSZ: a fork child's first call, the deepest, takes under 2 KiB on
 * x86-64 and arm64 (at most 3 KiB is tested, on an alternate stack with a guard page).
 */
JH_API int jh_log_memory(jh_ctx *ctx, const void *addr, size_t size, const char *type_hint);

/* Record a timestamped event with nattrs attributes. Thread-safe; see jh_log_memory for
 * signal handlers. */
JH_API int jh_log_event(jh_ctx *ctx, const char *name, const struct jh_attr *attrs,
                        size_t nattrs);

#ifdef __cplusplus
}
#endif

#endif /* JITHERALD_H */
