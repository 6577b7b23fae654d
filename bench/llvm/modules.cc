// modules.cc — bench/llvm.sh's JIT: LLVM 14 ORC compiles N one-function modules, each
// with debug info (a compile unit, a subprogram, a line per instruction, as a JIT that
// emits DWARF does), and looks each up, so each becomes its own object, announced to the
// debugger by the listener chosen:
//   modules llvm-gdb N        RuntimeDyld + LLVM's own GDB registration listener
//   modules jitherald N       RuntimeDyld + jitherald::createJITEventListener ($JITHERALD)
//   modules jitherald-link N  JITLink + jitherald::createORCPlugin ($JITHERALD)
//   modules none N            RuntimeDyld, no listener
// Prints "MODE N modules: S s" (compile + register + first call, wall time).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <string>

#include <jitherald/llvm.h>
#include <llvm/ExecutionEngine/JITLink/EHFrameSupport.h>
#include <llvm/ExecutionEngine/JITLink/JITLinkMemoryManager.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>

using namespace llvm;
using namespace llvm::orc;

static ThreadSafeModule make_module(int i)
{
    auto ctx = std::make_unique<LLVMContext>();
    std::string name = "f" + std::to_string(i);
    auto m = std::make_unique<Module>(name, *ctx);
    m->addModuleFlag(Module::Warning, "Debug Info Version", DEBUG_METADATA_VERSION);
    m->addModuleFlag(Module::Warning, "Dwarf Version", 4);
    DIBuilder di(*m);
    DIFile *file = di.createFile(name + ".src", "/jit");
    di.createCompileUnit(dwarf::DW_LANG_C, file, "bench", true, "", 0);
    Type *i64 = Type::getInt64Ty(*ctx);
    Function *f = Function::Create(FunctionType::get(i64, {i64}, false), Function::ExternalLinkage,
                                   name, *m);
    DISubprogram *sp = di.createFunction(file, name, name, file, 1,
                                         di.createSubroutineType(di.getOrCreateTypeArray({})), 1,
                                         DINode::FlagZero, DISubprogram::SPFlagDefinition);
    f->setSubprogram(sp);
    IRBuilder<> b(BasicBlock::Create(*ctx, "entry", f));
    b.SetCurrentDebugLocation(DILocation::get(*ctx, 2, 3, sp));
    Value *x = b.CreateMul(f->getArg(0), ConstantInt::get(i64, i | 1));
    b.SetCurrentDebugLocation(DILocation::get(*ctx, 3, 3, sp));
    b.CreateRet(b.CreateAdd(x, ConstantInt::get(i64, i)));
    di.finalize();
    if (verifyModule(*m, &errs()))
        exit(2);
    return ThreadSafeModule(std::move(m), std::move(ctx));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: modules llvm-gdb|jitherald|jitherald-link|none N\n");
        return 2;
    }
    std::string mode = argv[1];
    int n = atoi(argv[2]);
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    LLJITBuilder lb;
    if (mode == "jitherald-link") {
        JITTargetMachineBuilder jtmb = cantFail(JITTargetMachineBuilder::detectHost());
        jtmb.setRelocationModel(Reloc::PIC_);   // what JITLink takes in LLVM 14
        jtmb.setCodeModel(CodeModel::Small);
        lb.setJITTargetMachineBuilder(std::move(jtmb));
        lb.setObjectLinkingLayerCreator([](ExecutionSession &es, const Triple &) {
            auto l = std::make_unique<ObjectLinkingLayer>(es, cantFail(jitlink::InProcessMemoryManager::Create()));
            l->addPlugin(std::make_unique<EHFrameRegistrationPlugin>(
                es, std::make_unique<jitlink::InProcessEHFrameRegistrar>()));
            l->addPlugin(jitherald::createORCPlugin());
            return l;
        });
    } else {
        lb.setObjectLinkingLayerCreator([&mode](ExecutionSession &es, const Triple &) {
            auto l = std::make_unique<RTDyldObjectLinkingLayer>(
                es, [] { return std::make_unique<SectionMemoryManager>(); });
            if (mode == "llvm-gdb")
                l->registerJITEventListener(*JITEventListener::createGDBRegistrationListener());
            else if (mode == "jitherald")
                l->registerJITEventListener(*jitherald::createJITEventListener());
            return l;
        });
    }
    std::unique_ptr<LLJIT> jit = cantFail(lb.create());
    auto t0 = std::chrono::steady_clock::now();
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        cantFail(jit->addIRModule(make_module(i)));
        auto addr = cantFail(jit->lookup("f" + std::to_string(i))).getAddress();
        sum += reinterpret_cast<long long (*)(long long)>(addr)(1);
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("%s %d modules: %.3f s (check %lld)\n", mode.c_str(), n, s, sum);
    fflush(stdout);
    _exit(0);   // the code stays announced to the end: no teardown in the measurement's shadow
}
