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
    std::vector<uint64_t> ids;
    {
        std::lock_guard<std::mutex> g(mu_);
        auto it = ids_.find(key);
        if (it == ids_.end())
            return;
        ids.swap(it->second);
        ids_.erase(it);
    }
    remove_ids(ids);
}

void Herald::transfer(uint64_t dst, uint64_t src)
{
    std::lock_guard<std::mutex> g(mu_);
    auto it = ids_.find(src);
    if (it == ids_.end())
        return;
    std::vector<uint64_t> ids;
    ids.swap(it->second);
    ids_.erase(it);
    auto &v = ids_[dst];
    v.insert(v.end(), ids.begin(), ids.end());
}

} // namespace jitherald_llvm
