# Software codecs (float8 formats, float16/bfloat16 bulk conversions): the C declarations for
# the other .pxi files of _core, and private Python helpers used by the tests.
# Included into _core.pyx (numpy already cimported and initialised there).
from libc.math cimport isinf, rintf
from libc.stdint cimport uint8_t, uint16_t

cdef inline int _codec_fmt(int fmt) except -1:
    if fmt < 0 or fmt > 3:
        raise ValueError(f"float8 format must be 0..3 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ), got {fmt}")
    return fmt


cdef object _codec_input(object x, object dtype):
    """C-contiguous array of `dtype`, converted (np.asarray keeps 0-d shapes)."""
    a = np.asarray(x)
    if a.dtype != dtype:
        a = a.astype(dtype)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    return a


cdef object _codec_bits16(object x):
    """Any 2-byte array (uint16, int16, float16, bfloat16) viewed as uint16 codes."""
    a = np.asarray(x)
    if a.dtype.itemsize != 2:
        raise TypeError(f"expected 16-bit codes (uint16, float16 or bfloat16), got {a.dtype}")
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    return a.view(np.uint16)


def _codecs_simd_active():
    """True when the bulk f16/bf16 conversions run a SIMD family (the dispatch's codecs
    choice at the selected level)."""
    return gk_codecs_active() != &gk_codecs_scalar


def _codecs_simd_compiled():
    """True when a SIMD codecs family (F16C/AVX2) was built into this binary."""
    return gk_codecs_kernel_count() > 1


cdef inline const gk_codecs_kernel *_codecs_family(bint simd) noexcept nogil:
    return gk_codecs_active() if simd else &gk_codecs_scalar


def _fp8_max_finite(int fmt):
    return float(gk_fp8_max_finite(_codec_fmt(fmt)))


def _fp8_decode(codes, int fmt):
    """uint8 codes (any 1-byte dtype) of float8 format `fmt` -> float32 array, same shape."""
    _codec_fmt(fmt)
    a = np.asarray(codes)
    if a.dtype.itemsize != 1:
        raise TypeError(f"expected 8-bit codes, got {a.dtype}")
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    a = a.view(np.uint8)
    out = np.empty(a.shape, dtype=np.float32)
    cdef const uint8_t *src = <const uint8_t *>cnp.PyArray_DATA(a)
    cdef float *dst = <float *>cnp.PyArray_DATA(out)
    cdef size_t n = a.size
    with nogil:
        gk_fp8_decode_n(src, dst, n, fmt)
    return out


def _fp8_encode(x, int fmt, bint saturate):
    """float array -> uint8 codes of float8 format `fmt`, round to nearest even from the exact
    value.  float64 input uses the float64 encoder (no intermediate float32 rounding); any
    other dtype is converted to float32 first (exact for float16/bfloat16)."""
    _codec_fmt(fmt)
    cdef size_t n
    cdef uint8_t *dst
    cdef const double *src64
    cdef const float *src32
    a = np.asarray(x)
    if a.dtype == np.float64:
        a = _codec_input(a, np.float64)
        out = np.empty(a.shape, dtype=np.uint8)
        n = a.size
        src64 = <const double *>cnp.PyArray_DATA(a)
        dst = <uint8_t *>cnp.PyArray_DATA(out)
        with nogil:
            gk_fp8_encode_f64_n(src64, dst, n, fmt, saturate)
    else:
        a = _codec_input(a, np.float32)
        out = np.empty(a.shape, dtype=np.uint8)
        n = a.size
        src32 = <const float *>cnp.PyArray_DATA(a)
        dst = <uint8_t *>cnp.PyArray_DATA(out)
        with nogil:
            gk_fp8_encode_f32_n(src32, dst, n, fmt, saturate)
    return out


def _fp8_encode_scalar(double x, int fmt, bint saturate, bint f64=True):
    """One value through gk_fp8_encode_f64 (or gk_fp8_encode_f32 after rounding to float32)."""
    _codec_fmt(fmt)
    if f64:
        return gk_fp8_encode_f64(x, fmt, saturate)
    return gk_fp8_encode_f32(<float>x, fmt, saturate)


def _f16_to_f32(h, bint simd=True):
    """float16 codes (uint16 or float16 array) -> float32, same shape.  simd=False forces the
    scalar loop."""
    a = _codec_bits16(h)
    out = np.empty(a.shape, dtype=np.float32)
    cdef const uint16_t *src = <const uint16_t *>cnp.PyArray_DATA(a)
    cdef float *dst = <float *>cnp.PyArray_DATA(out)
    cdef size_t n = a.size
    with nogil:
        _codecs_family(simd).f16_to_f32_n(src, dst, n)
    return out


def _bf16_to_f32(h, bint simd=True):
    """bfloat16 codes (uint16 or bfloat16 array) -> float32, same shape."""
    a = _codec_bits16(h)
    out = np.empty(a.shape, dtype=np.float32)
    cdef const uint16_t *src = <const uint16_t *>cnp.PyArray_DATA(a)
    cdef float *dst = <float *>cnp.PyArray_DATA(out)
    cdef size_t n = a.size
    with nogil:
        _codecs_family(simd).bf16_to_f32_n(src, dst, n)
    return out


def _f32_to_f16(x, bint simd=True):
    """float32 array (other dtypes converted first) -> float16 codes as uint16, same shape."""
    a = _codec_input(x, np.float32)
    out = np.empty(a.shape, dtype=np.uint16)
    cdef const float *src = <const float *>cnp.PyArray_DATA(a)
    cdef uint16_t *dst = <uint16_t *>cnp.PyArray_DATA(out)
    cdef size_t n = a.size
    with nogil:
        _codecs_family(simd).f32_to_f16_n(src, dst, n)
    return out


def _f32_to_bf16(x, bint simd=True):
    """float32 array (other dtypes converted first) -> bfloat16 codes as uint16, same shape."""
    a = _codec_input(x, np.float32)
    out = np.empty(a.shape, dtype=np.uint16)
    cdef const float *src = <const float *>cnp.PyArray_DATA(a)
    cdef uint16_t *dst = <uint16_t *>cnp.PyArray_DATA(out)
    cdef size_t n = a.size
    with nogil:
        _codecs_family(simd).f32_to_bf16_n(src, dst, n)
    return out


# ---------------------------------------------------------------------------------------
# gemmkit.cast: the public conversion between the float types gemmkit knows.
import ml_dtypes as _cast_ml_dtypes

# dtype -> gk_cast_type; also the order of the names in messages
_CAST_TYPES = {
    np.dtype(np.float32): GK_CT_F32,
    np.dtype(np.float64): GK_CT_F64,
    np.dtype(np.float16): GK_CT_F16,
    np.dtype(_cast_ml_dtypes.bfloat16): GK_CT_BF16,
    np.dtype(_cast_ml_dtypes.float8_e4m3fn): GK_CT_F8 + GK_F8E4M3FN,
    np.dtype(_cast_ml_dtypes.float8_e4m3fnuz): GK_CT_F8 + GK_F8E4M3FNUZ,
    np.dtype(_cast_ml_dtypes.float8_e5m2): GK_CT_F8 + GK_F8E5M2,
    np.dtype(_cast_ml_dtypes.float8_e5m2fnuz): GK_CT_F8 + GK_F8E5M2FNUZ,
}
_CAST_NAMES = ", ".join(str(d) for d in _CAST_TYPES)
# names np.dtype() does not know on its own
_CAST_ALIASES = {str(d): d for d in _CAST_TYPES}


cdef object _cast_dtype(object dtype):
    """The np.dtype a `dtype` argument names (a dtype, a type such as ml_dtypes.bfloat16, or a
    name such as "float8_e4m3fn"); TypeError otherwise."""
    if isinstance(dtype, str) and dtype in _CAST_ALIASES:
        return _CAST_ALIASES[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in _CAST_TYPES:
        raise TypeError(f"cast: dtype must be one of {_CAST_NAMES}; got {dtype!r}")
    return dt


def _cast_out_byte_order(out):
    """A TypeError naming out's byte order where that alone keeps it from cast's types."""
    dt = out.dtype
    if not dt.isnative and dt.newbyteorder("=") in _CAST_TYPES:
        raise TypeError(f"cast: out has dtype {dt.str} ({dt.newbyteorder('=').name} in "
                        f"non-native byte order); cast writes native byte order: pass an "
                        f"out of dtype {dt.newbyteorder('=').name}")


def cast(x, dtype=None, saturate=True, out=None):
    """ONNX Cast (opset 19+, with its ``saturate`` attribute) between float32, float64,
    float16, bfloat16 and the four float8 formats.

    Parameters
    ----------
    x : array_like of float32, float64, float16, ``ml_dtypes.bfloat16``,
        ``ml_dtypes.float8_e4m3fn``, ``float8_e4m3fnuz``, ``float8_e5m2`` or
        ``float8_e5m2fnuz``; any shape and strides (negative, zero, non-contiguous),
        either byte order (a non-native one is first copied to native, as ``astype``
        would).  A non-array is converted with ``np.asarray`` (a list of floats is
        float64).
    dtype : the destination, one of the same eight types: a dtype, a type such as
        ``ml_dtypes.bfloat16`` or ``np.float16``, or its name (``"float8_e4m3fn"``,
        ``"bfloat16"``).  May be omitted when ``out`` is given (out's dtype is used).
    saturate : bool (default True); also ``np.bool_`` or the integer 0 or 1 (ONNX's
        attribute is an int).  Applies to float8 destinations only, as in ONNX.
    out : optional ``numpy.ndarray`` of the destination dtype (native byte order) and exactly x's shape (no
        broadcasting), any strides, writable: the result is written into it and it is
        returned.  It may be x itself or overlap it.

    Rounding.  Every element is rounded once, to nearest even, from its exact value:
    float16, bfloat16 and float8 inputs widen exactly, and float64 input rounds directly
    to the destination (never through float32, which would round twice).  With
    ``saturate=True`` a float8 destination clamps values whose rounded magnitude exceeds
    its largest finite value, and +-inf, to +-max finite (448 for e4m3fn, 240 for
    e4m3fnuz, 57344 for e5m2 and e5m2fnuz); with ``saturate=False`` they become +-inf in
    float8_e5m2 and NaN in the other three.  float16, bfloat16 and float32 destinations
    overflow to +-inf as IEEE rounding does.  NaN stays NaN (in the fnuz formats their
    one NaN code 0x80); into the wider types it keeps its sign and top payload bits,
    quieted.  The same type is a copy, and bfloat16 to float32 keeps every bit.  Results
    do not depend on the FPU's rounding mode, DAZ or FTZ, nor on the kernel path.

    Returns
    -------
    numpy.ndarray of the destination dtype and x's shape: ``out`` when given, else a
    new array in x's memory order (as ``astype``).

    Threads: the GIL is released during the conversion and calls are thread-safe; large
    arrays are split over ``gemmkit.get_num_threads()`` threads.

    Raises
    ------
    TypeError
        x's dtype, ``dtype`` or out's dtype is not one of the eight types; out's dtype
        differs from ``dtype``; out is not a numpy.ndarray; neither dtype nor out is
        given; saturate is not a bool or 0/1.
    ValueError
        out's shape differs from x's, or out is read-only.

    Checks run before any work; messages show the shapes and dtypes.

    Example
    -------
    >>> x = np.array([1.0625, 300.0, 1e6, -np.inf, np.nan], np.float32)
    >>> gemmkit.cast(x, ml_dtypes.float8_e4m3fn).astype(np.float32)
    array([   1.,  288.,  448., -448.,   nan], dtype=float32)
    >>> gemmkit.cast(x, "float8_e4m3fn", saturate=False).astype(np.float32)
    array([  1., 288.,  nan,  nan,  nan], dtype=float32)
    """
    cdef gk_cast_args args
    cdef int i, sat
    if out is not None and not isinstance(out, np.ndarray):
        raise TypeError(f"cast: out must be a numpy.ndarray, got {type(out).__name__}")
    if dtype is None:
        if out is None:
            raise TypeError("cast: dtype is required when out is not given")
        dt = out.dtype
        _cast_out_byte_order(out)
        if dt not in _CAST_TYPES:
            raise TypeError(f"cast: out has dtype {dt}; supported: {_CAST_NAMES}")
    else:
        dt = _cast_dtype(dtype)
    if isinstance(saturate, (bool, np.bool_)) or (
            isinstance(saturate, (int, np.integer)) and saturate in (0, 1)):
        sat = 1 if saturate else 0
    else:
        raise TypeError(f"cast: saturate must be a bool (or 0/1), got {saturate!r}")
    a = x if isinstance(x, np.ndarray) else np.asarray(x)
    if not a.dtype.isnative and a.dtype.newbyteorder("=") in _CAST_TYPES:
        a = a.astype(a.dtype.newbyteorder("="))  # the same values, native byte order
    if a.dtype not in _CAST_TYPES:
        raise TypeError(f"cast: x has dtype {a.dtype}, shape {a.shape}; supported dtypes: "
                        f"{_CAST_NAMES}")
    if out is None:
        out = np.empty_like(a, dtype=dt)
    else:
        _cast_out_byte_order(out)
        if out.dtype != dt:
            raise TypeError(f"cast: out has dtype {out.dtype} but dtype is {dt}")
        if out.shape != a.shape:
            raise ValueError(f"cast: out has shape {out.shape} but x has shape {a.shape}; "
                             "they must be equal")
        if not out.flags.writeable:
            raise ValueError(f"cast: out (shape {out.shape}, dtype {out.dtype}) is read-only")
        if a.size and np.may_share_memory(a, out):
            # The same elements in place (same strides, same element size) convert element by
            # element; any other overlap would read what was already written: copy x first.
            if not (a.__array_interface__["data"][0] == out.__array_interface__["data"][0]
                    and a.strides == out.strides and a.itemsize == out.itemsize):
                a = a.copy()
    args.src_type = _CAST_TYPES[a.dtype]
    args.dst_type = _CAST_TYPES[dt]
    args.saturate = sat
    args.ndim = a.ndim
    for i in range(a.ndim):
        args.shape[i] = a.shape[i]
        args.src_stride[i] = a.strides[i]
        args.dst_stride[i] = out.strides[i]
    args.src = cnp.PyArray_DATA(a)
    args.dst = cnp.PyArray_DATA(out)
    with nogil:
        gk_cast_run(gk_codecs_active(), &args)
    return out


def _cast_f64_scalar(double x, int dst_type):
    """One float64 through the direct narrowing helpers (tests): float32 bits, float16 or
    bfloat16 code."""
    if dst_type == GK_CT_F32:
        return gk_f64_to_f32_bits(x)
    if dst_type == GK_CT_F16:
        return gk_f64_to_f16(x)
    return gk_f64_to_bf16(x)


# ---- the contrib ops' loops (gemmkit.contrib: DynamicQuantizeLinear, MatMulIntegerToFloat) --

def _i32_scale(acc, sa, sb, bias):
    """float32 (float32(acc) * (sa * sb)) [+ bias], each a float32 operation: acc a
    C-contiguous int32 array; sa, sb 1-D float32 arrays of 1 or acc.shape[-1] elements
    (per tensor / per column), their product taken once per column; bias None or 1-D
    float32 of acc.shape[-1]."""
    out = np.empty(acc.shape, np.float32)
    if acc.size == 0:
        return out
    cdef const int[::1] a = acc.reshape(-1)
    cdef float[::1] o = out.reshape(-1)
    cdef const float[::1] va = sa
    cdef const float[::1] vb = sb
    cdef const float[::1] b
    cdef const float *bp = NULL
    cdef size_t n = a.shape[0], ncols = acc.shape[acc.ndim - 1], j
    cdef int per_col = va.shape[0] > 1 or vb.shape[0] > 1
    cdef float s0
    if bias is not None:
        b = bias
        bp = &b[0]
    if not per_col:
        s0 = va[0] * vb[0]
        with nogil:
            gk_i32_scale_n(<const int32_t *>&a[0], &o[0], n, ncols, &s0, 0, bp)
        return out
    cdef float[::1] s = np.empty(ncols, np.float32)
    for j in range(ncols):
        s[j] = va[j if va.shape[0] > 1 else 0] * vb[j if vb.shape[0] > 1 else 0]
    with nogil:
        gk_i32_scale_n(<const int32_t *>&a[0], &o[0], n, ncols, &s[0], 1, bp)
    return out


def _dql_u8(x):
    """DynamicQuantizeLinear of a C-contiguous float32 array in one call: (status, y uint8
    (x's shape), scale, zero point, lo, hi), every scalar step the float32 operation the
    NumPy definition names (lo = min(0, min x), hi = max(0, max x); scale = 1 if hi == lo
    else (hi - lo) / 255; zp = rint(clamp(0 - lo / scale, 0, 255))).  status: 0 done, 1 a
    NaN or infinity in x, 2 hi - lo overflows float32, 3 the scale underflows to 0 (y is
    then not computed).  Run in the default floating-point environment whatever the
    calling thread set (ONNX defines the rounding: to nearest, ties to even; and FTZ/DAZ
    would flush small scales), the caller's restored after."""
    cdef fenv_t saved
    cdef bint swap = not gk_fenv_is_default()
    if swap:
        fegetenv(&saved)
        fesetenv(FE_DFL_ENV)
    try:
        return _dql_u8_run(x)
    finally:
        if swap:
            fesetenv(&saved)


cdef object _dql_u8_run(x):
    cdef const float[::1] v
    cdef float lo = 0, hi = 0, xmin = 0, xmax = 0, rng, scale = 1, zp0, zp = 0
    cdef float zero = 0, top = 255
    cdef size_t n = x.size
    cdef int finite = 1
    out = np.empty(x.shape, np.uint8)
    cdef uint8_t[::1] o
    if n > 0:
        v = x.reshape(-1)
        o = out.reshape(-1)
        with nogil:
            finite = gk_f32_range(&v[0], n, &xmin, &xmax)
        if not finite:
            return 1, None, 1.0, 0, 0.0, 0.0
        lo = xmin if xmin < zero else zero
        hi = xmax if xmax > zero else zero
    if hi != lo:
        rng = hi - lo
        if isinf(rng):
            return 2, None, 1.0, 0, lo, hi
        scale = rng / top
        if scale == 0:
            return 3, None, 0.0, 0, lo, hi
    zp0 = zero - lo / scale
    zp0 = zero if zp0 < zero else (top if zp0 > top else zp0)
    zp = rintf(zp0)
    if n > 0:
        with nogil:
            gk_quantize_u8_n(&v[0], &o[0], n, scale, zp)
    return 0, out, scale, <int>zp, lo, hi
