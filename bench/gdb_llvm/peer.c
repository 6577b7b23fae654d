/*
 * peer.c — the peer for bench/gdb.sh: LLVM 14 ORC (LLJIT over RTDyld) with LLVM's own GDB
 * registration listener, compiling N one-function modules and looking each up, so each
 * becomes its own object and its own JIT-interface registration — how ORC registers code.
 * Built by bench/gdb.sh with llvm-config-14; never part of the library's build.
 *
 *   peer N      prints "llvm N functions: S s" (wall time of compile + register)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/OrcEE.h>
#include <llvm-c/Target.h>

static void check(LLVMErrorRef err, const char *what)
{
    if (err) {
        char *msg = LLVMGetErrorMessage(err);
        fprintf(stderr, "peer: %s: %s\n", what, msg);
        LLVMDisposeErrorMessage(msg);
        exit(1);
    }
}

static LLVMOrcObjectLayerRef make_layer(void *ctx, LLVMOrcExecutionSessionRef es, const char *triple)
{
    (void)ctx;
    (void)triple;
    LLVMOrcObjectLayerRef layer = LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager(es);
    LLVMOrcRTDyldObjectLinkingLayerRegisterJITEventListener(layer, LLVMCreateGDBRegistrationListener());
    return layer;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(b, make_layer, NULL);
    LLVMOrcLLJITRef jit;
    check(LLVMOrcCreateLLJIT(&jit, b), "create LLJIT");
    LLVMOrcJITDylibRef dylib = LLVMOrcLLJITGetMainJITDylib(jit);
    double t0 = now();
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", i);
        LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
        LLVMContextRef c = LLVMOrcThreadSafeContextGetContext(tsc);
        LLVMModuleRef m = LLVMModuleCreateWithNameInContext(name, c);
        LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
        LLVMTypeRef fty = LLVMFunctionType(i64, &i64, 1, 0);
        LLVMValueRef f = LLVMAddFunction(m, name, fty);
        LLVMBuilderRef ib = LLVMCreateBuilderInContext(c);
        LLVMPositionBuilderAtEnd(ib, LLVMAppendBasicBlockInContext(c, f, "entry"));
        LLVMBuildRet(ib, LLVMBuildAdd(ib, LLVMGetParam(f, 0), LLVMConstInt(i64, (unsigned long long)i, 0), "r"));
        LLVMDisposeBuilder(ib);
        LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc);
        LLVMOrcDisposeThreadSafeContext(tsc);
        check(LLVMOrcLLJITAddLLVMIRModule(jit, dylib, tsm), "add module");
        LLVMOrcExecutorAddress addr;
        check(LLVMOrcLLJITLookup(jit, &addr, name), "lookup");
        sum += ((long long (*)(long long))addr)(1);
    }
    double t1 = now();
    printf("llvm %d functions: %.3f s (check %lld)\n", n, t1 - t0, sum);
    LLVMOrcDisposeLLJIT(jit);
    return 0;
}
