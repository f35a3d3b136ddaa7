"""The onnx package's own node test cases for MatMulInteger / QLinearMatMul / Gemm, run
through ``gemmkit.onnx_ops.run_node``, plus run_node's own mapping rules, and gemmkit
against the exact oracles with onnxruntime run next to them -- checked against the oracle
too, never taken as the truth: where it is not exact (its pre-VNNI x86 kernels saturate),
that is reported, not failed (ort_report.py)."""
from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import oracles as o
import ort_report

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

OPS = ("MatMulInteger", "QLinearMatMul", "Gemm")
_CASE_MODULES = ("gemm", "matmulinteger", "qlinearmatmul")


def _load_cases():
    """Node test cases of the three ops.

    collect_testcases() imports every op's case module (~8 s); importing just the three
    modules fills the same registry (their Base subclasses call expect() on import).
    Falls back to the public API if those internals change."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import onnx.backend.test.case.node as node_pkg
            node_pkg._TargetOpType = None
            for m in _CASE_MODULES:
                importlib.import_module(f"onnx.backend.test.case.node.{m}")
            cases = list(node_pkg._NodeTestCases)
        except Exception:  # pragma: no cover - depends on onnx internals
            from onnx.backend.test.case.node import collect_testcases
            cases = collect_testcases()
    cases = [c for c in cases if c.kind == "node"
             and any(n.op_type in OPS for n in c.model.graph.node)
             and len(c.model.graph.node) == 1]
    return sorted(cases, key=lambda c: c.name)


CASES = _load_cases()
INT_CASES = [c for c in CASES if c.model.graph.node[0].op_type != "Gemm"]
GEMM_CASES = [c for c in CASES if c.model.graph.node[0].op_type == "Gemm"]


def _opset(model):
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return None


def _arr(x):
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


def _compare(got, want, name):
    want = _arr(want)
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if o.is_float8(want.dtype):
        np.testing.assert_array_equal(o.canonical_f8_codes(got), o.canonical_f8_codes(want))
    elif np.issubdtype(want.dtype, np.integer) or want.dtype == np.bool_:
        np.testing.assert_array_equal(got, want)
    else:
        rtol = {np.dtype(np.float16): 1e-3, o.BF16: 1e-2}.get(want.dtype, 1e-5)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=rtol * 1e-1)


def _run_case(case):
    from gemmkit.onnx_ops import run_node

    node = case.model.graph.node[0]
    assert case.data_sets, case.name
    for inputs, outputs in case.data_sets:
        got = run_node(node, [_arr(x) for x in inputs], opset=_opset(case.model))
        assert len(got) == len(outputs)
        for g, w in zip(got, outputs):
            _compare(g, w, case.name)


def test_cases_were_found():
    names = {c.name for c in CASES}
    assert "test_matmulinteger" in names
    assert any(n.startswith("test_qlinearmatmul") for n in names)
    assert any(n.startswith("test_gemm") for n in names)


@pytest.mark.parametrize("case", INT_CASES, ids=[c.name for c in INT_CASES])
def test_onnx_node_case_int(isa, case):
    _run_case(case)


@pytest.mark.parametrize("case", GEMM_CASES, ids=[c.name for c in GEMM_CASES])
def test_onnx_node_case_gemm(case):
    _run_case(case)


# ----------------------------------------------------------------------------------------
# run_node mapping rules
# ----------------------------------------------------------------------------------------

def test_run_node_rejects_other_ops():
    from gemmkit.onnx_ops import run_node
    node = helper.make_node("MatMul", ["A", "B"], ["Y"])
    with pytest.raises(NotImplementedError, match="MatMul"):
        run_node(node, [np.ones((2, 2), np.float32)] * 2)
    node = helper.make_node("MatMulInteger", ["A", "B"], ["Y"], domain="com.microsoft")
    with pytest.raises(NotImplementedError):
        run_node(node, [np.ones((2, 2), np.uint8)] * 2)


def test_run_node_matmul_integer_empty_optional_input_names(isa):
    from gemmkit.onnx_ops import run_node
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (4, 6)).astype(np.uint8)
    b = rng.integers(-128, 128, (6, 3)).astype(np.int8)
    bzp = np.array([1, -2, 3], np.int8)
    want = o.matmul_integer(a, b, None, bzp)
    node = helper.make_node("MatMulInteger", ["A", "B", "", "bzp"], ["Y"])
    # present-inputs convention (as in onnx's test cases) ...
    (y,) = run_node(node, [a, b, bzp])
    np.testing.assert_array_equal(y, want)
    # ... and positional with None for the empty name
    (y,) = run_node(node, [a, b, None, bzp])
    np.testing.assert_array_equal(y, want)
    # trailing optional inputs left out entirely
    node = helper.make_node("MatMulInteger", ["A", "B"], ["Y"])
    (y,) = run_node(node, [a, b], opset=10)
    np.testing.assert_array_equal(y, o.matmul_integer(a, b))


def test_run_node_qlinear_matmul_opset10_rejects_float8_and_half_scales(isa):
    from gemmkit.onnx_ops import run_node
    node = helper.make_node("QLinearMatMul", list("abcdefgh"), ["y"])
    f8 = o.FLOAT8_TYPES[0]
    a = np.ones((2, 3), f8)
    args = [a, np.float32(1), np.zeros((), f8), np.ones((3, 2), np.int8), np.float32(1),
            np.int8(0), np.float32(1), np.int8(0)]
    with pytest.raises(TypeError, match="opset"):
        run_node(node, args, opset=10)
    (y,) = run_node(node, args, opset=21)
    np.testing.assert_array_equal(y, np.full((2, 2), 3, np.int8))
    args16 = [np.ones((2, 3), np.uint8), np.float16(1), np.uint8(0), np.ones((3, 2), np.int8),
              np.float16(1), np.int8(0), np.float16(1), np.int8(0)]
    with pytest.raises(TypeError, match="opset"):
        run_node(node, args16, opset=10)
    (y,) = run_node(node, args16, opset=21)
    np.testing.assert_array_equal(y, np.full((2, 2), 3, np.int8))


def test_run_node_rejects_extra_inputs_and_reads_python_scales(isa):
    """More inputs than the op has is an error that says so (they were silently dropped);
    a Python number as a scale is read as float32 at every opset, as the op reads it."""
    from gemmkit.onnx_ops import run_node
    a, b = np.ones((2, 3), np.uint8), np.ones((3, 2), np.int8)
    with pytest.raises(ValueError, match="MatMulInteger: at most 4 inputs"):
        run_node(helper.make_node("MatMulInteger", list("ABcde"), ["Y"]),
                 [a, b, np.uint8(0), np.int8(0), np.int8(0)])
    with pytest.raises(ValueError, match="Gemm: at most 3 inputs"):
        f = np.ones((2, 2), np.float32)
        run_node(helper.make_node("Gemm", list("ABCD"), ["Y"]), [f, f, f, f])
    node = helper.make_node("QLinearMatMul", list("abcdefghi"), ["y"])
    args = [a, np.float32(1), np.uint8(0), b, np.float32(1), np.int8(0), np.float32(1),
            np.uint8(0)]
    with pytest.raises(ValueError, match="exactly 8 inputs"):
        run_node(node, args + [np.uint8(0)])
    node = helper.make_node("QLinearMatMul", list("abcdefgh"), ["y"])
    args[1], args[6] = 0.5, 2
    for opset in (10, 21):
        (y,) = run_node(node, args, opset=opset)
        np.testing.assert_array_equal(y, np.full((2, 2), 1, np.uint8))  # 3 * 0.5 / 2


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_run_node_gemm_attributes(trans_a, trans_b):
    from gemmkit.onnx_ops import run_node
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 7) if not trans_a else (7, 5)).astype(np.float32)
    b = rng.standard_normal((7, 4) if not trans_b else (4, 7)).astype(np.float32)
    c = rng.standard_normal((1, 4)).astype(np.float32)
    node = helper.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=0.75, beta=-1.5,
                            transA=trans_a, transB=trans_b)
    (y,) = run_node(node, [a, b, c], opset=13)
    aa = a.T if trans_a else a
    bb = b.T if trans_b else b
    want = 0.75 * (aa.astype(np.float64) @ bb) - 1.5 * c
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_run_node_gemm_optional_c_omitted():
    from gemmkit.onnx_ops import run_node
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    for inputs, names in (([a, b], ["A", "B"]), ([a, b], ["A", "B", ""]),
                          ([a, b, None], ["A", "B", ""])):
        node = helper.make_node("Gemm", names, ["Y"], alpha=2.0)
        (y,) = run_node(node, inputs, opset=13)
        np.testing.assert_allclose(y, 2.0 * (a @ b), rtol=1e-6)


def test_run_node_gemm_opset6_broadcast_default_is_off():
    from gemmkit.onnx_ops import run_node
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    c_vec = np.arange(4, dtype=np.float32)
    node = helper.make_node("Gemm", ["A", "B", "C"], ["Y"])
    # opset 6 without broadcast=1: C must be exactly (M, N)
    with pytest.raises(ValueError):
        run_node(node, [a, b, c_vec], opset=6)
    (y,) = run_node(node, [a, b, np.ones((2, 4), np.float32)], opset=6)
    np.testing.assert_allclose(y, np.full((2, 4), 4.0))
    node_b = helper.make_node("Gemm", ["A", "B", "C"], ["Y"], broadcast=1)
    (y,) = run_node(node_b, [a, b, c_vec], opset=6)
    np.testing.assert_allclose(y, 3.0 + c_vec[None, :].repeat(2, 0))
    # opset 7+: always unidirectional broadcasting
    (y,) = run_node(node, [a, b, c_vec], opset=13)
    np.testing.assert_allclose(y, 3.0 + c_vec[None, :].repeat(2, 0))


# ----------------------------------------------------------------------------------------
# onnxruntime next to the exact oracle (never as the truth: see ort_report.py)
# ----------------------------------------------------------------------------------------

_SIGN = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "s8"}


def _int8_mix(a, b):
    return _SIGN[a.dtype] + _SIGN[b.dtype]


@pytest.mark.parametrize("seed", range(6))
def test_exact_and_onnxruntime_where_exact(isa, seed):
    """Random full-range inputs of every type mix through run_node: gemmkit must equal the
    exact oracle; onnxruntime is run on the same node and checked against the oracle too
    (gemmkit must equal it where it is exact; where it is not -- its pre-VNNI x86 kernels
    saturate int16 pair sums -- that is reported, not failed)."""
    from gemmkit.onnx_ops import run_node
    rng = np.random.default_rng(seed)
    ran = 0
    for ta in (np.uint8, np.int8):
        for tb in (np.uint8, np.int8):
            m, n, k = (int(v) for v in rng.integers(1, 40, 3))
            a = rng.integers(np.iinfo(ta).min, np.iinfo(ta).max + 1, (2, m, k)).astype(ta)
            b = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (k, n)).astype(tb)
            azp = np.array(rng.integers(0, 100), ta)
            bzp = np.array(rng.integers(0, 100), tb)
            what = f"{_int8_mix(a, b)} seed {seed} M={m} K={k} N={n}"
            node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
            got = run_node(node, [a, b, azp, bzp])[0]
            want = o.matmul_integer(a, b, azp, bzp)
            np.testing.assert_array_equal(got, want)
            ref = ort_report.ort_run("MatMulInteger", [a, b, azp, bzp], np.int32, 10)
            if ref is not None:
                ort_report.check_exact(f"MatMulInteger {what}", ref, want, got)
                ran += 1
            for ty in (np.uint8, np.int8):
                sa, sb = (np.array(rng.uniform(1e-3, 0.1), np.float32) for _ in range(2))
                sy = np.array(sa * sb * np.sqrt(k) * 70 * rng.uniform(0.5, 2), np.float32)
                yz = np.array(rng.integers(0, 100), ty)
                ins = [a, sa, azp, b, sb, bzp, sy, yz]
                node = helper.make_node("QLinearMatMul", list("abcdefgh"), ["y"])
                got = run_node(node, ins, opset=10)[0]
                o.check_qlinear(got, *ins)
                want = o.qlinear_matmul(*ins)[0]
                ref = ort_report.ort_run("QLinearMatMul", ins, ty, 10)
                if ref is not None:
                    ort_report.check_exact(
                        f"QLinearMatMul {what} -> {_SIGN[np.dtype(ty)]}", ref, want, got)
                    ran += 1
    # onnxruntime implements at least u8 x u8 and u8 x s8 of both ops, on every CPU
    assert ran >= 4


def _pair_saturating(rng, shape_a, n):
    """u8 x s8 operands whose two products in every adjacent k-pair have one sign and
    add to more than 32767 in magnitude (|a| >= 224, |b| >= 100: >= 44800), so every pair
    that a vpmaddubsw-style kernel adds in an int16 lane saturates; the pairs' signs are
    random."""
    k = shape_a[-1]
    a = rng.integers(224, 256, shape_a).astype(np.uint8)
    sign = rng.choice([-1, 1], ((k + 1) // 2, n)).repeat(2, axis=0)[:k]
    b = (sign * rng.integers(100, 129, (k, n))).clip(-128, 127).astype(np.int8)
    return a, b


def _saturation_cases():
    """name -> (a, b, a_zero_point, b_zero_point)"""
    rng = np.random.default_rng(8)
    full = np.full
    u8, s8 = np.uint8, np.int8
    return {
        # 255 * -128 * 2 = -65280 -> -32768 in a saturating int16 lane
        "u8s8_A255_B-128_K64": (full((2, 5, 64), 255, u8), full((64, 17), -128, s8),
                                None, None),
        # 255 * 127 * 2 = 64770 -> 32767; odd K (the last k has no partner)
        "u8s8_A255_B127_K33": (full((7, 33), 255, u8), full((33, 9), 127, s8), None, None),
        # M = 1: the GEMV paths
        "u8s8_A255_B-128_M1_K256": (full((1, 256), 255, u8), full((256, 40), -128, s8),
                                    None, None),
        "u8s8_pairs_saturate": _pair_saturating(rng, (3, 4, 70), 21) + (None, None),
        # the zero points do not rescue a kernel that saturates the raw products
        "u8s8_pairs_saturate_zero_points": _pair_saturating(rng, (6, 96), 13)
        + (np.uint8(3), np.int8(-2)),
        # the other type mixes at their extremes: -128 * 255 * 2 = -65280,
        # -128 * -128 * 2 = 32768 (one more than int16 holds), 255 * 255 * 2 = 130050
        "s8u8_A-128_B255_K64": (full((5, 64), -128, s8), full((64, 6), 255, u8), None, None),
        "s8s8_A-128_B-128_K64": (full((5, 64), -128, s8), full((64, 6), -128, s8),
                                 None, None),
        "u8u8_A255_B255_K64": (full((5, 64), 255, u8), full((64, 6), 255, u8), None, None),
    }


SATURATION_CASES = _saturation_cases()


@pytest.mark.parametrize("name", list(SATURATION_CASES))
def test_exact_where_onnxruntime_saturates(isa, name):
    """Inputs that break a kernel adding two 8-bit products in a saturating int16 lane
    (onnxruntime's pre-VNNI x86 path on Zen 2 / Haswell-class CPUs): gemmkit must be exact
    on every path.  Whether onnxruntime is exact on this CPU is reported, not asserted."""
    gk = pytest.importorskip("gemmkit")
    a, b, azp, bzp = SATURATION_CASES[name]
    want = o.matmul_integer(a, b, azp, bzp)
    got = gk.matmul_integer(a, b, azp, bzp)
    np.testing.assert_array_equal(got, want)
    ins = [a, b] + ([] if azp is None else [np.asarray(azp), np.asarray(bzp)])
    ref = ort_report.ort_run("MatMulInteger", ins, np.int32, 10)
    if ref is not None:
        ort_report.check_exact(f"MatMulInteger {name}", ref, want, got)

    # QLinearMatMul on the same operands, scaled so the exact result lies inside the
    # output range: a wrong accumulator shows in the output
    q_azp = np.asarray(azp if azp is not None else np.zeros((), a.dtype))
    q_bzp = np.asarray(bzp if bzp is not None else np.zeros((), b.dtype))
    amax = float(np.abs(o.int_acc(a, b, q_azp, q_bzp)[0]).max())
    sa, sb = np.float32(0.01), np.float32(0.01)
    sy = np.float32(float(sa) * float(sb) * max(amax, 1.0) / 100)  # |acc * m| <= ~100
    yz = np.uint8(128)
    q_ins = [a, np.asarray(sa), q_azp, b, np.asarray(sb), q_bzp, np.asarray(sy),
             np.asarray(yz)]
    got = gk.qlinear_matmul(*q_ins)
    o.check_qlinear(got, *q_ins)
    want = o.qlinear_matmul(*q_ins)[0]
    assert np.all((want > 0) & (want < 255)), "the case should not saturate the output"
    ref = ort_report.ort_run("QLinearMatMul", q_ins, np.uint8, 10)
    if ref is not None:
        ort_report.check_exact(f"QLinearMatMul {name}", ref, want, got)
