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
    """ONNX MatMulInteger (opset 10): ``(A - a_zero_point) @ (B - b_zero_point)`` in int32.

    A, B: uint8 or int8 arrays with numpy.matmul shapes (1-D promotion, broadcast batch
    dims, any strides).  Zero points have their tensor's dtype and are per-tensor (size 1),
    per-row of A (``[M]`` or ``[..., M, 1]``) or per-column of B (``[N]`` or
    ``[..., 1, N]``).  Every product is exact; the int32 sums wrap modulo 2**32.
    """
    cdef PackedB pk = None
    if isinstance(B, PackedB):
        pk = <PackedB>B
        pk._check_call("matmul_integer", b_zero_point=b_zero_point)
        B, b_zero_point = pk.b, pk.b_zero_point
    cdef cnp.ndarray a = _arr(A), b = _arr(B)
    cdef int ta = _qtype(a), tb = _qtype(b)
    if not _is_int8(ta):
        raise TypeError(f"MatMulInteger: A must be {_INT8_NAMES}, got {a.dtype}")
    if not _is_int8(tb):
        raise TypeError(f"MatMulInteger: B must be {_INT8_NAMES}, got {b.dtype}")
    cdef _Small azp = None, bzp = None
    if a_zero_point is not None:
        azp = _zero_point(a_zero_point, cnp.PyArray_TYPE(a), a.dtype, "a_zero_point", "A")
    if b_zero_point is not None:
        bzp = _zero_point(b_zero_point, cnp.PyArray_TYPE(b), b.dtype, "b_zero_point", "B")
    return _qmatmul(_QOP_MATMUL_INTEGER, a, b, azp, bzp, None, None, None, None,
                    ta, tb, GK_QT_U8, "A", "B", pk)


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                   y_zero_point):
    """ONNX QLinearMatMul (opsets 10 and 21).

    a, b, y_zero_point: uint8, int8 or one of the four ml_dtypes float8 types (any mix);
    the output has y_zero_point's dtype.  Scales: float32, float16 or bfloat16, the same
    shape as their zero point, finite; y_scale nonzero.  Integer inputs are accumulated
    exactly in int32 and requantized bit-exactly (DESIGN.md §2); float8 inputs are
    dequantized and accumulated in float32; float8 outputs saturate (ONNX saturate=1).
    """
    cdef PackedB pk = None
    if isinstance(b, PackedB):
        pk = <PackedB>b
        pk._check_call("qlinear_matmul", b_scale=b_scale, b_zero_point=b_zero_point)
        b, b_scale, b_zero_point = pk.b, pk.b_scale, pk.b_zero_point
    cdef cnp.ndarray aa = _arr(a), bb = _arr(b)
    cdef int ta = _qtype(aa), tb = _qtype(bb), ty, ynum
    if ta == _QT_NONE:
        raise TypeError(f"QLinearMatMul: a must be {_Q_NAMES}, got {aa.dtype}")
    if tb == _QT_NONE:
        raise TypeError(f"QLinearMatMul: b must be {_Q_NAMES}, got {bb.dtype}")
    cdef _Small azp = _zero_point(a_zero_point, cnp.PyArray_TYPE(aa), aa.dtype, "a_zero_point", "a")
    cdef _Small bzp = _zero_point(b_zero_point, cnp.PyArray_TYPE(bb), bb.dtype, "b_zero_point", "b")
    if isinstance(y_zero_point, np.generic):
        ynum = _scalar_typenum(y_zero_point)
        ydt = y_zero_point.dtype
    else:
        y_zero_point = _arr(y_zero_point)
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
