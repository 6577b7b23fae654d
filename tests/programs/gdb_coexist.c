/*
 * gdb_coexist.c — two JIT interfaces in one process, for tests/integration/gdb_llvm_coexist.sh:
 * LLVM 14 ORC compiles llvm_fn with its GDB registration listener (its own
 * __jit_debug_descriptor), and jitherald's gdb channel announces jh_fn; stop_here(llvm
 * code, jitherald code) is where the debugger looks. Built three ways by make: LLVM first in
 * the link order, libjitherald first, and both static (LLVM's static listener then shares
 * our list). Needs JITHERALD=gdb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/OrcEE.h>
#include <llvm-c/Target.h>
#include "jitherald.h"

static LLVMOrcObjectLayerRef layer(void *c, LLVMOrcExecutionSessionRef es, const char *t)
{
    (void)c, (void)t;
    LLVMOrcObjectLayerRef l = LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager(es);
    LLVMOrcRTDyldObjectLinkingLayerRegisterJITEventListener(l, LLVMCreateGDBRegistrationListener());
    return l;
}

__attribute__((noinline)) void stop_here(void *llvm_code, void *jh_code)
{
    printf("llvm_fn=%p jh_fn=%p\n", llvm_code, jh_code);
    fflush(stdout);
}

int main(void)
{
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(b, layer, NULL);
    LLVMOrcLLJITRef jit;
    if (LLVMOrcCreateLLJIT(&jit, b))
        return 1;
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef c = LLVMOrcThreadSafeContextGetContext(tsc);
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("m", c);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    LLVMValueRef f = LLVMAddFunction(m, "llvm_fn", LLVMFunctionType(i64, &i64, 1, 0));
    LLVMBuilderRef ib = LLVMCreateBuilderInContext(c);
    LLVMPositionBuilderAtEnd(ib, LLVMAppendBasicBlockInContext(c, f, "e"));
    LLVMBuildRet(ib, LLVMGetParam(f, 0));
    LLVMDisposeBuilder(ib);
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc);
    LLVMOrcDisposeThreadSafeContext(tsc);
    LLVMOrcExecutorAddress addr;
    if (LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm) ||
        LLVMOrcLLJITLookup(jit, &addr, "llvm_fn"))
        return 1;

    jh_ctx *jh;
    if (jh_open(&jh, NULL) < 0 || !(jh_channels(jh) & JH_GDB))
        return 2;
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    static const unsigned char fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
    memcpy(code, fn, sizeof fn);
    struct jh_code jc = { .sz = sizeof jc, .name = "jh_fn", .start = code, .size = sizeof fn,
                          .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    if (jh_code_add(jh, &jc, NULL) < 0)
        return 3;
    stop_here((void *)(uintptr_t)addr, code);
    jh_close(jh);
    LLVMOrcDisposeLLJIT(jit);
    return 0;
}
