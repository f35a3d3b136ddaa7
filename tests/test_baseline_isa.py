"""The baseline objects of the build hold no instruction beyond the platform baseline.

Everything but the ISA-group files (setup.py print-isa-groups) is compiled without ISA flags
and must run on any CPU of the platform: on x86-64 no AVX/AVX2/AVX-512 (no VEX/EVEX
encoding, no ymm/zmm/k register) and nothing after SSE2; on ARM64 no dotprod/i8mm/SVE.
tests/isa_scan.py does the disassembly; here it is shown to catch a leak (a tiny object
built with -mavx2, -mavx512f, -march=haswell, -msse4.1 or -march=native -- with the aarch64
cross compiler, when installed: +dotprod, +sve, -mcpu=neoverse-v1 -- placed where a
baseline file's object would be), then run on the real build:

* the objects of the build (GEMMKIT_BUILD_TEMP, else build/temp.<platform>-<python>/ next
  to tests/, left there by `pip install .`);
* the installed extension, when it was linked from those objects: every function in it
  with such an instruction is defined by an ISA object (name and size).
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import sysconfig

import pytest

import isa_scan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP = os.path.join(ROOT, "setup.py")
ARCH = {"x86_64": "x86", "amd64": "x86", "aarch64": "arm64", "arm64": "arm64"}.get(
    platform.machine().lower())


# --- the classifiers on known encodings (no tools needed) ---------------------------------
@pytest.mark.parametrize("hexbytes, text, bad", [
    ("c5 f8 77", "vzeroupper", True),                                  # VEX (AVX)
    ("c5 fd fe c1", "vpaddd %ymm1,%ymm0,%ymm0", True),                 # VEX.256 (AVX2)
    ("c5 f9 fe c1", "vpaddd %xmm1,%xmm0,%xmm0", True),                 # VEX.128: AVX too
    ("62 f1 7c 48 58 c1", "vaddps %zmm1,%zmm0,%zmm0", True),           # EVEX (AVX-512)
    ("c4 e2 f9 f7 c0", "shlx %rax,%rax,%rax", True),                   # VEX GPR (BMI2)
    ("64 c5 f8 10 00", "vmovups %fs:(%rax),%xmm0", True),              # prefix, then VEX
    ("66 0f 38 00 c1", "pshufb %xmm1,%xmm0", True),                    # SSSE3
    ("66 0f 38 40 c1", "pmulld %xmm1,%xmm0", True),                    # SSE4.1
    ("f3 48 0f b8 c0", "popcnt %rax,%rax", True),                      # POPCNT
    ("0f 58 c1", "addps %xmm1,%xmm0", False),                          # SSE
    ("66 0f fe c1", "paddd %xmm1,%xmm0", False),                       # SSE2
    ("66 0f c5 c0 01", "pextrw $0x1,%xmm0,%eax", False),               # SSE2's pextrw
    ("0f a2", "cpuid", False),
    ("0f 01 d0", "xgetbv", False),                                     # the dispatcher's
    ("48 8b 04 24", "mov (%rsp),%rax", False),
    ("c3", "ret", False),
])
def test_x86_classifier(hexbytes, text, bad):
    assert (isa_scan.x86_offence(bytes.fromhex(hexbytes.replace(" ", "")), text)
            is not None) == bad


@pytest.mark.parametrize("text, bad", [
    ("sdot\tv0.4s, v1.16b, v2.16b", True),
    ("udot\tv0.4s, v1.16b, v2.4b[1]", True),
    ("usmmla\tv0.4s, v1.16b, v2.16b", True),
    ("ld1b\t{z0.b}, p0/z, [x0]", True),
    ("add\tv0.4s, v1.4s, v2.4s", False),
    ("smull\tv0.8h, v1.8b, v2.8b", False),
    ("sadalp\tv0.4s, v1.8h", False),
    ("ldr\tx0, [x1, #8]", False),
])
def test_arm64_classifier(text, bad):
    assert (isa_scan.arm64_offence(b"\0\0\0\0", text) is not None) == bad


# --- a leak is caught: tiny objects through the same classification as the build ---------
_LEAK_SRC = r"""
void gk_leak(float *restrict y, const float *restrict a, const float *restrict b, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a[i] * b[i];
}
void gk_leak_int(int *restrict y, const int *restrict a, const int *restrict b, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = a[i] * b[i];
}
unsigned long long gk_leak_shift(unsigned long long x, unsigned s) { return x << (s & 63); }
unsigned gk_leak_dot(const unsigned char *restrict a, const unsigned char *restrict b, int n)
{
    unsigned s = 0;
    for (int i = 0; i < n; i++)
        s += (unsigned)a[i] * b[i];
    return s;
}
"""


def _need(cond, why):
    if not cond:
        pytest.skip(why)


def _cc():
    """The C compiler (CC, else cc) when one answers --version (CC=false: none)."""
    cc = os.environ.get("CC", "cc").split()
    if not cc or not shutil.which(cc[0]):
        return None
    r = subprocess.run(cc + ["--version"], capture_output=True)
    return cc if r.returncode == 0 else None


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _leak_tools(arch):
    """(objdump, cc) that build and read `arch` objects here, or skip saying why."""
    _need(sys.platform.startswith("linux"), "reads GNU objdump output of ELF objects (Linux)")
    objdump = isa_scan.find_objdump(arch)
    _need(objdump is not None, f"no objdump for {arch} on PATH (binutils)")
    if arch == ARCH:
        cc = _cc()
    else:   # the other architecture: a cross compiler, when installed
        cross = {"arm64": "aarch64-linux-gnu-gcc", "x86": "x86_64-linux-gnu-gcc"}[arch]
        cc = [cross] if shutil.which(cross) else None
    _need(cc is not None, f"no C compiler for {arch} on PATH to build the leak objects")
    _need(os.path.exists(SETUP), f"setup.py not found beside tests/ ({SETUP})")
    return objdump, cc


# (arch, flags, leaks, where an ISA file's object lies)
_ISA_PLACE = {"x86": ("src/csrc/gemm/x86/gk_leak_avx2.o", "avx2"),
              "arm64": ("src/csrc/qgemm/arm/gk_leak_neondot.o", "neondot")}


@pytest.mark.parametrize("arch, flags, leaks", [
    ("x86", [], False),
    ("x86", ["-mavx2"], True),
    ("x86", ["-mavx512f"], True),
    ("x86", ["-march=haswell"], True),
    ("x86", ["-msse4.1"], True),
    ("x86", ["-march=native"], None),   # a leak exactly when this CPU has AVX
    ("arm64", [], False),
    ("arm64", ["-march=armv8.2-a+dotprod"], True),
    ("arm64", ["-march=armv8.2-a+sve"], True),
    ("arm64", ["-mcpu=neoverse-v1"], True),   # what -mcpu=native gives on such a server
])
def test_leaked_flag_is_caught(tmp_path, arch, flags, leaks):
    objdump, cc = _leak_tools(arch)
    if leaks is None:
        _need(ARCH == "x86" and "avx" in _cpu_flags(), "-march=native adds no AVX here")
        leaks = True
    src = tmp_path / "leak.c"
    src.write_text(_LEAK_SRC)
    setup_mod = isa_scan.load_setup(SETUP)
    # the same object where a baseline file's and where an ISA file's object would lie
    isa_where, isa_group = _ISA_PLACE[arch]
    results = {}
    for where in ("src/csrc/core/gk_leak.o", isa_where):
        build_temp = tmp_path / where.split("/")[-1].replace(".o", "")
        obj = build_temp / where
        obj.parent.mkdir(parents=True)
        r = subprocess.run(cc + ["-O3", "-fPIC", *flags, "-c", str(src), "-o", str(obj)],
                           capture_output=True, text=True)
        _need(r.returncode == 0, f"{' '.join(cc)} {' '.join(flags)} failed: {r.stderr[:200]}")
        objects = isa_scan.classify_objects(str(build_temp), setup_mod, arch)
        assert objects == {str(obj): "baseline" if "core" in where else isa_group}
        results[where], _ = isa_scan.scan_objects(objects, arch, objdump)
    baseline = results["src/csrc/core/gk_leak.o"]
    assert baseline.ok == (not leaks), baseline.failures
    if leaks:
        assert f"beyond the {arch} baseline" in baseline.failures[0]
    # as an ISA object such code is expected; plain code there fires the positive control
    isa = results[isa_where]
    if leaks:
        assert isa.ok, isa.failures
    else:
        assert not isa.ok and "positive control" in isa.failures[0]


# --- the real build ---------------------------------------------------------------------------
def _build_temp():
    env = os.environ.get("GEMMKIT_BUILD_TEMP")
    if env:
        return env, "GEMMKIT_BUILD_TEMP"
    tag = f"temp.{sysconfig.get_platform()}-{sys.implementation.cache_tag}"
    return os.path.join(ROOT, "build", tag), f"build/{tag}"


def _real_build():
    _need(ARCH is not None, f"no scan for {platform.machine()}")
    _need(sys.platform.startswith("linux"), "reads GNU objdump output of ELF objects (Linux)")
    objdump = isa_scan.find_objdump(ARCH)
    _need(objdump is not None, f"no objdump for {ARCH} on PATH (binutils)")
    _need(os.path.exists(SETUP), f"setup.py not found beside tests/ ({SETUP})")
    build_temp, where = _build_temp()
    has_objects = os.path.isdir(build_temp) and any(
        f.endswith(".o") for _, _, fs in os.walk(build_temp) for f in fs)
    _need(has_objects, f"no build objects in {where} (build in place with `pip install .` "
                       "or set GEMMKIT_BUILD_TEMP)")
    setup_mod = isa_scan.load_setup(SETUP)
    return objdump, isa_scan.classify_objects(build_temp, setup_mod, ARCH)


def test_build_objects_have_no_stray_instructions():
    objdump, objects = _real_build()
    groups = set(objects.values())
    assert "baseline" in groups, "no baseline object found: not a gemmkit build folder?"
    res, per_group = isa_scan.scan_objects(objects, ARCH, objdump)
    print("\n".join(res.notes))
    assert res.ok, "\n".join(res.failures)


def test_installed_extension_functions_come_from_isa_objects():
    objdump, objects = _real_build()
    from gemmkit import _core
    res = isa_scan.scan_extension(_core.__file__, objects, ARCH, objdump)
    _need(res is not None, f"the installed {_core.__file__} was not linked from these build "
                           "objects")
    print("\n".join(res.notes))
    assert res.ok, "\n".join(res.failures)
