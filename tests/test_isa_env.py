"""GEMMKIT_ISA forces a kernel path at import (checked in fresh interpreters)."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _python(code, **env):
    e = dict(os.environ)
    e.pop("GEMMKIT_ISA", None)
    e.update(env)
    # Make the in-place build importable like the parent process sees it.
    import gemmkit
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(gemmkit.__file__)))
    e["PYTHONPATH"] = os.pathsep.join([pkg_parent] + [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True,
                          text=True, timeout=120)


def test_gemmkit_isa_scalar_selects_scalar():
    r = _python("import gemmkit, numpy as np; i = gemmkit.cpu_info(); print(i['isa']);"
                "print(gemmkit.matmul_integer(np.full((2, 3), 255, np.uint8),"
                " np.full((3, 2), -128, np.int8)).tolist())", GEMMKIT_ISA="scalar")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == "scalar"
    assert lines[1] == str([[255 * -128 * 3] * 2] * 2)


def test_gemmkit_isa_each_available_path():
    import gemmkit
    available = gemmkit.cpu_info()["available"]
    for name in available:
        r = _python("import gemmkit; print(gemmkit.cpu_info()['isa'])", GEMMKIT_ISA=name)
        assert r.returncode == 0, (name, r.stderr)
        assert r.stdout.strip() == name


def test_gemmkit_isa_bogus_fails_at_import_listing_valid_names():
    import gemmkit
    available = gemmkit.cpu_info()["available"]
    r = _python("import gemmkit", GEMMKIT_ISA="bogus")
    assert r.returncode != 0
    err = r.stderr
    assert "bogus" in err
    assert "GEMMKIT_ISA" in err
    for name in available:
        assert name in err, (name, err[-2000:])


def test_default_isa_is_best_available():
    r = _python("import gemmkit; i = gemmkit.cpu_info(); print(i['isa'], i['available'][0])")
    assert r.returncode == 0, r.stderr
    isa, best = r.stdout.split()
    assert isa == best


def test_cpu_info_shape():
    import gemmkit
    from gemmkit import _core
    info = gemmkit.cpu_info()
    assert isinstance(info, dict)
    for key in ("isa", "engines", "available", "compiled", "features"):
        assert key in info, info
    levels = _core._levels()
    assert levels[0] == "scalar"
    # best first, each a level of this architecture, scalar always last
    assert info["available"] == sorted(info["available"], key=levels.index, reverse=True)
    assert info["available"][-1] == "scalar"
    assert set(info["available"]) <= set(info["compiled"]) <= set(levels)
    assert info["isa"] in info["available"]
    assert set(info["engines"]) == {"qgemm", "gemm", "codecs"}
    assert set(info["engines"]["gemm"]) == {"float16", "bfloat16", "float32", "float64",
                                            "int32", "uint32", "int64", "uint64"}


def test_every_engine_at_or_below_the_selected_level():
    """GEMMKIT_ISA caps every engine: each picks a family at or below the named level."""
    import gemmkit
    import ml_dtypes
    from gemmkit import _core
    levels = _core._levels()
    default = gemmkit.cpu_info()["isa"]
    try:
        for name in gemmkit.cpu_info()["available"]:
            _core._set_isa(name)
            info = gemmkit.cpu_info()
            assert info["isa"] == name
            eng = info["engines"]
            # a Gemm family may need one feature beyond its level (bfloat16 on vdpbf16ps:
            # family "avx512bf16" at level avx512): its dispatch level is what is capped
            gemm_levels = [_core._gemm_family_info(dt)["level"] for dt in
                           ("float16", ml_dtypes.bfloat16, "float32", "float64", "int32",
                            "uint32", "int64", "uint64")]
            for dt, family in eng["gemm"].items():
                fam = _core._gemm_family_info(ml_dtypes.bfloat16 if dt == "bfloat16" else dt)
                assert fam["isa"] == family, (dt, fam, eng)
                assert family in levels or family.startswith(fam["level"]), (dt, fam)
            chosen = [eng["qgemm"], eng["codecs"], *gemm_levels]
            for family in chosen:
                assert family in levels and levels.index(family) <= levels.index(name), \
                    (name, eng)
            if name == "avx512":
                # Gemm families only: the int8 engine runs the best int8 level below
                assert eng["qgemm"] in ("avxvnni", "avx2"), eng
                assert eng["gemm"]["float32"] == eng["gemm"]["float64"] == "avx512", eng
            else:
                assert eng["qgemm"] == name  # every other level has an int8 family
    finally:
        _core._set_isa(default)


def test_unknown_not_compiled_and_unsupported_are_told_apart():
    import gemmkit
    from gemmkit import _core
    info = gemmkit.cpu_info()
    with pytest.raises(ValueError, match="not a known level"):
        _core._set_isa("bogus")
    other_arch = "neon" if "sse41" in _core._levels() else "sse41"
    with pytest.raises(ValueError, match="not a known level"):
        _core._set_isa(other_arch)
    for name in set(_core._levels()) - set(info["compiled"]):
        with pytest.raises(ValueError, match="not compiled|no kernel"):
            _core._set_isa(name)
    for name in set(info["compiled"]) - set(info["available"]):
        with pytest.raises(ValueError, match="does not support"):
            _core._set_isa(name)
    assert gemmkit.cpu_info()["isa"] == info["isa"]  # a failed selection keeps the old one


_AMX_PERM_SCRIPT = """
import ctypes, sys
import gemmkit
libc = ctypes.CDLL(None, use_errno=True)
perm = ctypes.c_uint64(0)
# arch_prctl(ARCH_GET_XCOMP_PERM): the extended states this process may use
SYS_arch_prctl, ARCH_GET_XCOMP_PERM = 158, 0x1022
rc = libc.syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, ctypes.byref(perm))
print(gemmkit.cpu_info()["isa"], rc, (perm.value >> 18) & 1)
"""


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                    reason="the AMX tile permission is a Linux x86-64 request")
def test_amx_permission_requested_only_when_amx_is_selected():
    import gemmkit
    if "amx-int8" not in gemmkit.cpu_info()["features"]:
        pytest.skip("this CPU has no AMX-INT8: the permission is never needed")
    r = _python(_AMX_PERM_SCRIPT, GEMMKIT_ISA="avx2")
    assert r.returncode == 0, r.stderr
    isa, rc, granted = r.stdout.split()
    assert isa == "avx2" and rc == "0"
    assert granted == "0", "AMX tile data permission requested although avx2 was forced"
    if "amx" in gemmkit.cpu_info()["available"]:
        r = _python(_AMX_PERM_SCRIPT, GEMMKIT_ISA="amx")
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["amx", "0", "1"]


@pytest.mark.skipif(sys.platform != "linux", reason="x86 feature names checked on Linux")
def test_available_paths_are_supported_by_this_cpu():
    import gemmkit
    info = gemmkit.cpu_info()
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:  # pragma: no cover
        pytest.skip("no /proc/cpuinfo")
    need = {"sse41": ["sse4_1"], "avx2": ["avx2"],
            "avx512": ["avx512f", "avx512bw", "avx512vl", "avx512dq", "fma", "f16c"],
            "avx512vnni": ["avx512f", "avx512bw", "avx512vl", "avx512_vnni"],
            "avxvnni": ["avx_vnni"], "amx": ["amx_tile", "amx_int8"],
            "neondot": ["asimddp"], "i8mm": ["i8mm"]}
    words = set(flags.split())
    for name in info["available"]:
        for flag in need.get(name, []):
            assert flag in words, (name, flag, "not in /proc/cpuinfo flags")


def test_cpu_info_reports_the_caches_the_os_sees():
    """cpu_info()['caches'] (CPUID, what sizes the cache blocks) against Linux's own view
    of cpu0's caches in sysfs (the kernel reads the same CPUID leaves)."""
    import gemmkit
    c = gemmkit.cpu_info()["caches"]
    assert set(c) == {"l1d", "l2", "l3"}
    assert all(isinstance(v, int) and v >= 0 for v in c.values())
    base = "/sys/devices/system/cpu/cpu0/cache"
    if platform.machine().lower() not in ("x86_64", "amd64") or not os.path.isdir(base):
        pytest.skip("no x86 Linux sysfs cache description to compare with")
    seen = {}
    for d in sorted(os.listdir(base)):
        try:
            with open(os.path.join(base, d, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, d, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, d, "size")) as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and size.endswith("K"):
            seen[level] = int(size[:-1]) * 1024
    if 1 not in seen or 2 not in seen:
        pytest.skip(f"sysfs lists no L1d/L2 sizes: {seen}")
    assert c["l1d"] == seen[1] and c["l2"] == seen[2], (c, seen)
    if 3 in seen:
        assert c["l3"] == seen[3], (c, seen)
