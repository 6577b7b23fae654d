#!/usr/bin/env bash
# arm64-debs.sh [DIR] — unpacks Debian 12's arm64 builds of the libraries `make test-arm64`
# tests against (LLVM's libunwind, nongnu libunwind, LuaJIT) under DIR (default
# /opt/jitherald/arm64-debs), without installing them, and bookworm-backports' qemu-aarch64
# (10.0, statically linked) as DIR/usr/bin/qemu-aarch64: Debian 12's qemu 7.2 gives gdb no
# pointer-authentication registers, so only a newer one lets gdb unwind signed frames
# (tests/arm64/gdb_a64_pac.sh). Run as root (scripts/install-deps.sh
# test calls it). Why not multiarch (dpkg --add-architecture arm64): that installs Debian's
# arm64 glibc beside the cross compiler's, of another build, and qemu then runs programs
# with one's loader and the other's libc (they hang); and libunwind-14:arm64 cannot be
# installed beside libunwind-14 at all (the same file in /usr/lib/llvm-14/lib). Unpacked
# here, the tests load them with LD_LIBRARY_PATH under the cross compiler's glibc.
set -euo pipefail
dest=${1:-/opt/jitherald/arm64-debs}
pkgs="libunwind-14:arm64 libunwind-14-dev:arm64 libunwind8:arm64 libunwind-dev:arm64
      liblzma5:arm64 luajit:arm64 libluajit-5.1-2:arm64"
# apt answers for arm64 for these two commands only; dpkg's architectures stay as they are.
apt_arm64() { apt-get -qq -o APT::Architectures::="$(dpkg --print-architecture)" \
                  -o APT::Architectures::=arm64 "$@"; }
apt_arm64 update
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"; chown _apt "$tmp" 2>/dev/null || true     # apt downloads as _apt
# shellcheck disable=SC2086 # one word per package
(cd "$tmp" && apt_arm64 download $pkgs >/dev/null)
mkdir -p "$tmp/root" "$tmp/bp/lists/partial" "$tmp/qemu"
for deb in "$tmp"/*.deb; do
    dpkg-deb -x "$deb" "$tmp/root"
done
# qemu-user from bookworm-backports: its own source list and package lists, so the
# system's apt state is not touched; only the aarch64 emulator is kept.
echo "deb http://deb.debian.org/debian bookworm-backports main" >"$tmp/bp/sources.list"
apt_bp() { apt-get -qq -o Dir::Etc::SourceList="$tmp/bp/sources.list" \
               -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$tmp/bp/lists" \
               -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= "$@"; }
apt_bp update
chown _apt "$tmp/qemu" 2>/dev/null || true
(cd "$tmp/qemu" && apt_bp download qemu-user >/dev/null)
dpkg-deb --fsys-tarfile "$tmp"/qemu/qemu-user_*.deb |
    tar -x -C "$tmp/qemu" ./usr/bin/qemu-aarch64
mkdir -p "$tmp/root/usr/bin"
mv "$tmp/qemu/usr/bin/qemu-aarch64" "$tmp/root/usr/bin/qemu-aarch64"
pkgs="$pkgs qemu-user/bookworm-backports (qemu-aarch64 only)"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.old"
[ ! -e "$dest" ] || mv "$dest" "$dest.old"
mv "$tmp/root" "$dest"
rm -rf "$dest.old"
echo "arm64 libraries unpacked in $dest: $(echo $pkgs)"
