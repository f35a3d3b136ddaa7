# MatMulInteger and QLinearMatMul: argument checking, layout normalisation, batch loop.
#
# Everything is checked before any work.  Operands are passed to C as base pointer +
# strides (no copies); zero points / scales as base pointer + row/column stride + batch
# strides aligned to the output's batch dims (0 where broadcast).
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport uint8_t, uint16_t, int32_t
from libc.math cimport isfinite
import ml_dtypes as _mld

cdef extern from "gemmkit/gk_codecs.h" nogil:
    float gk_bf16_to_f32(uint16_t h)
    float gk_f16_to_f32(uint16_t h)

cdef extern from "gemmkit/gk_qgemm_driver.h" nogil:
    enum:
        GK_QOUT_I32
        GK_QOUT_U8
        GK_QOUT_S8
    ctypedef struct gk_qgemm_problem:
        int m, n, k
        int a_type, b_type, y_type
        const uint8_t *a
        ptrdiff_t a_rs, a_cs
        int a_signed
        const uint8_t *b
        ptrdiff_t b_rs, b_cs
        int b_signed
        const uint8_t *a_zp
        ptrdiff_t a_zp_rs
        const uint8_t *b_zp
        ptrdiff_t b_zp_cs
        int32_t out_kind
        const float *a_scale
        ptrdiff_t as_rs
        const float *b_scale
        ptrdiff_t bs_cs
        const float *y_scale
        ptrdiff_t ys_rs, ys_cs
        const uint8_t *y_zp
        ptrdiff_t yzp_rs, yzp_cs
        void *y
        ptrdiff_t ldy
    int gk_qgemm_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p)
    int gk_qlinear_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p)

cdef enum:
    _MAXD = 64          # NPY_MAXDIMS
    _INT_LIMIT = 2147483647

# Operand slots in the batch-stride table.
cdef enum:
    _OP_A = 0
    _OP_B = 1
    _OP_AZP = 2
    _OP_BZP = 3
    _OP_AS = 4
    _OP_BS = 5
    _OP_YS = 6
    _OP_YZP = 7
    _NOPS = 8

_F8_DTYPES = (np.dtype(_mld.float8_e4m3fn), np.dtype(_mld.float8_e4m3fnuz),
              np.dtype(_mld.float8_e5m2), np.dtype(_mld.float8_e5m2fnuz))
cdef int _F8_NUM[4]
for _i in range(4):
    _F8_NUM[_i] = _F8_DTYPES[_i].num
cdef int _BF16_NUM = np.dtype(_mld.bfloat16).num

_INT8_NAMES = "uint8 or int8"
_Q_NAMES = ("uint8, int8, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2 or float8_e5m2fnuz "
            "(ml_dtypes)")


cdef inline int _qtype(cnp.ndarray x):
    """0 uint8, 1 int8, 2..5 float8 formats (gk_qtype), -1 anything else."""
    cdef int t = cnp.PyArray_TYPE(x)
    if t == cnp.NPY_UINT8:
        return 0
    if t == cnp.NPY_INT8:
        return 1
    for i in range(4):
        if t == _F8_NUM[i]:
            return 2 + i
    return -1


cdef inline cnp.ndarray _arr(x):
    if cnp.PyArray_Check(x):
        return <cnp.ndarray>x
    return np.asarray(x)


cdef cnp.ndarray _zero_point(z, cnp.ndarray t, str name, str tname):
    """A zero point as an array of its tensor's dtype (TypeError if the dtype differs).
    Python ints are accepted for uint8/int8 tensors when in range."""
    cdef cnp.ndarray za
    if isinstance(z, int) and not isinstance(z, bool):
        if cnp.PyArray_TYPE(t) == cnp.NPY_UINT8:
            lo, hi = 0, 255
        elif cnp.PyArray_TYPE(t) == cnp.NPY_INT8:
            lo, hi = -128, 127
        else:
            raise TypeError(f"{name} must be an array of {tname}'s dtype {t.dtype}, "
                            f"got a Python int")
        if not lo <= z <= hi:
            raise ValueError(f"{name}={z} is out of range for {tname}'s dtype {t.dtype}")
        return np.asarray(z, dtype=t.dtype)
    za = _arr(z)
    if cnp.PyArray_TYPE(za) != cnp.PyArray_TYPE(t):
        raise TypeError(f"{name} must have the same dtype as {tname} ({t.dtype}), "
                        f"got {za.dtype}")
    return za


cdef class _Scale:
    """A float32 view of a scale: `ptr` points at float32 data laid out like `arr`
    (a size-1 scale is read into `value`, no array is made)."""
    cdef float value
    cdef cnp.ndarray arr
    cdef const float *ptr


cdef _Scale _scale(s, str name, bint is_y):
    cdef _Scale r = _Scale.__new__(_Scale)
    cdef cnp.ndarray sa = _arr(s) if not isinstance(s, float) else np.asarray(s, np.float32)
    cdef int t = cnp.PyArray_TYPE(sa)
    cdef float v
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT16 and t != _BF16_NUM:
        raise TypeError(f"{name} must be float32, float16 or bfloat16, got {sa.dtype}")
    if cnp.PyArray_SIZE(sa) == 1:
        if t == cnp.NPY_FLOAT32:
            v = (<float *>cnp.PyArray_DATA(sa))[0]
        elif t == cnp.NPY_FLOAT16:
            v = gk_f16_to_f32((<uint16_t *>cnp.PyArray_DATA(sa))[0])
        else:
            v = gk_bf16_to_f32((<uint16_t *>cnp.PyArray_DATA(sa))[0])
        if not isfinite(v) or (is_y and v == 0):
            raise ValueError(f"{name} must be finite{' and nonzero' if is_y else ''}, got {v}")
        r.value = v
        r.arr = sa
        r.ptr = &r.value
        return r
    # Widening f16/bf16 -> f32 is exact, so NumPy's cast is the definition.
    r.arr = np.ascontiguousarray(sa, dtype=np.float32)
    if r.arr.size and not np.isfinite(r.arr).all():
        raise ValueError(f"{name} must be finite, got non-finite values")
    if is_y and (r.arr == 0).any():
        raise ValueError(f"{name} must be nonzero, got a zero")
    r.ptr = <const float *>cnp.PyArray_DATA(r.arr)
    return r


cdef inline tuple _pyshape(cnp.ndarray x):
    return (<object>x).shape


cdef str _shape_str(tuple s):
    return "(" + ", ".join(str(x) for x in s) + (",)" if len(s) == 1 else ")")


cdef int _layout(cnp.ndarray z, int side, str name, str who, Py_ssize_t M, Py_ssize_t N,
                 int nb, Py_ssize_t *bshape, ptrdiff_t *rs, ptrdiff_t *cs,
                 Py_ssize_t *bst) except -1:
    """Zero-point/scale layout.  side 0: rows of a (per-tensor, [M], [..., M, 1]);
    side 1: columns of b (per-tensor, [N], [..., 1, N]); side 2: y ([M] per row, or
    N-D broadcastable to [..., M, N]).  rs/cs in elements, bst in bytes per output
    batch dim; 0 where broadcast."""
    cdef int nd = cnp.PyArray_NDIM(z), lead, i
    cdef Py_ssize_t isz = cnp.PyArray_ITEMSIZE(z), zr, zc, d
    cdef cnp.npy_intp *shp = cnp.PyArray_DIMS(z)
    cdef cnp.npy_intp *st = cnp.PyArray_STRIDES(z)
    rs[0] = 0
    cs[0] = 0
    for i in range(nb):
        bst[i] = 0
    if cnp.PyArray_SIZE(z) == 1:
        return 0
    if side == 0:
        expect = f"per-tensor (shape () or (1,)), per-row (M,) = ({M},) or N-D broadcastable to [..., M, 1]"
    elif side == 1:
        expect = f"per-tensor (shape () or (1,)), per-column (N,) = ({N},) or N-D broadcastable to [..., 1, N]"
    else:
        expect = f"per-tensor (shape () or (1,)), per-row (M,) = ({M},) or N-D broadcastable to [..., M, N]"
    bad = ValueError(f"{name} has shape {_shape_str(_pyshape(z))}; expected {expect} "
                     f"for {who}")
    if nd == 1:
        if side == 1:
            if shp[0] != N:
                raise bad
            cs[0] = st[0] // isz
        else:
            if shp[0] != M:
                raise bad
            rs[0] = st[0] // isz
        return 0
    if nd == 0:
        raise bad
    zr = shp[nd - 2]
    zc = shp[nd - 1]
    if (zr != M and zr != 1) or (zc != N and zc != 1):
        raise bad
    if (side == 0 and zc != 1) or (side == 1 and zr != 1):
        raise bad
    if zr > 1:
        rs[0] = st[nd - 2] // isz
    if zc > 1:
        cs[0] = st[nd - 1] // isz
    lead = nd - 2
    if lead > nb:
        raise bad
    for i in range(lead):
        d = shp[i]
        if d != 1 and d != bshape[nb - lead + i]:
            raise bad
        if d != 1:
            bst[nb - lead + i] = st[i]
    return 0


cdef int _check_batch(cnp.ndarray x, int nb, Py_ssize_t *bshape, Py_ssize_t *bst) except -1:
    """Batch strides (bytes) of operand x aligned right to the output batch dims."""
    cdef int nd = cnp.PyArray_NDIM(x), lead = nd - 2 if nd > 2 else 0, i
    cdef cnp.npy_intp *shp = cnp.PyArray_DIMS(x)
    cdef cnp.npy_intp *st = cnp.PyArray_STRIDES(x)
    for i in range(nb):
        bst[i] = 0
    for i in range(lead):
        if shp[i] != 1:
            bst[nb - lead + i] = st[i]
    return 0


cdef tuple _batch_shape(cnp.ndarray a, cnp.ndarray b, str an, str bn):
    cdef int nda = cnp.PyArray_NDIM(a), ndb = cnp.PyArray_NDIM(b)
    cdef tuple sa = _pyshape(a)[:nda - 2] if nda > 2 else ()
    cdef tuple sb = _pyshape(b)[:ndb - 2] if ndb > 2 else ()
    if sa == sb:
        return sa
    try:
        return np.broadcast_shapes(sa, sb)
    except ValueError:
        raise ValueError(f"batch dimensions of {an} {_shape_str(_pyshape(a))} and {bn} "
                         f"{_shape_str(_pyshape(b))} do not broadcast") from None


cdef object _qmatmul(str op, cnp.ndarray a, cnp.ndarray b, azp, bzp,
                     _Scale a_s, _Scale b_s, _Scale y_s, cnp.ndarray yzp,
                     int ta, int tb, int ty, str an, str bn):
    """Shared shape logic, output allocation and the nogil batch loop."""
    cdef int nda = cnp.PyArray_NDIM(a), ndb = cnp.PyArray_NDIM(b)
    if nda == 0:
        raise ValueError(f"{op}: {an} must have at least 1 dimension, got shape ()")
    if ndb == 0:
        raise ValueError(f"{op}: {bn} must have at least 1 dimension, got shape ()")
    cdef cnp.npy_intp *sha = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp *shb = cnp.PyArray_DIMS(b)
    cdef cnp.npy_intp *sta = cnp.PyArray_STRIDES(a)
    cdef cnp.npy_intp *stb = cnp.PyArray_STRIDES(b)
    cdef Py_ssize_t M, K, N, Kb
    cdef ptrdiff_t a_rs, a_cs, b_rs, b_cs
    if nda == 1:
        M, K, a_rs, a_cs = 1, sha[0], 0, sta[0]
    else:
        M, K, a_rs, a_cs = sha[nda - 2], sha[nda - 1], sta[nda - 2], sta[nda - 1]
    if ndb == 1:
        Kb, N, b_rs, b_cs = shb[0], 1, stb[0], 1
    else:
        Kb, N, b_rs, b_cs = shb[ndb - 2], shb[ndb - 1], stb[ndb - 2], stb[ndb - 1]
    if K != Kb:
        raise ValueError(f"{op}: inner dimensions differ: {an} has shape "
                         f"{_shape_str(_pyshape(a))} (K={K}), {bn} has shape "
                         f"{_shape_str(_pyshape(b))} (K={Kb})")
    if M > _INT_LIMIT or N > _INT_LIMIT or K > _INT_LIMIT:
        raise ValueError(f"{op}: M, N and K must each be below 2**31, got "
                         f"{an} {_shape_str(_pyshape(a))}, {bn} {_shape_str(_pyshape(b))}")
    if N == 1:
        b_cs = 1    # a single column: its stride is never used; lets small-M paths run
    cdef tuple bshape_t = _batch_shape(a, b, an, bn)
    cdef int nb = len(bshape_t), i, op_i
    cdef Py_ssize_t bshape[_MAXD]
    cdef Py_ssize_t bst[_NOPS][_MAXD]
    cdef Py_ssize_t nbatch = 1
    for i in range(nb):
        bshape[i] = bshape_t[i]
        nbatch *= bshape[i]
    who = f"{an} {_shape_str(_pyshape(a))} @ {bn} {_shape_str(_pyshape(b))}"
    _check_batch(a, nb, bshape, bst[_OP_A])
    _check_batch(b, nb, bshape, bst[_OP_B])

    cdef gk_qgemm_problem p
    p.m = <int>M
    p.n = <int>N
    p.k = <int>K
    p.a_type = ta
    p.b_type = tb
    p.y_type = ty
    p.a = <const uint8_t *>cnp.PyArray_DATA(a)
    p.a_rs = a_rs
    p.a_cs = a_cs
    p.a_signed = ta == 1
    p.b = <const uint8_t *>cnp.PyArray_DATA(b)
    p.b_rs = b_rs
    p.b_cs = b_cs
    p.b_signed = tb == 1
    p.a_zp = NULL
    p.b_zp = NULL
    p.a_zp_rs = 0
    p.b_zp_cs = 0
    p.a_scale = NULL
    p.b_scale = NULL
    p.y_scale = NULL
    p.y_zp = NULL
    p.as_rs = p.bs_cs = p.ys_rs = p.ys_cs = p.yzp_rs = p.yzp_cs = 0
    for op_i in range(_OP_AZP, _NOPS):
        for i in range(nb):
            bst[op_i][i] = 0
    cdef ptrdiff_t dummy
    cdef cnp.ndarray za, zb
    if azp is not None:
        za = <cnp.ndarray>azp
        _layout(za, 0, "a_zero_point", who, M, N, nb, bshape, &p.a_zp_rs, &dummy, bst[_OP_AZP])
        p.a_zp = <const uint8_t *>cnp.PyArray_DATA(za)
    if bzp is not None:
        zb = <cnp.ndarray>bzp
        _layout(zb, 1, "b_zero_point", who, M, N, nb, bshape, &dummy, &p.b_zp_cs, bst[_OP_BZP])
        p.b_zp = <const uint8_t *>cnp.PyArray_DATA(zb)
    if ty == -2:
        p.out_kind = GK_QOUT_I32
        dtype = np.int32
    else:
        p.out_kind = GK_QOUT_U8 if ty == 0 else GK_QOUT_S8
        dtype = yzp.dtype
        _same_shape(a_s.arr, azp, "a_scale", "a_zero_point")
        _same_shape(b_s.arr, bzp, "b_scale", "b_zero_point")
        _same_shape(y_s.arr, yzp, "y_scale", "y_zero_point")
        _layout(a_s.arr, 0, "a_scale", who, M, N, nb, bshape, &p.as_rs, &dummy, bst[_OP_AS])
        _layout(b_s.arr, 1, "b_scale", who, M, N, nb, bshape, &dummy, &p.bs_cs, bst[_OP_BS])
        _layout(y_s.arr, 2, "y_scale", who, M, N, nb, bshape, &p.ys_rs, &p.ys_cs, bst[_OP_YS])
        _layout(yzp, 2, "y_zero_point", who, M, N, nb, bshape, &p.yzp_rs, &p.yzp_cs, bst[_OP_YZP])
        p.a_scale = a_s.ptr
        p.b_scale = b_s.ptr
        p.y_scale = y_s.ptr
        p.y_zp = <const uint8_t *>cnp.PyArray_DATA(yzp)

    out_shape = bshape_t + ((M,) if nda > 1 else ()) + ((N,) if ndb > 1 else ())
    cdef cnp.ndarray y = np.empty(out_shape, dtype=dtype)
    if nbatch == 0 or M == 0 or N == 0:
        return y
    cdef Py_ssize_t ysz = cnp.PyArray_ITEMSIZE(y)
    p.ldy = N
    cdef const gk_qgemm_kernel *kern = gk_qgemm_active()
    cdef gk_qgemm_problem q = p
    cdef char *ybase = <char *>cnp.PyArray_DATA(y)
    cdef Py_ssize_t idx[_MAXD]
    cdef Py_ssize_t t
    cdef Py_ssize_t off[_NOPS]
    cdef int rc = 0, is_int = op == "MatMulInteger"
    with nogil:
        for i in range(nb):
            idx[i] = 0
        for t in range(nbatch):
            for op_i in range(_NOPS):
                off[op_i] = 0
            for i in range(nb):
                for op_i in range(_NOPS):
                    off[op_i] += idx[i] * bst[op_i][i]
            q.a = p.a + off[_OP_A]
            q.b = p.b + off[_OP_B]
            if p.a_zp != NULL:
                q.a_zp = p.a_zp + off[_OP_AZP]
            if p.b_zp != NULL:
                q.b_zp = p.b_zp + off[_OP_BZP]
            if not is_int:
                q.a_scale = <const float *>(<const char *>p.a_scale + off[_OP_AS])
                q.b_scale = <const float *>(<const char *>p.b_scale + off[_OP_BS])
                q.y_scale = <const float *>(<const char *>p.y_scale + off[_OP_YS])
                q.y_zp = p.y_zp + off[_OP_YZP]
            q.y = ybase + t * M * N * ysz
            rc = gk_qgemm_run(kern, &q) if is_int else gk_qlinear_run(kern, &q)
            if rc != 0:
                break
            i = nb - 1
            while i >= 0:
                idx[i] += 1
                if idx[i] < bshape[i]:
                    break
                idx[i] = 0
                i -= 1
    if rc != 0:
        raise MemoryError(f"{op}: out of memory for packing buffers ({who})")
    return y


cdef int _same_shape(cnp.ndarray s, z, str sn, str zn) except -1:
    cdef cnp.ndarray za = <cnp.ndarray>z
    if cnp.PyArray_SIZE(s) == 1 and cnp.PyArray_SIZE(za) == 1:
        return 0
    if _pyshape(s) != _pyshape(za):
        raise ValueError(f"{sn} and {zn} must have the same shape, got "
                         f"{_shape_str(_pyshape(s))} and {_shape_str(_pyshape(za))}")
    return 0


def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    """ONNX MatMulInteger (opset 10): ``(A - a_zero_point) @ (B - b_zero_point)`` in int32.

    A, B: uint8 or int8 arrays with numpy.matmul shapes (1-D promotion, broadcast batch
    dims, any strides).  Zero points have their tensor's dtype and are per-tensor (size 1),
    per-row of A (``[M]`` or ``[..., M, 1]``) or per-column of B (``[N]`` or
    ``[..., 1, N]``).  Every product is exact; the int32 sums wrap modulo 2**32.
    """
    cdef cnp.ndarray a = _arr(A), b = _arr(B)
    cdef int ta = _qtype(a), tb = _qtype(b)
    if ta != 0 and ta != 1:
        raise TypeError(f"MatMulInteger: A must be {_INT8_NAMES}, got {a.dtype}")
    if tb != 0 and tb != 1:
        raise TypeError(f"MatMulInteger: B must be {_INT8_NAMES}, got {b.dtype}")
    azp = None if a_zero_point is None else _zero_point(a_zero_point, a, "a_zero_point", "A")
    bzp = None if b_zero_point is None else _zero_point(b_zero_point, b, "b_zero_point", "B")
    return _qmatmul("MatMulInteger", a, b, azp, bzp, None, None, None, None,
                    ta, tb, -2, "A", "B")


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                   y_zero_point):
    """ONNX QLinearMatMul (opsets 10 and 21).

    a, b, y_zero_point: uint8, int8 or one of the four ml_dtypes float8 types (any mix);
    the output has y_zero_point's dtype.  Scales: float32, float16 or bfloat16, the same
    shape as their zero point, finite; y_scale nonzero.  Integer inputs are accumulated
    exactly in int32 and requantized bit-exactly (DESIGN.md §2); float8 inputs are
    dequantized and accumulated in float32; float8 outputs saturate (ONNX saturate=1).
    """
    cdef cnp.ndarray aa = _arr(a), bb = _arr(b), yz
    cdef int ta = _qtype(aa), tb = _qtype(bb), ty
    if ta < 0:
        raise TypeError(f"QLinearMatMul: a must be {_Q_NAMES}, got {aa.dtype}")
    if tb < 0:
        raise TypeError(f"QLinearMatMul: b must be {_Q_NAMES}, got {bb.dtype}")
    azp = _zero_point(a_zero_point, aa, "a_zero_point", "a")
    bzp = _zero_point(b_zero_point, bb, "b_zero_point", "b")
    yz = _arr(y_zero_point)
    ty = _qtype(yz)
    if ty < 0:
        raise TypeError(f"QLinearMatMul: y_zero_point (which fixes the output type) must be "
                        f"{_Q_NAMES}, got {yz.dtype}")
    cdef _Scale a_s = _scale(a_scale, "a_scale", False)
    cdef _Scale b_s = _scale(b_scale, "b_scale", False)
    cdef _Scale y_s = _scale(y_scale, "y_scale", True)
    return _qmatmul("QLinearMatMul", aa, bb, azp, bzp, a_s, b_s, y_s, yz, ta, tb, ty, "a", "b")
