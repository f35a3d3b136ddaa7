"""Shared fixtures.

``isa``: every int8 test takes it, so the whole int8 suite runs once per kernel path that
``gemmkit.cpu_info()["available"]`` lists.  Set ``GEMMKIT_TEST_ISA=name[,name...]`` to
restrict the run to some paths; when only ``GEMMKIT_ISA`` is set (a CI job per path), the
int8 tests run on that one path.

gemmkit is imported lazily: if the extension is not built, only the tests that need it
fail (with the import error), and collection of the rest still works.
"""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Moderate example counts: the whole suite must stay well under 90 s per kernel path on
# a 2-core machine.  GEMMKIT_TEST_EXAMPLES scales them (e.g. 5 for a smoke run).
_SCALE = float(os.environ.get("GEMMKIT_TEST_EXAMPLES_SCALE", "1"))
settings.register_profile(
    "gemmkit",
    deadline=None,
    max_examples=max(1, int(25 * _SCALE)),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
    derandomize=os.environ.get("GEMMKIT_TEST_DERANDOMIZE", "0") == "1",
)
settings.load_profile("gemmkit")


def examples(n: int) -> int:
    """Per-test example count, scaled by GEMMKIT_TEST_EXAMPLES_SCALE."""
    return max(1, int(n * _SCALE))


def _import_gemmkit():
    import gemmkit  # noqa: F401  (raises if the extension is not built)
    return gemmkit


def _isa_params():
    try:
        gk = _import_gemmkit()
        available = list(gk.cpu_info()["available"])
    except Exception as exc:  # noqa: BLE001 - report at test time, not collection time
        return [pytest.param(None, id="gemmkit-unavailable")], exc
    # GEMMKIT_TEST_ISA restricts the run; failing that, a GEMMKIT_ISA forced for the
    # process (a CI job per path) means "test that path", not every path each time.
    wanted = os.environ.get("GEMMKIT_TEST_ISA") or os.environ.get("GEMMKIT_ISA")
    if wanted:
        names = [w.strip() for w in wanted.split(",") if w.strip()]
        missing = [w for w in names if w not in available]
        if missing:
            raise pytest.UsageError(
                f"GEMMKIT_TEST_ISA names paths not available here: {missing}; "
                f"available: {available}")
        available = names
    return available, None


_PARAMS, _IMPORT_ERROR = None, None


def pytest_generate_tests(metafunc):
    global _PARAMS, _IMPORT_ERROR
    if "isa" in metafunc.fixturenames:
        if _PARAMS is None:
            _PARAMS, _IMPORT_ERROR = _isa_params()
        metafunc.parametrize("isa", _PARAMS, indirect=True, scope="function")


@pytest.fixture
def isa(request):
    """Activates one int8 kernel path for the duration of a test, then restores the
    default path (the one in use at import: GEMMKIT_ISA or the best available)."""
    name = request.param
    if name is None:
        _import_gemmkit()  # re-raises the real import error inside the test
        pytest.fail(f"gemmkit.cpu_info() failed at collection: {_IMPORT_ERROR!r}")
    gk = _import_gemmkit()
    from gemmkit import _core
    default = _DEFAULT_ISA.setdefault("isa", gk.cpu_info()["isa"])
    _core._set_isa(name)
    assert gk.cpu_info()["isa"] == name
    try:
        yield name
    finally:
        _core._set_isa(default)


_DEFAULT_ISA: dict = {}


@pytest.fixture(scope="session")
def gk():
    return _import_gemmkit()


def pytest_terminal_summary(terminalreporter):
    """Where tests ran onnxruntime next to the exact oracles: was ORT exact on this CPU?
    (Reported, never a failure: see ort_report.py.)"""
    mod = sys.modules.get("ort_report")
    lines = mod.summary_lines() if mod is not None else []
    if lines:
        terminalreporter.section("onnxruntime vs the exact oracles")
        for line in lines:
            terminalreporter.write_line(line)
