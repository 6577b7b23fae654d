# scripts/wine-env.sh — sourced by the Wine tests (tests/integration/lib.sh: wine_setup)
# and the Windows benchmark (bench/win64.sh): Wine set up to run jitherald's Windows
# programs headless, fast and with reliable exit statuses.
#   jh_wine_env PREFIX LOG   exports WINEPREFIX=PREFIX and the rest, creates the prefix the
#                            first time (wineboot, ~7 s, 0.7 GB; later runs reuse it) and
#                            starts a wineserver that stays while we run (without it each
#                            program start costs seconds). 0, or 1 with LOG saying why.
# The prefix gets AeDebug's Debugger set to "false": otherwise a crashing program starts
# winedbg, and its exit status is 0 or 5 at random. Run programs with their output going to
# files: a pipe is held open by Wine's services and makes every run wait ~2.6 s.
jh_wine_env() { # PREFIX LOG
    export WINEPREFIX=$1 WINEDEBUG=-all
    export WINEDLLOVERRIDES="mscoree,mshtml="     # no Mono or Gecko installer prompts
    if [ ! -f "$WINEPREFIX/.jitherald-ready" ]; then
        rm -rf "$WINEPREFIX"
        wineboot -i > "$2" 2>&1 || return 1
        wine reg add 'HKLM\Software\Microsoft\Windows NT\CurrentVersion\AeDebug' \
            /v Debugger /t REG_SZ /d false /f >> "$2" 2>&1 || return 1
        wineserver -w
        touch "$WINEPREFIX/.jitherald-ready"
    fi
    wineserver -p
}
