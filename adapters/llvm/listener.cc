/*
 * listener.cc — jitherald::createJITEventListener: MCJIT and ORC's RTDyldObjectLinkingLayer.
 *
 *     auto jit = cantFail(LLJITBuilder().create());      // RuntimeDyld on ELF in LLVM 14
 *     static_cast<RTDyldObjectLinkingLayer &>(jit->getObjLinkingLayer())
 *         .registerJITEventListener(*jitherald::createJITEventListener());
 *
 *     $ JITHERALD=gdb gdb -q -ex 'break work' -ex run --args ./my-llvm-jit
 *     Breakpoint 1, work (n=1000) at work.c:5
 *
 * RuntimeDyld hands listeners the relocatable object and a LoadedObjectInfo that knows
 * where each section landed, which is all object.cc needs. The key is the memory
 * manager's address (ORC) or the object's (MCJIT), and comes back in notifyFreeingObject.
 */
#include <jitherald/llvm.h>

#include "herald.h"

namespace jitherald_llvm {
namespace {

class Listener final : public llvm::JITEventListener {
public:
    explicit Listener(jh_ctx *ctx) : herald_(ctx) {}

    void notifyObjectLoaded(ObjectKey key, const llvm::object::ObjectFile &obj,
                            const llvm::RuntimeDyld::LoadedObjectInfo &loads) override
    {
        if (!herald_.active())
            return;
        herald_.settle();
        /* nobody reads it yet: what LLVM's own GDB listener registers, at its cost */
        if (herald_.raw_ok()) {
            std::unique_ptr<llvm::MemoryBuffer> dbg = debug_object(obj, loads);
            if (herald_.keep_raw(key, dbg, key))
                return;
        }
        herald_.keep(key, herald_.announce(describe(obj, loads), key));
    }

    void notifyFreeingObject(ObjectKey key) override { herald_.remove(key); }

private:
    Herald herald_;
};

} // namespace
} // namespace jitherald_llvm

llvm::JITEventListener *jitherald::createJITEventListener(jh_ctx *ctx)
{
    return new jitherald_llvm::Listener(ctx);
}
