#!/usr/bin/env bash
# Two JIT interfaces in one process: LLVM 14 ORC with its GDB listener (its own
# __jit_debug_descriptor@@LLVM_14) and jitherald's gdb channel. gdb finds a descriptor in
# every objfile, so it names the code of both JITs; we never touch LLVM's list. When
# libLLVM comes first in the link order, jh_open warns that lldb will watch LLVM's
# interface only; when libjitherald comes first, lldb names our code. Statically linked,
# LLVM's listener shares our list; we say so.
set -eu
B=$JH_BUILD; R=$JH_ROOT
command -v gdb >/dev/null || { echo "SKIP gdb not installed"; exit 77; }
command -v llvm-config-14 >/dev/null || { echo "SKIP llvm-14-dev not installed"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cat > "$T/coexist.c" <<'C'
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
C
LL="$(llvm-config-14 --ldflags) $(llvm-config-14 --libs)"
CF="-g -O0 -I$R/include $(llvm-config-14 --cflags)"
# link order decides which interface the dynamic linker (and lldb) finds first
cc $CF "$T/coexist.c" -o "$T/llvm_first" $LL -L"$B" -ljitherald -Wl,-rpath,"$B"
cc $CF "$T/coexist.c" -o "$T/jh_first" -L"$B" -ljitherald -Wl,-rpath,"$B" $LL

for prog in llvm_first jh_first; do
    JITHERALD=gdb JITHERALD_DEBUG=1 timeout 120 gdb -q -nx -batch -ex 'break stop_here' -ex run \
        -ex 'info symbol llvm_code' -ex 'info symbol jh_code' "$T/$prog" > "$T/$prog.gdb" 2>&1 || true
    cat "$T/$prog.gdb"
    grep -Eq '^llvm_fn in section \.text of <in-memory@0x' "$T/$prog.gdb"
    grep -Eq '^jh_fn in section \.text of <in-memory@0x' "$T/$prog.gdb"
    echo "PASS gdb sees both JITs ($prog)"
done
grep -q 'also defines __jit_debug_descriptor and comes first' "$T/llvm_first.gdb"
! grep -q 'also defines __jit_debug_descriptor' "$T/jh_first.gdb"
echo "PASS the warning names the case where lldb would not see us"

# Static: LLVM 14's static GDB listener only references the two symbols, so it resolves
# them to ours and edits our list (under its own lock). Both JITs are named; jitherald warns.
c++ -g -O0 -x c -I"$R/include" $(llvm-config-14 --cflags) "$T/coexist.c" -x none -o "$T/static" \
    "$B/libjitherald.a" $(llvm-config-14 --link-static --ldflags --libs orcjit native) \
    $(llvm-config-14 --link-static --system-libs) -lpthread -ldl 2> "$T/static.err" ||
    { grep -v warning "$T/static.err" | head; exit 1; }
{
    JITHERALD=gdb JITHERALD_DEBUG=1 timeout 120 gdb -q -nx -batch -ex 'break stop_here' -ex run \
        -ex 'info symbol llvm_code' -ex 'info symbol jh_code' "$T/static" > "$T/static.gdb" 2>&1 || true
    cat "$T/static.gdb"
    grep -Eq '^llvm_fn in section \.text of <in-memory@0x' "$T/static.gdb"
    grep -Eq '^jh_fn in section \.text of <in-memory@0x' "$T/static.gdb"
    grep -q "another JIT adds entries to jitherald's __jit_debug_descriptor list" "$T/static.gdb"
    echo "PASS static link: one shared list, both named, the hazard reported"
}

if command -v lldb >/dev/null; then
    JITHERALD=gdb timeout 120 lldb --no-lldbinit -b -o 'b stop_here' -o run -o 'frame variable jh_code' \
        -o 'image lookup -a jh_code' -- "$T/jh_first" > "$T/lldb" 2>&1 || true
    cat "$T/lldb"
    grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`jh_fn' "$T/lldb"
    echo "PASS lldb names our code when we come first"
fi
