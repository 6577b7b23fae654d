// llvm_install_user.cc — an LLVM JIT built against the installed tree with
// `pkg-config --cflags --libs jitherald-llvm` (tests/integration/llvm_install.sh): LLJIT,
// the adapter's one line, and a function made with IRBuilder. Prints its pid and the
// function's result; with JITHERALD=perfmap the function is in /tmp/perf-<pid>.map.
#include <cstdio>
#include <unistd.h>

#include <jitherald/llvm.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/Support/TargetSelect.h>

using namespace llvm;
using namespace llvm::orc;

int main()
{
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    auto jit = cantFail(LLJITBuilder().create());
    static_cast<RTDyldObjectLinkingLayer &>(jit->getObjLinkingLayer())
        .registerJITEventListener(*jitherald::createJITEventListener());
    (void)&jitherald::createORCPlugin;      // the plugin links too
    auto ctx = std::make_unique<LLVMContext>();
    auto m = std::make_unique<Module>("user", *ctx);
    Function *f = Function::Create(FunctionType::get(Type::getInt32Ty(*ctx), false),
                                   Function::ExternalLinkage, "installed_answer", *m);
    IRBuilder<> b(BasicBlock::Create(*ctx, "entry", f));
    b.CreateRet(b.getInt32(42));
    cantFail(jit->addIRModule(ThreadSafeModule(std::move(m), std::move(ctx))));
    auto fn = reinterpret_cast<int (*)()>(cantFail(jit->lookup("installed_answer")).getAddress());
    printf("%d %d\n", int(getpid()), fn());
    return 0;
}
