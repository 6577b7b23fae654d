#!/usr/bin/env bash
# pac_log.sh — the audit log records the process's PAC mask, and the offline CLI strips
# signed addresses with it. tests/arm64/programs/pac_log runs under qemu-aarch64 -cpu max
# with JITHERALD=auditlog and logs a frame record holding a return address into its JIT
# function signed with the A key; on the x86-64 host, `jitherald log F` must show the mask
# and `jitherald log F show ADDR --vm pac_log` must name the function behind the signed
# address (without the mask, the lookup of the signed value finds nothing).
# Run by the arm64 tier (make test-arm64) with ARM64_PROG_DIR, ARM64_QEMU and JH_HOST_CLI.
set -u
P=${ARM64_PROG_DIR:?}/pac_log
QEMU=${ARM64_QEMU:?}
CLI=${JH_HOST_CLI:?}
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$P" ] || fail "$P not built"
[ -x "$CLI" ] || fail "the host CLI $CLI is not built"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# shellcheck disable=SC2086 # QEMU is a command and its options
JITHERALD=auditlog JITHERALD_DIR=$T $QEMU "$P" >"$T/out" 2>&1 || fail "pac_log: $(cat "$T/out")"
cat "$T/out"
read -r addr lr ret < <(sed -n 's/^frame_rec at \(0x[0-9a-f]*\): lr \(0x[0-9a-f]*\) signed from \(0x[0-9a-f]*\)$/\1 \2 \3/p' "$T/out")
[ -n "${ret:-}" ] || fail "pac_log printed no frame record"
[ "$lr" != "$ret" ] || fail "the return address was not signed (no PAC under this qemu?)"
log=$(ls "$T"/paclog-*.jhlog) || fail "no audit log"
"$CLI" log "$log" | tee "$T/info"
grep -q '^audit log version 1: .*aarch64 (signed code addresses: PAC mask 0x7f000000000000)$' "$T/info" ||
    fail "the log's header does not give the PAC mask of 48-bit addresses"
"$CLI" log "$log" show "$addr" --vm "$P" | tee "$T/show"
grep -q "^  lr = $lr (signed: $ret) -> jit_signed+0x10\$" "$T/show" ||
    fail "the signed return address is not stripped to jit_signed+0x10"
# The signed value given on the command line resolves too.
"$CLI" log "$log" show "$lr" | tee "$T/fn"
grep -q 'jit_signed' "$T/fn" || fail "show of the signed address does not name jit_signed"
# The log's images for arm64 (to-elf): the signed range as DW_CFA_AARCH64_negate_ra_state
# after paciasp and again after autiasp, in CFI that readelf and llvm-dwarfdump accept.
"$CLI" log "$log" to-elf "$T/img" >/dev/null || fail "to-elf of the arm64 log"
img=$(find "$T/img" -name '*.elf' | head -1)
[ -n "$img" ] || fail "to-elf wrote no image"
readelf --debug-dump=frames "$img" >"$T/frames" 2>&1
cat "$T/frames"
grep -q 'Return address column: 30' "$T/frames" || fail "the image's CIE is not arm64's"
# per section: .debug_frame, and .eh_frame (which the images carry too, for perf's and
# eBPF profilers' DWARF unwinding)
counts=$(awk '/^Contents of the .* section/ { s = $4 } /DW_CFA_AARCH64_negate_ra_state|DW_CFA_GNU_window_save/ { n[s]++ }
              END { for (k in n) print k, n[k] }' "$T/frames" | sort)
echo "signing-state toggles per section: $counts"
grep -qx '.debug_frame 2' <<<"$counts" && grep -qx '.eh_frame 2' <<<"$counts" ||
    fail "the image's FDEs do not toggle the signing state twice (after paciasp, autiasp) in each section: $counts"
if command -v llvm-dwarfdump-14 >/dev/null; then
    llvm-dwarfdump-14 --verify "$img" >"$T/verify" 2>&1 || { cat "$T/verify"; fail "llvm-dwarfdump-14 --verify"; }
    llvm-dwarfdump-14 --debug-frame "$img" | grep -q 'DW_CFA_AARCH64_negate_ra_state' ||
        fail "llvm-dwarfdump does not read the signing state"
fi
echo "ok: the audit log's PAC mask strips signed return addresses offline; its arm64 images carry the signed range"
