"""Software codecs: float8 (4 formats) decode/encode, float16/bfloat16 bulk conversions.

References: ml_dtypes (float8 decode, float32 -> float8 non-saturating cast, bfloat16), numpy
(float16), onnx's reference Cast (saturating float8), and an exact-arithmetic encoder written
here with fractions.Fraction (the float64 encoder: ml_dtypes' float64 -> float8 cast rounds
through float32 first, so it is not a correct oracle for doubles)."""
import functools
import math
import platform
from bisect import bisect_left
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmkit import _core as core

FORMATS = [
    # fmt, ml_dtypes type, max finite, magnitude code of max, onnx TensorProto type name
    (0, ml_dtypes.float8_e4m3fn, 448.0, 0x7E, "FLOAT8E4M3FN"),
    (1, ml_dtypes.float8_e4m3fnuz, 240.0, 0x7F, "FLOAT8E4M3FNUZ"),
    (2, ml_dtypes.float8_e5m2, 57344.0, 0x7B, "FLOAT8E5M2"),
    (3, ml_dtypes.float8_e5m2fnuz, 57344.0, 0x7F, "FLOAT8E5M2FNUZ"),
]
FMT_IDS = ["e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz"]
FNUZ = {1, 3}
SIZES = [0, 1, 7, 8, 9, 15, 16, 17, 1000]

# The numpy/ml_dtypes reference casts warn on NaN/inf/overflow inputs, which are deliberate here.
pytestmark = pytest.mark.filterwarnings("ignore:(overflow|invalid value) encountered:RuntimeWarning")


def f32_from_bits(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits32(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def mldt_encode(x, dt):
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(x, dtype=np.float32).astype(dt).view(np.uint8)


@functools.lru_cache(maxsize=None)
def finite_values(dt):
    """All finite non-negative values of a float8 type, ascending, as (value, code) pairs."""
    codes = np.arange(128, dtype=np.uint8)
    vals = codes.view(dt).astype(np.float64)
    keep = np.isfinite(vals)
    pairs = sorted(zip(vals[keep].tolist(), codes[keep].tolist()))
    return pairs


def boundary_values(dt, maxv):
    """Every finite code value, every midpoint between neighbours (exact ties), the float32
    neighbours of those, values around max, the smallest subnormal's half, zeros, infs, NaN,
    float32 subnormals and extremes; both signs."""
    pairs = finite_values(dt)
    vals = np.array([v for v, _ in pairs], dtype=np.float32)
    mids = ((vals[:-1].astype(np.float64) + vals[1:]) / 2).astype(np.float32)
    top = np.float64(vals[-1])
    ulp_top = top - np.float64(vals[-2])
    extra = np.array(
        [
            top + ulp_top / 2,  # halfway above max: ties to even (max or overflow)
            top + ulp_top,  # the next value of an unbounded exponent
            top * 1.5,
            top * 2,
            1e30,
            3.4028235e38,
            vals[1] / 2,  # half the smallest subnormal: ties to 0
            vals[1] / 4,
            1.5e-45,  # float32 subnormals
            1e-40,
            1.1754942e-38,
            1.1754944e-38,
            0.0,
        ],
        dtype=np.float32,
    )
    base = np.concatenate([vals, mids, extra])
    ups = np.nextafter(base, np.float32(np.inf))
    downs = np.nextafter(base, np.float32(0))
    pos = np.concatenate([base, ups, downs, np.float32([np.inf])])
    neg = -pos
    nans = f32_from_bits([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF])
    return np.concatenate([pos, neg, nans])


def random_f32(rng, n):
    """Uniform bit patterns (every exponent, NaN and inf included) plus values concentrated
    on the float8 range (log-uniform magnitudes 2^-20 .. 2^17)."""
    a = f32_from_bits(rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32))
    mag = np.exp2(rng.uniform(-20, 17, size=n)).astype(np.float32)
    b = np.where(rng.random(n) < 0.5, -mag, mag).astype(np.float32)
    return np.concatenate([a, b])


# ---------------------------------------------------------------------------------------
# float8 decode


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
def test_fp8_decode_all_codes(fmt, dt, maxv, maxc, onnx_name):
    codes = np.arange(256, dtype=np.uint8)
    ref = codes.view(dt).astype(np.float32)
    got = core._fp8_decode(codes, fmt)
    assert got.dtype == np.float32 and got.shape == (256,)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    # bit equality: -0.0 is distinguished from +0.0
    np.testing.assert_array_equal(bits32(got[ok]), bits32(ref[ok]))
    # NaN codes decode to a NaN carrying the code's sign (documented in gk_codecs.h)
    np.testing.assert_array_equal(np.signbit(got[~ok]), codes[~ok] >= 0x80)
    assert got[maxc] == maxv and got[0x80 | maxc] == -maxv
    assert core._fp8_max_finite(fmt) == maxv


def test_fp8_decode_known_values():
    # independent of ml_dtypes: a few hand-computed values
    c = np.array([0x01, 0x08, 0x38, 0x7E, 0x7F, 0xFF, 0xFE], dtype=np.uint8)
    got = core._fp8_decode(c, 0)
    assert got[:4].tolist() == [2.0**-9, 2.0**-6, 1.0, 448.0] and np.isnan(got[4])
    assert math.isnan(got[5]) and got[6] == -448.0
    got = core._fp8_decode(np.array([0x01, 0x7B, 0x7C, 0xFC, 0x7D, 0x80], np.uint8), 2)
    assert got[:4].tolist() == [2.0**-16, 57344.0, np.inf, -np.inf] and np.isnan(got[4])
    assert got[5] == 0 and np.signbit(got[5])
    got = core._fp8_decode(np.array([0x00, 0x01, 0x7F, 0x80, 0xFF], np.uint8), 3)
    assert got[[0, 1, 2, 4]].tolist() == [0.0, 2.0**-17, 57344.0, -57344.0] and np.isnan(got[3])
    got = core._fp8_decode(np.array([0x01, 0x40, 0x7F, 0x80], np.uint8), 1)
    assert got[:3].tolist() == [2.0**-10, 1.0, 240.0] and np.isnan(got[3])


def test_fp8_decode_shape_strides_and_errors():
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    got = core._fp8_decode(codes[:, ::3], 2)
    assert got.shape == (16, 6)
    np.testing.assert_array_equal(
        bits32(got), bits32(codes[:, ::3].view(ml_dtypes.float8_e5m2).astype(np.float32))
    )
    # float8-typed arrays are accepted as their codes
    v = codes.view(ml_dtypes.float8_e4m3fn)
    assert core._fp8_decode(v, 0).shape == (16, 16)
    assert core._fp8_decode(np.uint8(0x38), 0).shape == ()
    with pytest.raises(ValueError):
        core._fp8_decode(codes, 4)
    with pytest.raises(ValueError):
        core._fp8_decode(codes, -1)
    with pytest.raises(TypeError):
        core._fp8_decode(codes.astype(np.uint16), 0)


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
@pytest.mark.parametrize("saturate", [0, 1])
def test_fp8_roundtrip_every_code(fmt, dt, maxv, maxc, onnx_name, saturate):
    codes = np.arange(256, dtype=np.uint8)
    vals = core._fp8_decode(codes, fmt)
    finite = np.isfinite(vals)
    for src in (vals, vals.astype(np.float64)):
        back = core._fp8_encode(src, fmt, saturate)
        np.testing.assert_array_equal(back[finite], codes[finite])


# ---------------------------------------------------------------------------------------
# float8 encode, saturate=0 (== ml_dtypes' cast, bit for bit, NaN codes included)


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
def test_fp8_encode_nonsat_boundaries(fmt, dt, maxv, maxc, onnx_name):
    x = boundary_values(dt, maxv)
    got = core._fp8_encode(x, fmt, False)
    np.testing.assert_array_equal(got, mldt_encode(x, dt))
    # the same through float64 input (exact widening, so same results)
    np.testing.assert_array_equal(core._fp8_encode(x.astype(np.float64), fmt, False), got)


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
def test_fp8_encode_nonsat_random(fmt, dt, maxv, maxc, onnx_name):
    rng = np.random.default_rng(1000 + fmt)
    x = random_f32(rng, 100_000)
    got = core._fp8_encode(x, fmt, False)
    np.testing.assert_array_equal(got, mldt_encode(x, dt))
    # the float64 encoder (a separate implementation) agrees on exactly widened float32
    np.testing.assert_array_equal(core._fp8_encode(x.astype(np.float64), fmt, False), got)


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
def test_fp8_encode_ties_to_even(fmt, dt, maxv, maxc, onnx_name):
    """Each exact midpoint goes to the neighbour with an even code; a hair off it goes to the
    nearer one.  Written without ml_dtypes."""
    pairs = finite_values(dt)
    for (lo, clo), (hi, chi) in zip(pairs[:-1], pairs[1:]):
        mid = np.float32((lo + hi) / 2)
        assert float(mid) == (lo + hi) / 2
        even = clo if clo % 2 == 0 else chi
        x = np.array([mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(1e9))],
                     dtype=np.float32)
        for sign in (0, 0x80):
            xs = -x if sign else x
            want = [even, clo, chi]
            if sign:  # fnuz: a zero result carries no sign (0x80 is NaN)
                want = [0 if (fmt in FNUZ and w == 0) else (w | 0x80) for w in want]
            got = core._fp8_encode(xs, fmt, False)
            assert got.tolist() == want, (fmt, lo, hi, sign)


@pytest.mark.parametrize(
    "fmt,x,nonsat,sat",
    [
        # E4M3FN: 464 ties to 448 (mantissa 110 is even); above it rounds to 480 -> overflow
        (0, 464.0, 0x7E, 0x7E),
        (0, 465.0, 0x7F, 0x7E),
        (0, -465.0, 0xFF, 0xFE),
        (0, 480.0, 0x7F, 0x7E),
        (0, np.inf, 0x7F, 0x7E),
        (0, -np.inf, 0xFF, 0xFE),
        (0, 2.0**-10, 0x00, 0x00),  # half the smallest subnormal ties to 0
        (0, -(2.0**-10), 0x80, 0x80),
        (0, 1.5 * 2.0**-10, 0x01, 0x01),
        (0, -0.0, 0x80, 0x80),
        # E4M3FNUZ: 248 ties between 240 (odd mantissa) and 256 -> 256 overflows
        (1, 240.0, 0x7F, 0x7F),
        (1, 247.9, 0x7F, 0x7F),
        (1, 248.0, 0x80, 0x7F),
        (1, -248.0, 0x80, 0xFF),
        (1, np.inf, 0x80, 0x7F),
        (1, -np.inf, 0x80, 0xFF),
        (1, -0.0, 0x00, 0x00),
        (1, -(2.0**-11), 0x00, 0x00),  # rounds to zero: no -0 in fnuz
        (1, -(2.0**-10), 0x81, 0x81),
        (1, np.nan, 0x80, 0x80),
        # E5M2: 61440 ties between 57344 (odd) and 65536 -> inf
        (2, 61439.0, 0x7B, 0x7B),
        (2, 61440.0, 0x7C, 0x7B),
        (2, -61440.0, 0xFC, 0xFB),
        (2, np.inf, 0x7C, 0x7B),
        (2, -np.inf, 0xFC, 0xFB),
        (2, np.nan, 0x7E, 0x7E),
        (2, -np.nan, 0xFE, 0xFE),
        (2, 2.0**-17, 0x00, 0x00),
        (2, -0.0, 0x80, 0x80),
        # E5M2FNUZ
        (3, 61440.0, 0x80, 0x7F),
        (3, -1e38, 0x80, 0xFF),
        (3, -np.inf, 0x80, 0xFF),
        (3, -0.0, 0x00, 0x00),
        (3, 2.0**-18, 0x00, 0x00),
        (3, np.nan, 0x80, 0x80),
    ],
)
def test_fp8_encode_known_cases(fmt, x, nonsat, sat):
    for sat_flag, want in ((False, nonsat), (True, sat)):
        for dtype in (np.float32, np.float64):
            got = core._fp8_encode(np.array([x], dtype=dtype), fmt, sat_flag)[0]
            assert got == want, (fmt, x, sat_flag, dtype, hex(got), hex(want))
        assert core._fp8_encode_scalar(x, fmt, sat_flag, True) == want
        assert core._fp8_encode_scalar(x, fmt, sat_flag, False) == want


# ---------------------------------------------------------------------------------------
# float8 encode, saturate=1


def expected_saturating(x, dt, maxc):
    """ml_dtypes' cast with its non-saturating overflow replaced by +-max finite: where a
    non-NaN input gives a non-finite code, the result is sign | max code."""
    x = np.asarray(x, dtype=np.float32)
    m = mldt_encode(x, dt)
    overflowed = ~np.isnan(x) & ~np.isfinite(m.view(dt).astype(np.float32))
    satcode = np.where(np.signbit(x), 0x80 | maxc, maxc).astype(np.uint8)
    return np.where(overflowed, satcode, m)


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
def test_fp8_encode_sat_vs_mldtypes(fmt, dt, maxv, maxc, onnx_name):
    rng = np.random.default_rng(2000 + fmt)
    x = np.concatenate([boundary_values(dt, maxv), random_f32(rng, 50_000)])
    want = expected_saturating(x, dt, maxc)
    got = core._fp8_encode(x, fmt, True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(core._fp8_encode(x.astype(np.float64), fmt, True), want)
    # the expectation really exercises the overflow replacement
    assert (got == maxc).sum() > 10 and (got == (0x80 | maxc)).sum() > 10
    dec = core._fp8_decode(got, fmt)
    assert not np.isinf(dec).any()
    np.testing.assert_array_equal(np.isnan(dec), np.isnan(x))


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
def test_fp8_encode_sat_vs_onnx_reference(fmt, dt, maxv, maxc, onnx_name):
    onnx = pytest.importorskip("onnx")
    from onnx.reference.ops.op_cast import cast_to

    to = getattr(onnx.TensorProto, onnx_name)
    rng = np.random.default_rng(3000 + fmt)
    x = np.concatenate([boundary_values(dt, maxv), random_f32(rng, 20_000)])
    with np.errstate(invalid="ignore", over="ignore"):
        ref = np.asarray(cast_to(x, to, saturate=True)).view(np.uint8)
    np.testing.assert_array_equal(core._fp8_encode(x, fmt, True), ref)


def test_fp8_encode_sat_vs_onnx_reference_evaluator():
    """The onnx Cast node itself (saturate=1 default) through the ReferenceEvaluator."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(7)
    x = np.concatenate([random_f32(rng, 2000), np.float32([1e6, -1e6, np.inf, -np.inf, 464])])
    for fmt, dt, maxv, maxc, onnx_name in FORMATS:
        to = getattr(onnx.TensorProto, onnx_name)
        node = helper.make_node("Cast", ["x"], ["y"], to=to, saturate=1)
        graph = helper.make_graph(
            [node], "g",
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [x.size])],
            [helper.make_tensor_value_info("y", to, [x.size])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        with np.errstate(invalid="ignore", over="ignore"):
            (y,) = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_array_equal(core._fp8_encode(x, fmt, True), np.asarray(y).view(np.uint8))


# ---------------------------------------------------------------------------------------
# float64 encoder: rounds from the exact double


@functools.lru_cache(maxsize=None)
def exact_table(dt):
    pairs = finite_values(dt)
    return [Fraction(v) for v, _ in pairs], [c for _, c in pairs]


def ref_encode_exact(x, fmt, saturate):
    """Exact-arithmetic reference encoder (Fraction), independent of the C code's method."""
    dt, maxc = FORMATS[fmt][1], FORMATS[fmt][3]
    fnuz = fmt in FNUZ
    nan = 0x80 if fnuz else (0x7F if fmt == 0 else 0x7E)
    neg = math.copysign(1.0, x) < 0
    sgn = 0x80 if neg and not fnuz else 0
    if math.isnan(x):
        return nan | sgn
    vals, codes = exact_table(dt)
    if math.isinf(x):
        a = None
    else:
        a = abs(Fraction(x))
        top, ulp = vals[-1], vals[-1] - vals[-2]
        limit = top + ulp / 2
        overflow = a > limit or (a == limit and codes[-1] % 2 == 1)
    if a is None or overflow:
        if saturate:
            return (0x80 if neg else 0) | maxc
        return sgn | (0x7C if fmt == 2 else nan)
    i = bisect_left(vals, a)
    if i < len(vals) and vals[i] == a:
        code = codes[i]
    else:
        lo, hi = i - 1, min(i, len(vals) - 1)
        dlo, dhi = a - vals[lo], vals[hi] - a
        if a > vals[-1]:  # between max and the overflow limit
            code = codes[-1]
        elif dlo < dhi or (dlo == dhi and codes[lo] % 2 == 0):
            code = codes[lo]
        else:
            code = codes[hi]
    if code == 0:
        return sgn if not fnuz else 0
    return (0x80 if neg else 0) | code


def test_ref_encode_exact_agrees_with_mldtypes_on_float32():
    """Validates the Fraction reference itself where ml_dtypes is a correct oracle."""
    rng = np.random.default_rng(11)
    for fmt, dt, maxv, maxc, _ in FORMATS:
        x = np.concatenate([boundary_values(dt, maxv), random_f32(rng, 300)])
        want = mldt_encode(x, dt)
        got = np.array([ref_encode_exact(float(v), fmt, False) for v in x], dtype=np.uint8)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt,dt,maxv,maxc,onnx_name", FORMATS, ids=FMT_IDS)
@pytest.mark.parametrize("saturate", [0, 1])
def test_fp8_encode_f64_not_via_f32(fmt, dt, maxv, maxc, onnx_name, saturate):
    """Doubles within a float32 half-ulp of a tie (or of the overflow/underflow limits):
    rounding through float32 first lands exactly on the tie and picks the even side, which
    is wrong for about half of these."""
    pairs = finite_values(dt)
    vals = [v for v, _ in pairs]
    ties = [(a + b) / 2 for a, b in zip(vals[:-1], vals[1:])]
    ties.append(vals[-1] + (vals[-1] - vals[-2]) / 2)  # the overflow limit
    xs = []
    for t in ties:
        for eps in (2.0**-40, 2.0**-30, -(2.0**-40)):
            xs += [t * (1 + eps), -t * (1 + eps)]
    x = np.array(xs, dtype=np.float64)
    assert (x.astype(np.float32).astype(np.float64) != x).all()
    want = np.array([ref_encode_exact(v, fmt, saturate) for v in xs], dtype=np.uint8)
    got = core._fp8_encode(x, fmt, saturate)
    np.testing.assert_array_equal(got, want)
    # these inputs really separate the two methods
    via_f32 = core._fp8_encode(x.astype(np.float32), fmt, saturate)
    assert (via_f32 != want).sum() >= len(ties) // 2
    for v, w in zip(xs[:40], want[:40]):
        assert core._fp8_encode_scalar(v, fmt, saturate, True) == w


@settings(max_examples=300, deadline=None)
@given(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0, 1, 2, 3]),
    st.booleans(),
)
def test_fp8_encode_f64_hypothesis(x, fmt, saturate):
    got = core._fp8_encode(np.array([x], dtype=np.float64), fmt, saturate)[0]
    assert got == ref_encode_exact(x, fmt, saturate)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=-70000, max_value=70000, width=64),
    st.sampled_from([0, 1, 2, 3]),
    st.booleans(),
)
def test_fp8_encode_f64_hypothesis_in_range(x, fmt, saturate):
    got = core._fp8_encode(np.array([x], dtype=np.float64), fmt, saturate)[0]
    assert got == ref_encode_exact(x, fmt, saturate)


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32), st.sampled_from([0, 1, 2, 3]))
def test_fp8_encode_f32_hypothesis(x, fmt):
    dt, maxc = FORMATS[fmt][1], FORMATS[fmt][3]
    a = np.array([x], dtype=np.float32)
    assert core._fp8_encode(a, fmt, False)[0] == mldt_encode(a, dt)[0]
    assert core._fp8_encode(a, fmt, True)[0] == expected_saturating(a, dt, maxc)[0]


def test_fp8_encode_shapes_and_errors():
    x = np.linspace(-500, 500, 60, dtype=np.float32).reshape(3, 4, 5)
    got = core._fp8_encode(x[:, ::2, :], 0, True)
    assert got.shape == (3, 2, 5) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, core._fp8_encode(np.ascontiguousarray(x[:, ::2, :]), 0, True))
    assert core._fp8_encode(np.float32(1.0), 0, False).shape == ()
    # float16 / bfloat16 inputs are widened exactly
    h = x.astype(np.float16)
    np.testing.assert_array_equal(core._fp8_encode(h, 2, False), mldt_encode(h.astype(np.float32), ml_dtypes.float8_e5m2))
    for n in SIZES:
        v = np.linspace(-300, 300, n, dtype=np.float32)
        np.testing.assert_array_equal(core._fp8_encode(v, 0, False), mldt_encode(v, ml_dtypes.float8_e4m3fn))
    with pytest.raises(ValueError):
        core._fp8_encode(x, 7, True)


# ---------------------------------------------------------------------------------------
# float16 / bfloat16


def simd_modes():
    return [True, False]


def test_simd_path_active_where_cpu_has_it():
    """Where the F16C/AVX2 code is built in, the CPU has AVX2 and F16C and the selected
    level (GEMMKIT_ISA) is avx2 or above, the bulk conversions must take a SIMD family (the
    AVX-512 one at avx512 and above); elsewhere they must not.  On ARM64 (AdvSIMD is
    baseline) the NEON family runs at every level from neon up."""
    import gemmkit
    if not core._codecs_simd_compiled():
        assert core._codecs_simd_active() is False
        if platform.machine().lower() in ("x86_64", "amd64"):
            pytest.skip("x86 build without the avx2 group: only the scalar path is tested")
        return
    levels = core._levels()
    if "neon" in levels:
        info = gemmkit.cpu_info()
        want = levels.index(info["isa"]) >= levels.index("neon")
        assert core._codecs_simd_active() is want
        assert info["engines"]["codecs"] == ("neon" if want else "scalar")
        return
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        pytest.skip("no /proc/cpuinfo to compare the detection with")
    levels = core._levels()
    info = gemmkit.cpu_info()
    allowed = levels.index(info["isa"]) >= levels.index("avx2")
    want = "avx2" in flags and "f16c" in flags and allowed
    assert core._codecs_simd_active() is want
    # the AVX-512 family (the avx512 group) from that level up
    zmm = "avx512" in levels and levels.index(info["isa"]) >= levels.index("avx512") \
        and "avx512" in info["compiled"]
    expect = "avx512" if (want and zmm) else ("avx2" if want else "scalar")
    assert info["engines"]["codecs"] == expect


def test_isa_level_caps_the_codecs_engine():
    """GEMMKIT_ISA=scalar takes the codecs to their scalar family (bit-identical)."""
    import gemmkit
    default = gemmkit.cpu_info()["isa"]
    codes = np.arange(65536, dtype=np.uint16)
    fast = core._f16_to_f32(codes)
    try:
        core._set_isa("scalar")
        assert core._codecs_simd_active() is False
        assert gemmkit.cpu_info()["engines"]["codecs"] == "scalar"
        np.testing.assert_array_equal(core._f16_to_f32(codes).view(np.uint32),
                                      fast.view(np.uint32))
    finally:
        core._set_isa(default)


def assert_f32_same(got, ref):
    got, ref = np.asarray(got, np.float32), np.asarray(ref, np.float32)
    assert got.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(bits32(got[ok]), bits32(ref[ok]))


def assert_codes16_same(got, ref, dt):
    got, ref = np.asarray(got, np.uint16), np.asarray(ref, np.uint16)
    assert got.shape == ref.shape
    gn = np.isnan(got.view(dt).astype(np.float32))
    rn = np.isnan(ref.view(dt).astype(np.float32))
    np.testing.assert_array_equal(gn, rn)
    np.testing.assert_array_equal(got[~rn], ref[~rn])
    # NaN keeps its sign
    np.testing.assert_array_equal(got[rn] >> 15, ref[rn] >> 15)


def f32_patterns():
    """Every combination of the top 20 bits with low-12-bit patterns around float16's
    rounding points (and every top-16 with low-16 patterns around bfloat16's)."""
    top = np.arange(2**20, dtype=np.uint32) << 12
    low = np.array([0, 1, 0x7FF, 0x800, 0x801, 0xFFF], dtype=np.uint32)
    a = (top[:, None] | low[None, :]).ravel()
    top16 = np.arange(2**16, dtype=np.uint32) << 16
    low16 = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    b = (top16[:, None] | low16[None, :]).ravel()
    return f32_from_bits(np.concatenate([a, b]))


@pytest.fixture(scope="module")
def patterns():
    return f32_patterns()


def test_f16_to_f32_all_codes():
    codes = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    ref = codes.view(np.float16).astype(np.float32)
    simd = core._f16_to_f32(codes)
    scal = core._f16_to_f32(codes, simd=False)
    assert_f32_same(simd, ref)
    np.testing.assert_array_equal(bits32(simd), bits32(scal))  # NaN bits too
    nan = np.isnan(ref)
    # NaN: sign and payload kept, quiet bit set (documented)
    want = (codes[nan].astype(np.uint32) & 0x8000) << 16 | 0x7F800000 | 0x400000 | (
        (codes[nan].astype(np.uint32) & 0x3FF) << 13)
    np.testing.assert_array_equal(bits32(scal[nan]), want)
    # float16-typed input works the same
    np.testing.assert_array_equal(bits32(core._f16_to_f32(codes.view(np.float16))), bits32(simd))


def test_bf16_to_f32_all_codes():
    codes = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    ref = codes.view(ml_dtypes.bfloat16).astype(np.float32)
    simd = core._bf16_to_f32(codes)
    scal = core._bf16_to_f32(codes, simd=False)
    assert_f32_same(simd, ref)
    # exact widening: every code, NaNs included, is the top half of the float
    want = codes.astype(np.uint32) << 16
    np.testing.assert_array_equal(bits32(simd), want)
    np.testing.assert_array_equal(bits32(scal), want)


def test_f32_to_f16_patterns(patterns):
    with np.errstate(over="ignore", invalid="ignore"):
        ref = patterns.astype(np.float16).view(np.uint16)
    simd = core._f32_to_f16(patterns)
    scal = core._f32_to_f16(patterns, simd=False)
    assert_codes16_same(simd, ref, np.float16)
    np.testing.assert_array_equal(simd, scal)  # NaN bits too
    # documented NaN: sign, quiet bit, top 9 payload bits
    u = bits32(patterns)
    nan = np.isnan(patterns)
    want = ((u[nan] >> 16) & 0x8000) | 0x7E00 | ((u[nan] >> 13) & 0x3FF)
    np.testing.assert_array_equal(scal[nan], want.astype(np.uint16))


def test_f32_to_bf16_patterns(patterns):
    ref = patterns.astype(ml_dtypes.bfloat16).view(np.uint16)
    simd = core._f32_to_bf16(patterns)
    scal = core._f32_to_bf16(patterns, simd=False)
    assert_codes16_same(simd, ref, ml_dtypes.bfloat16)
    np.testing.assert_array_equal(simd, scal)
    u = bits32(patterns)
    nan = np.isnan(patterns)
    np.testing.assert_array_equal(scal[nan], ((u[nan] >> 16) | 0x40).astype(np.uint16))


def special_f32(rng, n):
    """Random mix: ordinary values, float16 subnormals, float16 overflow, float32 subnormals,
    +-0, +-inf, NaNs with various payloads."""
    pool = np.concatenate([
        rng.standard_normal(64).astype(np.float32) * np.float32(1000),
        np.float32([0.0, -0.0, np.inf, -np.inf, 65504, 65519.99, 65520, -65520, 1e5, 3.4e38]),
        np.float32([6e-8, 5.96e-8, 2.98e-8, 2.9802322e-08, 3e-8, 1e-5, -6.1e-5, 1e-40, -1e-45]),
        f32_from_bits([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F801000, 0xFFFFFFFF, 0x7F7FFFFF,
                       0x3F808000, 0x3F818000, 0x3F800FFF, 0x3F801000]),
    ])
    return pool[rng.integers(0, pool.size, size=n)]


@pytest.mark.parametrize("n", SIZES)
def test_bulk_sizes(n):
    rng = np.random.default_rng(n)
    x = special_f32(rng, n)
    with np.errstate(over="ignore", invalid="ignore"):
        ref16 = x.astype(np.float16).view(np.uint16)
    refb = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    for simd in simd_modes():
        h = core._f32_to_f16(x, simd=simd)
        b = core._f32_to_bf16(x, simd=simd)
        assert h.shape == (n,) and h.dtype == np.uint16
        assert_codes16_same(h, ref16, np.float16)
        assert_codes16_same(b, refb, ml_dtypes.bfloat16)
        assert_f32_same(core._f16_to_f32(ref16, simd=simd), ref16.view(np.float16).astype(np.float32))
        assert_f32_same(core._bf16_to_f32(refb, simd=simd),
                        refb.view(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(core._f32_to_f16(x), core._f32_to_f16(x, simd=False))
    np.testing.assert_array_equal(core._f32_to_bf16(x), core._f32_to_bf16(x, simd=False))


def test_bulk_unaligned_and_strided():
    """Offsets that misalign the SIMD loads, non-contiguous and N-D inputs."""
    rng = np.random.default_rng(5)
    big = special_f32(rng, 1001)
    for off in range(1, 4):
        x = big[off:off + 37]
        with np.errstate(over="ignore", invalid="ignore"):
            ref = x.astype(np.float16).view(np.uint16)
        assert_codes16_same(core._f32_to_f16(x), ref, np.float16)
        assert_f32_same(core._f16_to_f32(ref[off:]), ref[off:].view(np.float16).astype(np.float32))
    x2 = big[:1000].reshape(20, 50)[:, ::3]
    got = core._f32_to_bf16(x2)
    assert got.shape == x2.shape
    assert_codes16_same(got, x2.astype(ml_dtypes.bfloat16).view(np.uint16), ml_dtypes.bfloat16)
    back = core._bf16_to_f32(got.view(ml_dtypes.bfloat16)[::2])
    assert back.shape == (10, 17)
    with pytest.raises(TypeError):
        core._f16_to_f32(np.zeros(3, np.float32))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32), min_size=0, max_size=40))
def test_f16_bf16_hypothesis(xs):
    x = np.array(xs, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        ref16 = x.astype(np.float16).view(np.uint16)
    refb = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    for simd in simd_modes():
        assert_codes16_same(core._f32_to_f16(x, simd=simd), ref16, np.float16)
        assert_codes16_same(core._f32_to_bf16(x, simd=simd), refb, ml_dtypes.bfloat16)
