/*
 * herald.h — inside the LLVM adapter: what the listener (listener.cc) and the ORC plugin
 * (orc_plugin.cc) share. An object LLVM has placed in memory is described once
 * (object.cc: symbols and DWARF lines, read by lines.cc; eh_frame.cc: the .eh_frame, relocated, which the library
 * translates into unwind rules) from the relocatable
 * object file plus where each of its sections was loaded, and announced through one
 * jitherald context (herald.cc), under the key LLVM uses to free it.
 */
#ifndef JITHERALD_LLVM_HERALD_H
#define JITHERALD_LLVM_HERALD_H

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <jitherald.h>
#include <llvm/DebugInfo/DIContext.h>
#include <llvm/Object/ELFTypes.h>
#include <llvm/Object/ObjectFile.h>

namespace jitherald_llvm {

/* One function of an object, at its load address. */
struct Func {
    std::string name;               /* the symbol, as in the object (mangled) */
    std::string display;            /* demangled, for people; == name for C */
    uint64_t start = 0, size = 0;
    std::vector<jh_line> lines;     /* offsets from start; file: index into files */
    std::vector<uint32_t> files;    /* index into Object::files */
    uint32_t prologue_end = 0;      /* offset of the first prologue_end row; 0: none */
};

struct Object {
    std::vector<std::string> files; /* every source file named by a line of a function */
    std::vector<Func> funcs;        /* ascending start, disjoint */
    std::vector<std::string> notes; /* what was left out, and why (JITHERALD_DEBUG=1) */
    /* The object's .eh_frame, relocated as if it lay at eh_frame_addr (eh_frame.cc):
     * jh_code.eh_frame for every function (JH_UNWIND_EH_FRAME). Empty: none. */
    std::vector<uint8_t> eh_frame;
    uint64_t eh_frame_addr = 0;
};

/* Where the sections of one relocatable object were loaded: for the ORC plugin, which
 * reads the addresses off JITLink's graph (RuntimeDyld's LoadedObjectInfo is one too). */
class SectionLoads final : public llvm::LoadedObjectInfo {
public:
    std::vector<uint64_t> addr;     /* by section index; 0: not loaded */
    uint64_t getSectionLoadAddress(const llvm::object::SectionRef &s) const override
    {
        return s.getIndex() < addr.size() ? addr[s.getIndex()] : 0;
    }
    std::unique_ptr<llvm::LoadedObjectInfo> clone() const override
    {
        return std::make_unique<SectionLoads>(*this);
    }
};

/* Which reader gives describe() the line tables: lines.cc's, falling back to LLVM's
 * DWARFContext for what it does not read; or DWARFContext alone (the unit test compares). */
enum class Lines { FAST, DWARF_CONTEXT };

/* object.cc: describe obj, whose section s was loaded at loads.getSectionLoadAddress(s)
 * (0: not loaded; its functions are left out). Reads no process memory. */
Object describe(const llvm::object::ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                Lines how = Lines::FAST);

/* One row of a line table, as LLVM 14's DWARFDebugLine::Row holds it (16-bit column and
 * file: the same truncation whichever reader). */
struct LineRow {
    uint64_t addr;
    uint32_t line;
    uint16_t column, file;
    bool prologue_end;
};

/* A compile unit's line table: the rows of its valid sequences in LLVM's order (sorted by
 * section and end address), end rows left out; path(file) resolves a row's file to an
 * absolute path as Prologue::getFileNameByIndex does (false: no such file). */
struct LineUnit {
    uint64_t key;               /* the table's offset in .debug_line */
    std::vector<LineRow> rows;
    std::function<bool(uint64_t file, std::string &path)> path;
};

/* lines.cc: every compile unit's line table, read from the object's sections with their
 * relocations applied at the load addresses. false: something it does not read as LLVM
 * does (units then holds garbage): ask DWARFContext. */
bool read_line_units(const llvm::object::ObjectFile &obj, const llvm::LoadedObjectInfo &loads,
                     std::vector<LineUnit> &units);

/* eh_frame.cc: obj's .eh_frame with its relocations applied, as it would lie at addr;
 * false (a note says why, when there was one) when the object has none we can hand on. */
bool relocated_eh_frame(const llvm::object::ObjectFile &obj,
                        const llvm::LoadedObjectInfo &loads, std::vector<uint8_t> &out,
                        uint64_t &addr, std::vector<std::string> &notes);

/* An ELF64 little-endian object's section headers, in place (n of them), or nullptr when
 * buf is not one or its headers lie outside it. */
llvm::object::ELF64LE::Shdr *section_headers(char *buf, size_t size, unsigned &n);

/* A heap copy of bytes (nullptr: out of memory). */
std::unique_ptr<llvm::WritableMemoryBuffer> copy_bytes(llvm::StringRef bytes, llvm::StringRef name);

/* The object as a debugger reads it: a copy whose section headers carry the load
 * addresses (sh_addr, 0 in LLVM's relocatable objects; sections not loaded keep 0), as
 * LLVM's listeners register it.
 * nullptr for an object that is not ELF64 little-endian. */
std::unique_ptr<llvm::MemoryBuffer> debug_object(const llvm::object::ObjectFile &obj,
                                                 const llvm::LoadedObjectInfo &loads);

/* debug_object() undone: the relocatable object again (sh_addr 0, as LLVM emits it) and
 * where its sections were loaded, for describe(). nullptr when buf is not one. */
std::unique_ptr<llvm::object::ObjectFile> undo_debug_object(const llvm::MemoryBuffer &dbg,
                                                            std::unique_ptr<llvm::MemoryBuffer> &copy,
                                                            SectionLoads &loads);

/* herald.cc: one jitherald context and the code announced through it, by LLVM's key.
 *
 * Two forms of a module. While gdb is the only live channel and no debugger listens, a
 * module is registered as its object with load addresses (debug_object(): what LLVM's
 * own GDB listener registers) through jh_gdb_object_add: a copy and a list edit, nothing
 * described, and gdb attaching later reads it as it reads LLVM's. While a debugger
 * listens, new modules are described and announced (jh_code_add: packed images, few
 * objfiles for gdb); the objects it read on attach stay: replacing N of them under a
 * debugger costs 2N stops, each walking N objfiles (5,000 modules: over 11 minutes of
 * gdb's CPU, not finished). Once another channel is on (or gdb off), settle() describes
 * every module kept as an object, announces it and unregisters the object: the new
 * channel's rundown has it. */
class Herald {
public:
    explicit Herald(jh_ctx *ctx);   /* nullptr: open our own, closed by the destructor */
    ~Herald();
    Herald(const Herald &) = delete;
    Herald &operator=(const Herald &) = delete;

    /* false when no channel is live: then there is nothing to describe. */
    bool active() const { return ctx_ && jh_channels(ctx_) != 0; }
    /* Announce every function of obj; returns their ids (label: for JITHERALD_DEBUG). */
    std::vector<uint64_t> announce(const Object &obj, uint64_t label);
    /* The cheap form applies now: gdb the only live channel, no debugger listening. */
    bool raw_ok() const { return jh_channels(ctx_) == JH_GDB && !jh_gdb_listening(); }
    /* Register dbg (an ELF object with its load addresses in its section headers) as it
     * is (debug_object()), kept under key until removed; false (buf left to the caller)
     * when it could not be. */
    bool keep_raw(uint64_t key, std::unique_ptr<llvm::MemoryBuffer> &buf, uint64_t label);
    /* Call before each module: once a channel other than gdb is live (or gdb is not),
     * every module kept as an object is described and announced, and its object
     * unregistered. */
    void settle()
    {
        if (nraw_.load(std::memory_order_relaxed) && jh_channels(ctx_) != JH_GDB)
            convert_all();
    }
    /* Remember ids under LLVM's key, to be removed with it. */
    void keep(uint64_t key, const std::vector<uint64_t> &ids);
    void remove(uint64_t key);
    void remove_ids(const std::vector<uint64_t> &ids);
    void transfer(uint64_t dst, uint64_t src);

private:
    struct Raw {
        std::unique_ptr<llvm::MemoryBuffer> buf;
        jh_gdb_object *h;
        uint64_t label;
    };
    void convert_all();
    void drop_raw(std::vector<Raw> &raw);

    jh_ctx *ctx_ = nullptr;
    bool own_ = false;
    bool debug_ = false;
    std::mutex mu_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> ids_;
    /* Removal, transfer and conversion one at a time: a module converted while LLVM frees
     * it would be announced after its removal. mu_ only guards the maps. */
    std::mutex order_;
    std::unordered_map<uint64_t, std::vector<Raw>> raw_;
    std::atomic<size_t> nraw_{0};
};

} // namespace jitherald_llvm

#endif
