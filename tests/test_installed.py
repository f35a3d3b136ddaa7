"""Which gemmkit this run tests, when a wheel check says what to expect.

The wheel checks (scripts/check_wheel.sh, scripts/check_wheel_aarch64.sh, cibuildwheel's
test step: [tool.cibuildwheel] in pyproject.toml) run the suite against a wheel installed
into a fresh environment and set:

* GEMMKIT_EXPECT_INSTALLED_UNDER: the folder the installed gemmkit must lie in ("sys.prefix":
  this interpreter's environment).  Fails when the gemmkit imported here (or its extension)
  comes from anywhere else: a source tree on sys.path, another site-packages.
* GEMMKIT_EXPECT_COMPILED: kernel levels that must be compiled into the wheel
  (cpu_info()["compiled"]), e.g. "sse41,avx2,avx512" for an x86-64 wheel, "neon" for an
  ARM64 one: a build that lost its target architecture (macOS ARCHFLAGS, a cross build's
  _PYTHON_HOST_PLATFORM not passed through) has the other architecture's or only "scalar".
"""
from __future__ import annotations

import os
import sys

import pytest


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([path, root]) == root


def test_gemmkit_comes_from_the_expected_installation():
    root = os.environ.get("GEMMKIT_EXPECT_INSTALLED_UNDER")
    if not root:
        pytest.skip("GEMMKIT_EXPECT_INSTALLED_UNDER not set (set by the wheel checks)")
    if root == "sys.prefix":
        root = sys.prefix
    import gemmkit
    from gemmkit import _core
    for mod in (gemmkit, _core):
        assert _under(mod.__file__, root), \
            f"{mod.__name__} imported from {mod.__file__}, not from {root}"
    # and not from a source checkout's src/ (src/gemmkit beside setup.py)
    src = os.path.dirname(os.path.dirname(os.path.realpath(gemmkit.__file__)))
    assert not os.path.exists(os.path.join(os.path.dirname(src), "setup.py")), src


def test_the_wheels_architecture_was_compiled_in():
    want = [w.strip() for w in os.environ.get("GEMMKIT_EXPECT_COMPILED", "").split(",")
            if w.strip()]
    if not want:
        pytest.skip("GEMMKIT_EXPECT_COMPILED not set (set by the wheel checks)")
    import gemmkit
    compiled = gemmkit.cpu_info()["compiled"]
    missing = [w for w in want if w not in compiled]
    assert not missing, f"kernel levels {missing} not compiled in; compiled: {compiled}"
