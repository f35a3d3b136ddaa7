"""gemmkit.cast: bit-exact against the spec oracle (tests/cast_oracle.py) on every forced
codecs path (the `isa` fixture), over all 2**16 float16/bfloat16 codes, all 2**8 codes of each
float8 format, and float32/float64 sweeps with every tie, denormal, +-0, inf, NaN payloads
and the values around each format's largest finite value; then strides, out= and errors."""
import functools

import ml_dtypes
import numpy as np
import pytest

import cast_oracle as oracle
import gemmkit as gk
from fenv_modes import directed_modes, rounding

F8 = [np.dtype(t) for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
                            ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz)]
BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
ALL = [F32, F64, F16, BF16] + F8
# (destination, saturate): saturate only matters for float8
TARGETS = [(d, True) for d in [F32, F64, F16, BF16]] + [(d, s) for d in F8 for s in (True, False)]
TARGET_IDS = [f"{d}-{'sat' if s else 'nosat'}" for d, s in TARGETS]

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def f32_bits(u):
    return np.asarray(u, dtype=np.uint32).view(np.float32)


def f64_bits(u):
    return np.asarray(u, dtype=np.uint64).view(np.float64)


def grid(dt):
    """Every finite non-negative value of a 16/8-bit type, ascending, as float64."""
    v, nan, _, _ = oracle.decode(np.arange(2 ** (8 * dt.itemsize - 1)), oracle.FORMATS[dt])
    return np.unique(v[~nan & np.isfinite(v)])


def around(v, dtype):
    """v (float64 values), their neighbours in `dtype`, both signs."""
    v = np.asarray(v, dtype=np.float64).astype(dtype)
    up = np.nextafter(v, dtype.type(np.inf))
    down = np.nextafter(v, dtype.type(0))
    out = np.concatenate([v, up, down])
    return np.concatenate([out, -out])


@functools.lru_cache(maxsize=None)
def f32_sweep():
    parts = []
    for dt in F8 + [F16, BF16]:
        g = grid(dt)
        mids = (g[:-1] + g[1:]) / 2  # every tie (exact in float32)
        top, ulp = g[-1], g[-1] - g[-2]
        extra = [top + ulp / 2, top + ulp, top * 2, g[1] / 2, g[1] / 4, g[1] * 0.75]
        parts.append(around(np.concatenate([g, mids, extra]), F32))
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000,            # +-0, +-inf
                        0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001,    # NaNs: quiet, signaling
                        0x7FFFFFFF, 0xFFFFFFFF, 0x7FA00000, 0x7F802000,    # payloads
                        0x7FC00001, 0x7F800100, 0x7FBFFFFF,
                        1, 2, 3, 0x7FFFFF, 0x400000, 0x800000, 0x80000001,  # denormals, min normal
                        0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF], dtype=np.uint32)
    parts.append(f32_bits(special))
    rng = np.random.default_rng(1234)
    parts.append(f32_bits(rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)))
    # float16/bfloat16 rounding points on every exponent float16 reaches
    e = np.arange(96, 146, dtype=np.uint32)
    top = (e[:, None] << 23) | (np.arange(0, 1 << 10, 7, dtype=np.uint32)[None, :] << 13)
    low = np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x7FFF, 0x8000, 0x8001], np.uint32)
    pts = (top.ravel()[:, None] | low[None, :]).ravel()
    parts.append(f32_bits(np.concatenate([pts, pts | 0x80000000])))
    return np.concatenate([np.asarray(p, dtype=np.float32) for p in parts])


@functools.lru_cache(maxsize=None)
def f64_sweep():
    """Ties of every destination in float64 and their float64 neighbours (a value just off
    a tie rounds through float32 onto the tie: the double-rounding cases), specials,
    denormals, random bit patterns."""
    parts = []
    for dt in F8 + [F16, BF16]:
        g = grid(dt)
        mids = (g[:-1] + g[1:]) / 2
        top, ulp = g[-1], g[-1] - g[-2]
        extra = [top + ulp / 2, top + ulp, g[1] / 2]
        base = np.concatenate([g, mids, extra])
        tiny = base * 2.0**-40
        parts.append(around(np.concatenate([base, base + tiny, base - tiny]), F64))
    # float32's own ties
    rng = np.random.default_rng(99)
    f = np.abs(f32_bits(rng.integers(0, 0x7F800000, size=50_000, dtype=np.uint64).astype(np.uint32)))
    f = f.astype(np.float64)
    nxt = np.nextafter(f.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    mid = (f + nxt) / 2
    parts.append(around(np.concatenate([mid, mid * (1 + 2.0**-45)]), F64))
    special = np.array([0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000,
                        0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                        0x7FFFFFFFFFFFFFFF, 0x7FF4000000000000, 0x7FF8000020000000,
                        1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF,
                        0x47EFFFFFF0000000, 0x47EFFFFFE0000000, 0x36A0000000000000,
                        0x3690000000000000, 0x36A0000000000001], dtype=np.uint64)
    parts.append(f64_bits(special))
    parts.append(f64_bits(rng.integers(0, 2**63, size=100_000, dtype=np.uint64) * 2
                          + rng.integers(0, 2, size=100_000, dtype=np.uint64)))
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


@functools.lru_cache(maxsize=None)
def source(name):
    if name == "float16-all":
        return np.arange(2**16, dtype=np.uint16).view(np.float16)
    if name == "bfloat16-all":
        return np.arange(2**16, dtype=np.uint16).view(BF16)
    if name.endswith("-all"):
        return np.arange(256, dtype=np.uint8).view(np.dtype(name[:-4]))
    if name == "float32-sweep":
        return f32_sweep()
    return f64_sweep()


SOURCES = ["float16-all", "bfloat16-all"] + [f"{d}-all" for d in F8] + ["float32-sweep",
                                                                         "float64-sweep"]


@functools.lru_cache(maxsize=None)
def expected(src, dst, saturate):
    return oracle.cast(source(src), dst, saturate)


def assert_bits(got, want, x):
    got = np.ascontiguousarray(got).view(want.dtype)
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = bad[:8]
        xb = oracle.bits_of(x.ravel()[i])
        raise AssertionError(
            f"{bad.size} of {want.size} differ; inputs {[hex(int(b)) for b in xb]}: "
            f"got {[hex(int(b)) for b in got.ravel()[i]]}, want {[hex(int(b)) for b in want.ravel()[i]]}")


@pytest.mark.parametrize("dst,saturate", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("src", SOURCES)
def test_cast_exact(isa, src, dst, saturate):
    x = source(src)
    assert_bits(gk.cast(x, dst, saturate=saturate), expected(src, dst, saturate), x)


@pytest.mark.parametrize("pair", [(F32, F8[0]), (F32, F8[3]), (F8[0], F32), (F8[2], F32),
                                  (F32, BF16), (BF16, F32), (F32, F16), (F16, F32),
                                  (F16, F8[1]), (F64, F8[0]), (F32, F64), (F64, F32),
                                  (F64, BF16)],
                         ids=lambda p: f"{p[0]}->{p[1]}")
def test_cast_lengths_and_offsets(isa, pair):
    """Every length 0..70 at 4 start offsets: the vector bodies, their tails, masks."""
    src_t, dst_t = pair
    base = source("float32-sweep")[:4096].astype(np.float64)
    if src_t.itemsize == 1:
        x_all = np.arange(256, dtype=np.uint8).view(src_t)
        x_all = np.concatenate([x_all, x_all[::-1]])
    else:
        x_all = oracle_cast_values(base, src_t)
    for off in range(4):
        for n in range(71):
            x = x_all[off:off + n]
            want = oracle.cast(x, dst_t, True)
            assert_bits(gk.cast(x, dst_t), want, x)
            out = np.empty(n, dst_t)
            assert gk.cast(x, out=out) is out
            assert_bits(out, want, x)


@pytest.mark.parametrize("pair", [(F32, BF16), (BF16, F32), (F16, F32), (F64, F32),
                                  (F32, F64), (F64, F16), (F32, F8[0]), (F8[1], F64)],
                         ids=lambda p: f"{p[0]}->{p[1]}")
def test_cast_misaligned_arrays(isa, pair):
    """Arrays at an odd byte offset (np.frombuffer of a byte buffer, NumPy's aligned flag
    False), as source, as out=, and both, of lengths around the vector widths."""
    src_t, dst_t = pair
    base = source("float32-sweep")[:200].astype(np.float64)
    x_all = (np.arange(200, dtype=np.uint8).view(src_t) if src_t.itemsize == 1
             else oracle_cast_values(base, src_t))
    for n in (1, 3, 7, 17, 33, 65, 200):
        want = oracle.cast(x_all[:n], dst_t, True)
        sbuf = np.zeros(n * src_t.itemsize + 1, np.uint8)
        x = sbuf[1:].view(src_t)
        x[...] = x_all[:n]
        assert src_t.itemsize == 1 or not x.flags.aligned
        assert_bits(gk.cast(x, dst_t), want, x)
        dbuf = np.zeros(n * dst_t.itemsize + 1, np.uint8)
        out = dbuf[1:].view(dst_t)
        for src in (x, x_all[:n]):
            out[...] = np.zeros(1, dst_t)
            assert gk.cast(src, out=out) is out
            assert_bits(out, want, src)


def oracle_cast_values(v64, dt):
    """float64 values -> dt through the oracle (so no library rounding is involved)."""
    v64 = np.asarray(v64, np.float64)
    if dt == F64:
        return v64.copy()
    codes = oracle.cast(v64, dt, True)
    return codes.view(dt)


# ---------------------------------------------------------------------------------------
# strides, out=, shapes


def layouts(x):
    """Views of x with other strides: reversed, stepped, transposed, broadcast."""
    yield x
    yield x[::-1]
    yield x[..., ::2]
    yield x[:, ::-3]
    yield x.T
    yield np.asfortranarray(x)
    yield x[1:, 2:-1]


@pytest.mark.parametrize("dst", [F8[0], F8[2], F16, BF16, F32, F64], ids=str)
@pytest.mark.parametrize("src", [F32, F64, F16, BF16, F8[1]], ids=str)
def test_cast_strides(isa, src, dst):
    rng = np.random.default_rng(5)
    v = rng.standard_normal((13, 37)) * 300
    v.ravel()[::17] = np.nan
    v.ravel()[::23] = np.inf
    x = oracle_cast_values(v, src) if src.itemsize > 1 else \
        rng.integers(0, 256, size=(13, 37), dtype=np.uint8).view(src)
    for view in layouts(x):
        want = np.ascontiguousarray(oracle.cast(np.ascontiguousarray(view), dst, True))
        got = gk.cast(view, dst)
        assert got.shape == view.shape
        np.testing.assert_array_equal(np.ascontiguousarray(got).view(want.dtype), want)
        # out= with strides of its own
        big = np.zeros(view.shape[:-1] + (view.shape[-1] * 3,), dst)
        out = big[..., ::-3]
        assert gk.cast(view, dst, out=out) is out
        np.testing.assert_array_equal(np.ascontiguousarray(out).view(want.dtype), want)
        assert not np.ascontiguousarray(big[..., 1::3]).view(np.uint8).any()  # nothing between


def test_cast_keeps_memory_order_and_shapes():
    x = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert gk.cast(x, F8[0]).flags.f_contiguous
    assert gk.cast(np.float32(2.5), F16).shape == ()
    assert gk.cast(np.array(2.5, np.float32), F16)[()] == np.float16(2.5)
    assert gk.cast(np.zeros((0, 5), np.float32), BF16).shape == (0, 5)
    deep = np.arange(2**10, dtype=np.float32).reshape((2,) * 10)
    np.testing.assert_array_equal(gk.cast(deep[..., ::-1], F64), deep[..., ::-1])
    b = np.broadcast_to(np.float32([1.5, -2.25, 448.0, 1000.0]), (5, 4))  # zero strides
    np.testing.assert_array_equal(gk.cast(b, F8[0]).view(np.uint8),
                                  np.broadcast_to(np.uint8([0x3C, 0xC1, 0x7E, 0x7E]), (5, 4)))
    # python scalars and lists are float64 arrays
    assert gk.cast([1.0, 2.0], "float8_e4m3fn").dtype == F8[0]
    assert gk.cast(3.0, np.float32)[()] == 3.0


def test_cast_dtype_spellings():
    x = np.float32([1, 2, 3])
    for d in (ml_dtypes.bfloat16, BF16, "bfloat16", np.float16, "float16", "float8_e5m2fnuz"):
        assert gk.cast(x, d).dtype == np.dtype(d if d != "float8_e5m2fnuz" else F8[3])
    out = np.empty(3, F8[1])
    assert gk.cast(x, out=out) is out


def test_cast_in_place_and_overlap():
    rng = np.random.default_rng(3)
    v = (rng.standard_normal(1000) * 100).astype(np.float32)
    want = oracle.cast(v, F8[0], True)
    # out overlaps x with another element size: x is copied first
    buf = v.copy()
    out = buf.view(np.uint8)[:1000].view(F8[0])
    gk.cast(buf, out=out)
    np.testing.assert_array_equal(out.view(np.uint8), want)
    # same elements in place (same size): float16 -> bfloat16 in one buffer
    h = v.astype(np.float16)
    hw = oracle.cast(h, BF16, True)
    gk.cast(h, out=h.view(BF16))
    np.testing.assert_array_equal(h.view(np.uint16), hw)


def test_saturate_only_affects_float8():
    x = np.float32([70000.0, -1e30, np.inf])
    for sat in (True, False):
        np.testing.assert_array_equal(gk.cast(x, F16, saturate=sat).view(np.uint16),
                                      [0x7C00, 0xFC00, 0x7C00])
    np.testing.assert_array_equal(gk.cast(x, F8[0]).view(np.uint8), [0x7E, 0xFE, 0x7E])
    np.testing.assert_array_equal(gk.cast(x, F8[0], saturate=False).view(np.uint8),
                                  [0x7F, 0xFF, 0x7F])
    np.testing.assert_array_equal(gk.cast(x, F8[2], saturate=False).view(np.uint8),
                                  [0x7C, 0xFC, 0x7C])
    np.testing.assert_array_equal(gk.cast(x, F8[3], saturate=False).view(np.uint8),
                                  [0x80, 0x80, 0x80])
    np.testing.assert_array_equal(gk.cast(x, F8[3], saturate=1).view(np.uint8),
                                  [0x7F, 0xFF, 0x7F])


def test_float64_rounds_once():
    """A float64 just above a float8 tie rounds up; through float32 it would land on the
    tie and round to even (down)."""
    tie = (1.0 + 1.125) / 2  # e4m3fn neighbours 1.0 (0x38) and 1.125 (0x39)
    x = np.float64([tie + 2.0**-40, tie, tie - 2.0**-40])
    np.testing.assert_array_equal(gk.cast(x, F8[0]).view(np.uint8), [0x39, 0x38, 0x38])
    assert gk.cast(x.astype(np.float32), F8[0]).view(np.uint8)[0] == 0x38
    # float64 -> float16 likewise (65519.99 would round through float32 to 65520 -> inf)
    assert gk.cast(np.float64([65519.998]), F16).view(np.uint16)[0] == 0x7BFF


@pytest.mark.parametrize("dst", [F32, F16, BF16, F8[0], F8[3]], ids=str)
def test_float64_ignores_the_rounding_mode(isa, dst):
    """The SIMD families convert float64 <-> float32 (and, on ARM64, float16 <-> float32) in
    hardware, which follows MXCSR's / FPCR's rounding mode: under a non-default one they
    must fall back to the integer routes, so that every result still rounds to nearest
    even (ONNX Cast)."""
    modes = directed_modes()
    x = source("float64-sweep")
    want = expected("float64-sweep", dst, True)
    x32 = source("float32-sweep")
    want64 = expected("float32-sweep", F64, True)
    want_d = expected("float32-sweep", dst, True) if dst != F32 else None
    with gk.threads(1):  # the conversion runs in this thread, under its MXCSR / FPCR
        for mode in modes:  # FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO
            with rounding(mode):
                got = gk.cast(x, dst)
                got64 = gk.cast(x32, F64)
                got_d = gk.cast(x32, dst) if want_d is not None else None
            assert_bits(got, want, x)
            assert_bits(got64, want64, x32)
            if want_d is not None:  # float32 sources: float16 by FCVTN on ARM64
                assert_bits(got_d, want_d, x32)


@pytest.mark.parametrize("src", [F32, F64, F16], ids=str)
def test_non_native_byte_order_input(src):
    """x in the other byte order casts like its native copy (as astype would); an out in
    the other byte order is a TypeError that names the byte order."""
    rng = np.random.default_rng(31)
    x = (rng.standard_normal((7, 9)) * 300).astype(src)
    swapped = x.astype(x.dtype.newbyteorder())
    assert not swapped.dtype.isnative
    for dst in (F32, F16, BF16, F8[0]):
        assert_bits(gk.cast(swapped, dst), gk.cast(x, dst), x)
        assert_bits(gk.cast(swapped[::-2, 1::3], dst), gk.cast(x[::-2, 1::3], dst), x)
    out = np.empty((7, 9), np.dtype(F16).newbyteorder())
    with pytest.raises(TypeError, match="non-native byte order"):
        gk.cast(x, F16, out=out)
    with pytest.raises(TypeError, match="non-native byte order"):
        gk.cast(x, out=out)


def test_cast_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"x has dtype int32, shape \(2, 3\)"):
        gk.cast(np.zeros((2, 3), np.int32), F16)
    with pytest.raises(TypeError, match="dtype must be one of"):
        gk.cast(x, np.int8)
    with pytest.raises(TypeError, match="dtype must be one of"):
        gk.cast(x, "float8_e8m0")
    with pytest.raises(TypeError, match="dtype is required"):
        gk.cast(x)
    with pytest.raises(TypeError, match=r"out has dtype float16 but dtype is bfloat16"):
        gk.cast(x, BF16, out=np.empty((2, 3), np.float16))
    with pytest.raises(ValueError, match=r"out has shape \(3, 2\) but x has shape \(2, 3\)"):
        gk.cast(x, F16, out=np.empty((3, 2), np.float16))
    with pytest.raises(ValueError, match=r"out has shape \(1, 3\)"):
        gk.cast(x, F16, out=np.empty((1, 3), np.float16))  # no broadcasting
    ro = np.empty((2, 3), np.float16)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gk.cast(x, F16, out=ro)
    with pytest.raises(TypeError, match="out must be a numpy.ndarray"):
        gk.cast(x, F16, out=[0.0] * 6)
    with pytest.raises(TypeError, match="saturate must be a bool"):
        gk.cast(x, F8[0], saturate=2)
    with pytest.raises(TypeError, match="out has dtype int8; supported"):
        gk.cast(x, out=np.empty((2, 3), np.int8))


def test_private_codecs_route_to_the_engine(isa):
    """_core._fp8_encode / _fp8_decode (the pre-cast helpers) run the same family."""
    from gemmkit import _core
    x = source("float32-sweep")
    for i, dt in enumerate(F8):
        np.testing.assert_array_equal(_core._fp8_encode(x, i, True), expected("float32-sweep", dt, True))
        c = np.arange(256, dtype=np.uint8)
        np.testing.assert_array_equal(_core._fp8_decode(c, i).view(np.uint32),
                                      expected(f"{dt}-all", F32, True))
