/*
 * herald.cc — one jitherald context, and which ids each LLVM object got.
 *
 *     $ JITHERALD=perfmap,gdb JITHERALD_DEBUG=1 ./my-llvm-jit
 *     jitherald-llvm: object 0x55d0c8e4b2a0: 3 functions, 2 files, 3 with unwind rules
 *
 * LLVM frees memory per object (RuntimeDyld's ObjectKey, ORC's ResourceKey); the ids of
 * an object's functions are kept under that key and removed together.
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <llvm/BinaryFormat/ELF.h>

#include "herald.h"

namespace jitherald_llvm {

Herald::Herald(jh_ctx *ctx) : ctx_(ctx)
{
    const char *d = getenv("JITHERALD_DEBUG");
    debug_ = d && *d && strcmp(d, "0") != 0;
    if (ctx_)
        return;
    jh_options o{};
    o.sz = sizeof o;
    o.engine = "llvm";
    if (jh_open(&ctx_, &o) == 0)
        own_ = true;
    else
        ctx_ = nullptr;
}

Herald::~Herald()
{
    std::vector<uint64_t> keys;
    {
        std::lock_guard<std::mutex> g(mu_);
        for (auto &k : ids_)
            keys.push_back(k.first);
        for (auto &k : raw_)
            if (!ids_.count(k.first))
                keys.push_back(k.first);
    }
    for (uint64_t k : keys)
        remove(k);
    if (own_)
        jh_close(ctx_);
}

std::vector<uint64_t> Herald::announce(const Object &obj, uint64_t label)
{
    std::vector<uint64_t> ids;
    unsigned with_cfi = 0;
    for (const Func &f : obj.funcs) {
        std::vector<const char *> files;
        for (uint32_t i : f.files)
            files.push_back(obj.files[i].c_str());
        jh_code c{};
        c.sz = sizeof c;
        /* people read the demangled name (perf, valgrind, the audit log, a backtrace);
         * the debuggers' symbol table gets the object's own, which they demangle and
         * `break` accepts whatever the language */
        c.name = f.display.c_str();
        c.symbol = f.name.c_str();
        c.start = reinterpret_cast<const void *>(uintptr_t(f.start));
        c.size = f.size;
        c.files = files.data();
        c.nfiles = uint32_t(files.size());
        c.lines = f.lines.data();
        c.nlines = uint32_t(f.lines.size());
        c.prologue_end = f.prologue_end;
        if (!obj.eh_frame.empty()) {
            /* the library finds the function's FDE, translates it, and takes the CIE's
             * personality and the FDE's LSDA for C++ landing pads in JIT frames (LLVM
             * keeps both alive as long as the code) */
            c.unwind = JH_UNWIND_EH_FRAME;
            c.eh_frame = obj.eh_frame.data();
            c.eh_frame_len = obj.eh_frame.size();
            c.eh_frame_addr = uintptr_t(obj.eh_frame_addr);
        }
        uint64_t id = 0;
        int r = jh_code_add(ctx_, &c, &id);
        if (r == -EINVAL && c.unwind == JH_UNWIND_EH_FRAME) {
            /* no FDE for it, or rules jitherald refuses (JITHERALD_DEBUG=1 says which):
             * keep the name and lines rather than lose the function */
            if (debug_)
                fprintf(stderr, "jitherald-llvm: %s: no unwind rules (%s), announced without\n",
                        f.name.c_str(), jh_strerror(r));
            c.unwind = JH_UNWIND_NONE;
            c.eh_frame = nullptr;
            c.eh_frame_len = 0;
            c.eh_frame_addr = 0;
            r = jh_code_add(ctx_, &c, &id);
        } else if (r == 0 && c.unwind == JH_UNWIND_EH_FRAME) {
            with_cfi++;
        }
        if (r == 0)
            ids.push_back(id);
        else if (debug_)
            fprintf(stderr, "jitherald-llvm: %s at %#llx: %s\n", f.name.c_str(),
                    (unsigned long long)f.start, jh_strerror(r));
    }
    /* An object is a compile batch: what a deferring channel (JITHERALD_GDB_DEFER=1) holds
     * back goes out now, before LLVM hands the code to anyone who could run it. */
    if (!ids.empty())
        jh_flush(ctx_);
    if (debug_) {
        fprintf(stderr, "jitherald-llvm: object %#llx: %zu functions, %zu files, %u with unwind rules\n",
                (unsigned long long)label, obj.funcs.size(), obj.files.size(), with_cfi);
        for (const std::string &n : obj.notes)
            fprintf(stderr, "jitherald-llvm: object %#llx: %s\n", (unsigned long long)label, n.c_str());
    }
    return ids;
}

llvm::object::ELF64LE::Shdr *section_headers(char *buf, size_t size, unsigned &n)
{
    using Elf = llvm::object::ELF64LE;
    if (size < sizeof(Elf::Ehdr) || memcmp(buf, llvm::ELF::ElfMagic, 4) != 0 ||
        buf[llvm::ELF::EI_CLASS] != llvm::ELF::ELFCLASS64 ||
        buf[llvm::ELF::EI_DATA] != llvm::ELF::ELFDATA2LSB)
        return nullptr;
    Elf::Ehdr eh;
    memcpy(&eh, buf, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf::Shdr) || eh.e_shoff > size ||
        eh.e_shoff % alignof(Elf::Shdr) || (size - eh.e_shoff) / sizeof(Elf::Shdr) < eh.e_shnum)
        return nullptr;
    n = eh.e_shnum;
    return reinterpret_cast<Elf::Shdr *>(buf + eh.e_shoff);
}

std::unique_ptr<llvm::WritableMemoryBuffer> copy_bytes(llvm::StringRef bytes, llvm::StringRef name)
{
    auto buf = llvm::WritableMemoryBuffer::getNewUninitMemBuffer(bytes.size(), name);
    if (buf)
        memcpy(buf->getBufferStart(), bytes.data(), bytes.size());
    return buf;
}

/* A copy of an ELF64LE object and its section headers in the copy (null: not one). */
static std::unique_ptr<llvm::WritableMemoryBuffer> copy_elf(llvm::StringRef bytes, llvm::StringRef name,
                                                            llvm::object::ELF64LE::Shdr *&sh, unsigned &n)
{
    auto buf = copy_bytes(bytes, name);
    n = 0;
    if (!buf || !(sh = section_headers(buf->getBufferStart(), buf->getBufferSize(), n)))
        return nullptr;
    return buf;
}

/* The bytes LoadedObjectInfo::getObjectForDebug gives (what LLVM's GDB listener
 * registers), without the ObjectFile it builds over them. */
std::unique_ptr<llvm::MemoryBuffer> debug_object(const llvm::object::ObjectFile &obj,
                                                 const llvm::LoadedObjectInfo &loads)
{
    llvm::object::ELF64LE::Shdr *sh;
    unsigned n;
    auto buf = copy_elf(obj.getData(), obj.getFileName(), sh, n);
    if (!buf)
        return nullptr;
    for (const llvm::object::SectionRef &s : obj.sections())
        if (s.getIndex() < n)
            if (uint64_t a = loads.getSectionLoadAddress(s))
                if (!sh[s.getIndex()].sh_addr)
                    sh[s.getIndex()].sh_addr = a;
    return buf;
}

/* describe() misreads a relocatable object whose headers carry load addresses (seen: the
 * function at the low 32 bits of its address, no lines, no FDE found; LLVM's own debug
 * object the same): it is handed the object as LLVM emitted it, sh_addr 0, and the
 * addresses apart. */
std::unique_ptr<llvm::object::ObjectFile> undo_debug_object(const llvm::MemoryBuffer &dbg,
                                                            std::unique_ptr<llvm::MemoryBuffer> &copy,
                                                            SectionLoads &loads)
{
    llvm::object::ELF64LE::Shdr *sh;
    unsigned n;
    auto buf = copy_elf(dbg.getBuffer(), dbg.getBufferIdentifier(), sh, n);
    if (!buf)
        return nullptr;
    loads.addr.assign(n, 0);
    for (unsigned i = 0; i < n; i++) {
        loads.addr[i] = sh[i].sh_addr;
        sh[i].sh_addr = 0;
    }
    auto obj = llvm::object::ObjectFile::createObjectFile(buf->getMemBufferRef());
    if (!obj) {
        llvm::consumeError(obj.takeError());
        return nullptr;
    }
    copy = std::move(buf);
    return std::move(*obj);
}

bool Herald::keep_raw(uint64_t key, std::unique_ptr<llvm::MemoryBuffer> &buf, uint64_t label)
{
    if (!buf)
        return false;
    jh_gdb_object *h = nullptr;
    int r = jh_gdb_object_add(ctx_, buf->getBufferStart(), buf->getBufferSize(), &h);
    if (r) {
        if (debug_)
            fprintf(stderr, "jitherald-llvm: object %#llx: LLVM's debug object not registered "
                    "(%s): described instead\n", (unsigned long long)label, jh_strerror(r));
        return false;
    }
    std::lock_guard<std::mutex> g(mu_);
    raw_[key].push_back(Raw{std::move(buf), h, label});
    nraw_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void Herald::drop_raw(std::vector<Raw> &raw)
{
    for (Raw &r : raw)
        jh_gdb_object_remove(ctx_, r.h);
    raw.clear();
}

void Herald::convert_all()
{
    std::lock_guard<std::mutex> order(order_);
    std::unordered_map<uint64_t, std::vector<Raw>> all;
    {
        std::lock_guard<std::mutex> g(mu_);
        all.swap(raw_);
        nraw_.store(0, std::memory_order_relaxed);
    }
    size_t n = 0;
    for (auto &k : all) {
        for (Raw &r : k.second) {
            std::unique_ptr<llvm::MemoryBuffer> copy;
            SectionLoads loads;
            auto obj = undo_debug_object(*r.buf, copy, loads);
            if (obj && active())
                keep(k.first, announce(describe(*obj, loads), r.label));
            n++;
        }
        /* announced (in images gdb reads too) before the objects go: never a moment
         * where a function is in neither */
        drop_raw(k.second);
    }
    if (debug_ && n)
        fprintf(stderr, "jitherald-llvm: channels changed: %zu modules registered as debug "
                "objects now announced\n", n);
}

void Herald::keep(uint64_t key, const std::vector<uint64_t> &ids)
{
    if (ids.empty())
        return;
    std::lock_guard<std::mutex> g(mu_);
    auto &v = ids_[key];
    v.insert(v.end(), ids.begin(), ids.end());
}

void Herald::remove_ids(const std::vector<uint64_t> &ids)
{
    for (uint64_t id : ids)
        jh_code_remove(ctx_, id);
}

void Herald::remove(uint64_t key)
{
    std::lock_guard<std::mutex> order(order_);
    std::vector<uint64_t> ids;
    std::vector<Raw> raw;
    {
        std::lock_guard<std::mutex> g(mu_);
        auto it = ids_.find(key);
        if (it != ids_.end()) {
            ids.swap(it->second);
            ids_.erase(it);
        }
        auto r = raw_.find(key);
        if (r != raw_.end()) {
            raw.swap(r->second);
            raw_.erase(r);
            nraw_.fetch_sub(raw.size(), std::memory_order_relaxed);
        }
    }
    remove_ids(ids);
    drop_raw(raw);
}

void Herald::transfer(uint64_t dst, uint64_t src)
{
    std::lock_guard<std::mutex> order(order_);
    std::lock_guard<std::mutex> g(mu_);
    auto it = ids_.find(src);
    if (it != ids_.end()) {
        std::vector<uint64_t> ids;
        ids.swap(it->second);
        ids_.erase(it);
        auto &v = ids_[dst];
        v.insert(v.end(), ids.begin(), ids.end());
    }
    auto r = raw_.find(src);
    if (r != raw_.end()) {
        std::vector<Raw> raw;
        raw.swap(r->second);
        raw_.erase(r);
        auto &v = raw_[dst];
        for (Raw &x : raw)
            v.push_back(std::move(x));
    }
}

} // namespace jitherald_llvm
