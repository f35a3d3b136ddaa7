"""GEMMKIT_ISA forces a kernel path at import (checked in fresh interpreters)."""
from __future__ import annotations

import os
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
    info = gemmkit.cpu_info()
    assert isinstance(info, dict)
    for key in ("isa", "available", "features"):
        assert key in info, info
    assert info["available"][-1] == "scalar" or "scalar" in info["available"]
    assert len(set(info["available"])) == len(info["available"])


@pytest.mark.skipif(sys.platform != "linux", reason="x86 feature names checked on Linux")
def test_available_paths_are_supported_by_this_cpu():
    import gemmkit
    info = gemmkit.cpu_info()
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:  # pragma: no cover
        pytest.skip("no /proc/cpuinfo")
    need = {"sse41": ["sse4_1"], "avx2": ["avx2"],
            "avx512vnni": ["avx512f", "avx512bw", "avx512vl", "avx512_vnni"],
            "avxvnni": ["avx_vnni"], "amx": ["amx_tile", "amx_int8"],
            "neondot": ["asimddp"], "i8mm": ["i8mm"]}
    words = set(flags.split())
    for name in info["available"]:
        for flag in need.get(name, []):
            assert flag in words, (name, flag, "not in /proc/cpuinfo flags")
