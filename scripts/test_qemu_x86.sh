#!/usr/bin/env bash
# The installed gemmkit under older x86 CPU models (qemu user-mode emulation):
#   Nehalem  (SSE4.2, no AVX)        -> must choose sse41
#   Haswell  (AVX2+FMA, no AVX-512)  -> must choose avx2
# No illegal instruction, the right path chosen, exact results on every usable path.
# Usage: bash scripts/test_qemu_x86.sh [--quick]   (run from the repo root, after install)
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
check="$(pwd)/tests/emulated_check.py"
status=0
for pair in "Nehalem:sse41" "Haswell:avx2"; do
    cpu=${pair%%:*}; want=${pair##*:}
    echo "qemu-x86_64 -cpu $cpu (expect $want):"
    # from a neutral directory so the installed package (not src/) is imported; qemu's
    # notes on CPUID bits it does not emulate are dropped
    if ! (cd /tmp && PYTHONPATH="$site" qemu-x86_64-static -cpu "$cpu" "$py" "$check" "$want" \
            $quick 2> >(grep -v "TCG doesn't support" >&2)); then
        echo "FAILED under -cpu $cpu"; status=1
    fi
done
exit $status
