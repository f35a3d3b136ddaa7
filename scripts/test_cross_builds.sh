#!/usr/bin/env bash
# Portability you can show: the whole C core -- every baseline file (src/csrc/*/*.c), every
# ISA group of the target with setup.py's flags (python setup.py print-isa-groups) -- and the
# C kernel tests (int8, Gemm and codecs), built by the compilers a wheel may meet besides the
# native gcc (tests/c/run_native.sh builds and runs that one), and run:
#   clang          Linux x86-64; run here
#   clang-aarch64  clang --target=aarch64-linux-gnu (the ARM kernels as Apple's and Windows'
#                  clang see them); run under qemu-aarch64 -cpu max (neon, dotprod, i8mm)
#   mingw          x86_64-w64-mingw32-gcc, Windows x86-64; run under wine64, where the CPU
#                  detection takes its _WIN32 paths (src/csrc/core/gk_cpu_x86.c)
#   clang-mingw    clang --target=x86_64-w64-mingw32 (linked by mingw's gcc); run under wine64
#   gcc            the native gcc again (not in the default list: run_native.sh covers it)
# Per compiler and ISA group, setup.py's probe of the group (a real intrinsic of that ISA,
# `python setup.py print-isa-probe NAME`) is compiled first, the rule setup.py applies: a
# compiler that cannot build the ISA at all leaves the group out, with the probe's error.
# Then every file is compiled; a file that fails is reported as file:line: message, its
# group is left out of that build, everything else is still built and the kernel test run,
# and the script exits non-zero at the end.
# A small report program prints the detected features and the chosen path; a Windows build
# under wine must detect exactly what the Linux build detects on the same CPU (wine runs the
# code natively: CPUID and XGETBV are the host's, the OS-specific branches are Windows').
# On a host with AMX the Windows builds leave the AMX groups (amx, amxbf16) out: the Windows
# branch rightly asks the OS for nothing, but under wine no one asks Linux for the tile
# state either.
# Usage: bash scripts/test_cross_builds.sh [TOOLCHAIN...]
#   (default: clang clang-aarch64 mingw clang-mingw)
# Installs what it needs with apt-get (clang, gcc-mingw-w64-x86-64-win32, wine64,
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user-static) when missing.  A machine
# where wine cannot start programs at all gets a note, not a failure.
# Environment: GK_WINEPREFIX  wine prefix (default ~/.cache/gemmkit-wine; never in the tree)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLCHAINS=("$@")
[ ${#TOOLCHAINS[@]} -eq 0 ] && TOOLCHAINS=(clang clang-aarch64 mingw clang-mingw)
BUILD="$ROOT/tests/c/build/cross"
BASE=(-O3 -ffp-contract=off -fno-strict-aliasing -std=gnu99 -Werror=implicit-function-declaration -Iinclude -Isrc/csrc -Wall)
JOBS=$(nproc 2>/dev/null || echo 2)

# --- toolchains (idempotent; no standard input needed) ---------------------------------------
have() { command -v "$1" >/dev/null 2>&1; }
need=()
want_clang() { have clang || need+=(clang); }
want_mingw() { have x86_64-w64-mingw32-gcc || need+=(gcc-mingw-w64-x86-64-win32); }
want_wine() { have wine64 || [ -x /usr/lib/wine/wine64 ] || need+=(wine64); }
for t in "${TOOLCHAINS[@]}"; do
    case "$t" in
    gcc) ;;
    clang) want_clang ;;
    clang-aarch64)
        want_clang
        # the aarch64 C library, crt files and libgcc the link needs come with the cross gcc
        have aarch64-linux-gnu-gcc || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
        have qemu-aarch64-static || need+=(qemu-user-static)
        ;;
    mingw) want_mingw; want_wine ;;
    clang-mingw) want_clang; want_mingw; want_wine ;;
    *) echo "unknown toolchain '$t' (clang, clang-aarch64, mingw, clang-mingw, gcc)" >&2; exit 2 ;;
    esac
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq </dev/null
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" </dev/null >/dev/null
fi

rm -rf "$BUILD"
mkdir -p "$BUILD"
# the groups of each target, from setup.py (the one place flags are defined)
GROUPS_NATIVE=$(python setup.py print-isa-groups)
GROUPS_X86=$(GEMMKIT_TARGET_ARCH=x86_64 python setup.py print-isa-groups)
GROUPS_ARM64=$(GEMMKIT_TARGET_ARCH=arm64 python setup.py print-isa-groups)
# wine cannot run AMX code on an AMX host (see above): the Windows builds leave it out there
GROUPS_WIN64=$GROUPS_X86
if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
    echo "note: AMX host: the Windows builds leave the amx and amxbf16 groups out (wine cannot" \
        "enable the tile state)"
    GROUPS_WIN64=$(grep -v -E '^amx(bf16)?[|]' <<<"$GROUPS_X86")
fi

status=0
FAILURES=()
fail() { # fail MESSAGE: recorded, reported again at the end
    echo "FAIL: $1"
    FAILURES+=("$1")
    status=1
}
# file:line: message of a failed compile (compiler errors first, else the first lines)
first_errors() {
    local log=$1 hits
    hits=$(grep -E '(error|Error):' "$log" | head -n 5 || true)
    [ -n "$hits" ] || hits=$(head -n 5 "$log")
    sed 's/^/        /' <<<"$hits"
}

# compile_group CC OUTDIR FLAGS SOURCES...: compiles every file ($JOBS at a time); prints
# each failure; returns 1 when any file failed.  Objects are appended to OBJS.
compile_group() {
    local cc=$1 out=$2 flags=$3
    shift 3
    local pids=() srcs=() s o rc=0 i
    for s in "$@"; do
        o="$out/$(basename "${s%.c}").o"
        # shellcheck disable=SC2086  # the flags split into words
        $cc "${BASE[@]}" $flags -c "$s" -o "$o" >"$o.log" 2>&1 &
        pids+=($!)
        srcs+=("$s")
        if [ ${#pids[@]} -ge "$JOBS" ]; then
            wait "${pids[0]}" || { echo "    $cc: ${srcs[0]} failed:"; first_errors "$out/$(basename "${srcs[0]%.c}").o.log"; rc=1; }
            pids=("${pids[@]:1}")
            srcs=("${srcs[@]:1}")
        fi
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { echo "    $cc: ${srcs[$i]} failed:"; first_errors "$out/$(basename "${srcs[$i]%.c}").o.log"; rc=1; }
    done
    [ $rc -eq 0 ] || return 1
    for s in "$@"; do OBJS+=("$out/$(basename "${s%.c}").o"); done
    return 0
}

# build NAME CC GROUPS LINK EXE: the whole core (GROUPS: print-isa-groups lines), the kernel
# test and the report compiled by CC, linked by LINK (a command), into $BUILD/NAME
# (test_qgemm_kernels$EXE, test_gemm_kernels$EXE, test_codecs_kernels$EXE, gk_isa_report$EXE).  Returns 1 when nothing could be linked.
build() {
    local name=$1 cc=$2 groups=$3 link=$4 exe=$5 out="$BUILD/$1" gname gflags pattern srcs probe_log
    local built=() skipped=() defs=() baseline=""
    OBJS=()
    mkdir -p "$out"
    echo "=== $name: $($cc --version | head -n 1)"
    while IFS='|' read -r gname gflags pattern; do
        if [ "$gname" = baseline ]; then
            baseline=$pattern
            continue
        fi
        # shellcheck disable=SC2206  # the glob expands
        srcs=($pattern)
        [ -e "${srcs[0]}" ] || continue
        if [ "$gname" != scalar ]; then
            python setup.py print-isa-probe "$gname" >"$out/probe_$gname.c"
            probe_log="$out/probe_$gname.log"
            # shellcheck disable=SC2086
            if ! $cc "${BASE[@]}" $gflags -c "$out/probe_$gname.c" -o "$out/probe_$gname.o" \
                >"$probe_log" 2>&1; then
                echo "  skip $gname: $cc cannot build $gname instructions (setup.py's probe fails," \
                    "as a wheel build with this compiler would skip it):"
                first_errors "$probe_log"
                if [[ "$gname" == amx* ]] && grep -q 'base/index expression' "$probe_log"; then
                    echo "        (GCC's amxtileintrin.h casts the tile stride to long: 32 bits" \
                        "under Windows' LLP64, an invalid address register)"
                fi
                skipped+=("$gname(probe)")
                continue
            fi
        fi
        if compile_group "$cc" "$out" "$gflags" "${srcs[@]}"; then
            built+=("$gname")
            [ "$gname" != scalar ] && defs+=("-DGK_HAVE_${gname^^}=1")
        else
            fail "$name: the $gname group does not compile (files above); built without it"
            skipped+=("$gname(FAILED)")
            [ "$gname" = scalar ] && return 1 # the oracle: nothing links without it
        fi
    done <<<"$groups"
    # shellcheck disable=SC2206
    srcs=($baseline)
    if ! compile_group "$cc" "$out" "${defs[*]:-}" "${srcs[@]}"; then
        fail "$name: baseline files do not compile (above)"
        return 1
    fi
    # shellcheck disable=SC2086  # the commands split into words
    if ! compile_group "$cc" "$out" "" tests/c/test_qgemm_kernels.c tests/c/gk_isa_report.c \
        tests/c/test_gemm_kernels.c tests/c/test_codecs_kernels.c; then
        fail "$name: the kernel tests or the report do not compile (above)"
        return 1
    fi
    local test_o=${OBJS[-4]} report_o=${OBJS[-3]} gemm_o=${OBJS[-2]} codecs_o=${OBJS[-1]} libs="-lm"
    OBJS=("${OBJS[@]:0:${#OBJS[@]}-4}")
    [ -z "$exe" ] && libs="-lm -pthread" # the thread pool: pthreads on POSIX, Win32 on Windows
    # shellcheck disable=SC2086
    if ! $link "$test_o" "${OBJS[@]}" $libs -o "$out/test_qgemm_kernels$exe" >"$out/link.log" 2>&1 ||
        ! $link "$gemm_o" "${OBJS[@]}" $libs -o "$out/test_gemm_kernels$exe" >>"$out/link.log" 2>&1 ||
        ! $link "$codecs_o" "${OBJS[@]}" $libs -o "$out/test_codecs_kernels$exe" >>"$out/link.log" 2>&1 ||
        ! $link "$report_o" "${OBJS[@]}" $libs -o "$out/gk_isa_report$exe" >>"$out/link.log" 2>&1; then
        cat "$out/link.log"
        fail "$name: the kernel test does not link"
        return 1
    fi
    local warnings
    warnings=$(cat "$out"/*.o.log "$out/link.log" | grep -c 'warning:' || true)
    echo "  built: ${built[*]}${skipped[*]:+; left out: ${skipped[*]}}; $warnings warnings"
    [ "$warnings" -eq 0 ] ||
        grep -h 'warning:' "$out"/*.o.log "$out/link.log" | sort -u | head -n 20 | sed 's/^/    /'
    return 0
}

# run NAME PROGRAM...: a kernel test (the last word names it); prints its summary
run_test() {
    local name=$1
    shift
    local log="$BUILD/$name/$(basename "${!#}").log"
    if "$@" >"$log" 2>&1; then
        echo "  $(basename "${!#}"): $(tail -n 1 "$log")"
    else
        cat "$log"
        fail "$name: $(basename "${!#}")"
    fi
}

NATIVE_REPORT=""
native_report() { # what a Linux build detects here (features only: the Windows builds may
    # lack a group, e.g. amx on an AMX host, so the paths chosen can differ)
    if [ -z "$NATIVE_REPORT" ]; then
        NATIVE_REPORT=$("$BUILD/$1/gk_isa_report" | sed 's/ active=.*//')
    fi
}

WINE=""
wine_run() { # wine_run NAME: the report and the kernel test of a Windows build under wine
    local name=$1 rep
    file "$BUILD/$name/test_qgemm_kernels.exe" 2>/dev/null | sed 's/^.*: /  /' || true
    WINE=$(command -v wine64 || echo /usr/lib/wine/wine64)
    # The prefix lives OUTSIDE the source tree: its dosdevices/z: links to /, and setuptools'
    # file listing (pip install .) follows links.  The first start creates it (~10 s; kept
    # for later runs); wine's notes go to a log unless nothing runs.
    export WINEPREFIX=${GK_WINEPREFIX:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gemmkit-wine}
    export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree=;mshtml="
    if ! rep=$(timeout 300 "$WINE" "$BUILD/$name/gk_isa_report.exe" 2>"$BUILD/$name/wine.log" </dev/null) ||
        [ -z "$rep" ]; then
        echo "  note: wine cannot run Windows programs here; the Windows build is compiled" \
            "and linked, not run:"
        sed 's/^/    /' "$BUILD/$name/wine.log" | head -n 5
        return 0
    fi
    rep=${rep//$'\r'/}
    echo "  under wine: $rep"
    if [ -z "$NATIVE_REPORT" ]; then
        echo "  note: no Linux build in this run to compare the detection with"
    elif [ "${rep%% active=*}" != "$NATIVE_REPORT" ]; then
        fail "$name: the Windows detection under wine ($rep) differs from Linux ($NATIVE_REPORT)"
    fi
    run_test "$name" timeout 600 "$WINE" "$BUILD/$name/test_qgemm_kernels.exe" </dev/null
    run_test "$name" timeout 600 "$WINE" "$BUILD/$name/test_gemm_kernels.exe" </dev/null
    run_test "$name" timeout 600 "$WINE" "$BUILD/$name/test_codecs_kernels.exe" </dev/null
}

for t in "${TOOLCHAINS[@]}"; do
    case "$t" in
    clang | gcc)
        build "$t" "$t" "$GROUPS_NATIVE" "$t" "" || continue
        rep=$("$BUILD/$t/gk_isa_report")
        echo "  $rep"
        native_report "$t"
        run_test "$t" "$BUILD/$t/test_qgemm_kernels"
        run_test "$t" "$BUILD/$t/test_gemm_kernels"
        run_test "$t" "$BUILD/$t/test_codecs_kernels"
        ;;
    clang-aarch64)
        cc="clang --target=aarch64-linux-gnu"
        build "$t" "$cc" "$GROUPS_ARM64" "$cc -static" "" || continue
        echo "  under qemu-aarch64 -cpu max: $(qemu-aarch64-static -cpu max "$BUILD/$t/gk_isa_report")"
        run_test "$t" qemu-aarch64-static -cpu max "$BUILD/$t/test_qgemm_kernels"
        run_test "$t" qemu-aarch64-static -cpu max "$BUILD/$t/test_gemm_kernels"
        run_test "$t" qemu-aarch64-static -cpu max "$BUILD/$t/test_codecs_kernels"
        ;;
    mingw)
        build "$t" x86_64-w64-mingw32-gcc "$GROUPS_WIN64" x86_64-w64-mingw32-gcc .exe || continue
        wine_run "$t"
        ;;
    clang-mingw)
        # clang finds mingw's headers and C runtime but not Debian's libgcc directory
        # (12-win32): mingw's gcc links the clang objects
        build "$t" "clang --target=x86_64-w64-mingw32" "$GROUPS_WIN64" x86_64-w64-mingw32-gcc .exe ||
            continue
        wine_run "$t"
        ;;
    esac
done
[ -n "$WINE" ] && { "$(dirname "$WINE")/wineserver" -k 2>/dev/null || true; } # our prefix's server

if [ $status -eq 0 ]; then
    echo "cross builds (${TOOLCHAINS[*]}): all passed"
else
    echo "cross builds (${TOOLCHAINS[*]}): FAILED"
    printf '  %s\n' "${FAILURES[@]}"
fi
exit $status
