# Software codecs (float8 formats, float16/bfloat16 bulk conversions): the C declarations for
# the other .pxi files of _core, and private Python helpers used by the tests.
# Included into _core.pyx (numpy already cimported and initialised there).
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
