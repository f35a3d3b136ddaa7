"""python -m gemmkit: its options (the full run, with its timing table, is the README's
first command and runs in CI's wheel check)."""
from __future__ import annotations

import subprocess
import sys


def _run(*args):
    return subprocess.run([sys.executable, "-m", "gemmkit", *args], capture_output=True,
                          text=True, timeout=300)


def test_help_prints_usage_and_runs_nothing():
    r = _run("--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: python -m gemmkit")
    assert "self-check" in r.stdout and "isa" not in r.stdout


def test_no_timing_runs_the_self_check_only():
    r = _run("--no-timing")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "self-check against NumPy:" in r.stdout
    assert "FAIL" not in r.stdout and r.stdout.rstrip().endswith("all checks passed")
    assert "timing (median" not in r.stdout


def test_unknown_option_is_an_error():
    r = _run("--bogus")
    assert r.returncode == 2
    assert "unrecognized arguments: --bogus" in r.stderr
