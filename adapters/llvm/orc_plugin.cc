/*
 * orc_plugin.cc — jitherald::createORCPlugin: ORC's ObjectLinkingLayer (JITLink).
 *
 *     auto jit = cantFail(LLJITBuilder()
 *         .setObjectLinkingLayerCreator([](ExecutionSession &es, const Triple &) {
 *             auto l = std::make_unique<ObjectLinkingLayer>(es,
 *                          std::make_unique<jitlink::InProcessMemoryManager>(...));
 *             l->addPlugin(std::make_unique<EHFrameRegistrationPlugin>(...));
 *             l->addPlugin(jitherald::createORCPlugin());
 *             return l;
 *         }).create());
 *
 *     $ JITHERALD=elfmap valgrind --tool=callgrind ./my-llvm-jit && callgrind_annotate
 *         3,001,512  work.c:work [/tmp/jitherald-0/llvm-4242-1.elf]
 *
 * JITLink does not give plugins the relocatable object with section addresses the way
 * RuntimeDyld gives listeners a LoadedObjectInfo: its graph has no debug sections, one
 * block per loaded section and no section indices. So the plugin notes where the object
 * lies (notifyMaterializing: LLVM's link context owns it until after notifyEmitted), tells
 * which block holds which section by where the block's bytes point into the object before
 * allocation copies them (after pruning, so only blocks that will be loaded), and when it
 * is emitted (finalized, executable, and before any lookup can return one of its
 * addresses) reads the blocks' addresses, copies the object and registers it or describes
 * it (object.cc).
 *
 * Per module, without a debugger, this is LLVM's own listener's work (a copy, a list edit)
 * plus the plugin's bookkeeping; what that costs is kept small (issue 30, docs/cost.md):
 * the copy is made when emitted, not when materializing, where it was the first large
 * allocation after LLVM freed the module's compile state (glibc then consolidates its
 * free lists: 9,500 instructions a module, against 400 later); the module's state is
 * looked up twice under the mutex, not four times (the pass holds it); one pass, not two;
 * no allocation while matching blocks to sections.
 */
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <jitherald/llvm.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/Object/ELFObjectFile.h>

#include "herald.h"

namespace jitherald_llvm {
namespace {

using llvm::orc::MaterializationResponsibility;
using llvm::orc::ResourceKey;

/* A block made from the bytes of section index, off bytes from the section's start. */
struct Piece {
    llvm::jitlink::Block *block;
    unsigned index;
    uint64_t off;
};

struct Pending {
    std::unique_ptr<llvm::WritableMemoryBuffer> copy;  /* made when emitted (copy()) */
    std::unique_ptr<llvm::object::ObjectFile> obj;
    const char *orig = nullptr;     /* the object JITLink builds its graph from */
    size_t orig_size = 0;
    llvm::StringRef name;           /* its buffer's name: alive as long as orig */
    llvm::SmallVector<Piece, 16> blocks;
    SectionLoads loads;
    bool mapped = false;    /* blocks matched to sections (map_blocks) */
    bool placed = false;    /* every loaded section has one address (place_sections) */
};

/* The module this thread announced to notifyMaterializing last: LLVM 14 calls
 * modifyPassConfig for it right after, in the same thread, so the passes find its state
 * without a lookup (anything else: looked up). */
struct Last {
    const void *plugin;
    MaterializationResponsibility *mr;
    Pending *p;
};
thread_local Last last_materialized{};

class Plugin final : public llvm::orc::ObjectLinkingLayer::Plugin {
public:
    explicit Plugin(jh_ctx *ctx) : herald_(ctx) {}

    void notifyMaterializing(MaterializationResponsibility &mr, llvm::jitlink::LinkGraph &,
                             llvm::jitlink::JITLinkContext &, llvm::MemoryBufferRef in) override
    {
        last_materialized = Last{};     /* never a module before, at the same address */
        if (!herald_.active())
            return;
        Pending *p;
        {
            /* parsed only when described: registered as it is, gdb is the one to read it */
            std::lock_guard<std::mutex> g(mu_);
            p = &pending_[&mr];
        }
        /* copied when emitted: the context that owns the object lives until then */
        p->orig = in.getBufferStart();
        p->orig_size = in.getBufferSize();
        p->name = in.getBufferIdentifier();
        last_materialized = Last{this, &mr, p};
    }

    void modifyPassConfig(MaterializationResponsibility &mr, llvm::jitlink::LinkGraph &,
                          llvm::jitlink::PassConfiguration &config) override
    {
        if (!herald_.active())
            return;
        Pending *p = nullptr;
        if (last_materialized.plugin == this && last_materialized.mr == &mr) {
            p = last_materialized.p;
        } else {
            std::lock_guard<std::mutex> g(mu_);
            auto it = pending_.find(&mr);
            if (it != pending_.end())
                p = &it->second;
        }
        last_materialized = Last{};
        if (!p)
            return;
        /* p stays where it is (an unordered_map's elements do not move) until this link's
         * notifyEmitted or notifyFailed takes it out, after its passes. One pass: the
         * blocks' addresses are read in notifyEmitted (the linker, which owns the graph,
         * calls it and lives until it returns), not in a pass of their own, whose list
         * (empty so far) would be one more allocation per module. */
        config.PostPrunePasses.push_back([p](llvm::jitlink::LinkGraph &g) {
            map_blocks(*p, g);
            return llvm::Error::success();
        });
    }

    llvm::Error notifyEmitted(MaterializationResponsibility &mr) override
    {
        decltype(pending_)::node_type node;
        {
            std::lock_guard<std::mutex> g(mu_);
            auto it = pending_.find(&mr);
            if (it == pending_.end())
                return llvm::Error::success();
            node = pending_.extract(it);
        }
        Pending &p = node.mapped();
        if (!copy(p))
            return llvm::Error::success();
        if (p.mapped)
            place_sections(p);
        herald_.settle();
        uint64_t label = uint64_t(uintptr_t(p.orig));
        if (herald_.raw_ok() && p.placed && patch_headers(p)) {
            /* nobody reads it yet: the object with its load addresses, as LLVM's
             * DebugObjectManagerPlugin registers it */
            std::unique_ptr<llvm::MemoryBuffer> buf = std::move(p.copy);
            bool kept = false;
            llvm::Error e = mr.withResourceKeyDo([&](ResourceKey k) {
                kept = herald_.keep_raw(k, buf, label);
            });
            if (e) {
                llvm::consumeError(std::move(e));   /* removed meanwhile: nothing to keep */
                return llvm::Error::success();
            }
            if (kept)
                return llvm::Error::success();
            p.copy.reset(static_cast<llvm::WritableMemoryBuffer *>(buf.release()));
        }
        if (!parse(p))
            return llvm::Error::success();
        std::vector<uint64_t> ids = herald_.announce(describe(*p.obj, p.loads), label);
        /* Kept under the tracker's key while the session lock says it is alive; if it was
         * removed meanwhile, the layer frees the memory after the plugins return. */
        llvm::Error e = mr.withResourceKeyDo([&](ResourceKey k) { herald_.keep(k, ids); });
        if (e) {
            llvm::consumeError(std::move(e));
            herald_.remove_ids(ids);
        }
        return llvm::Error::success();
    }

    llvm::Error notifyFailed(MaterializationResponsibility &mr) override
    {
        if (last_materialized.mr == &mr)
            last_materialized = Last{};
        std::lock_guard<std::mutex> g(mu_);
        pending_.erase(&mr);
        return llvm::Error::success();
    }

    llvm::Error notifyRemovingResources(ResourceKey k) override
    {
        herald_.remove(k);
        return llvm::Error::success();
    }

    void notifyTransferringResources(ResourceKey dst, ResourceKey src) override
    {
        herald_.transfer(dst, src);
    }

private:
    /* Which surviving block holds which section: a block made from a section points at
     * the section's bytes in the object until allocation copies it. */
    static void map_blocks(Pending &p, llvm::jitlink::LinkGraph &g)
    {
        /* (file offset, size, index) of every section with bytes, sorted: a hash map
         * here was a twentieth of the plugin's cost (issue 30) */
        struct At {
            uint64_t off, size;
            unsigned index;
            bool operator<(const At &o) const { return off < o.off; }
        };
        llvm::SmallVector<At, 32> at;
        unsigned nsec = 0;
        if (const auto *sh = section_headers(const_cast<char *>(p.orig), p.orig_size, nsec)) {
            for (unsigned i = 0; i < nsec; i++)
                if (sh[i].sh_size && sh[i].sh_type != llvm::ELF::SHT_NOBITS)
                    at.push_back(At{sh[i].sh_offset, sh[i].sh_size, i});
        } else {
            if (!copy(p) || !parse(p))
                return;
            if (!llvm::isa<llvm::object::ELFObjectFileBase>(p.obj.get()))
                return;
            for (const llvm::object::SectionRef &s : p.obj->sections()) {
                nsec = std::max(nsec, unsigned(s.getIndex()) + 1);
                if (s.getSize() && !s.isBSS())
                    at.push_back(At{llvm::object::ELFSectionRef(s).getOffset(), s.getSize(),
                                    unsigned(s.getIndex())});
            }
        }
        /* Searched once per graph section (below): a few sections, a scan; many (one per
         * function, -ffunction-sections), sorted and halved. Sorted they are not in LLVM's
         * objects (.strtab comes first, its bytes last); sections with bytes do not
         * overlap, so no two start at one offset. */
        bool few = at.size() <= 32;
        if (!few && !std::is_sorted(at.begin(), at.end()))
            std::sort(at.begin(), at.end());
        p.loads.addr.assign(nsec, 0);
        p.mapped = true;
        const At *q = nullptr;
        for (llvm::jitlink::Block *b : g.blocks()) {
            if (b->isZeroFill())
                continue;
            const char *d = b->getContent().data();
            if (d < p.orig || d >= p.orig + p.orig_size)
                continue;
            uint64_t off = uint64_t(d - p.orig);
            /* the section whose bytes hold the block's: the last starting at or before it
             * (sections with bytes do not overlap); the blocks of a graph section come
             * from one object section, in a row: the last one found is tried first */
            if (!q || off < q->off || off - q->off >= q->size) {
                q = nullptr;
                if (few) {
                    for (const At &a : at)
                        if (off >= a.off && off - a.off < a.size) {
                            q = &a;
                            break;
                        }
                } else {
                    auto u = std::upper_bound(at.begin(), at.end(), At{off, 0, 0});
                    if (u != at.begin())
                        q = &*--u;
                }
                if (!q)
                    continue;
            }
            if (off + b->getSize() <= q->off + q->size)
                p.blocks.push_back(Piece{b, q->index, off - q->off});
        }
    }

    /* Section addresses from the blocks'. A section JITLink split into blocks (.eh_frame:
     * one per CIE and FDE) has an address only when its blocks kept the object's layout,
     * every block at the same distance from the section's start as in the object: then
     * the object's bytes, relocated by gdb, describe the loaded ones. Otherwise placed is
     * false and the module is described instead of registered as it is. */
    static void place_sections(Pending &p)
    {
        p.placed = true;
        for (const Piece &b : p.blocks) {
            uint64_t base = b.block->getAddress().getValue() - b.off;
            uint64_t &a = p.loads.addr[b.index];
            if (!a)
                a = base;
            else if (a != base)
                p.placed = false;
        }
    }

    using Elf = llvm::object::ELF64LE;

    static Elf::Shdr *headers(Pending &p, unsigned &n)
    {
        return section_headers(p.copy->getBufferStart(), p.copy->getBufferSize(), n);
    }

    /* The copy registered or described: made once, while LLVM still holds the object. */
    static bool copy(Pending &p)
    {
        if (!p.copy && p.orig)
            p.copy = copy_bytes(llvm::StringRef(p.orig, p.orig_size), p.name);
        return p.copy != nullptr;
    }

    /* The copy's section headers get the load addresses. */
    static bool patch_headers(Pending &p)
    {
        unsigned n = 0;
        Elf::Shdr *sh = headers(p, n);
        if (!sh)
            return false;
        for (unsigned i = 0; i < n && i < p.loads.addr.size(); i++)
            if (p.loads.addr[i] && !sh[i].sh_addr)
                sh[i].sh_addr = p.loads.addr[i];
        return true;
    }

    static bool parse(Pending &p)
    {
        if (p.obj)
            return true;
        if (!p.copy)
            return false;
        auto obj = llvm::object::ObjectFile::createObjectFile(p.copy->getMemBufferRef());
        if (!obj) {
            llvm::consumeError(obj.takeError());
            return false;
        }
        p.obj = std::move(*obj);
        return true;
    }

    Herald herald_;
    std::mutex mu_;
    std::unordered_map<MaterializationResponsibility *, Pending> pending_;
};

} // namespace
} // namespace jitherald_llvm

std::unique_ptr<llvm::orc::ObjectLinkingLayer::Plugin> jitherald::createORCPlugin(jh_ctx *ctx)
{
    return std::make_unique<jitherald_llvm::Plugin>(ctx);
}
