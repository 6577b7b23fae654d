#!/usr/bin/env bash
# callgrind_live.sh (bench) — the share of each VM's JIT instructions that callgrind names
# live under `jitherald run -c elfmap` (elfmap's images, nothing run afterwards), beside the
# offline fallback `jitherald callgrind --map` applied to the same profile: PHP 8.2
# (opcache tracing JIT, jit_debug=0x10), OpenJDK 17 (-XX:+DumpPerfMapAtExit), Mono
# (--jitmap) and node (--perf-basic-prof), one small program each, beside rakudo (MoarVM,
# whose code is W^X: the reference), and why a VM's code
# stays unnamed live (what elfmap said, issue 24 capability 1, docs/elfmap.md "Writable and
# shared code pages"). JIT instructions are those callgrind counted inside the ranges of
# the VM's own perf map (tests/integration/cg_named.pl).
# Beside them the demo JIT with RWX code, which embeds jitherald: mj-flag says it writes its
# code only under its lock (JH_OPT_CODE_RWX: named live), mj-rwx does not (left anonymous).
# JH_BENCH_VMS (default "php java mono node rakudo mj-flag mj-rwx"): which VMs.
# A benchmark, not a test: it prints a table and never fails on a number.
set -u
B=$(cd "${JH_BUILD:-build}" && pwd)
R=$(cd "$(dirname "$0")/.." && pwd)
CLI=$B/jitherald
NAMED=$R/tests/integration/cg_named.pl
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
export JITHERALD_DIR=$T/img
# rakudo's perf map; blocking: every hot sub is compiled before it runs on
export MVM_JIT_PERF_MAP=1 MVM_SPESH_BLOCKING=1

command -v valgrind > /dev/null || { echo "valgrind not installed"; exit 0; }

cat > spin.php <<'PHP'
<?php
function spin($n) { $s = 0; for ($i = 0; $i < $n; $i++) { $s += $i % 7; } return $s; }
$t = 0;
for ($k = 0; $k < 20; $k++) { $t += spin(20000); }
echo "sum $t\n";
PHP
cat > Hot.java <<'JAVA'
public class Hot {
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    public static void main(String[] a) {
        long s = 0;
        for (int i = 0; i < 30; i++) s += fib(18);
        System.out.println(s);
    }
}
JAVA
cat > fib.raku <<'RAKU'
sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(14); say (1..500).map(* * 2).sum
RAKU
cat > fib.js <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0;
for (let i = 0; i < 3; i++) s += fib(15);
console.log(s);
JS

cmd_of() { # VM: its command line, or nothing when it is not installed
    case $1 in
    php) command -v php > /dev/null &&
         echo php -d opcache.enable_cli=1 -d opcache.jit=tracing -d opcache.jit_buffer_size=16M \
              -d opcache.jit_debug=0x10 -d opcache.file_update_protection=0 spin.php ;;
    java) command -v javac > /dev/null && javac Hot.java 2> /dev/null &&
          echo java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit \
               -XX:TieredStopAtLevel=1 -Xshare:off -cp . Hot ;;
    mono) [ -f /usr/lib/mono/4.5/gacutil.exe ] && command -v mono > /dev/null &&
          echo mono --jitmap /usr/lib/mono/4.5/gacutil.exe -l ;;
    node) command -v node > /dev/null && echo node --perf-basic-prof --always-sparkplug fib.js ;;
    rakudo) command -v rakudo > /dev/null &&            # W^X: the reference
            echo rakudo fib.raku ;;
    # the demo JIT, which embeds jitherald (JITHERALD=elfmap,perfmap, not jitherald run):
    # RWX code it says it writes under its lock (JH_OPT_CODE_RWX), and the same without
    mj-flag) echo "$B/examples/minijit" --rwx-flag "$R/examples/minijit/fib.mini" 20 ;;
    mj-rwx) echo "$B/examples/minijit" --rwx "$R/examples/minijit/fib.mini" 20 ;;
    esac
}

share() { # MAP ANNOTATION -> "P%" (cg_named.pl, which counts offline names with --offline)
    perl "$NAMED" "$@" 2> /dev/null | sed -n 's/.*(\(.*\)% named)/\1%/p'
}

printf '%-7s %10s %12s %9s  %s\n' VM live offline "JIT Ir" "why not live (elfmap's note)"
for vm in ${JH_BENCH_VMS:-php java mono node rakudo mj-flag mj-rwx}; do
    cmd=$(cmd_of $vm) || { printf '%-7s not installed\n' $vm; continue; }
    [ -n "$cmd" ] || { printf '%-7s not installed\n' $vm; continue; }
    rm -rf cg.out "$JITHERALD_DIR"
    launch=("$CLI" run -c elfmap --)
    [[ $vm != mj-* ]] || launch=(env JITHERALD=elfmap,perfmap)
    # shellcheck disable=SC2086
    timeout 900 "${launch[@]}" valgrind -q --tool=callgrind \
        --callgrind-out-file=cg.out $cmd > $vm.out 2> $vm.err
    pid=$(sed -n 's/^pid: //p' cg.out 2> /dev/null)
    map=/tmp/perf-$pid.map
    if [ -z "$pid" ] || [ ! -s "$map" ]; then
        printf '%-7s no profile or no perf map (%s)\n' $vm "$(tail -1 $vm.err)"
        continue
    fi
    mkdir -p $vm.d
    mv "$map" $vm.d/                    # its name is the object callgrind --map gives
    map=$vm.d/perf-$pid.map
    callgrind_annotate --threshold=100 cg.out > live.ann 2> /dev/null
    live=$(share $map live.ann)
    "$CLI" callgrind --map $map cg.out named.out > /dev/null 2>&1
    callgrind_annotate --threshold=100 named.out > off.ann 2> /dev/null
    off=$(share --offline $map off.ann)
    # (counted in the rewritten profile: in the raw one the rows of unnamed code added up
    # to twice as much for minijit --rwx, 1,338,061 against 667,690 named in the same run)
    jit=$(perl "$NAMED" --offline $map off.ann 2> /dev/null |
          sed -n 's/JIT instructions: \([0-9]*\) named, \([0-9]*\) by.*/\1 \2/p' |
          awk '{ print $1 + $2 }')
    why=$(grep -o 'the pages are [a-z ]*' $vm.err | sort | uniq -c | sort -rn | head -2 |
          awk '{ c = $1; $1 = ""; printf "%s%s (x%s)", sep, substr($0, 2), c; sep = "; " }')
    printf '%-7s %10s %12s %9s  %s\n' $vm "${live:-?}" "${off:-?}" "${jit:-?}" "${why:--}"
done
