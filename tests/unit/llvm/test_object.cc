// test_object.cc — the LLVM adapter's reading of an object (adapters/llvm/object.cc and
// eh_frame.cc) against llvm-dwarfdump-14 on the same object, for objects clang-14 compiles
// here (tests/programs/llvm/*.c, *.cc) and hand-written .eh_frame records
// (tests/unit/llvm/cies.s):
//   - every function of the symbol table, at its section's load address, with st_size;
//   - its line-table rows are exactly llvm-dwarfdump's rows in its range, files included
//     (work() holds rows of work.c and of hot.h, inlined);
//   - its unwind rows, as the library translates the relocated .eh_frame the adapter hands
//     over (JH_UNWIND_EH_FRAME, read by jh_code_add's own jh__code_lower), under
//     jitherald's CIE (wrapped in an ELF, decoded by llvm-dwarfdump) are exactly the
//     object's own rows, for LLVM's CIE and for CIEs that need translating;
//   - CIEs that cannot be translated leave the function without unwind rules and say why;
//   - C++: demangled names, the personality routine, an LSDA for frames with cleanups;
//   - lines.cc reads DWARF 4 and 5 itself (no fallback) and gives exactly what LLVM's
//     DWARFContext gives: every function, row, file and prologue_end the same.
// The sections are "loaded" at real heap addresses (the personality is read from there).
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
/* GCC 12's libstdc++ <regex> at -O1 under the sanitizers (make asan) warns that a
 * std::function inside its automaton "may be used uninitialized": a false positive in the
 * library's own code, which -Werror would turn into a failed build. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include "capture.h"
#include "check.h"
#include "elf_wrap.h"
extern "C" {
#include "fmt/cfi.h"      // the library's own encoder: the bytes every channel writes
// jh_code_add's own reading of JH_UNWIND_EH_FRAME (core/describe.h, which is C only)
int jh__code_lower(struct jh_code *c, struct jh__buf *cfi, char *why, size_t len);
int jh__code_validate(const struct jh_code *c, char *why, size_t len);
}
#include "herald.h"

using jitherald_llvm::Func;
using jitherald_llvm::Object;

static std::string tmp;
static std::string root;

static std::string run(const std::string &cmd, bool must = true)
{
    int st = 0;
    char *out = capture(cmd.c_str(), &st);
    std::string s = out ? out : "";
    free(out);
    if (must && st != 0) {
        fprintf(stderr, "command failed (%d): %s\n%s\n", st, cmd.c_str(), s.c_str());
        CHECK(!"command failed");
    }
    return s;
}

static std::string base(const std::string &p)
{
    size_t k = p.rfind('/');
    return k == std::string::npos ? p : p.substr(k + 1);
}

// An object file and its sections copied to the heap, as if LLVM had loaded them there.
struct Loaded {
    std::unique_ptr<llvm::MemoryBuffer> buf;
    std::unique_ptr<llvm::object::ObjectFile> obj;
    std::vector<char> mem;      // one arena for every section, as LLVM's memory managers
                                // keep an object's sections within reach of its 32-bit
                                // pc-relative relocations (separate heap blocks may lie
                                // gigabytes apart: ASan's allocator puts sizes apart)
    jitherald_llvm::SectionLoads loads;
    uint64_t text = 0;          // load address of .text
    uint64_t except = 0, except_size = 0;

    bool open(const std::string &path)
    {
        auto b = llvm::MemoryBuffer::getFile(path);
        if (!b)
            return false;
        buf = std::move(*b);
        auto o = llvm::object::ObjectFile::createObjectFile(buf->getMemBufferRef());
        if (!o) {
            llvm::consumeError(o.takeError());
            return false;
        }
        obj = std::move(*o);
        size_t total = 0;
        for (const auto &s : obj->sections())
            total += s.getSize() + 16;
        mem.assign(total + 16, 0);
        size_t used = 0;
        for (const auto &s : obj->sections()) {
            if (loads.addr.size() <= s.getIndex())
                loads.addr.resize(s.getIndex() + 1);
            if (!(llvm::object::ELFSectionRef(s).getFlags() & llvm::ELF::SHF_ALLOC) || !s.getSize())
                continue;
            uint64_t a = (uint64_t(uintptr_t(mem.data() + used)) + 15) & ~uint64_t(15);
            used = size_t(a - uint64_t(uintptr_t(mem.data()))) + s.getSize();
            auto c = s.getContents();
            if (c && !s.isBSS())
                std::copy(c->begin(), c->end(), reinterpret_cast<char *>(uintptr_t(a)));
            else if (!c)
                llvm::consumeError(c.takeError());
            loads.addr[s.getIndex()] = a;
            auto name = s.getName();
            if (name && *name == ".text")
                text = a;
            if (name && *name == ".gcc_except_table") {
                except = a;
                except_size = s.getSize();
            }
            if (!name)
                llvm::consumeError(name.takeError());
        }
        return true;
    }
};

// f's address in the object: its section's offset (functions of different sections
// share offsets; llvm-dwarfdump prints those for an object file).
static uint64_t rel(const Loaded &l, const Func &f)
{
    for (const auto &s : l.obj->symbols()) {
        auto name = s.getName();
        auto sec = s.getSection();
        if (name && sec && *name == f.name && *sec != l.obj->section_end())
            return f.start - l.loads.getSectionLoadAddress(**sec) + (*sec)->getAddress();
        if (!name)
            llvm::consumeError(name.takeError());
        if (!sec)
            llvm::consumeError(sec.takeError());
    }
    CHECK(!"function not in the symbol table");
    return ~uint64_t(0);
}

static const Func *find(const Object &o, const std::string &name)
{
    for (const Func &f : o.funcs)
        if (f.name == name)
            return &f;
    return nullptr;
}

// llvm-dwarfdump --debug-line: "addr line file" of every row but end_sequence.
static std::set<std::string> dwarf_rows(const std::string &obj)
{
    std::string out = run("llvm-dwarfdump-14 --debug-line " + obj);
    std::map<unsigned, std::string> files;
    std::set<std::string> rows;
    std::regex file_re(R"(file_names\[\s*(\d+)\]:\s*\n\s*name: \"([^\"]*)\")");
    for (std::sregex_iterator it(out.begin(), out.end(), file_re), e; it != e; ++it)
        files[unsigned(std::stoul((*it)[1]))] = base((*it)[2]);
    std::regex row_re(R"(^0x([0-9a-f]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s*(.*)$)");
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_match(line, m, row_re) || m[5].str().find("end_sequence") != std::string::npos)
            continue;
        rows.insert(std::to_string(std::stoull(m[1], nullptr, 16)) + " " + m[2].str() + " " +
                    files[unsigned(std::stoul(m[4]))]);
    }
    return rows;
}

static void check_lines(const Loaded &l, const Object &o, const std::string &obj)
{
    std::set<std::string> want = dwarf_rows(obj);
    CHECK(!want.empty());
    std::set<std::string> got;
    for (const Func &f : o.funcs)
        for (const jh_line &ln : f.lines) {
            CHECK(ln.offset < f.size);
            CHECK(ln.file < f.files.size());
            got.insert(std::to_string(rel(l, f) + ln.offset) + " " + std::to_string(ln.line) +
                       " " + base(o.files[f.files[ln.file]]));
        }
    for (const std::string &r : want)
        if (!got.count(r)) {
            CHECK(!"a row of llvm-dwarfdump is missing");
            fprintf(stderr, "  missing row (offset line file): %s\n", r.c_str());
        }
    for (const std::string &r : got)
        if (!want.count(r)) {
            CHECK(!"a row llvm-dwarfdump does not have");
            fprintf(stderr, "  extra row (offset line file): %s\n", r.c_str());
        }
}

// llvm-dwarfdump --eh-frame: the rows of the FDE for [pc, pc+size), addresses made
// relative to pc.
static std::vector<std::string> cfa_rows(const std::string &file, uint64_t pc, uint64_t size)
{
    std::string out = run("llvm-dwarfdump-14 --eh-frame " + file);
    std::vector<std::string> rows;
    std::regex fde_re(R"(FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+))");
    std::regex row_re(R"(^\s+0x([0-9a-f]+): (.*)$)");
    bool in_fde = false;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, fde_re)) {
            in_fde = std::stoull(m[1], nullptr, 16) == pc && std::stoull(m[2], nullptr, 16) == pc + size;
            continue;
        }
        if (line.find(" CIE") != std::string::npos)
            in_fde = false;
        if (in_fde && std::regex_match(line, m, row_re))
            rows.push_back(std::to_string(std::stoull(m[1], nullptr, 16) - pc) + ": " + m[2].str());
    }
    return rows;
}

// What jh_code_add makes of f's JH_UNWIND_EH_FRAME description: its raw CFI (empty when
// refused, why says why), personality and LSDA.
struct Lowered {
    std::vector<uint8_t> cfi;
    std::string why;
    uint64_t personality = 0, lsda = 0;
};

static Lowered lower(const Object &o, const Func &f)
{
    Lowered r;
    jh_code c{};
    c.sz = sizeof c;
    c.name = f.name.c_str();
    c.start = reinterpret_cast<const void *>(uintptr_t(f.start));
    c.size = f.size;
    c.unwind = JH_UNWIND_EH_FRAME;
    c.eh_frame = o.eh_frame.data();
    c.eh_frame_len = o.eh_frame.size();
    c.eh_frame_addr = uintptr_t(o.eh_frame_addr);
    struct jh__buf b = {};
    char why[300] = "";
    if (jh__code_lower(&c, &b, why, sizeof why) == 0 && jh__code_validate(&c, why, sizeof why) == 0) {
        r.cfi.assign(c.cfi, c.cfi + c.cfi_len);
        r.personality = uint64_t(uintptr_t(c.personality));
        r.lsda = uint64_t(uintptr_t(c.lsda));
    } else {
        r.why = why;
    }
    free(b.p);
    return r;
}

// f's CFI under jitherald's CIE, as the library encodes it for every channel, decoded.
static std::vector<std::string> our_rows(const Func &f, const std::vector<uint8_t> &cfi)
{
    struct jh__func jf = {};
    jf.start = f.start;
    jf.size = f.size;
    jf.unwind = JH_UNWIND_CFI;
    jf.cfi = cfi.data();
    jf.cfi_len = cfi.size();
    uint64_t eh_addr = (f.start + f.size + 0x1000) & ~uint64_t(7);
    struct jh__cfi_opts o = {};
    o.arch = &jh__arch_x86_64;
    o.ptr = JH__CFI_PCREL;
    o.addr = eh_addr;
    struct jh__buf b = {};
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &jf, 1, nullptr), 1);
    std::string path = tmp + "/" + f.name + ".elf";
    CHECK_EQ(elf_wrap_eh_frame(path.c_str(), f.start, f.size, eh_addr, b.p, b.len, 0, nullptr, 0), 0);
    free(b.p);
    return cfa_rows(path, f.start, f.size);
}

static void check_cfi(const Loaded &l, const Object &o, const Func &f, const std::string &obj)
{
    std::vector<std::string> want = cfa_rows(obj, rel(l, f), f.size);
    CHECK(!want.empty());
    Lowered lw = lower(o, f);
    if (lw.cfi.empty())
        fprintf(stderr, "%s: refused: %s\n", f.name.c_str(), lw.why.c_str());
    CHECK(!lw.cfi.empty());
    if (lw.cfi.empty())
        return;
    std::vector<std::string> got = our_rows(f, lw.cfi);
    CHECK(got == want);
    if (got != want) {
        fprintf(stderr, "%s: unwind rows differ\n  object's:\n", f.name.c_str());
        for (auto &r : want)
            fprintf(stderr, "    %s\n", r.c_str());
        fprintf(stderr, "  ours:\n");
        for (auto &r : got)
            fprintf(stderr, "    %s\n", r.c_str());
    }
}

static std::string compile(const std::string &cmd, const std::string &src, const std::string &out)
{
    std::string obj = tmp + "/" + out;
    run(cmd + " -c -o " + obj + " " + root + "/" + src);
    return obj;
}

static void test_c()
{
    std::string chain = compile("clang-14 -g -O1", "tests/programs/llvm/chain.c", "chain.o");
    Loaded l;
    CHECK(l.open(chain));
    Object o = jitherald_llvm::describe(*l.obj, l.loads);
    CHECK_EQ(o.funcs.size(), 2);
    const Func *leaf = find(o, "leaf"), *middle = find(o, "middle");
    CHECK(leaf && middle);
    if (!leaf || !middle)
        return;
    CHECK_STR(leaf->display.c_str(), "leaf");
    // readelf's view of the same symbol table: value and size
    std::string syms = run("readelf -sW " + chain);
    for (const Func *f : {leaf, middle}) {
        std::regex re("\\s([0-9a-f]{16})\\s+(\\d+)\\s+FUNC\\s+GLOBAL\\s+DEFAULT\\s+\\d+\\s+" + f->name + "\\n");
        std::smatch m;
        CHECK(std::regex_search(syms, m, re));
        if (!m.empty()) {
            CHECK_EQ(f->start - l.text, std::stoull(m[1], nullptr, 16));
            CHECK_EQ(f->size, std::stoull(m[2]));
        }
        CHECK(f->prologue_end > 0 && f->prologue_end < f->size);
        check_cfi(l, o, *f, chain);
    }
    check_lines(l, o, chain);
    CHECK(o.notes.empty());

    // work(): hot.h's mix() inlined, so its rows name two files
    std::string work = compile("clang-14 -g -O1", "tests/programs/llvm/work.c", "work.o");
    Loaded w;
    CHECK(w.open(work));
    Object ow = jitherald_llvm::describe(*w.obj, w.loads);
    const Func *fw = find(ow, "work");
    CHECK(fw != nullptr);
    if (fw) {
        std::set<std::string> names;
        for (uint32_t i : fw->files)
            names.insert(base(ow.files[i]));
        CHECK(names == (std::set<std::string>{"work.c", "hot.h"}));
        CHECK(ow.files[fw->files[0]][0] == '/');      // absolute, as the debuggers want them
        check_cfi(w, ow, *fw, work);
    }
    check_lines(w, ow, work);

    // A section that was not loaded (dead code LLVM dropped): its functions are left out.
    Loaded d;
    CHECK(d.open(chain));
    for (const auto &s : d.obj->sections()) {
        auto name = s.getName();
        if (name && *name == ".text")
            d.loads.addr[s.getIndex()] = 0;
        if (!name)
            llvm::consumeError(name.takeError());
    }
    CHECK_EQ(jitherald_llvm::describe(*d.obj, d.loads).funcs.size(), 0);
}

static void test_cxx()
{
    std::string guards = compile("clang++-14 -g -O1", "tests/programs/llvm/guards.cc", "guards.o");
    Loaded l;
    CHECK(l.open(guards));
    Object o = jitherald_llvm::describe(*l.obj, l.loads);
    const Func *deep = find(o, "_Z4deepl"), *entry = find(o, "cxx_entry"),
               *catcher = find(o, "catch_here");
    CHECK(deep && entry && catcher);
    if (!deep || !entry || !catcher)
        return;
    CHECK_STR(deep->display.c_str(), "deep(long)");
    CHECK_STR(entry->display.c_str(), "cxx_entry");
    // the CIE's personality, through its DW.ref slot: not relocated here, so by name
    void *pers = dlsym(RTLD_DEFAULT, "__gxx_personality_v0");
    CHECK(pers != nullptr);
    Lowered ld = lower(o, *deep), lc = lower(o, *catcher), le = lower(o, *entry);
    CHECK_EQ(ld.personality, uint64_t(uintptr_t(pers)));
    CHECK_EQ(lc.personality, uint64_t(uintptr_t(pers)));
    // deep's Guard needs a cleanup, catch_here a catch: each an LSDA in the loaded
    // .gcc_except_table; cxx_entry has no landing pad, so no personality either
    CHECK(l.except != 0);
    CHECK(ld.lsda >= l.except && ld.lsda < l.except + l.except_size);
    CHECK(lc.lsda >= l.except && lc.lsda < l.except + l.except_size);
    CHECK(ld.lsda != lc.lsda);
    CHECK_EQ(le.personality, 0);
    CHECK_EQ(le.lsda, 0);
    for (const Func &f : o.funcs)
        check_cfi(l, o, f, guards);
    check_lines(l, o, guards);

    // RuntimeDyld does not load the weak DW.ref slot's section: the routine is then the
    // one the slot's own relocation names
    Loaded r;
    CHECK(r.open(guards));
    bool dropped = false;
    for (const auto &s : r.obj->sections()) {
        auto name = s.getName();
        if (name && name->startswith(".data.DW.ref.")) {
            r.loads.addr[s.getIndex()] = 0;
            dropped = true;
        }
        if (!name)
            llvm::consumeError(name.takeError());
    }
    CHECK(dropped);
    Object ro = jitherald_llvm::describe(*r.obj, r.loads);
    const Func *rdeep = find(ro, "_Z4deepl");
    CHECK(rdeep != nullptr);
    if (rdeep) {
        Lowered lr = lower(ro, *rdeep);
        CHECK_EQ(lr.personality, uint64_t(uintptr_t(pers)));
        CHECK(!lr.cfi.empty());
    }
}

static void test_translation()
{
    std::string cies = compile("clang-14", "tests/unit/llvm/cies.s", "cies.o");
    Loaded l;
    CHECK(l.open(cies));
    Object o = jitherald_llvm::describe(*l.obj, l.loads);
    CHECK_EQ(o.funcs.size(), 6);
    for (const char *name : {"f_caf4", "f_init"}) {
        const Func *f = find(o, name);
        CHECK(f != nullptr);
        if (f)
            check_cfi(l, o, *f, cies);
    }
    struct { const char *name, *says; } refused[] = {
        {"f_odd", "offset -12 is not a multiple of 8"},
        {"f_restore", "DW_CFA_restore under a CIE whose initial rules differ"},
        {"f_ra", "return address is in register 15"},
        {"f_sig", "signal frame"},
    };
    for (const auto &x : refused) {
        const Func *f = find(o, x.name);
        CHECK(f != nullptr);             // still announced, by name
        if (!f)
            continue;
        Lowered lw = lower(o, *f);
        CHECK(lw.cfi.empty());
        printf("%s: %s\n", x.name, lw.why.c_str());
        CHECK(lw.why.find(x.says) != std::string::npos);
    }
}

// The same description whichever reader gave the lines.
static void same(const Object &a, const Object &b, const std::string &what)
{
    CHECK_EQ(a.funcs.size(), b.funcs.size());
    CHECK(a.notes == b.notes);
    for (size_t i = 0; i < a.funcs.size() && i < b.funcs.size(); i++) {
        const Func &x = a.funcs[i], &y = b.funcs[i];
        CHECK_STR(x.name.c_str(), y.name.c_str());
        CHECK_STR(x.display.c_str(), y.display.c_str());
        CHECK_EQ(x.start, y.start);
        CHECK_EQ(x.size, y.size);
        CHECK_EQ(x.prologue_end, y.prologue_end);
        CHECK_EQ(x.lines.size(), y.lines.size());
        CHECK_EQ(x.files.size(), y.files.size());
        for (size_t k = 0; k < x.files.size() && k < y.files.size(); k++)
            CHECK_STR(a.files[x.files[k]].c_str(), b.files[y.files[k]].c_str());
        bool rows = x.lines.size() == y.lines.size();
        for (size_t k = 0; rows && k < x.lines.size(); k++)
            rows = x.lines[k].offset == y.lines[k].offset && x.lines[k].line == y.lines[k].line &&
                   x.lines[k].column == y.lines[k].column && x.lines[k].file == y.lines[k].file;
        if (!rows)
            fprintf(stderr, "%s: %s: rows differ between lines.cc and DWARFContext\n",
                    what.c_str(), x.name.c_str());
        CHECK(rows);
    }
}

static void test_fast_lines()
{
    const char *srcs[] = {"tests/programs/llvm/chain.c", "tests/programs/llvm/work.c",
                          "tests/programs/llvm/entry.c", "tests/programs/llvm/guards.cc"};
    for (const char *dwarf : {"-gdwarf-4", "-gdwarf-5"}) {
        for (const char *src : srcs) {
            std::string cc = std::string(strstr(src, ".cc") ? "clang++-14 " : "clang-14 ") + dwarf;
            std::string what = base(src) + " " + dwarf;
            for (const char *opt : {" -O1", " -O0 -ffunction-sections"}) {
                std::string obj = compile(cc + opt, src, base(src) + dwarf + (opt[2] == '1' ? "" : "-fs") + ".o");
                Loaded l;
                CHECK(l.open(obj));
                std::vector<jitherald_llvm::LineUnit> units;
                CHECK(jitherald_llvm::read_line_units(*l.obj, l.loads, units));   // no fallback
                CHECK(!units.empty() && !units[0].rows.empty());
                Object fast = jitherald_llvm::describe(*l.obj, l.loads);
                Object ref = jitherald_llvm::describe(*l.obj, l.loads, jitherald_llvm::Lines::DWARF_CONTEXT);
                CHECK(!fast.funcs.empty() && !fast.funcs[0].lines.empty());
                same(fast, ref, what + opt);
            }
        }
    }
}

int main()
{
    for (const char *tool : {"clang-14", "clang++-14", "llvm-dwarfdump-14", "readelf"})
        if (run(std::string("command -v ") + tool, false).empty())
            SKIP((std::string(tool) + " not installed (Debian packages clang-14, llvm-14, binutils)").c_str());
    const char *r = getenv("JH_ROOT");
    root = r ? r : ".";
    char dir[] = "/tmp/jh-test-llvm-object.XXXXXX";
    CHECK(mkdtemp(dir) != nullptr);
    tmp = dir;
    test_c();
    test_cxx();
    test_translation();
    test_fast_lines();
    if (!getenv("JH_KEEP"))
        run("rm -rf " + tmp);
    return check_done();
}
