"""onnxruntime as a second opinion, never as the truth.

The tests compare gemmkit with the exact oracles of ``oracles.py`` (written from the spec).
Where a test also runs onnxruntime, ORT's output is compared with the same oracle:

* ORT exact: gemmkit must equal ORT (it equals the oracle too);
* ORT not exact: reported, not failed -- an ``OnnxruntimeInexactWarning`` (pytest's
  warnings summary) and a line in the "onnxruntime vs the exact oracles" section that
  conftest.py adds to the terminal summary.

ORT's correctness depends on the CPU it runs on.  Its pre-VNNI x86 u8s8 kernels (AVX2 /
SSE4.1: AMD Zen 2, Intel Haswell..Skylake) use ``vpmaddubsw``, which adds two u8 x s8
products in a saturating int16 lane (255 * -128 * 2 = -65280 -> -32768), so on those CPUs
ORT returns wrong MatMulInteger / QLinearMatMul results on inputs with large products;
with AVX-512 VNNI / AVX-VNNI / AMX (Zen 4, Sapphire Rapids) the same inputs are exact.
"""
from __future__ import annotations

import warnings

import numpy as np

__all__ = ["OnnxruntimeInexactWarning", "ort_run", "check_exact", "check_within",
           "summary_lines"]


class OnnxruntimeInexactWarning(UserWarning):
    """onnxruntime's output differs from the exact oracle (reported, not a failure)."""


# what -> None (exact) or a description of how ORT is off; one entry per distinct check
# (a check repeated for every gemmkit path is one entry: ORT does not depend on the path)
_RESULTS: dict = {}


def ort_run(op, inputs, out_dtype, opset, **attrs):
    """Runs one ``op`` node on onnxruntime's CPU provider; None where ORT has no kernel
    for this type combination.  Skips the calling test where onnxruntime is missing."""
    import pytest
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper
    from onnx.helper import np_dtype_to_tensor_dtype
    names = [f"in{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, np_dtype_to_tensor_dtype(x.dtype), x.shape)
         for n, x in zip(names, inputs)],
        [helper.make_tensor_value_info("y", np_dtype_to_tensor_dtype(np.dtype(out_dtype)),
                                       None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10  # what onnxruntime 1.2x accepts
    try:
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:  # ORT lacks a kernel for this type combination
        if "NOT_IMPLEMENTED" in str(exc):
            return None
        raise
    return sess.run(None, dict(zip(names, inputs)))[0]


def _report(what, detail):
    _RESULTS[what] = detail
    if detail is not None:
        warnings.warn(OnnxruntimeInexactWarning(
            f"onnxruntime {_ort_version()} is not exact on this CPU ({_cpu()}): {what}: "
            f"{detail}; gemmkit equals the exact oracle (reported, not a failure)"),
            stacklevel=3)


def check_exact(what, ort_out, want, got):
    """Integer outputs.  ``want``: the exact oracle; ``got``: gemmkit's output, already
    asserted equal to ``want`` by the caller.  Where ORT equals the oracle, asserts that
    gemmkit equals ORT; otherwise reports how ORT is off.  Returns whether ORT is exact."""
    ort_out = np.asarray(ort_out)
    if ort_out.shape != want.shape or ort_out.dtype != want.dtype:
        _report(what, f"shape/dtype {ort_out.shape} {ort_out.dtype}, "
                      f"expected {want.shape} {want.dtype}")
        return False
    bad = ort_out != want
    if not bad.any():
        np.testing.assert_array_equal(got, ort_out)
        _report(what, None)
        return True
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    diff = np.abs(ort_out.astype(np.int64) - want.astype(np.int64))
    _report(what, f"{int(bad.sum())} of {bad.size} elements differ, by up to "
                  f"{int(diff.max())}; first at {idx}: ort {ort_out[idx].item()}, "
                  f"exact {want[idx].item()}")
    return False


def check_within(what, ort_out, ref, bound, got):
    """Float outputs: ``ref`` the float64 oracle, ``bound`` the admissible error of an
    implementation (elementwise); ``got`` is gemmkit's output, already asserted within
    ``bound`` by the caller.  Where ORT is within the bound too, asserts that the two are
    within twice the bound of each other; otherwise reports.  Returns whether ORT is."""
    r = np.asarray(ort_out).astype(np.float64)
    if r.shape != ref.shape:
        _report(what, f"shape {r.shape}, expected {ref.shape}")
        return False
    err = np.abs(r - ref)
    bad = ~(err <= bound)
    if not bad.any():
        assert np.all(np.abs(got.astype(np.float64) - r) <= 2 * bound), what
        _report(what, None)
        return True
    _report(what, f"{int(bad.sum())} of {bad.size} elements beyond the error bound, worst "
                  f"by {float(np.max(np.where(bad, err - bound, 0))):.3g}")
    return False


def _ort_version():
    try:
        import onnxruntime
        return onnxruntime.__version__
    except Exception:  # noqa: BLE001 - only for the message
        return "?"


def _cpu():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import gemmkit
        feats = "CPUID features " + ",".join(gemmkit.cpu_info()["features"])
    except Exception:  # noqa: BLE001 - only for the message
        feats = ""
    return "; ".join(s for s in (model, feats) if s) or "unknown CPU"


def summary_lines():
    """Lines for the terminal summary: how many ORT checks were exact, and the others."""
    if not _RESULTS:
        return []
    inexact = {w: d for w, d in _RESULTS.items() if d is not None}
    lines = [f"onnxruntime {_ort_version()} on {_cpu()}: {len(_RESULTS) - len(inexact)} of "
             f"{len(_RESULTS)} distinct checks agree with the oracle"
             + ("" if not inexact else
                f"; INEXACT on {len(inexact)} (gemmkit exact on all; not a failure):")]
    for i, (w, d) in enumerate(sorted(inexact.items())):
        if i == 25:
            lines.append(f"  ... and {len(inexact) - 25} more")
            break
        lines.append(f"  {w}: {d}")
    return lines


def report(what, detail):
    """Records one check done elsewhere: ``detail`` None where onnxruntime agreed with the
    exact definition (up to the tolerance the caller documents), else how it is off
    (reported as above, not a failure)."""
    _report(what, detail)
