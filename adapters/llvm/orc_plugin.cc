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
 * block per loaded section and no section indices. So the plugin keeps a copy of the
 * object (notifyMaterializing), tells which block holds which section by where the
 * block's bytes point into the object before allocation copies them (after pruning, so
 * only blocks that will be loaded), reads the blocks' addresses once allocated, and
 * describes the object (object.cc) when it is emitted: finalized, executable, and before
 * any lookup can return one of its addresses.
 */
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <jitherald/llvm.h>
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
    std::unique_ptr<llvm::WritableMemoryBuffer> copy;
    std::unique_ptr<llvm::object::ObjectFile> obj;
    const char *orig = nullptr;     /* the object JITLink builds its graph from */
    size_t orig_size = 0;
    std::vector<Piece> blocks;
    SectionLoads loads;
    bool placed = false;    /* every loaded section has one address (place_sections) */
};

class Plugin final : public llvm::orc::ObjectLinkingLayer::Plugin {
public:
    explicit Plugin(jh_ctx *ctx) : herald_(ctx) {}

    void notifyMaterializing(MaterializationResponsibility &mr, llvm::jitlink::LinkGraph &,
                             llvm::jitlink::JITLinkContext &, llvm::MemoryBufferRef in) override
    {
        if (!herald_.active())
            return;
        Pending p;
        p.orig = in.getBufferStart();
        p.orig_size = in.getBufferSize();
        p.copy = copy_bytes(in.getBuffer(), in.getBufferIdentifier());
        if (!p.copy)
            return;
        /* parsed only when described: registered as it is, gdb is the one to read it */
        std::lock_guard<std::mutex> g(mu_);
        pending_[&mr] = std::move(p);
    }

    void modifyPassConfig(MaterializationResponsibility &mr, llvm::jitlink::LinkGraph &,
                          llvm::jitlink::PassConfiguration &config) override
    {
        if (!herald_.active())
            return;
        config.PostPrunePasses.push_back([this, &mr](llvm::jitlink::LinkGraph &g) {
            map_blocks(mr, g);
            return llvm::Error::success();
        });
        config.PostAllocationPasses.push_back([this, &mr](llvm::jitlink::LinkGraph &) {
            std::lock_guard<std::mutex> g(mu_);
            auto it = pending_.find(&mr);
            if (it != pending_.end())
                place_sections(it->second);
            return llvm::Error::success();
        });
    }

    llvm::Error notifyEmitted(MaterializationResponsibility &mr) override
    {
        Pending p;
        {
            std::lock_guard<std::mutex> g(mu_);
            auto it = pending_.find(&mr);
            if (it == pending_.end())
                return llvm::Error::success();
            p = std::move(it->second);
            pending_.erase(it);
        }
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
    void map_blocks(MaterializationResponsibility &mr, llvm::jitlink::LinkGraph &g)
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = pending_.find(&mr);
        if (it == pending_.end())
            return;
        Pending &p = it->second;
        /* (file offset, size, index) of every section with bytes, sorted: a hash map
         * here was a twentieth of the plugin's cost (issue 30) */
        struct At {
            uint64_t off, size;
            unsigned index;
            bool operator<(const At &o) const { return off < o.off; }
        };
        std::vector<At> at;
        unsigned nsec = 0;
        if (const auto *sh = headers(p, nsec)) {
            for (unsigned i = 0; i < nsec; i++)
                if (sh[i].sh_size && sh[i].sh_type != llvm::ELF::SHT_NOBITS)
                    at.push_back(At{sh[i].sh_offset, sh[i].sh_size, i});
        } else {
            if (!parse(p))
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
        if (!std::is_sorted(at.begin(), at.end()))     /* they usually are */
            std::stable_sort(at.begin(), at.end());
        p.loads.addr.assign(nsec, 0);
        for (llvm::jitlink::Block *b : g.blocks()) {
            if (b->isZeroFill())
                continue;
            const char *d = b->getContent().data();
            if (d < p.orig || d >= p.orig + p.orig_size)
                continue;
            uint64_t off = uint64_t(d - p.orig);
            /* the section whose bytes hold the block's: the last starting at or before it
             * (sections with bytes do not overlap) */
            auto q = std::upper_bound(at.begin(), at.end(), At{off, 0, 0});
            if (q == at.begin())
                continue;
            --q;
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
