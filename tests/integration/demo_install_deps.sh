#!/usr/bin/env bash
# demo_install_deps.sh — scripts/install-deps.sh, as a user who can neither install nor sudo
# runs it: one line on stderr that says so and names the packages for what was asked (demo:
# a compiler, make, perf; test: everything), no apt-get error, a non-zero exit; and a usage
# error (exit 2) for an argument it does not know. Nothing is installed: the script stops
# before apt-get.
. "$(dirname "$0")/lib.sh"

# A directory the unprivileged user can read, with a PATH that has `id` and no sudo.
d=$(mktemp -d "${TMPDIR:-/tmp}/jh-deps.XXXXXX")
at_exit "rm -rf '$d'"
chmod 755 "$d"
mkdir "$d/bin"
ln -s "$(command -v id)" "$d/bin/id"
cp "$R/scripts/install-deps.sh" "$d/"
chmod 755 "$d/bin" "$d/install-deps.sh"
BASH_BIN=$(command -v bash)
as_user() { # ARGS... : the script as a user who is not root, with no sudo on PATH
    if [ "$(id -u)" = 0 ]; then
        require_tool setpriv util-linux
        setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$d/bin" HOME=/ \
            "$BASH_BIN" "$d/install-deps.sh" "$@"
    else
        env -i PATH="$d/bin" HOME=/ "$BASH_BIN" "$d/install-deps.sh" "$@"
    fi
}

check() { # what packages...
    local what=$1 rc=0; shift
    as_user "$what" >"$T/$what.out" 2>"$T/$what.err" || rc=$?
    [ "$rc" = 1 ] || { cat "$T/$what.err"; fail "install-deps.sh $what without root or sudo exited $rc, not 1"; }
    [ ! -s "$T/$what.out" ] || fail "install-deps.sh $what printed on stdout: $(cat "$T/$what.out")"
    [ "$(wc -l <"$T/$what.err")" = 1 ] ||
        { cat "$T/$what.err"; fail "install-deps.sh $what: not one line on stderr"; }
    grep -q 'not root and no sudo' "$T/$what.err" || fail "$what: the line does not say why: $(cat "$T/$what.err")"
    local p
    for p in "$@"; do
        grep -Eq "apt-get install( [^ ]+)* $p( |$)" "$T/$what.err" ||
            fail "$what: package $p not named: $(cat "$T/$what.err")"
    done
    echo "$what: $(cat "$T/$what.err")"
}
check demo gcc make linux-perf
grep -Eq ' (valgrind|llvm-14|wine)( |$)' "$T/demo.err" && fail "demo asks for the test tools: $(cat "$T/demo.err")"
check test build-essential make linux-perf gdb valgrind llvm-14 wine luajit
rc=0; as_user bogus >"$T/bogus.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "install-deps.sh bogus exited $rc, not 2 (usage)"
grep -q 'usage:' "$T/bogus.out" || fail "install-deps.sh bogus: no usage line: $(cat "$T/bogus.out")"
echo "PASS: install-deps.sh without root or sudo says so in one line and names the packages"
