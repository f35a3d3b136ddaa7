# MatMulInteger and QLinearMatMul: the entry points.  Arguments are normalised by
# _qargs.pxi into one batched problem (gk_qgemm_problem + gk_qbatch) that the C driver
# runs whole, batch loop included (gk_qgemm_driver.h).
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport uint8_t, uint16_t, int32_t
from libc.string cimport memset

cdef class PackedB  # _pack.pxi: a pre-packed B, accepted in place of B

# Deepest product a kernel sees; deeper ones run chunk by chunk (gk_qgemm_driver.h).
_QGEMM_KCHUNK = GK_QGEMM_KCHUNK

include "_qargs.pxi"


def _qgemm_tall_mode(int mode):
    """Where the int8 families' tall route runs (many rows against a small B, A read in
    place): 0 never, 1 by the family's limits (the default), 2 wherever A's rows are
    contiguous and B is not pre-packed; returns the previous mode.  For tests, which run
    both routes on every shape; between calls only."""
    return gk_qgemm_set_tall_mode(mode)


def _qgemm_slow_l3_mode(int mode):
    """Whether the packed path sizes its blocks for a CPU with a slow L3 (families with
    slow_l3_block_div: each block at most that fraction of L2): -1 as the CPU says (the
    default; Intel's), 0 never, 1 always; returns the previous mode.  For tests, which run
    both blockings on any CPU; between calls only."""
    return gk_qgemm_set_slow_l3_mode(mode)


def _qlinear_f8_fma_mode(int mode):
    """Whether QLinearMatMul with a float8 operand runs the float32 family's FMA
    micro-kernel where every product is exact (1, the default), never (0: always its
    separately rounded one) or always (2: not the definition's result where a product is
    inexact); returns the previous mode.  For tests, which compare them; between calls
    only."""
    return gk_qlinear_f8_set_fma_mode(mode)


# int32 outputs of at least this many elements are allocated 64-byte aligned: kernels
# may then write whole cache lines without reading them first (non-temporal stores),
# which NumPy's 16-byte-aligned allocations rule out.
cdef Py_ssize_t _ALIGNED_OUT_MIN = 65536


cdef cnp.ndarray _empty_aligned64(tuple shape, dtype):
    cdef Py_ssize_t nbytes = np.dtype(dtype).itemsize
    for d in shape:
        nbytes *= d
    buf = np.empty(nbytes + 64, np.uint8)
    cdef Py_ssize_t off = (-<Py_ssize_t>cnp.PyArray_DATA(buf)) & 63
    return buf[off:off + nbytes].view(dtype).reshape(shape)


cdef object _qmatmul(_QOp op, cnp.ndarray a, cnp.ndarray b, _Small azp, _Small bzp,
                     _Small a_s, _Small b_s, _Small y_s, _Small yzp,
                     int ta, int tb, int ty, str an, str bn, PackedB pk=None):
    """Checks and lays out every argument, allocates the output, runs the whole batched
    product in C without the GIL.  ty (the output's gk_qtype) is read for QLinearMatMul
    only: MatMulInteger's output is int32."""
    cdef gk_qgemm_problem p
    cdef gk_qbatch bt
    _operands(op, a, b, ta, tb, an, bn, &p, &bt)
    ctx = (a, b, an, bn)
    _zero_points(&p, &bt, azp, bzp, ctx)
    if op == _QOP_MATMUL_INTEGER:
        p.y_type = GK_QT_U8      # unused: the output is int32
        p.out_kind = GK_QOUT_I32
        out_type = cnp.NPY_INT32
        out_descr = None
    else:
        p.y_type = ty
        p.out_kind = GK_QOUT_S8 if ty == GK_QT_S8 else GK_QOUT_U8
        out_type = cnp.NPY_INT8 if ty == GK_QT_S8 else cnp.NPY_UINT8
        out_descr = _F8_DTYPES[ty - GK_QT_F8] if ty >= GK_QT_F8 else None
        _requant(&p, &bt, azp, bzp, a_s, b_s, y_s, yzp, ctx)

    cdef int nb = bt.ndim, i
    cdef Py_ssize_t M = p.m, N = p.n, nbatch = 1
    cdef cnp.npy_intp odims[_MAXD + 2]
    cdef int ond = nb
    for i in range(nb):
        odims[i] = bt.shape[i]
        nbatch *= bt.shape[i]
    if cnp.PyArray_NDIM(a) > 1:
        odims[ond] = M
        ond += 1
    if cnp.PyArray_NDIM(b) > 1:
        odims[ond] = N
        ond += 1
    cdef cnp.ndarray y
    if out_type == cnp.NPY_INT32 and nbatch * M * N >= _ALIGNED_OUT_MIN:
        y = _empty_aligned64(tuple([odims[i] for i in range(ond)]), np.int32)
    elif out_descr is None:
        y = cnp.PyArray_EMPTY(ond, odims, out_type, 0)
    else:
        y = np.empty(tuple([odims[i] for i in range(ond)]), dtype=out_descr)
    if nbatch == 0 or M == 0 or N == 0:
        return y
    # y is C-contiguous: batch dim i steps over the matrices of the dims after it
    cdef ptrdiff_t step = M * N * cnp.PyArray_ITEMSIZE(y)
    i = nb - 1
    while i >= 0:
        bt.stride[GK_QB_Y][i] = step
        step *= bt.shape[i]
        i -= 1
    p.y = cnp.PyArray_DATA(y)
    cdef const gk_qgemm_kernel *kern = gk_qgemm_active()
    cdef const void *packed = NULL
    cdef ptrdiff_t nmat = 1
    if pk is not None:
        packed = pk._int8_packing(kern, &p, &bt)
        nmat = pk._nmat
    cdef int rc
    with nogil:
        if op == _QOP_MATMUL_INTEGER:
            rc = gk_qgemm_run_packed(kern, &p, &bt, packed, nmat)
        else:
            rc = gk_qlinear_run_packed(kern, &p, &bt, packed, nmat)
    if rc != 0:
        raise MemoryError(f"{_QOP_NAMES[op]}: out of memory for packing buffers "
                          f"({_who(a, b, an, bn)})")
    return y


def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    """ONNX MatMulInteger (opset 10): ``Y = (A - a_zero_point) @ (B - b_zero_point)``, int32.

    Parameters
    ----------
    A : array_like, uint8 or int8, shape ``[..., M, K]`` or ``[K]``
    B : array_like, uint8 or int8, shape ``[..., K, N]`` or ``[K]``; or a ``PackedB``
        made by ``pack_b(B, "matmul_integer", b_zero_point=...)``.  A and B may differ
        in signedness (u8 x u8, u8 x s8, s8 x u8, s8 x s8).
    a_zero_point : optional (None means 0), A's dtype
    b_zero_point : optional (None means 0), B's dtype; must be None when B is a
        ``PackedB`` (the pack holds it).

    Positional order is the ONNX input order, so a node's inputs can be splatted in.

    Shapes follow ``numpy.matmul``: a 1-D A is promoted to ``[1, K]`` and a 1-D B to
    ``[K, 1]``, and the added dimension is removed from the result; batch dimensions
    (all but the last two) broadcast; M, N, K or a batch dimension may be 0 (K = 0
    gives zeros).  M, N and K must each be below 2**31.  Layouts: any strides (C or F
    order, negative, zero, offsets), read-only and broadcast views, read in place; only
    an operand with no unit stride in its last two dims (such as ``B[:, ::2]``) is first
    copied row-major into a temporary, which the packers read faster.

    Zero points are an array or NumPy scalar of exactly their tensor's dtype, or a
    Python int in that dtype's range.  Layout, for A (``[..., M, K]``):

    - per-tensor: size 1 (shape ``()``, ``(1,)``, ``(1, 1)``, ...);
    - per-row: 1-D ``[M]`` -- row m uses element m (not NumPy's last-axis
      broadcasting);
    - per-row per batch: N-D broadcastable to ``[..., M, 1]``;

    and for B (``[..., K, N]``): size 1, per-column 1-D ``[N]``, or N-D broadcastable to
    ``[..., 1, N]``.  A zero point's batch dimensions may not enlarge the output's.

    Returns
    -------
    numpy.ndarray of int32, shape ``batch + [M, N]`` (without the dimension a 1-D A or B
    lost), C-contiguous, newly allocated.  Every product is exact and the sums wrap
    modulo 2**32 (the only overflow ONNX allows); the result is bit-identical on every
    kernel path (``GEMMKIT_ISA``, ``cpu_info()``) and for any thread count.

    Threads: the GIL is released while the kernels run and calls are thread-safe; the
    output is split over ``gemmkit.get_num_threads()`` threads (never K).

    Raises
    ------
    TypeError
        A or B is not uint8/int8; a zero point has another dtype (``np.int8(1)`` for a
        uint8 A, a float8 value) or is a Python bool or float.
    ValueError
        A or B is 0-d; the inner dimensions differ; the batch dimensions do not
        broadcast; a zero point's shape is not one of the layouts above; a Python int
        zero point is outside its dtype's range; M, N or K is 2**31 or more; B is a
        ``PackedB`` made for another op, or b_zero_point is given with one.
    MemoryError
        No memory for the packing buffers.

    Checks run before any work; messages name the argument and show shapes and dtypes.

    Example
    -------
    >>> a = np.array([[1, 2], [3, 4]], np.uint8)
    >>> b = np.array([[1, -1], [2, 0]], np.int8)
    >>> gemmkit.matmul_integer(a, b, np.uint8(1))
    array([[ 2,  0],
           [ 8, -2]], dtype=int32)
    """
    cdef PackedB pk = None
    if isinstance(B, PackedB):
        pk = <PackedB>B
        pk._check_call("matmul_integer", b_zero_point=b_zero_point)
        B, b_zero_point = pk.b, pk.b_zero_point
    cdef cnp.ndarray a = _arr(A, "MatMulInteger: A"), b = _arr(B, "MatMulInteger: B")
    cdef int ta = _qtype(a), tb = _qtype(b)
    if not _is_int8(ta):
        raise TypeError(f"MatMulInteger: A must be {_INT8_NAMES}, got {_given(A, a)}")
    if not _is_int8(tb):
        raise TypeError(f"MatMulInteger: B must be {_INT8_NAMES}, got {_given(B, b)}")
    cdef _Small azp = None, bzp = None
    if a_zero_point is not None:
        azp = _zero_point(a_zero_point, cnp.PyArray_TYPE(a), a.dtype, "a_zero_point", "A")
    if b_zero_point is not None:
        bzp = _zero_point(b_zero_point, cnp.PyArray_TYPE(b), b.dtype, "b_zero_point", "B")
    return _qmatmul(_QOP_MATMUL_INTEGER, a, b, azp, bzp, None, None, None, None,
                    ta, tb, GK_QT_U8, "A", "B", pk)


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                   y_zero_point):
    """ONNX QLinearMatMul (opsets 10 and 21): a quantized matrix product.

    ``y = quantize(dequantize(a) @ dequantize(b))`` with
    ``dequantize(q) = (q - zero_point) * scale`` and ``quantize(x) = saturate(round(x /
    y_scale) + y_zero_point)``, computed exactly as defined below.

    Parameters (all required; positional order is the ONNX input order)
    ----------
    a : array_like, shape ``[..., M, K]`` or ``[K]``
    a_scale : a's scale
    a_zero_point : a's zero point
    b : array_like, shape ``[..., K, N]`` or ``[K]``; or a ``PackedB`` made by
        ``pack_b(b, "qlinear_matmul", b_scale=..., b_zero_point=...)``, in which case
        ``b_scale`` and ``b_zero_point`` must be None (the pack holds them).
    b_scale : b's scale
    b_zero_point : b's zero point
    y_scale : the output's scale
    y_zero_point : the output's zero point; its dtype is the output's dtype.

    Types.  a, b and y_zero_point: uint8, int8 or one of the ml_dtypes float8 types
    ``float8_e4m3fn``, ``float8_e4m3fnuz``, ``float8_e5m2``, ``float8_e5m2fnuz``, in
    any mix (float8 is opset 21).  A zero point has exactly its tensor's dtype: an array
    or NumPy scalar (a_zero_point and b_zero_point may also be a Python int in range for
    a uint8/int8 tensor; y_zero_point may not be a Python number).  Scales: an array or
    NumPy scalar of float32, float16 or bfloat16 (widened exactly to float32; float16 and
    bfloat16 are opset 21), or a Python float/int (rounded to float32, a NEP 50 "weak"
    scalar) -- never float64 (``np.float64(0.5)``, ``np.array(0.5)``).  Scales must be
    finite and y_scale nonzero; negative scales are accepted (the formula applies).

    Shapes.  a and b follow ``numpy.matmul`` exactly as in ``matmul_integer`` (1-D
    promotion, broadcast batch dimensions, empty dimensions, any strides, read in place
    but for operands with no unit stride).
    Each scale has the same shape as its zero point (a NumPy scalar is shape ``()``; a
    Python number matches any size-1 partner).  Layouts:

    - a_zero_point / a_scale: size 1 (per-tensor), 1-D ``[M]`` (per-row: row m uses
      element m, not NumPy's last-axis broadcasting) or N-D broadcastable to
      ``[..., M, 1]`` (per-row per batch);
    - b_zero_point / b_scale: size 1, 1-D ``[N]`` (per-column) or N-D broadcastable to
      ``[..., 1, N]``;
    - y_zero_point / y_scale: size 1, 1-D ``[M]`` (per-row) or N-D broadcastable to
      ``[..., M, N]``; where a (b) is 1-D, broadcastable to the output as returned,
      which has no M (N) dim: a 1-D a's ``[N]`` is per-column, and ``(B, 1)`` for
      a ``[B, M, K]`` @ b ``[K]`` is per batch.

    Zero-point and scale batch dimensions may not enlarge the output's batch dimensions.

    Integer a and b.  ``acc = (a - a_zero_point) @ (b - b_zero_point)`` exactly, in int32
    (as ``matmul_integer``); the multiplier ``m = f32(f32(a_scale) * f32(b_scale)) /
    f32(y_scale)`` is computed in float32 for each output element (per-row and
    per-column scales give an [M, N] grid; a multiplier beyond float32's range is clamped
    to +-FLT_MAX); then ``y = saturate(round_half_to_even(double(acc) * double(m)) +
    y_zero_point)`` for a uint8/int8 output, or the double ``double(acc) * double(m) +
    float(y_zero_point)`` encoded to a float8 output with saturation.  Bit-exact and the
    same on every kernel path and thread count.

    float8 a or b (opset 21).  ``real = (float(q) - float(zero_point)) * scale`` in
    float32, the products summed in float32 in increasing k, ``x = acc / y_scale``, then
    the output cast: uint8/int8 rounds half to even, adds y_zero_point and saturates (a
    NaN maps to y_zero_point); float8 adds float(y_zero_point) and encodes with ONNX
    ``saturate=1``: round to nearest even, beyond the largest finite value and +-inf to
    +-max finite, NaN to NaN.

    Returns
    -------
    numpy.ndarray of y_zero_point's dtype, shape ``batch + [M, N]`` (without the
    dimension a 1-D a or b lost), C-contiguous, newly allocated.

    Threads: the GIL is released while the kernels run and calls are thread-safe; the
    output is split over ``gemmkit.get_num_threads()`` threads (never K).

    Raises
    ------
    TypeError
        a, b or y_zero_point is not uint8/int8/float8; a zero point's dtype differs from
        its tensor's (or it is a Python bool/float, a Python int for a float8 tensor, a
        Python number for y_zero_point); a scale is not float32/float16/bfloat16 (a
        float64 array or scalar, a Python bool).
    ValueError
        a or b is 0-d; the inner dimensions differ; the batch dimensions do not
        broadcast; a zero point or scale has a shape other than the layouts above, or a
        scale's shape differs from its zero point's; a scale is NaN or infinite (also a
        Python number beyond float32's range), or y_scale is 0; a Python int zero point
        is out of range; M, N or K is 2**31 or more; b is a ``PackedB`` made for another
        op, or b_scale/b_zero_point is given with one.
    MemoryError
        No memory for the packing buffers.

    Checks run before any work; messages name the argument and show shapes and dtypes.

    Example
    -------
    >>> a = np.array([[10, 20]], np.uint8)
    >>> b = np.array([[1], [2]], np.int8)
    >>> gemmkit.qlinear_matmul(a, np.float32(0.5), np.uint8(0), b, np.float32(1.0),
    ...                        np.int8(0), np.float32(1.0), np.uint8(100))
    array([[125]], dtype=uint8)
    """
    cdef PackedB pk = None
    if isinstance(b, PackedB):
        pk = <PackedB>b
        pk._check_call("qlinear_matmul", b_scale=b_scale, b_zero_point=b_zero_point)
        b, b_scale, b_zero_point = pk.b, pk.b_scale, pk.b_zero_point
    cdef cnp.ndarray aa = _arr(a, "QLinearMatMul: a"), bb = _arr(b, "QLinearMatMul: b")
    cdef int ta = _qtype(aa), tb = _qtype(bb), ty, ynum
    if ta == _QT_NONE:
        raise TypeError(f"QLinearMatMul: a must be {_Q_NAMES}, got {_given(a, aa)}")
    if tb == _QT_NONE:
        raise TypeError(f"QLinearMatMul: b must be {_Q_NAMES}, got {_given(b, bb)}")
    cdef _Small azp = _zero_point(a_zero_point, cnp.PyArray_TYPE(aa), aa.dtype, "a_zero_point", "a")
    cdef _Small bzp = _zero_point(b_zero_point, cnp.PyArray_TYPE(bb), bb.dtype, "b_zero_point", "b")
    if isinstance(y_zero_point, _NP_GENERIC):
        ynum = _scalar_typenum(y_zero_point)
        ydt = y_zero_point.dtype
    else:
        y_zero_point = _arr(y_zero_point, "y_zero_point")
        ynum = cnp.PyArray_TYPE(<cnp.ndarray>y_zero_point)
        ydt = y_zero_point.dtype
    ty = _qtype_num(ynum)
    if ty == _QT_NONE:
        raise TypeError(f"QLinearMatMul: y_zero_point (which fixes the output type) must be "
                        f"{_Q_NAMES}, got {ydt}")
    cdef _Small yzp = _zero_point(y_zero_point, ynum, ydt, "y_zero_point", "y")
    cdef _Small a_s = _scale(a_scale, "a_scale", False)
    cdef _Small b_s = _scale(b_scale, "b_scale", False)
    cdef _Small y_s = _scale(y_scale, "y_scale", True)
    return _qmatmul(_QOP_QLINEAR_MATMUL, aa, bb, azp, bzp, a_s, b_s, y_s, yzp, ta, tb, ty, "a", "b",
                    pk)
