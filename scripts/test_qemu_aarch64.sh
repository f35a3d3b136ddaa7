#!/usr/bin/env bash
# Cross-compiles the C kernel tests for ARM64 and runs them under qemu-user on two CPUs:
#   -cpu cortex-a72  AdvSIMD only: must select "neon" and report no dotprod / i8mm / bf16
#   -cpu max         dotprod + i8mm + bf16: must select "i8mm"; the harness tests all three
#                    int8 paths, and the bfloat16 BFMMLA family (neonbf16) must run
# The int8 harness (GK_TEST_SRC) tests every usable int8 family; the Gemm harness
# (tests/c/test_gemm_kernels.c) every usable Gemm family of every type, and must show the
# NEON families of every type that has one run and pass on both CPUs; the codecs harness
# (tests/c/test_codecs_kernels.c) the NEON codecs family against the scalar one, bit for
# bit, which must run and pass on both CPUs.
# Each source group gets the flags setup.py gives it (python setup.py print-isa-groups) (only *_neondot.c / *_i8mm.c get
# -march=...+dotprod / +i8mm, *_neonbf16.c +bf16; the scalar oracle is built without
# auto-vectorisation).
# Run from the repository root.  Exits non-zero on any build or test failure.
# Environment: GK_TEST_SRC   harness source (default tests/c/test_qgemm_kernels.c)
#              GK_QEMU_CPUS  CPUs to run (default "cortex-a72 max")
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="$ROOT/tests/c/build/aarch64"
TEST_SRC=${GK_TEST_SRC:-tests/c/test_qgemm_kernels.c}
CPUS=${GK_QEMU_CPUS:-"cortex-a72 max"}

CC=aarch64-linux-gnu-gcc
QEMU=qemu-aarch64-static

# --- toolchain (idempotent) -------------------------------------------------------------
need=()
command -v "$CC" >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v "$QEMU" >/dev/null 2>&1 || need+=(qemu-user-static)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -f "$TEST_SRC" ]; then
    echo "error: harness $TEST_SRC not found (set GK_TEST_SRC)" >&2
    exit 2
fi

# --- build ------------------------------------------------------------------------------
rm -rf "$BUILD"
mkdir -p "$BUILD"
BASE=(-O3 -std=gnu99 -Werror=implicit-function-declaration -ffp-contract=off -fno-strict-aliasing -Wall -Wextra -Iinclude -Isrc/csrc
      -DGK_HAVE_NEON=1 -DGK_HAVE_NEONDOT=1 -DGK_HAVE_I8MM=1 -DGK_HAVE_NEONBF16=1)
objs=()
compile() { # compile <flags...> -- <sources...>
    local flags=()
    while [ "$1" != "--" ]; do flags+=("$1"); shift; done
    shift
    for src in "$@"; do
        local obj="$BUILD/$(basename "${src%.c}").o"
        "$CC" "${BASE[@]}" "${flags[@]}" -c "$src" -o "$obj"
        objs+=("$obj")
    done
}
shopt -s nullglob
# per-ISA flags from setup.py, the one place they are defined ("baseline": no flags)
while IFS='|' read -r name flags pattern; do
    # shellcheck disable=SC2086  # flags split into words, the glob expands
    compile $flags -- $pattern
done < <(GEMMKIT_TARGET_ARCH=arm64 python setup.py print-isa-groups)
shopt -u nullglob

# the report program (tests/c/gk_isa_report.c): detected features, the chosen path
compile -- tests/c/gk_isa_report.c
report_obj=${objs[-1]}
unset 'objs[-1]'
compile -- "$TEST_SRC"
test_obj=${objs[-1]}
unset 'objs[-1]'
compile -- tests/c/test_gemm_kernels.c
gemm_obj=${objs[-1]}
unset 'objs[-1]'
compile -- tests/c/test_codecs_kernels.c
codecs_obj=${objs[-1]}
unset 'objs[-1]'

"$CC" -static -o "$BUILD/gk_isa_report" "$report_obj" "${objs[@]}" -lm -pthread
"$CC" -static -o "$BUILD/test_qgemm_kernels" "$test_obj" "${objs[@]}" -lm -pthread
"$CC" -static -o "$BUILD/test_gemm_kernels" "$gemm_obj" "${objs[@]}" -lm -pthread
"$CC" -static -o "$BUILD/test_codecs_kernels" "$codecs_obj" "${objs[@]}" -lm -pthread
# the Gemm types with a NEON family (declared in gk_gemm.h): each must run under both CPUs
neon_gemm=$(grep -c '^extern const gk_gemm_kernel gk_gemm_[a-z0-9]*_neon;' include/gemmkit/gk_gemm.h || true)

# --- run --------------------------------------------------------------------------------
status=0
for cpu in $CPUS; do
    echo "=== qemu-aarch64 -cpu $cpu ==="
    rep=$("$QEMU" -cpu "$cpu" "$BUILD/gk_isa_report")
    echo "$rep"
    active=$(sed -n 's/.* active=\([^ ]*\).*/\1/p' <<<"$rep")
    feats=$(sed -n 's/^features=\([^ ]*\).*/\1/p' <<<"$rep")
    case "$cpu" in
    cortex-a72 | cortex-a53 | cortex-a57)
        if [ "$active" != neon ] || grep -qE 'dotprod|i8mm|bf16' <<<"$feats"; then
            echo "FAIL: $cpu must select neon and report none of dotprod, i8mm, bf16" >&2
            status=1
        fi
        ;;
    max)
        if [ "$active" != i8mm ] || ! grep -q dotprod <<<"$feats" || ! grep -q i8mm <<<"$feats" ||
            ! grep -q bf16 <<<"$feats"; then
            echo "FAIL: $cpu must report dotprod + i8mm + bf16 and select i8mm" >&2
            status=1
        fi
        ;;
    esac
    if ! "$QEMU" -cpu "$cpu" "$BUILD/test_qgemm_kernels"; then
        echo "FAIL: kernel test under -cpu $cpu" >&2
        status=1
    fi
    if ! out=$("$QEMU" -cpu "$cpu" "$BUILD/test_gemm_kernels"); then
        echo "$out"
        echo "FAIL: Gemm kernel test under -cpu $cpu" >&2
        status=1
    else
        echo "$out"
        ran=$(grep -cE '^ +[a-z0-9]+ +neon .*[1-9][0-9]* cases, ok$' <<<"$out" || true)
        if [ "$ran" -ne "$neon_gemm" ]; then
            echo "FAIL: $ran NEON Gemm families ran under -cpu $cpu, gk_gemm.h declares $neon_gemm" >&2
            status=1
        fi
        # the BFMMLA family: runs (its guard accepting most cases) where the CPU has bf16
        if grep -q bf16 <<<"$feats"; then
            bfmmla='^ +bfloat16 +neonbf16 .*[1-9][0-9]* cases \([0-9]+ declined\), ok$'
        else
            bfmmla='^ +bfloat16 +neonbf16 not usable'
        fi
        if ! grep -qE "$bfmmla" <<<"$out"; then
            echo "FAIL: the neonbf16 family under -cpu $cpu: expected a line matching $bfmmla" >&2
            status=1
        fi
    fi
    if ! out=$("$QEMU" -cpu "$cpu" "$BUILD/test_codecs_kernels" 2>&1); then
        echo "$out" | tail -40
        echo "FAIL: codecs kernel test under -cpu $cpu" >&2
        status=1
    else
        echo "$out"
        if ! grep -qE '^codecs neon: [1-9][0-9]* checks, ok$' <<<"$out"; then
            echo "FAIL: the NEON codecs family did not run and pass under -cpu $cpu" >&2
            status=1
        fi
    fi
done
[ $status -eq 0 ] && echo "qemu aarch64: all passed"
exit $status
