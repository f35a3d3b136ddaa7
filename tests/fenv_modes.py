"""The calling thread's rounding mode, for the tests that check that a result does not
depend on it, or that the thread pool carries it to its workers: glibc's fesetround
through ctypes (on x86-64 it sets x87's and SSE's MXCSR rounding, on AArch64 FPCR's)."""
from __future__ import annotations

import contextlib
import ctypes
import platform

import pytest

# glibc's FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO per machine (FE_TONEAREST is 0 on both)
_MODES = {"x86_64": (0x800, 0x400, 0xC00), "aarch64": (0x400000, 0x800000, 0xC00000)}


def _fesetround():
    if platform.system() != "Linux" or platform.machine() not in _MODES:
        return None
    try:
        return ctypes.CDLL(None).fesetround
    except (OSError, AttributeError):
        return None


def directed_modes():
    """This machine's (FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO); skips the calling test where
    there is no glibc fesetround to set them (Linux on x86-64 or AArch64 only)."""
    if _fesetround() is None:
        pytest.skip("needs glibc's fesetround (Linux, x86-64 or AArch64) to change the "
                    "rounding mode")
    return _MODES[platform.machine()]


@contextlib.contextmanager
def rounding(mode):
    """The block runs with this thread's rounding mode set to mode (one of
    directed_modes()), then back at FE_TONEAREST."""
    fesetround = _fesetround()
    assert fesetround(mode) == 0
    try:
        yield
    finally:
        fesetround(0)
