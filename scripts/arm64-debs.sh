#!/usr/bin/env bash
# arm64-debs.sh [DIR] — unpacks Debian 12's arm64 builds of the libraries `make test-arm64`
# tests against (LLVM's libunwind, nongnu libunwind, LuaJIT) under DIR (default
# /opt/jitherald/arm64-debs), without installing them. Run as root (scripts/install-deps.sh
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
mkdir -p "$tmp/root"
for deb in "$tmp"/*.deb; do
    dpkg-deb -x "$deb" "$tmp/root"
done
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.old"
[ ! -e "$dest" ] || mv "$dest" "$dest.old"
mv "$tmp/root" "$dest"
rm -rf "$dest.old"
echo "arm64 libraries unpacked in $dest: $(echo $pkgs)"
