# known.sh — the known counts of a profile of the demo JIT reusing addresses, shared by
# auditlog_profile.sh (the text profile) and auditlog_report_profile.sh (the HTML report).
# Sourced after lib.sh, in $T. minijit runs phase1.mini (spin_a spins n rounds), removes and
# frees its code, and compiles phase2.mini into the same addresses (--recompile-from), whose
# spin_b is the same loop spinning 3n rounds.
#
#   known_record ROUNDS       perf record -k 1 -g into p.data; sets log, pid; live.map
#   known_truth               "spin_a spin_b" self counts from perf's own samples (perf
#                             script), split at the time the log says spin_a was removed
#   known_perf_counts         pa, pb: what `perf report` with the perf map names spin_a/b
P=$R/tests/integration/profile

known_record() {
    JITHERALD=auditlog,perfmap JITHERALD_DIR=$T perf record -q -k 1 -g -e cpu-clock -o p.data \
        "$MINIJIT" --recompile-from "$P/phase2.mini" --print-result "$P/phase1.mini" "$1" \
        >run.out 2>run.err || { cat run.err; fail "perf record minijit"; }
    grep -qx "main returned $((3 * $1 - 5))" run.out || fail "phase 1 result: $(cat run.out)"
    log=$(ls minijit-*.jhlog); pid=${log#minijit-}; pid=${pid%.jhlog}
    at_exit "rm -f /tmp/perf-$pid.map"
    # Another process's cleanup may remove maps of processes that ended (jitherald clean
    # does): keep the channel's own map, and put it back before each perf report.
    [ -s /tmp/perf-$pid.map ] && cp /tmp/perf-$pid.map live.map || "$CLI" log "$log" to-perfmap >live.map
    [ "$(grep -c ' spin_[ab]$' live.map)" = 2 ] || { cat live.map; fail "the perf map lacks spin_a or spin_b"; }
}

# The truth, from perf's samples and the log's times (ns; awk's doubles hold them exactly
# enough: 1e13 ns of uptime is far below 2^53).
known_truth() {
    local base_s base_ns lo size rm_s
    read -r base_s base_ns < <("$CLI" log "$log" info | sed -n 's/.* from \([0-9]*\)\.\([0-9]*\) s of CLOCK_MONOTONIC.*/\1 \2/p')
    [ -n "$base_ns" ] || fail "info gives no CLOCK_MONOTONIC start"
    "$CLI" log "$log" code >code.out
    read -r lo size rm_s < <(awk '$3 == "remove" && $5 == "spin_a" { print $6, $7, $2 }' code.out)
    [ -n "$rm_s" ] || { cat code.out; fail "no removal of spin_a in the log"; }
    perf script -G -F pid,time,ip --ns -i p.data 2>/dev/null >samples
    awk -v pid="$pid" -v lo="$lo" -v size="$size" -v bs="$base_s" -v bn="$base_ns" -v rm="$rm_s" '
        function hex(h,  i, v) { v = 0; h = tolower(h); sub(/^0x/, "", h)
            for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
            return v }
        BEGIN { start = hex(lo); cut = (bs * 1e9 + bn) + rm * 1e9 }
        $1 == pid { t = $2; sub(":", "", t); split(t, p, "."); ns = p[1] * 1e9 + p[2]
            ip = hex($3); if (ip < start || ip >= start + size) next
            # remove times are printed to the microsecond: a sample within 1 us of the cut
            # would be undecidable, and none runs JIT code then (the code is being freed)
            if (ns < cut - 1000) a++; else if (ns > cut + 1000) b++; else u++ }
        END { if (u) print "undecidable", u; else print a + 0, b + 0 }' samples
}

known_perf_counts() {
    _known_perf() {
        cp live.map /tmp/perf-$pid.map
        perf report -i p.data --stdio -n --no-children --sort sym -g none 2>/dev/null >rep
        pa=$(awk '$NF == "spin_a" { print $2 }' rep); pb=$(awk '$NF == "spin_b" { print $2 }' rep)
    }
    _known_perf
    [ -n "$pa$pb" ] || _known_perf          # the map removed under us once: put it back, again
    grep -E ' spin_[ab] *$' rep
    pa=${pa:-0} pb=${pb:-0}
}
