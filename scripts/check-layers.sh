#!/usr/bin/env bash
# The house rules that a compiler does not check (docs/architecture.md), checked by
# `make test`:
#   1. includes go one way: src/base <- src/fmt <- src/channels <- src/core, and
#      tools/lib <- tools (the CLI); the CLI may use base and fmt, never core or channels;
#      adapters (adapters/llvm) use the public API only, as any JIT does;
#      the preload of `jitherald run` (adapters/preload) may use the reader library and
#      base too, never fmt, channels or core; the JVMTI agent (adapters/jvmti) the reader
#      library's prologue reader (tools/lib/prologue.h);
#      a name without a directory is a file of the includer's own directory (so tools/lib
#      cannot reach the commands' headers through -Itools);
#   2. no .c file is included by another file (link a library instead);
#   3. no raw mutex (pthread, or Windows' SRWLOCK and CRITICAL_SECTION) outside
#      src/base/lock.[ch] and lock_win.c: every lock has a fork path;
#   4. no file under src/, tools/ or adapters/ holds more than 700 lines;
#   5. no tracked file holds a merge's conflict markers, and every shell script parses
#      (bash -n): a script that bash refuses fails CI at its first line, with no test run;
#   6. the architecture has one home: no test of which one the compiler targets
#      (__x86_64__, __aarch64__, __i386__, _M_X64, _M_ARM64 and their other spellings) and
#      no ELF machine (EM_X86_64, EM_AARCH64...) in src/, tools/ or adapters/ outside
#      src/fmt/arch.[ch] (struct jh__arch, JH__ARCH_HOST), but for the files listed in
#      arch_allowed below, whose code is one architecture's instructions.
# Prints every violation and exits 1 if there is one.
set -u
cd "$(dirname "$0")/.."
bad=0
say() { echo "check-layers: $*"; bad=1; }

# Which layers a file may include, by the layer it is in.
allowed() {
    case $1 in
    src/base/*)     echo "base" ;;
    src/fmt/*)      echo "base fmt" ;;
    src/channels/*) echo "base fmt channels" ;;
    src/core/*)     echo "base fmt channels core" ;;
    tools/lib/*)    echo "base fmt lib" ;;
    tools/*)        echo "base fmt lib" ;;
    adapters/preload/*) echo "base lib" ;;
    adapters/jvmti/*) echo "lib" ;;     # the prologue reader: one list of VMs' prologues
    adapters/*)     echo "(its own directory and the public API)" ;;
    *)              echo "*" ;;
    esac
}

for f in $(git ls-files 'src/*.[ch]' 'tools/*.[ch]' 'adapters/*.[ch]' 'adapters/*.cc' 'adapters/*.cpp' 2>/dev/null); do
    ok=$(allowed "$f")
    while IFS= read -r line; do
        inc=$(sed -n 's/^#include "\([^"]*\)".*/\1/p' <<<"$line")
        [ -n "$inc" ] || continue
        case $inc in
        jitherald.h|*/jitherald.h) continue ;;
        esac
        layer=${inc%%/*}
        if [ "$layer" = "$inc" ]; then          # the file's own directory, not one on -I
            [ -e "$(dirname "$f")/$inc" ] ||
                say "$f includes \"$inc\", which is not in its own directory ($(dirname "$f"))"
            continue
        fi
        [ "$ok" = "*" ] && continue
        case " $ok " in
        *" $layer "*) ;;
        *) say "$f includes \"$inc\": $f may include only from: $ok" ;;
        esac
    done < <(grep -E '^#include +"' "$f")
done

inc_c=$(grep -rlE '^#include +"[^"]+\.(c|cc)"' src tools tests fuzz bench examples adapters 2>/dev/null)
for f in $inc_c; do say "$f includes a .c file"; done

raw=$(grep -rnE '\bpthread_mutex_(t|init|lock|trylock)\b|PTHREAD_MUTEX_INITIALIZER|\bSRWLOCK\b|CRITICAL_SECTION' src \
      | grep -vE '^src/base/lock(_win)?\.[ch]:')
[ -n "$raw" ] && say "raw mutexes outside src/base/lock.[ch] and lock_win.c (use struct jh__lock):
$raw"

for f in $(git ls-files 'src/*.[ch]' 'tools/*.[ch]' 'adapters/*.[ch]'); do
    n=$(wc -l < "$f")
    [ "$n" -gt 700 ] && say "$f has $n lines (700 at most: one job per file)"
done

marks=$(git grep -nE '^(<<<<<<<|>>>>>>>) ' -- . ':!*.md' 2>/dev/null)
[ -n "$marks" ] && say "conflict markers left by a merge:
$marks"
for f in $(git ls-files '*.sh' .ci/run); do
    err=$(bash -n "$f" 2>&1) || say "$f does not parse: $err"
done

# Rule 6. Each file allowed an architecture test, and why.
arch_allowed() {
    case $1 in
    src/fmt/arch.[ch]) ;;               # the architecture's home
    adapters/preload/pkeys.c) ;;        # x86 protection keys: cpuid and rdpkru/wrpkru, inline asm
    adapters/preload/deepbind_jump.c) ;; # dlopen's jump to libc's, top-level asm per architecture
    *) return 1 ;;
    esac
}
arch_re='\b(__x86_64__?|__amd64__?|_M_X64|_M_AMD64|__i386__?|_M_IX86|__aarch64__|_M_ARM64|__arm__|_M_ARM|__riscv|EM_X86_64|EM_386|EM_AARCH64|EM_ARM)\b'
for f in $(git ls-files 'src/*' 'tools/*' 'adapters/*' | grep -E '\.(c|h|cc|cpp|hh|hpp)$'); do
    arch_allowed "$f" && continue
    hits=$(grep -nE "$arch_re" "$f") || continue
    say "$f tests the architecture (describe it in struct jh__arch, src/fmt/arch.h, and read
that: JH__ARCH_HOST, or the architecture a file names; a file of one architecture's
instructions goes on arch_allowed's list in this script, with its reason):
$hits"
done

[ $bad = 0 ] && echo "check-layers: ok"
exit $bad
