#!/usr/bin/env bash
# Builds tests/c/test_qgemm_kernels (and the kernel benchmark) natively with gcc, every
# ISA group compiled separately with setup.py's flags and GK_HAVE_<ISA> defined for the
# groups that compiled, then runs the test.   bash tests/c/run_native.sh [bench]
set -euo pipefail
cd "$(dirname "$0")/../.."
CC=${CC:-gcc}
B=tests/c/build
mkdir -p "$B"
BASE="-O3 -ffp-contract=off -fno-strict-aliasing -std=gnu99 -Iinclude -Isrc/csrc -Wall"
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

group scalar "-fno-tree-vectorize -fno-tree-slp-vectorize" src/csrc/scalar/*.c
case "$(uname -m)" in
x86_64|amd64)
    group sse41 "-msse4.1" src/csrc/x86/*_sse41.c
    group avx2 "-mavx2 -mfma -mf16c" src/csrc/x86/*_avx2.c
    group avxvnni "-mavx2 -mfma -mavxvnni" src/csrc/x86/*_avxvnni.c
    group avx512vnni "-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma" src/csrc/x86/*_avx512vnni.c
    ;;
aarch64|arm64)
    group neon "" src/csrc/arm/*_neon.c
    group neondot "-march=armv8.2-a+dotprod" src/csrc/arm/*_neondot.c
    group i8mm "-march=armv8.2-a+dotprod+i8mm" src/csrc/arm/*_i8mm.c
    ;;
esac
for s in src/csrc/gk_dispatch.c src/csrc/gk_cpu_x86.c src/csrc/gk_cpu_arm.c; do
    o="$B/$(basename "${s%.c}").o"
    rm -f "$o"
    $CC $BASE ${DEFS[@]+"${DEFS[@]}"} -c "$s" -o "$o" &
    PIDS+=($!)
    OBJS+=("$o")
done
for p in "${PIDS[@]}"; do wait "$p"; done # set -e: any failed compile stops here
$CC $BASE tests/c/test_qgemm_kernels.c "${OBJS[@]}" -lm -o "$B/test_qgemm_kernels"
if [ "${1:-}" = bench ]; then
    $CC $BASE tests/c/bench_qgemm_kernels.c tests/c/bench_peak_x86.c "${OBJS[@]}" -lm \
        -o "$B/bench_qgemm_kernels"
    exec "$B/bench_qgemm_kernels" "${@:2}"
fi
exec "$B/test_qgemm_kernels"
