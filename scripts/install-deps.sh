#!/usr/bin/env bash
# Installs what building and testing jitherald needs on Debian 12 (run as root or via sudo).
# The library itself needs only libc; the rest is the tools we test against (perf, gdb,
# lldb, valgrind, libunwind, Chromium for the audit log's HTML report, mingw-w64 and Wine
# for the Windows build and its tests, LuaJIT for its adapter; other JITs whose files the
# CLI must read: node, Erlang, rakudo, Mono; debuginfod and elfutils for the build-id
# tests), LLVM 14 and clang-14 (the LLVM adapter, the C and C++ its tests JIT-compile, the
# GDB benchmark's peer) and the libraries the offline CLI uses (libdw, capstone, msgpack-c).
set -euo pipefail
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential g++ clang make pkg-config binutils file procps psmisc util-linux man-db mandoc \
    gdb lldb valgrind linux-perf \
    llvm-14 llvm-14-dev clang-14 libunwind-14 libunwind-dev libmsgpack-dev libdw-dev libelf-dev libcapstone-dev \
    chromium fonts-dejavu-core luajit debuginfod elfutils bzip2 iproute2 \
    g++-mingw-w64-x86-64-win32 wine wine64 \
    nodejs erlang-base rakudo mono-runtime mono-4.0-gac >/dev/null
# perf record as a normal user needs perf_event_paranoid <= 2 (Debian ships 3).
if [ "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 0)" -gt 2 ]; then
    echo "lowering kernel.perf_event_paranoid to 2 so perf record works for this user"
    $SUDO sysctl -q kernel.perf_event_paranoid=2 || true
fi
echo "dependencies installed"
