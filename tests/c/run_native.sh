#!/usr/bin/env bash
# Builds tests/c/test_qgemm_kernels, test_gemm_kernels and test_codecs_kernels (and
# benchmarks/c/'s kernel benchmark) natively with $CC
# (default gcc; CC=clang works the same: its scalar flags take gcc's spelling too), every
# ISA group compiled separately with setup.py's flags (python setup.py print-isa-groups) and
# GK_HAVE_<ISA> defined for the groups that compiled, then runs the three tests.
# (scripts/test_cross_builds.sh builds with clang and mingw-w64 and probes each group.)
#   bash tests/c/run_native.sh               build and run the kernel tests (int8, Gemm, codecs)
#   bash tests/c/run_native.sh bench [K]     build and run the kernel benchmark
#   bash tests/c/run_native.sh build         build the tests, run nothing (scripts/test_qemu_x86.sh
#                                            runs them under emulated CPUs)
set -euo pipefail
cd "$(dirname "$0")/../.."
CC=${CC:-gcc}
B=tests/c/build
mkdir -p "$B"
BASE="-O3 -ffp-contract=off -fno-strict-aliasing -std=gnu99 -Werror=implicit-function-declaration -Iinclude -Isrc/csrc -Wall"
OBJS=()
DEFS=()
PIDS=()

group() { # name, flags, sources...
    local name=$1 flags=$2; shift 2
    local srcs=() s
    for s in "$@"; do [ -e "$s" ] && srcs+=("$s"); done
    [ ${#srcs[@]} -eq 0 ] && return 0
    for s in "${srcs[@]}"; do
        local o="$B/$(basename "${s%.c}").o"
        rm -f "$o"
        $CC $BASE $flags -c "$s" -o "$o" &
        PIDS+=($!)
        OBJS+=("$o")
    done
    [ "$name" != scalar ] && DEFS+=("-DGK_HAVE_${name^^}=1")
    return 0
}

# the per-ISA flags come from setup.py, the one place they are defined
BASELINE=
while IFS='|' read -r name flags pattern; do
    if [ "$name" = baseline ]; then BASELINE=$pattern; continue; fi
    # shellcheck disable=SC2086  # the glob must expand
    group "$name" "$flags" $pattern
done < <(python setup.py print-isa-groups)
# shellcheck disable=SC2086  # the glob must expand
for s in $BASELINE; do  # every baseline file: kernels may reference drivers/packers
    o="$B/$(basename "${s%.c}").o"
    rm -f "$o"
    $CC $BASE ${DEFS[@]+"${DEFS[@]}"} -c "$s" -o "$o" &
    PIDS+=($!)
    OBJS+=("$o")
done
for p in "${PIDS[@]}"; do wait "$p"; done # set -e: any failed compile stops here
$CC $BASE tests/c/test_qgemm_kernels.c "${OBJS[@]}" -lm -pthread -o "$B/test_qgemm_kernels"
$CC $BASE tests/c/test_gemm_kernels.c "${OBJS[@]}" -lm -pthread -o "$B/test_gemm_kernels"
$CC $BASE tests/c/test_codecs_kernels.c "${OBJS[@]}" -lm -pthread -o "$B/test_codecs_kernels"
if [ "${1:-}" = bench ] || [ "${1:-}" = build ]; then
    $CC $BASE benchmarks/c/bench_qgemm_kernels.c benchmarks/c/bench_peak_x86.c "${OBJS[@]}" -lm -pthread \
        -o "$B/bench_qgemm_kernels"
fi
case "${1:-}" in
bench) exec "$B/bench_qgemm_kernels" "${@:2}" ;;
build) exit 0 ;;
esac
"$B/test_qgemm_kernels"
"$B/test_codecs_kernels"
exec "$B/test_gemm_kernels"
