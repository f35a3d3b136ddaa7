#!/usr/bin/env bash
# The installed gemmkit, the C kernel test and the benchmarks under older x86 CPU models
# (qemu user-mode emulation):
#   Nehalem  (SSE4.2, no AVX)                      -> must choose sse41
#   Haswell  (AVX2+FMA+F16C, no AVX-512, no VNNI)  -> must choose avx2; the CPU class of
#            the AMD Zen 2 machines, where onnxruntime's u8s8 kernels saturate
# Per CPU: no illegal instruction, the right path chosen, exact results on every usable
# path (tests/emulated_check.py), the C kernel tests (tests/c/test_qgemm_kernels, every int8
# family; tests/c/test_gemm_kernels, every Gemm family of every type).  (Not
# tests/c/test_codecs_kernels: qemu's TCG F16C flushes subnormal halves -- vcvtph2ps of
# 0x0001 gives +0, vcvtps2ph of 2^-24 gives 0 -- where every real F16C CPU, and the
# harness run natively by tests/c/run_native.sh on each CI machine, gives the IEEE
# values.)  Under
# Haswell also: the pytest checks that run onnxruntime next to the exact oracles (their
# report says whether onnxruntime is exact there; it is not asserted), smoke runs of
# benchmarks/bench_int8.py and bench_gemm.py (peaks of absent ISAs must not be run), the
# C kernel benchmark's peak section; without --quick the whole pytest suite and
# `python -m gemmkit` as well.
# Usage: bash scripts/test_qemu_x86.sh [--quick]
#   run from anywhere, after `python -m pip install ".[test]"` in the active environment
set -euo pipefail
cd "$(dirname "$0")/.."
quick=${1:-}
if ! command -v qemu-x86_64-static >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq qemu-user-static >/dev/null
fi
# The interpreter as invoked (a venv's python keeps its environment) and, in case the
# emulated process does not find its prefix, the installed package's site directory.
py=$(cd /tmp && python -c 'import sys; print(sys.executable)')
site=$(cd /tmp && python -c 'import os, gemmkit; print(os.path.dirname(os.path.dirname(gemmkit.__file__)))')
root=$(pwd)
check="$root/tests/emulated_check.py"
# the C kernel test and benchmark, built natively (run_native.sh's flags), run emulated
bash tests/c/run_native.sh build
cbuild="$root/tests/c/build"

# qemu's notes on CPUID bits it does not emulate are dropped.  OPENBLAS_CORETYPE names the
# emulated CPU: a value inherited from the host describes the host (a Zen 5 machine here set
# Haswell, and numpy's OpenBLAS then ran AVX code at import under -cpu Nehalem).  Both model
# names are OpenBLAS core names.
emu() { # emu CPU command... : runs the command under qemu-x86_64 -cpu CPU
    local cpu=$1
    shift
    OPENBLAS_CORETYPE="$cpu" PYTHONPATH="$site" qemu-x86_64-static -cpu "$cpu" "$@" \
        2> >(grep -v "TCG doesn't support" >&2)
}
# the same from a neutral directory, so that the installed package (not src/) is imported
emu_tmp() { (cd /tmp && emu "$@"); }

status=0
step() { # step CPU DESCRIPTION command... : runs a step, records a failure, goes on
    local cpu=$1 what=$2
    shift 2
    echo "--- qemu-x86_64 -cpu $cpu: $what"
    if ! "$@"; then
        echo "FAILED under -cpu $cpu: $what"
        status=1
    fi
}

for pair in "Nehalem:sse41" "Haswell:avx2"; do
    cpu=${pair%%:*}; want=${pair##*:}
    step "$cpu" "installed package (expect $want)" \
        emu_tmp "$cpu" "$py" "$check" "$want" $quick
    step "$cpu" "C kernel test" emu "$cpu" "$cbuild/test_qgemm_kernels"
    step "$cpu" "C Gemm kernel test" emu "$cpu" "$cbuild/test_gemm_kernels"
done

cpu=Haswell
if [ "$quick" = --quick ]; then
    # the tests that run onnxruntime (the ones that failed on Zen 2 when they took its
    # output as the truth)
    step $cpu "pytest: gemmkit vs the oracles, onnxruntime reported" \
        emu $cpu "$py" -m pytest -q -p no:cacheprovider tests/test_onnx_node_cases.py \
        tests/test_gemm.py -k onnxruntime
else
    step $cpu "pytest: the whole suite" emu $cpu "$py" -m pytest -q -p no:cacheprovider
    step $cpu "python -m gemmkit" emu_tmp $cpu "$py" -m gemmkit
fi
step $cpu "benchmarks/bench_int8.py smoke run" \
    emu $cpu "$py" benchmarks/bench_int8.py --paths all --signs u8s8,u8u8 \
    --shapes 16x64x32,1x128x64 --budget 0.01
step $cpu "benchmarks/bench_gemm.py smoke run" \
    emu $cpu "$py" benchmarks/bench_gemm.py --sizes 16 --budget 0.01
step $cpu "C kernel benchmark (peaks of the ISAs present only)" \
    emu $cpu "$cbuild/bench_qgemm_kernels" 32
exit $status
