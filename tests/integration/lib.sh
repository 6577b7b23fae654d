# tests/integration/lib.sh — sourced by every integration script, first thing:
#     . "$(dirname "$0")/lib.sh"
# It sets `set -eu` and gives:
#   B, R            the build directory and the source root ($JH_BUILD, $JH_ROOT from run.sh;
#                   run by hand, the tree the script is in and its ${BUILD:-build})
#   MINIJIT, CLI    the demo JIT and the jitherald command; MINI the demo's .mini programs
#   T               a private temporary directory, removed at exit (JH_KEEP=1 keeps it)
#   fail MSG        prints "FAIL: MSG" and exits 1
#   skip MSG        prints "SKIP MSG" and exits 77 (tests/run.sh shows every skip loudly)
#   require_tool NAME [PACKAGE]   skips when the command NAME is missing
#   program NAME    prints the path of tests/programs/NAME built by make (use it as
#                   P=$(program NAME): the script skips when make could not build it, for
#                   want of a library, and fails when it was never built)
#   at_exit CMD     runs CMD at exit (last registered first), before T is removed
#   kill_at_exit PID, wait_for_file FILE [SECONDS], wait_gone PID [SECONDS], many_mini FILE,
#   private_perf_cache, own_netns "$@" (the script again in a network namespace with only lo)
#   share REPORT PART [WHOLE]   PART's per cent of WHOLE's samples in a perf report
#   only REPORT PART WHOLE      every row of WHOLE's in a perf report is PART's
#   mj_truth_lines PROGRAM FUNCTION, so_lines JITTED.so   line tables to compare exactly
#   wine_setup      for the Windows tests (win64_*.sh): skips without Wine or mingw-w64,
#                   sets WIN (the Windows test programs) and a Wine prefix of our own
#   run_win NAME EXE ARGS...   runs a Windows program under Wine, stdout to $T/NAME.out and
#                   stderr to $T/NAME.err (CRLF made LF); its exit status
#   bt_ends_clean LOG   the backtrace in a gdb log (`bt`, then `info proc mappings`) ends
#                   cleanly: no unwinding error, and no frame gdb cannot name outside a file
#                   the process mapped (a stripped binary's own code is fine; a garbage
#                   return address is not)
#   luajit_adapter  after it, `luajit -l jitherald` loads adapters/luajit/jitherald.lua of
#                   this tree with this build's library; LUAJIT_SCRIPTS is where the tests'
#                   Lua scripts are; PID_EXEC runs a command with its pid in a file
#   chrome_page URL DOM [PNG]   the DOM of a page after its scripts ran (and a screenshot,
#                   1200x1400), in headless Chromium (skips without it); virtual time, so
#                   a loaded machine waits for the page, not for a clock; report_page.py
#                   reads both
#   java_setup      for the JVMTI agent's tests (jvmti_*.sh): skips only without Java
#                   (Debian package openjdk-17-jdk-headless), fails when java is there but
#                   its JDK (jvmti.h, javac) was not when make ran; sets JAGENT (the agent),
#                   HOT (java's options to run tests/programs/java/demo/Hot.java: append
#                   demo.Hot MODE ARGS) and HOTSRC; hot_line MARK: the line of "// @MARK"
set -eu
# node parses every CA certificate at start when NODE_EXTRA_CA_CERTS is set (some CI images
# set it): 70 of its 104 ms at `node -e 0` here, several seconds under valgrind. No test
# reaches a network; each starts node as a user would.
unset NODE_EXTRA_CA_CERTS
R=${JH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
B=${JH_BUILD:-$R/${BUILD:-build}}
export JH_ROOT=$R JH_BUILD=$B
MINIJIT=$B/examples/minijit
CLI=$B/jitherald
MINI=$R/examples/minijit

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP $*"; exit 77; }
[ -x "$MINIJIT" ] && [ -x "$CLI" ] || fail "$MINIJIT or $CLI not built (make)"

_jh_at_exit=()
at_exit() { _jh_at_exit+=("$1"); }
kill_at_exit() { at_exit "kill -9 $1 2>/dev/null; wait $1 2>/dev/null"; }
_jh_cleanup() {
    local i
    for ((i = ${#_jh_at_exit[@]} - 1; i >= 0; i--)); do eval "${_jh_at_exit[i]}" || true; done
    if [ -n "${JH_KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
T=$(mktemp -d "${TMPDIR:-/tmp}/jh-$(basename "${BASH_SOURCE[1]:-test}" .sh).XXXXXX")
trap _jh_cleanup EXIT
# The test's own start: what lies in the shared /tmp from before it is not its processes'.
: > "$T/.started"
# Did process PID write a perf map? A map left in /tmp by an earlier process that had the
# same pid (the tests of other runs, other sessions) is older than the test.
wrote_perf_map() { # PID
    [ -e "/tmp/perf-$1.map" ] && ! [ "/tmp/perf-$1.map" -ot "$T/.started" ]
}

require_tool() { # NAME [PACKAGE]
    command -v "$1" >/dev/null 2>&1 || skip "$1 not installed${2:+ (Debian package $2)}"
}

# For tests whose point is a loaded machine (the VM heard on time while other jobs run):
# two busy loops for the test's length, unless the whole suite already runs under load
# (JH_LOAD, tests/run.sh: scripts/busy.sh).
keep_cores_busy() {
    [ -n "${JH_LOADED:-}" ] && return 0
    local i
    for i in 1 2; do sh -c 'while :; do :; done' & kill_at_exit $!; done
}

# make builds tests/programs/* when their libraries are there, and otherwise writes
# NAME.missing saying which library it lacked.
program() { # NAME
    local p=$B/tests/programs/$1
    if [ -x "$p" ]; then echo "$p"; return; fi
    if [ -f "$p.missing" ]; then skip "$1 not built: $(cat "$p.missing")" >&2; fi
    fail "$p not built (make programs)" >&2
}

# The demo JIT's --pause-file handshake: it writes its pid there once its code is announced.
# Returns 1 (after a FAIL line) if FILE is still empty after SECONDS (default 60: a bound for
# a hang, not a guess at how fast a busy machine starts a program; it returns at once).
wait_for_file() { # FILE [SECONDS]
    local end=$((SECONDS + ${2:-60}))
    while [ ! -s "$1" ]; do
        [ $SECONDS -lt $end ] || { echo "FAIL: $1 still empty after ${2:-60} s"; return 1; }
        sleep 0.05
    done
}
# Waits for PID (a child of this shell, or not) to end; returns 1 if it still runs after
# SECONDS (default 60, a bound for a hang like wait_for_file's).
wait_gone() { # PID [SECONDS]
    local end=$((SECONDS + ${2:-60}))
    while kill -0 "$1" 2>/dev/null; do [ $SECONDS -lt $end ] || return 1; sleep 0.05; done
}

# 200 one-line functions and a main calling each: main returns 20100.
many_mini() { # FILE
    {
        for i in $(seq 0 199); do echo "fn f$i(x) { return x + $i }"; done
        echo "fn main() {"
        echo "  var r = 0"
        for i in $(seq 0 199); do echo "  r = r + f$i(1)"; done
        echo "  return r"
        echo "}"
    } >"$1"
}

# share REPORT PART [WHOLE]: the samples of the `perf report --stdio` rows matching the ERE
# PART, as a whole per cent of those of the rows matching the ERE WHOLE (default: every row).
# (Floored, with 1e-9 added so that p = w gives 100, not 99.) It answers a user's question (how much of the JIT's time is in this function?) where a
# rank would not: on a busy or virtual machine kernel rows (a hypervisor's irq functions)
# may outrank any function of the program, and change no share of the JIT's own samples.
share() {
    SHARE_P=$2 SHARE_W=${3:-.} awk '
        /^ +[0-9.]+%/ { v = $1; sub("%", "", v)
                        if ($0 ~ ENVIRON["SHARE_W"]) { w += v; if ($0 ~ ENVIRON["SHARE_P"]) p += v } }
        END { printf "%d\n", (w > 0 ? 100 * p / w + 1e-9 : 0) }' "$1"
}
# only REPORT PART WHOLE: true when every row matching WHOLE matches PART (no sample of
# WHOLE's outside PART; a share computed from rounded per cents cannot say 100 exactly)
only() {
    SHARE_P=$2 SHARE_W=$3 awk '/^ +[0-9.]+%/ && $0 ~ ENVIRON["SHARE_W"] && $0 !~ ENVIRON["SHARE_P"] { bad = 1 }
        END { exit bad }' "$1"
}

# perf caches every object it reads (each jitted-*.so) under ~/.debug: keep them in $T.
private_perf_cache() { perf() { command perf --buildid-dir "$T/buildid" "$@"; }; }
# own_netns "$@": the script again, in a network namespace of its own with nothing but lo
# (a server it starts is reachable from nowhere else); skips where unshare -n is refused
own_netns() {
    if [ -z "${JH_IN_NETNS:-}" ]; then
        command -v unshare > /dev/null && unshare -n true 2> /dev/null ||
            skip "cannot make a network namespace (unshare -n: root or user namespaces needed)"
        rm -rf "$T"             # (exec: the exit trap that would remove it never runs)
        exec unshare -n env JH_IN_NETNS=1 JH_KEEP=${JH_KEEP:-} bash "$0" "$@"
    fi
    ip link set lo up 2> /dev/null || true
}

# Windows programs under Wine (scripts/wine-env.sh): one prefix, build-win64/wine, created
# once and reused by every run.
wine_setup() {
    require_tool wine "wine wine64"
    require_tool x86_64-w64-mingw32-gcc g++-mingw-w64-x86-64-win32
    WIN=${JH_WIN_BUILD:-$R/build-win64}/tests
    [ -x "$WIN/unwind_test.exe" ] || fail "$WIN/unwind_test.exe not built (make win64-tests)"
    . "$R/scripts/wine-env.sh"
    jh_wine_env "${JH_WIN_BUILD:-$R/build-win64}/wine" "$T/wine-setup.log" ||
        { cat "$T/wine-setup.log"; fail "could not set up Wine"; }
    at_exit "wineserver -k 2>/dev/null"
}

run_win() { # NAME EXE ARGS...
    local name=$1; shift
    local rc=0
    (cd "$WIN" && timeout -k 5 60 wine "$@") > "$T/$name.out" 2> "$T/$name.err" || rc=$?
    sed -i 's/\r$//' "$T/$name.out" "$T/$name.err"     # text mode: CRLF
    return $rc
}
# LuaJIT with this tree's adapter and library (the scripts the tests run are in
# tests/integration/luajit/).
LUAJIT_SCRIPTS=$R/tests/integration/luajit
luajit_adapter() {
    require_tool luajit luajit
    export JITHERALD_LIB=$B/libjitherald.so.0 LUA_PATH="$R/adapters/luajit/?.lua;;"
}
# `sh -c "$PID_EXEC" FILE cmd...` runs cmd with its pid written to FILE first (it execs, so
# timeout and perf can wrap it): its perf map is /tmp/perf-$(cat FILE).map, which the
# caller removes.
PID_EXEC='echo $$ >"$0"; exec "$@"'

# The callgrind rewrite of PROFILE (into PROFILE.named) from the symbols the run left
# (--map FILE or --jitdump FILE), then its invariants (tests/programs/cg_invariants.c):
# totals, every function's self and inclusive cost, every call edge and count, one
# identity per function, no JIT address left. callgrind_annotate must read the result.
cg_rewrite_check() { # PROFILE --map|--jitdump FILE
    "$CLI" callgrind "$2" "$3" "$1" "$1.named" 2>"$1.log" || { cat "$1.log"; fail "jitherald callgrind $1"; }
    local inv; inv=$(program cg_invariants)
    "$inv" "$2" "$3" "$1" "$1.named" >"$1.inv" || { cat "$1.inv"; fail "invariants broken: $1"; }
    cat "$1.inv"
    callgrind_annotate "$1.named" >"$1.ann" 2>"$1.ann.err" || { cat "$1.ann.err"; fail "callgrind_annotate $1.named"; }
    ! grep -i 'malformed\|warning' "$1.ann.err" || fail "callgrind_annotate complains about $1.named"
}

# After a producer ran under callgrind into NAME.out: move the perf map its process wrote
# into NAME.d/ (removed at exit if the test dies first) and name it in NAME.mapname.
cg_take_map() { # NAME
    local pid; pid=$(sed -n 's/^pid: //p' "$1.out")
    at_exit "rm -f /tmp/perf-$pid.map"
    mkdir -p "$1.d"
    mv "/tmp/perf-$pid.map" "$1.d/"
    echo "$1.d/perf-$pid.map" >"$1.mapname"
}

# The line table of FUNCTION as the demo JIT itself made it, for PROGRAM.mini
# (tests/programs/mj_lines.c: the compiler alone, no jitherald code), and the line table of
# perf inject's jitted-*.so built for it (readelf's decoding): both as "OFFSET LINE" rows,
# decimal offsets from the function's start, only where the line changes, so the two are
# equal exactly when every address is on the same line (readelf's end-of-sequence row and
# the rows at the end of the code drop out).
mj_truth_lines() { # PROGRAM.mini FUNCTION
    "$(program mj_lines)" "$1" | awk -v f="$2" '$1 == f { print $2, $3 }' | while read -r o l; do
        echo "$((16#$o)) $l"; done | awk '$2 != last { print; last = $2 }'
}
so_lines() { # JITTED.so
    local text size
    read -r text size <<<"$(readelf -SW "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print $(i + 2), $(i + 4); exit } }')"
    readelf -wL "$1" | awk '$2 ~ /^[0-9]+$/ && $3 ~ /^0x[0-9a-f]+$/ { print $3, $2 }' | while read -r a l; do
        [ $((a - 16#$text)) -lt $((16#$size)) ] && echo "$((a - 16#$text)) $l"; done |
        awk '$2 != last { print; last = $2 }'
}

# Other JITs' files (tests/integration/producers_*.sh, docs/interop.md):
# check FILE: exit 0, each quirk named warned about, --strict refuses the file
check_quirks() { # FILE QUIRK...
    local f=$1; shift
    "$CLI" check "$f" >check.out 2>check.err || { cat check.out check.err; fail "check $f"; }
    cat check.err check.out
    local q; for q in "$@"; do grep -q "($q)\$" check.err || fail "$f: no $q warning"; done
    if [ $# -gt 0 ]; then
        ! "$CLI" check -q --strict "$f" >/dev/null 2>&1 || fail "$f: --strict accepts it"
    fi
    "$CLI" inspect "$f" >inspect.out 2>/dev/null || fail "inspect $f"
    # a jitdump: inspect lists every record and every line entry check counted
    local rec ent
    rec=$(sed -n 's/.*ok: jitdump, \([0-9]*\) records.*/\1/p' check.out)
    [ -z "$rec" ] && return
    ent=$(sed -n 's/.*; \([0-9]*\) line entries$/\1/p' check.out)
    [ "$(grep -acE '^0x[0-9a-f]{8} [A-Z_]+ ' inspect.out)" = "$rec" ] || fail "inspect $f: not all $rec records"
    [ "$(grep -acE '^ +0x[0-9a-f]+ \([-+]0x[0-9a-f]+\) ' inspect.out)" = "${ent:-0}" ] ||
        fail "inspect $f: not all ${ent:-0} line entries"
}
# A VM run under gdb leaves its perf map in /tmp under the pid gdb reported when it killed
# it ("[Inferior 1 (process N) killed]"): removed at the test's exit, that one only.
forget_map() { # GDB-LOG
    local pid
    pid=$(sed -n 's/^\[Inferior 1 (process \([0-9]*\)) killed\]$/\1/p' "$1")
    [ -n "$pid" ] && at_exit "rm -f /tmp/perf-$pid.map"
    return 0
}
# What a user sees as a backtrace that went wrong: gdb's own complaints, and `?? ()` frames
# at addresses no file backs (JIT code without a name, or a value read as a return address
# from where there was none: `#2 0x0000000000000000 in ?? ()`). Frames in a stripped
# executable (Mono's) are `??` too, but real. The log holds `bt` and `info proc mappings`.
bt_ends_clean() { # LOG
    local log=$1
    grep -aE '^Backtrace stopped|previous frame (identical|inner)|[Cc]orrupt stack' "$log" &&
        { grep -a '^#' "$log"; fail "$log: gdb's backtrace ended in an error"; }
    perl -ne '
        if (/^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+\S+\s+\//) {
            push @m, [hex $1, hex $2]; next }
        push @q, [hex $1, $_] if /^#\d+\s+0x([0-9a-f]+) in \?\? \(\)/;
        END {
            die "no mappings in the log\n" unless @m;
            for my $f (@q) {
                my $in = grep { $f->[0] >= $_->[0] && $f->[0] < $_->[1] } @m;
                print "not in any file: $f->[1]" unless $in;
            }
        }' "$log" > "$log.garbage" || fail "$log: no 'info proc mappings' output"
    [ ! -s "$log.garbage" ] || { grep -a '^#' "$log"; cat "$log.garbage"
                                 fail "$log: frames gdb cannot name, outside any file"; }
}
loads() { sed -n 's/.*ok: jitdump, [0-9]* records: \([0-9]*\) LOAD.*/\1/p' check.out; }
map_lines() { # MAP: inspect reads every line
    check_quirks "$@"
    local n; n=$(sed -n 's/.*ok: perf map, \([0-9]*\) lines/\1/p' check.out)
    [ "$n" = "$(wc -l <"$1")" ] || fail "$1: $n lines read of $(wc -l <"$1")"
}
# perf inject --jit writes one jitted-PID-N.so per LOAD it accepts, next to the dump; a
# build-id cache it cannot create keeps it from copying each one (16,575 for Erlang: 3x
# the time)
injected() { # DIR PID
    command perf --buildid-dir /dev/null inject --jit -i perf.data -o perf.jit.data 2>inject.err ||
        { cat inject.err; fail "perf inject"; }
    find "$1" -maxdepth 1 -name "jitted-$2-*.so" | wc -l
}


java_setup() {
    require_tool java openjdk-17-jdk-headless
    local d=$B/tests/programs/java
    # java without its JDK is an install step missing, not a machine without Java
    [ -f "$d/Hot.missing" ] && fail "java is here but demo.Hot was not built: $(cat "$d/Hot.missing")"
    JAGENT=$B/libjitherald-jvmti.so
    [ -f "$JAGENT" ] || fail "$JAGENT not built (make; it needs jvmti.h)"
    [ -f "$d/demo/Hot.class" ] && [ -f "$d/libhot_native.so" ] || fail "$d not built (make programs)"
    HOT=(-Dhot.native="$d/libhot_native.so" -cp "$d")
    HOTSRC=$R/tests/programs/java/demo/Hot.java
}
hot_line() { grep -n "// @$1\$" "$HOTSRC" | cut -d: -f1; }
# java_bt_ok BT: gdb's backtrace (file BT) from jh_java_hit, where demo.Hot.recurse's
# deepest call stops: the native function's frames, then demo.Hot.stop (its native
# wrapper), recurse at the line of its call to stop, recurse at the line of its own
# recursive call at least once more, and no unknown frame (??) among them.
java_bt_ok() {
    local stop rec
    stop=$(hot_line stop) rec=$(hot_line recurse)
    awk -v stop="$stop" -v rec="$rec" '
        /^#[0-9]+ / { f[n++] = $0 }
        END {
            for (i = 0; i < n && f[i] !~ / Java_demo_Hot_stop /; i++) ;
            if (i == n) { print "no Java_demo_Hot_stop frame"; exit 1 }
            if (f[i + 1] !~ / in demo\.Hot\.stop \(\)/) { print "not demo.Hot.stop: " f[i + 1]; exit 1 }
            if (f[i + 2] !~ (" in demo\\.Hot\\.recurse \\(\\) at demo/Hot\\.java:" stop "$")) {
                print "not recurse at Hot.java:" stop ": " f[i + 2]; exit 1 }
            if (f[i + 3] !~ (" in demo\\.Hot\\.recurse \\(\\) at demo/Hot\\.java:" rec "$")) {
                print "not recurse at Hot.java:" rec ": " f[i + 3]; exit 1 }
            for (k = 0; k <= i + 3; k++) if (f[k] ~ / \?\? /) { print "unknown frame: " f[k]; exit 1 }
        }' "$1"
}

chrome_page() { # URL DOM [PNG]
    local chrome
    chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
    [ -n "$chrome" ] || require_tool chromium chromium
    local args=(--headless --no-sandbox --disable-gpu --disable-background-networking
        --disable-component-update --disable-sync --no-first-run --hide-scrollbars
        --user-data-dir="$T/chrome-profile" --virtual-time-budget=60000 --window-size=1200,1400)
    timeout 600 "$chrome" "${args[@]}" --dump-dom "$1" >"$2" 2>"$T/chrome.err" ||
        { cat "$T/chrome.err"; fail "chromium --dump-dom $1"; }
    [ -n "${3:-}" ] || return 0
    timeout 600 "$chrome" "${args[@]}" --screenshot="$3" "$1" >/dev/null 2>>"$T/chrome.err" &&
        [ -s "$3" ] || { cat "$T/chrome.err"; fail "chromium --screenshot $1"; }
}
