#!/usr/bin/env bash
# install-deps.sh [demo|test] — installs Debian 12's packages for what the caller will run,
# as root directly or through sudo, which it calls itself.
#   demo        what `make demo` needs: a C compiler, make and perf (about 320 MiB
#               installed on a bare Debian 12, most of it gcc and perf's Python).
#   test (or no argument)
#               what `make test` needs (about 3.4 GiB installed): the tools we test against (perf, gdb,
#               lldb, valgrind, libunwind, Chromium for the audit log's HTML report,
#               mingw-w64 and Wine for the Windows build and its tests, the arm64 cross
#               compiler, qemu-user and Debian's arm64 libunwind and LuaJIT (unpacked by
#               scripts/arm64-debs.sh) for make test-arm64, LuaJIT for its
#               adapter; other JITs whose files the CLI must read: node, Erlang, rakudo,
#               Mono; OpenJDK 17 (its jvmti.h builds the JVMTI agent, adapters/jvmti; its
#               java, javac and jcmd run the agent's tests); PHP 8.2 with opcache, OpenJDK 17
#               and Mono, whose JIT frames gdb must name and unwind under `jitherald run`
#               (run_php_gdb.sh, run_java_gdb.sh, run_mono_gdb.sh); debuginfod and elfutils
#               for the build-id tests), LLVM 14 and clang-14
#               (the LLVM adapter, the C and C++ its tests JIT-compile, the GDB benchmark's
#               peer) and the libraries the offline CLI uses (libdw, capstone, msgpack-c, zlib: the report's compressed data).
#               .ci/run uses this one.
# The library itself needs only libc.
set -euo pipefail

demo_pkgs="gcc libc6-dev make linux-perf"
test_pkgs="build-essential g++ clang make pkg-config binutils file procps psmisc util-linux man-db mandoc
    gdb lldb valgrind linux-perf
    llvm-14 llvm-14-dev clang-14 libunwind-14 libunwind-dev libmsgpack-dev libdw-dev libelf-dev libcapstone-dev zlib1g-dev
    chromium fonts-dejavu-core luajit debuginfod elfutils bzip2 iproute2 strace
    g++-mingw-w64-x86-64-win32 wine wine64
    gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user gdb-multiarch
    nodejs erlang-base rakudo mono-runtime mono-4.0-gac php8.2-cli php8.2-opcache
    openjdk-17-jdk-headless"

case ${1:-test} in
    demo) pkgs=$demo_pkgs ;;
    test) pkgs=$test_pkgs ;;
    *) echo "usage: $0 [demo|test]   (demo: what 'make demo' needs; test, the default: everything)" >&2
       exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: $0 [demo|test]" >&2; exit 2; }
pkgs=$(echo $pkgs)   # one line, for the messages below

# Checked before anything is run, so a user who cannot install gets one line that says what
# to ask for, not apt-get's permission errors.
SUDO=
if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-deps.sh: not root and no sudo: as root, run: apt-get install $pkgs" >&2
        exit 1
    fi
    SUDO=sudo
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps.sh: no apt-get (this script knows Debian 12): install the equivalents of: $pkgs" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086 # one word per package
$SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
# make test-arm64 also runs against Debian's arm64 builds of libunwind and LuaJIT, unpacked
# (not installed) under /opt/jitherald/arm64-debs: scripts/arm64-debs.sh says why.
if [ "${1:-test}" = test ]; then
    $SUDO bash "$(dirname "$0")/arm64-debs.sh" >/dev/null
fi
# perf record as a normal user needs perf_event_paranoid <= 2 (Debian ships 3).
if [ "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 0)" -gt 2 ]; then
    echo "lowering kernel.perf_event_paranoid to 2 so perf record works for this user"
    $SUDO sysctl -q kernel.perf_event_paranoid=2 || true
fi
echo "dependencies installed (${1:-test})"
