// modules.cc — bench/llvm.sh's JIT: LLVM 14 ORC compiles N one-function modules, each
// with debug info (a compile unit, a subprogram, a line per instruction, as a JIT that
// emits DWARF does), and looks each up, so each becomes its own object, announced to the
// debugger by the listener chosen:
//   modules llvm-gdb N        RuntimeDyld + LLVM's own GDB registration listener
//   modules jitherald N       RuntimeDyld + jitherald::createJITEventListener ($JITHERALD)
//   modules jitherald-link N  JITLink + jitherald::createORCPlugin ($JITHERALD)
//   modules link-floor N      JITLink + a plugin that does nothing, timed as that one is
//   modules none N            RuntimeDyld, no listener
// Prints "MODE N modules: S s (listener U us/module, cpu C us/module)": wall time of compile + register +
// first call, and the time spent inside the listener or plugin per module (every listener
// is wrapped in a timing one), which under a debugger includes its stops: what each
// listener costs, without the noise of LLVM's own compile time on a loaded machine.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

static double in_listener;      // seconds spent inside the listener or plugin (wall)
static double cpu_listener;     // the same in this thread's CPU time

static double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread: on a shared machine the wall time inside the listener
// counts whoever else ran meanwhile; this does not (under a debugger it leaves out the
// stops, which the wall time is there for).
static double cpu()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// CPU time (user + system, all threads) of the debugger tracing this process, or -1 with
// none: what the registrations cost the debugger itself, which the machine's load does not
// inflate as it does the wall time of the stops (the tracer's /proc/PID/stat, fields 14-15).
static double tracer_cpu()
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long pid = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "TracerPid: %ld", &pid) == 1)
            break;
    if (f)
        fclose(f);
    if (pid <= 0)
        return -1;
    f = fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!f)
        return -1;
    char buf[1024];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    const char *p = strrchr(buf, ')');      // the command name may hold spaces
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return double(ut + st) / double(sysconf(_SC_CLK_TCK));
}

static long timings;             // Timed intervals counted

// Starts both clocks; stop() adds what passed to the totals.
struct Timed {
    double t = now(), c = cpu();
    void stop()
    {
        in_listener += now() - t;
        cpu_listener += cpu() - c;
        timings++;
    }
};

// What one Timed interval adds by itself (reading the thread's CPU clock is a system
// call): the JITLink plugin is timed in five places per module, the listeners in one, so
// the totals have this taken off per interval. The least of several rounds.
static void timer_cost(double &wall, double &cpu_s)
{
    wall = cpu_s = 1e9;
    for (int round = 0; round < 5; round++) {
        double w0 = in_listener, c0 = cpu_listener;
        long k0 = timings;
        for (int i = 0; i < 2000; i++) {
            Timed t;
            t.stop();
        }
        wall = std::min(wall, (in_listener - w0) / double(timings - k0));
        cpu_s = std::min(cpu_s, (cpu_listener - c0) / double(timings - k0));
        in_listener = w0;
        cpu_listener = c0;
        timings = k0;
    }
}

// Forwards to a listener and counts the time spent in it.
class TimedListener : public JITEventListener {
public:
    explicit TimedListener(JITEventListener *l) : l_(l) {}
    void notifyObjectLoaded(ObjectKey k, const object::ObjectFile &o,
                            const RuntimeDyld::LoadedObjectInfo &li) override
    {
        Timed t;
        l_->notifyObjectLoaded(k, o, li);
        t.stop();
    }
    void notifyFreeingObject(ObjectKey k) override { l_->notifyFreeingObject(k); }

private:
    JITEventListener *l_;
};

// The same for an ObjectLinkingLayer plugin (its passes included).
class TimedPlugin : public ObjectLinkingLayer::Plugin {
public:
    explicit TimedPlugin(std::unique_ptr<ObjectLinkingLayer::Plugin> p) : p_(std::move(p)) {}
    void modifyPassConfig(MaterializationResponsibility &mr, jitlink::LinkGraph &g,
                          jitlink::PassConfiguration &c) override
    {
        // timed too: the plugin's own passes are allocated here (in a real JIT into
        // LLVM's configuration, whose post-allocation list is empty at this point, as ours)
        jitlink::PassConfiguration mine;
        Timed in_plugin;
        p_->modifyPassConfig(mr, g, mine);
        in_plugin.stop();
        auto wrap = [](jitlink::LinkGraphPassList &from, jitlink::LinkGraphPassList &to) {
            for (auto &pass : from)
                to.push_back([pass](jitlink::LinkGraph &lg) {
                    Timed t;
                    Error e = pass(lg);
                    t.stop();
                    return e;
                });
        };
        wrap(mine.PrePrunePasses, c.PrePrunePasses);
        wrap(mine.PostPrunePasses, c.PostPrunePasses);
        wrap(mine.PostAllocationPasses, c.PostAllocationPasses);
        wrap(mine.PreFixupPasses, c.PreFixupPasses);
        wrap(mine.PostFixupPasses, c.PostFixupPasses);
    }
    void notifyMaterializing(MaterializationResponsibility &mr, jitlink::LinkGraph &g,
                             jitlink::JITLinkContext &c, MemoryBufferRef o) override
    {
        Timed t;
        p_->notifyMaterializing(mr, g, c, o);
        t.stop();
    }
    Error notifyEmitted(MaterializationResponsibility &mr) override
    {
        Timed t;
        Error e = p_->notifyEmitted(mr);
        t.stop();
        return e;
    }
    Error notifyFailed(MaterializationResponsibility &mr) override { return p_->notifyFailed(mr); }
    Error notifyRemovingResources(ResourceKey k) override { return p_->notifyRemovingResources(k); }
    void notifyTransferringResources(ResourceKey d, ResourceKey s) override
    {
        p_->notifyTransferringResources(d, s);
    }

private:
    std::unique_ptr<ObjectLinkingLayer::Plugin> p_;
};

// Does nothing but what the bench times: the floor of the five timed intervals per module
// (mode "link-floor"), to read JITLink's figures against.
class FloorPlugin : public ObjectLinkingLayer::Plugin {
public:
    void modifyPassConfig(MaterializationResponsibility &, jitlink::LinkGraph &,
                          jitlink::PassConfiguration &c) override
    {
        c.PostPrunePasses.push_back([](jitlink::LinkGraph &) { return Error::success(); });
    }
    Error notifyFailed(MaterializationResponsibility &) override { return Error::success(); }
    Error notifyRemovingResources(ResourceKey) override { return Error::success(); }
    void notifyTransferringResources(ResourceKey, ResourceKey) override {}
};

static bool with_dwarf = true;
static jh_ctx *bench_ctx;       // the adapter's, opened here only for JH_BENCH_SWITCH_AT

static ThreadSafeModule make_module(int i)
{
    auto ctx = std::make_unique<LLVMContext>();
    std::string name = "f" + std::to_string(i);
    auto m = std::make_unique<Module>(name, *ctx);
    m->addModuleFlag(Module::Warning, "Debug Info Version", DEBUG_METADATA_VERSION);
    m->addModuleFlag(Module::Warning, "Dwarf Version", 4);
    DIBuilder di(*m);
    DIFile *file = di.createFile(getenv("JH_BENCH_ONE_FILE") ? std::string("bench.src") : name + ".src", "/jit");
    di.createCompileUnit(dwarf::DW_LANG_C, file, "bench", true, "", 0);
    Type *i64 = Type::getInt64Ty(*ctx);
    Function *f = Function::Create(FunctionType::get(i64, {i64}, false), Function::ExternalLinkage,
                                   name, *m);
    DISubprogram *sp = di.createFunction(file, name, name, file, 1,
                                         di.createSubroutineType(di.getOrCreateTypeArray({})), 1,
                                         DINode::FlagZero, DISubprogram::SPFlagDefinition);
    if (with_dwarf)
        f->setSubprogram(sp);
    IRBuilder<> b(BasicBlock::Create(*ctx, "entry", f));
    if (with_dwarf)
        b.SetCurrentDebugLocation(DILocation::get(*ctx, 2, 3, sp));
    Value *x = b.CreateMul(f->getArg(0), ConstantInt::get(i64, i | 1));
    if (with_dwarf)
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
        fprintf(stderr, "usage: modules llvm-gdb|jitherald|jitherald-link|link-floor|none N\n");
        return 2;
    }
    std::string mode = argv[1];
    with_dwarf = !getenv("JH_BENCH_NO_DWARF");
    int n = atoi(argv[2]);
    if (getenv("JH_BENCH_SWITCH_AT")) {
        jh_options o{};
        o.sz = sizeof o;
        o.engine = "llvm";
        if (jh_open(&bench_ctx, &o))
            return 3;
    }
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    LLJITBuilder lb;
    JITTargetMachineBuilder jtmb = cantFail(JITTargetMachineBuilder::detectHost());
    // JH_BENCH_O0=1: no codegen optimization, to compile 5,000 modules faster where only
    // the registration matters (tests/integration/llvm_late_attach.sh), not in the benchmark
    if (const char *o0 = getenv("JH_BENCH_O0"); o0 && *o0)
        jtmb.setCodeGenOptLevel(CodeGenOpt::None);
    if (mode == "jitherald-link" || mode == "link-floor") {
        jtmb.setRelocationModel(Reloc::PIC_);   // what JITLink takes in LLVM 14
        jtmb.setCodeModel(CodeModel::Small);
        lb.setObjectLinkingLayerCreator([](ExecutionSession &es, const Triple &) {
            auto l = std::make_unique<ObjectLinkingLayer>(es, cantFail(jitlink::InProcessMemoryManager::Create()));
            l->addPlugin(std::make_unique<EHFrameRegistrationPlugin>(
                es, std::make_unique<jitlink::InProcessEHFrameRegistrar>()));
            l->addPlugin(std::make_unique<TimedPlugin>(jitherald::createORCPlugin(bench_ctx)));
            return l;
        });
        if (mode == "link-floor")
            lb.setObjectLinkingLayerCreator([](ExecutionSession &es, const Triple &) {
                auto l = std::make_unique<ObjectLinkingLayer>(es, cantFail(jitlink::InProcessMemoryManager::Create()));
                l->addPlugin(std::make_unique<EHFrameRegistrationPlugin>(
                    es, std::make_unique<jitlink::InProcessEHFrameRegistrar>()));
                l->addPlugin(std::make_unique<TimedPlugin>(std::make_unique<FloorPlugin>()));
                return l;
            });
    } else {
        lb.setObjectLinkingLayerCreator([&mode](ExecutionSession &es, const Triple &) {
            auto l = std::make_unique<RTDyldObjectLinkingLayer>(
                es, [] { return std::make_unique<SectionMemoryManager>(); });
            if (mode == "llvm-gdb")
                l->registerJITEventListener(*new TimedListener(JITEventListener::createGDBRegistrationListener()));
            else if (mode == "jitherald")
                l->registerJITEventListener(*new TimedListener(jitherald::createJITEventListener(bench_ctx)));
            return l;
        });
    }
    lb.setJITTargetMachineBuilder(std::move(jtmb));
    std::unique_ptr<LLJIT> jit = cantFail(lb.create());
    // JH_BENCH_SWITCH_AT=K: perfmap switched on beside gdb after K modules (jh_channels_set
    // on the adapter's context): tests/integration/llvm_switch_channels.sh
    int switch_at = getenv("JH_BENCH_SWITCH_AT") ? atoi(getenv("JH_BENCH_SWITCH_AT")) : -1;
    double t0 = now(), dbg0 = tracer_cpu();
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        if (i == switch_at && jh_channels_set(bench_ctx, jh_channels(bench_ctx) | JH_PERFMAP) < 0)
            return 3;
        cantFail(jit->addIRModule(make_module(i)));
        auto addr = cantFail(jit->lookup("f" + std::to_string(i))).getAddress();
        sum += reinterpret_cast<long long (*)(long long)>(addr)(1);
    }
    double t1 = now(), dbg1 = tracer_cpu(), tw, tc;
    timer_cost(tw, tc);
    in_listener = std::max(0.0, in_listener - tw * double(timings));
    cpu_listener = std::max(0.0, cpu_listener - tc * double(timings));
    char dbg[64] = "";
    if (dbg0 >= 0 && dbg1 >= 0)
        snprintf(dbg, sizeof dbg, ", debugger cpu %.1f us/module", (dbg1 - dbg0) / n * 1e6);
    printf("%s %d modules: %.3f s (listener %.1f us/module, cpu %.1f us/module, check %lld%s)\n",
           mode.c_str(), n, t1 - t0, in_listener / n * 1e6, cpu_listener / n * 1e6, sum, dbg);
    fflush(stdout);
    if (const char *pause = getenv("JH_BENCH_PAUSE")) {
        // A debugger attaches now (tests/integration/llvm_late_attach.sh): the pid goes to
        // the file, which the debugger removes to let us call every function once more.
        std::string tmp = std::string(pause) + ".tmp";
        FILE *f = fopen(tmp.c_str(), "w");
        if (!f || fprintf(f, "%d\n", int(getpid())) < 0 || fclose(f) || rename(tmp.c_str(), pause))
            return 1;
        while (access(pause, F_OK) == 0)
            usleep(10000);
        // JH_BENCH_MORE=M: M more modules first, compiled with the debugger attached
        int more = getenv("JH_BENCH_MORE") ? atoi(getenv("JH_BENCH_MORE")) : 0;
        for (int i = n; i < n + more; i++)
            cantFail(jit->addIRModule(make_module(i)));
        n += more;
        long long again = 0;
        for (int i = 0; i < n; i++)
            again += reinterpret_cast<long long (*)(long long)>(
                cantFail(jit->lookup("f" + std::to_string(i))).getAddress())(1);
        printf("called again: check %lld\n", again);
        fflush(stdout);
    }
    _exit(0);   // the code stays announced to the end: no teardown in the measurement's shadow
}
