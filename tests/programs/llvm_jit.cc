// llvm_jit.cc — the test JIT of tests/integration/llvm_*.sh: LLVM 14 (LLJIT, or MCJIT)
// runs IR compiled from C and C++ (tests/programs/llvm/, clang-14 -g at build time) with
// the jitherald adapter (adapters/llvm) announcing what it loads. One module per file.
//
//   llvm_jit [options] FILE.ll... -- ENTRY ARG
//     --jitlink       ORC ObjectLinkingLayer (JITLink) + jitherald::createORCPlugin
//     --rtdyld        ORC RTDyldObjectLinkingLayer (LLJIT's default on ELF in LLVM 14)
//                     + jitherald::createJITEventListener (the default)
//     --mcjit         MCJIT + jitherald::createJITEventListener
//     --no-jitherald  no adapter (the control of each test)
//     --no-llvm-eh    LLVM does not register .eh_frame itself
//     --llvm-gdb      also LLVM's GDB registration listener (RTDyld, MCJIT)
//     --llvm-perf     also LLVM's perf listener (RTDyld, MCJIT)
//     --catch         call ENTRY inside try/catch (the C++ exception tests)
//     --remove        afterwards remove the code (ORC: its ResourceTracker) and check that
//                     jitherald no longer knows ENTRY's address
//     --repeat N      call ENTRY N times
//     --two-plugins   (JITLink) a second context (engine "llvm2") with a plugin of its own
//                     on the same layer; its lookups print as "lookup2 ..."
//     --broken FILE.ll  (ORC) first add FILE.ll, whose link must fail (an unresolved
//                     symbol), and look up BROKEN_ENTRY in it: prints "broken: link
//                     failed" (or exits 1 if it linked); then ENTRY as usual
// Prints "result R", the guards that ran, "caught: ..." for --catch, "lookup: ..." lines.
// JITHERALD chooses the channels, as for any jitherald user.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <jitherald.h>
#include <jitherald/llvm.h>
#include <llvm/ExecutionEngine/ExecutionEngine.h>
#include <llvm/ExecutionEngine/JITLink/EHFrameSupport.h>
#include <llvm/ExecutionEngine/JITLink/JITLinkMemoryManager.h>
#include <llvm/ExecutionEngine/MCJIT.h>
#include <llvm/ExecutionEngine/Orc/EPCEHFrameRegistrar.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>

using namespace llvm;
using namespace llvm::orc;

static long guards_ran;

extern "C" {
// Called by chain.c's leaf: where the host is, below JIT frames.
__attribute__((noinline, used)) long host_callback(long n)
{
    __asm__ volatile("" ::: "memory");
    return n + 1;
}
// Called by guards.cc: an exception thrown from the host through JIT-compiled C++ frames.
__attribute__((noinline, used)) void host_throw(long n)
{
    if (n < 0)
        return;
    if (n % 2)
        throw int(n);
    throw std::runtime_error("thrown by the host");
}
__attribute__((used)) void host_guard_ran(long n)
{
    printf("guard %ld ran\n", n);
    guards_ran++;
}
}

[[noreturn]] static void die(const std::string &what)
{
    fprintf(stderr, "llvm_jit: %s\n", what.c_str());
    exit(2);
}

template <typename T> static T check(Expected<T> v, const char *what)
{
    if (!v)
        die(std::string(what) + ": " + toString(v.takeError()));
    return std::move(*v);
}

static void check(Error e, const char *what)
{
    if (e)
        die(std::string(what) + ": " + toString(std::move(e)));
}

// RuntimeDyld's default memory manager, minus its own .eh_frame registration.
class NoEHMemoryManager : public SectionMemoryManager {
    void registerEHFrames(uint8_t *, uint64_t, size_t) override {}
    void deregisterEHFrames() override {}
};

struct Options {
    enum { JITLINK, RTDYLD, MCJIT } linker = RTDYLD;
    bool jitherald = true, llvm_eh = true, llvm_gdb = false, llvm_perf = false;
    bool catch_ = false, remove = false, two_plugins = false;
    long repeat = 1;
    std::vector<std::string> files;
    std::string entry, broken;
    long arg = 0;
};

static long call(const Options &o, uint64_t addr)
{
    auto fn = reinterpret_cast<long (*)(long)>(uintptr_t(addr));
    long r = 0;
    for (long i = 0; i < o.repeat; i++) {
        if (!o.catch_) {
            r = fn(o.arg);
            continue;
        }
        try {
            r = fn(o.arg);
        } catch (const std::exception &e) {
            printf("caught: %s\n", e.what());
        } catch (long v) {
            printf("caught: long %ld\n", v);
        } catch (int v) {
            printf("caught: int %d\n", v);
        }
    }
    return r;
}

static jh_ctx *second;     // --two-plugins

static void lookup(jh_ctx *jh, uint64_t addr, const char *when)
{
    char name[256];
    int r = jh_lookup(jh, reinterpret_cast<const void *>(uintptr_t(addr)), nullptr, nullptr,
                      nullptr, name, sizeof name);
    printf("lookup %s: %s\n", when, r == 0 ? name : jh_strerror(r));
    if (second) {
        r = jh_lookup(second, reinterpret_cast<const void *>(uintptr_t(addr)), nullptr, nullptr,
                      nullptr, name, sizeof name);
        printf("lookup2 %s: %s\n", when, r == 0 ? name : jh_strerror(r));
    }
}

static std::unique_ptr<Module> load(LLVMContext &c, const std::string &file)
{
    SMDiagnostic err;
    std::unique_ptr<Module> m = parseIRFile(file, err, c);
    if (!m)
        die(file + ": " + err.getMessage().str());
    return m;
}

static void run_mcjit(const Options &o, jh_ctx *jh)
{
    LLVMContext c;
    std::string err;
    std::unique_ptr<RTDyldMemoryManager> mm = o.llvm_eh ? std::make_unique<SectionMemoryManager>()
                                                        : std::make_unique<NoEHMemoryManager>();
    ExecutionEngine *ee = EngineBuilder(load(c, o.files[0]))
                              .setEngineKind(EngineKind::JIT)
                              .setErrorStr(&err)
                              .setMCJITMemoryManager(std::move(mm))
                              .create();
    if (!ee)
        die("MCJIT: " + err);
    for (size_t i = 1; i < o.files.size(); i++)
        ee->addModule(load(c, o.files[i]));
    JITEventListener *l = o.jitherald ? jitherald::createJITEventListener(jh) : nullptr;
    if (l)
        ee->RegisterJITEventListener(l);
    if (o.llvm_gdb)
        ee->RegisterJITEventListener(JITEventListener::createGDBRegistrationListener());
    if (o.llvm_perf)
        ee->RegisterJITEventListener(JITEventListener::createPerfJITEventListener());
    ee->finalizeObject();
    uint64_t addr = ee->getFunctionAddress(o.entry);
    if (!addr)
        die("no function " + o.entry);
    lookup(jh, addr, "before");
    printf("result %ld\n", call(o, addr));
    delete ee;      // frees the objects: the listener hears notifyFreeingObject
    if (o.remove)
        lookup(jh, addr, "after");
    delete l;
}

static void run_orc(const Options &o, jh_ctx *jh)
{
    LLJITBuilder b;
    JITEventListener *listener = nullptr;
    if (o.linker == Options::JITLINK) {
        // JITLink in LLVM 14 takes position-independent code only (a personality pointer
        // with the static model's absptr encoding is refused), as LLJIT sets it up from
        // LLVM 15 on.
        JITTargetMachineBuilder jtmb = check(JITTargetMachineBuilder::detectHost(), "host");
        jtmb.setRelocationModel(Reloc::PIC_);
        jtmb.setCodeModel(CodeModel::Small);
        b.setJITTargetMachineBuilder(std::move(jtmb));
        b.setObjectLinkingLayerCreator([&](ExecutionSession &es, const Triple &) {
            auto l = std::make_unique<ObjectLinkingLayer>(
                es, check(jitlink::InProcessMemoryManager::Create(), "memory manager"));
            if (o.llvm_eh)
                l->addPlugin(std::make_unique<EHFrameRegistrationPlugin>(
                    es, std::make_unique<jitlink::InProcessEHFrameRegistrar>()));
            if (o.jitherald)
                l->addPlugin(jitherald::createORCPlugin(jh));
            if (second)
                l->addPlugin(jitherald::createORCPlugin(second));
            return l;
        });
    } else {
        b.setObjectLinkingLayerCreator([&](ExecutionSession &es, const Triple &) {
            bool eh = o.llvm_eh;
            auto l = std::make_unique<RTDyldObjectLinkingLayer>(es, [eh]() {
                return eh ? std::make_unique<SectionMemoryManager>()
                          : std::unique_ptr<SectionMemoryManager>(new NoEHMemoryManager());
            });
            if (o.jitherald)
                l->registerJITEventListener(*(listener = jitherald::createJITEventListener(jh)));
            if (o.llvm_gdb)
                l->registerJITEventListener(*JITEventListener::createGDBRegistrationListener());
            if (o.llvm_perf)
                l->registerJITEventListener(*JITEventListener::createPerfJITEventListener());
            return l;
        });
    }
    std::unique_ptr<LLJIT> jit = check(b.create(), "LLJIT");
    JITDylib &jd = jit->getMainJITDylib();
    jd.addGenerator(check(DynamicLibrarySearchGenerator::GetForCurrentProcess(
                              jit->getDataLayout().getGlobalPrefix()),
                          "host symbols"));
    ResourceTrackerSP rt = jd.createResourceTracker();
    if (!o.broken.empty()) {
        auto ctx = std::make_unique<LLVMContext>();
        std::unique_ptr<Module> m = load(*ctx, o.broken);
        check(jit->addIRModule(rt, ThreadSafeModule(std::move(m), std::move(ctx))), "add module");
        Expected<JITEvaluatedSymbol> s = jit->lookup("broken_entry");
        if (s)
            die("broken_entry linked: " + o.broken + " should not link");
        consumeError(s.takeError());
        printf("broken: link failed\n");
    }
    for (const std::string &f : o.files) {
        auto ctx = std::make_unique<LLVMContext>();
        std::unique_ptr<Module> m = load(*ctx, f);
        check(jit->addIRModule(rt, ThreadSafeModule(std::move(m), std::move(ctx))), "add module");
    }
    uint64_t addr = check(jit->lookup(o.entry), "lookup").getAddress();
    lookup(jh, addr, "before");
    printf("result %ld\n", call(o, addr));
    if (o.remove) {
        check(rt->remove(), "remove");
        lookup(jh, addr, "after");
    }
    rt = nullptr;           // before the session it belongs to
    jit.reset();
    delete listener;
}

int main(int argc, char **argv)
{
    Options o;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        std::string a = argv[i];
        if (a == "--jitlink") o.linker = Options::JITLINK;
        else if (a == "--rtdyld") o.linker = Options::RTDYLD;
        else if (a == "--mcjit") o.linker = Options::MCJIT;
        else if (a == "--no-jitherald") o.jitherald = false;
        else if (a == "--no-llvm-eh") o.llvm_eh = false;
        else if (a == "--llvm-gdb") o.llvm_gdb = true;
        else if (a == "--llvm-perf") o.llvm_perf = true;
        else if (a == "--catch") o.catch_ = true;
        else if (a == "--remove") o.remove = true;
        else if (a == "--two-plugins") o.two_plugins = true;
        else if (a == "--repeat" && i + 1 < argc) o.repeat = atol(argv[++i]);
        else if (a == "--broken" && i + 1 < argc) o.broken = argv[++i];
        else if (a[0] == '-') die("unknown option " + a);
        else o.files.push_back(a);
    }
    if (i + 2 >= argc || o.files.empty())
        die("usage: llvm_jit [options] FILE.ll... -- ENTRY ARG");
    o.entry = argv[i + 1];
    o.arg = atol(argv[i + 2]);

    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    jh_ctx *jh = nullptr;
    jh_options jo{};
    jo.sz = sizeof jo;
    jo.engine = "llvm";
    if (jh_open(&jh, &jo) < 0)
        die("jh_open");
    if (o.two_plugins) {
        jo.engine = "llvm2";
        if (o.linker != Options::JITLINK || jh_open(&second, &jo) < 0)
            die("--two-plugins: JITLink only; jh_open");
    }
    if (o.linker == Options::MCJIT)
        run_mcjit(o, jh);
    else
        run_orc(o, jh);
    printf("guards %ld\n", guards_ran);
    jh_close(second);
    jh_close(jh);
    return 0;
}
