/*
 * jitherald/llvm.h — announce the code an LLVM JIT loads through jitherald.
 *
 * One listener gives an LLVM JIT every jitherald channel: gdb and lldb (names, file:line,
 * `break`), perf (perf map, jitdump, elfmap), valgrind, the process's own unwinder and the
 * audit log. For every object LLVM loads, each function is announced with its name, address
 * and size, the line table of the object's DWARF (.debug_line, every file) and the unwind
 * rules of the object's own .eh_frame; it is removed when LLVM frees the object.
 *
 *     #include <jitherald/llvm.h>   // c++ ... $(pkg-config --cflags --libs jitherald-llvm)
 *
 *     // ORC with JITLink (an ObjectLinkingLayer):
 *     objectLinkingLayer.addPlugin(jitherald::createORCPlugin());
 *     // ORC with RuntimeDyld (what LLJIT builds on ELF in LLVM 14) or MCJIT:
 *     rtdyldLayer.registerJITEventListener(*jitherald::createJITEventListener());
 *     executionEngine->RegisterJITEventListener(jitherald::createJITEventListener());
 *
 * and run with JITHERALD=gdb,perfmap,... (adapters/llvm/README.md has a session per tool).
 *
 * ctx: the jitherald context to announce through, opened by the caller, who closes it
 * after the listener or plugin is gone. nullptr: the listener or plugin opens a context of
 * its own (engine "llvm", channels from $JITHERALD) and closes it when destroyed; with
 * JITHERALD unset nothing is announced and an object costs one branch.
 *
 * Names: demangled for people (jh_code.name: `deep(long)` in perf, valgrind, the audit log
 * and a debugger's backtrace); the object's own symbol for the debuggers' symbol table
 * (jh_code.symbol: `_Z4deepl`, which gdb and lldb demangle, so `break deep` works).
 * Unwind rules: the object's CIE must agree with struct jh_code's raw-CFI contract (code
 * alignment 1, data alignment -8, return address in register 16 on x86-64 / 30 on arm64,
 * initial CFA = rsp+8 / sp); other alignments and initial rules are translated when the
 * FDE's instructions allow it, and otherwise the function is announced without unwind
 * rules (JITHERALD_DEBUG=1 says which and why). Each FDE carries its CIE's personality
 * routine and its LSDA (jh_code.personality, .lsda): with JITHERALD=unwind, destructors and
 * catch in JIT-compiled C++ work whether or not LLVM registers its own .eh_frame too; where
 * LLVM registered first (JITLink, RuntimeDyld), the unwind channel leaves it to LLVM.
 *
 * Each object is one compile batch: after announcing its functions the adapter calls
 * jh_flush(), so with JITHERALD_GDB_DEFER=1 a debugger gets one image (one stop) per object.
 *
 * Thread safety: LLVM may call the listener and the plugin from any thread, concurrently.
 * fork(): as for the context (include/jitherald.h).
 */
#ifndef JITHERALD_LLVM_H
#define JITHERALD_LLVM_H

#include <memory>

#include <jitherald.h>
#include <llvm/ExecutionEngine/JITEventListener.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>

#if defined(__GNUC__)
#define JH_LLVM_API __attribute__((visibility("default")))
#else
#define JH_LLVM_API
#endif

namespace jitherald {

/*
 * A listener for MCJIT (ExecutionEngine::RegisterJITEventListener) and ORC's
 * RTDyldObjectLinkingLayer (registerJITEventListener). The caller owns it: delete it after
 * the engine or layer it is registered with is destroyed (LLVM's own listeners are
 * process-lifetime singletons; leaking this one is fine too). Deleting it removes the code
 * it still has announced. Never nullptr.
 * MCJIT tells listeners before it applies relocations: jitdump and the audit log then copy
 * code whose call targets are not yet filled in, and elfmap leaves those pages alone
 * (they are still writable). ORC's RTDyldObjectLinkingLayer tells them after.
 */
JH_LLVM_API llvm::JITEventListener *createJITEventListener(jh_ctx *ctx = nullptr);

/*
 * A plugin for ORC's ObjectLinkingLayer (JITLink): layer.addPlugin(createORCPlugin()).
 * Code is announced once it is finalized (executable, before any lookup returns it) and
 * removed when its ResourceTracker is removed, before the memory is freed. LLVM's
 * EHFrameRegistrationPlugin may stay or go: with JITHERALD=unwind the adapter's FDEs carry
 * the personality routines and LSDAs C++ exceptions need (see Unwind rules above).
 */
JH_LLVM_API std::unique_ptr<llvm::orc::ObjectLinkingLayer::Plugin>
createORCPlugin(jh_ctx *ctx = nullptr);

} // namespace jitherald

#endif
