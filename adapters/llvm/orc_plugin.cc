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
#include <unordered_map>

#include <jitherald/llvm.h>
#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/Object/ELFObjectFile.h>

#include "herald.h"

namespace jitherald_llvm {
namespace {

using llvm::orc::MaterializationResponsibility;
using llvm::orc::ResourceKey;

struct Pending {
    std::unique_ptr<llvm::MemoryBuffer> copy;
    std::unique_ptr<llvm::object::ObjectFile> obj;
    const char *orig = nullptr;     /* the object JITLink builds its graph from */
    size_t orig_size = 0;
    std::vector<std::pair<llvm::jitlink::Block *, unsigned>> blocks;
    SectionLoads loads;
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
        p.copy = llvm::MemoryBuffer::getMemBufferCopy(in.getBuffer(), in.getBufferIdentifier());
        auto obj = llvm::object::ObjectFile::createObjectFile(p.copy->getMemBufferRef());
        if (!obj) {
            llvm::consumeError(obj.takeError());
            return;
        }
        p.obj = std::move(*obj);
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
                for (auto &b : it->second.blocks)
                    it->second.loads.addr[b.second] = b.first->getAddress().getValue();
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
        std::vector<uint64_t> ids = herald_.announce(describe(*p.obj, p.loads),
                                                     uint64_t(uintptr_t(p.orig)));
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
        const auto *elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(p.obj.get());
        if (!elf)
            return;
        /* (file offset, size, index) of every section with bytes, sorted: a hash map
         * here was a twentieth of the plugin's cost (issue 30) */
        struct At {
            uint64_t off, size;
            unsigned index;
            bool operator<(const At &o) const { return off < o.off; }
        };
        std::vector<At> at;
        unsigned nsec = 0;
        for (const llvm::object::SectionRef &s : p.obj->sections()) {
            nsec = std::max(nsec, unsigned(s.getIndex()) + 1);
            if (s.getSize() && !s.isBSS())
                at.push_back(At{llvm::object::ELFSectionRef(s).getOffset(), s.getSize(),
                                unsigned(s.getIndex())});
        }
        std::stable_sort(at.begin(), at.end());
        p.loads.addr.assign(nsec, 0);
        for (llvm::jitlink::Block *b : g.blocks()) {
            if (b->isZeroFill())
                continue;
            const char *d = b->getContent().data();
            if (d < p.orig || d >= p.orig + p.orig_size)
                continue;
            uint64_t off = uint64_t(d - p.orig);
            for (auto q = std::lower_bound(at.begin(), at.end(), At{off, 0, 0});
                 q != at.end() && q->off == off; ++q)
                if (q->size == b->getSize())
                    p.blocks.emplace_back(b, q->index);
        }
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
