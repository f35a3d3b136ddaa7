# MatMulInteger and QLinearMatMul argument normalisation: operand types, zero points and
# scales, numpy.matmul shapes, and the layout of every operand of the batched problem
# handed to C (gk_qgemm_problem + gk_qbatch, gk_qgemm_driver.h).
#
# Everything is checked before any work.  Operands are passed to C as base pointer +
# strides (no copies); zero points / scales as base pointer + row/column stride + batch
# strides aligned to the output's batch dims (0 where broadcast).  Included by
# _qgemm.pxi after its C declarations.
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport uint8_t, uint16_t
from libc.math cimport isfinite
import ml_dtypes as _mld

cdef enum:
    _MAXD = 64          # NPY_MAXDIMS (== GK_QBATCH_MAXD)
    _INT_LIMIT = 2147483647

# The op of a call (messages and the C entry point).
cdef enum _QOp:
    _QOP_MATMUL_INTEGER
    _QOP_QLINEAR_MATMUL

cdef tuple _QOP_NAMES = ("MatMulInteger", "QLinearMatMul")

# What a zero point or scale belongs to (_layout): rows of a (per-tensor, [M],
# [..., M, 1]), columns of b (per-tensor, [N], [..., 1, N]) or the output y ([M] per row,
# or N-D broadcastable to [..., M, N]).
cdef enum _Side:
    _SIDE_A_ROWS
    _SIDE_B_COLS
    _SIDE_Y

# _qtype_num of a dtype gemmkit does not take as a quantized operand.
cdef enum:
    _QT_NONE = -1

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
    return _qtype_num(cnp.PyArray_TYPE(x))


cdef inline int _qtype_num(int t):
    """The gk_qtype of NumPy type number t (GK_QT_U8, GK_QT_S8, GK_QT_F8 + format), or
    _QT_NONE."""
    if t == cnp.NPY_UINT8:
        return GK_QT_U8
    if t == cnp.NPY_INT8:
        return GK_QT_S8
    for i in range(4):
        if t == _F8_NUM[i]:
            return GK_QT_F8 + i
    return _QT_NONE


cdef inline bint _is_int8(int qt):
    return qt == GK_QT_U8 or qt == GK_QT_S8


_MASKED_ARRAY = np.ma.MaskedArray


cdef int _refuse_masked(object x, str name) except -1:
    """ValueError if x (an ndarray subclass) is a NumPy masked array with a masked element:
    the ops compute on plain data and return plain arrays, so the mask would be dropped
    silently (the masked elements' data used as values)."""
    if isinstance(x, _MASKED_ARRAY) and np.ma.is_masked(x):
        n_masked = str(np.ma.count_masked(x))
        arg = name.rpartition(": ")[2]
        raise ValueError(name + " is a masked array with " + n_masked + " masked element(s) "
                         "of " + str(np.size(x)) + "; gemmkit does not carry masks: pass "
                         + arg + ".filled(value) or " + arg + ".data")
    return 0


cdef inline cnp.ndarray _arr(x, str name):
    """x as an ndarray: itself when it is one (a subclass after _refuse_masked), else
    np.asarray(x).  name: the argument, for messages."""
    if cnp.PyArray_CheckExact(x):
        return <cnp.ndarray>x
    if cnp.PyArray_Check(x):
        _refuse_masked(x, name)
        return <cnp.ndarray>x
    return np.asarray(x)


cdef class _Small:
    """A zero point or scale: a size-1 value is held in `value`/`fvalue` (per-tensor, no
    array is made); a larger one keeps its array (`arr`, float32 for scales).  `orig`
    is what the caller passed, for messages."""
    cdef uint8_t value
    cdef float fvalue
    cdef object arr
    cdef object orig
    cdef const void *ptr
    cdef int ndim      # -1 for a Python int/float (no shape of its own)


# NumPy scalar types of the per-call fast paths, looked up once (a module attribute lookup
# and PyArray_DescrFromScalar's walk over NumPy's scalar types were a third of a small
# QLinearMatMul call's argument handling)
cdef object _NP_GENERIC = np.generic
cdef object _NP_U8 = np.uint8, _NP_I8 = np.int8, _NP_F32 = np.float32, _NP_F16 = np.float16


cdef inline int _scalar_typenum(x):
    cdef object t = type(x)
    if t is _NP_U8:
        return cnp.NPY_UINT8
    if t is _NP_I8:
        return cnp.NPY_INT8
    if t is _NP_F32:
        return cnp.NPY_FLOAT32
    if t is _NP_F16:
        return cnp.NPY_FLOAT16
    cdef cnp.dtype d = cnp.PyArray_DescrFromScalar(x)
    return d.type_num


cdef str _given(x, cnp.ndarray xa):
    """What was passed, for a TypeError: the array's dtype, or for a value NumPy could only
    hold as an object (None, a Fraction, another library's object) that value's type."""
    if x is None:
        return "None"
    if cnp.PyArray_TYPE(xa) == cnp.NPY_OBJECT and not cnp.PyArray_Check(x):
        return f"a {type(x).__module__}.{type(x).__qualname__}".replace("a builtins.", "a ")
    return str(xa.dtype)


cdef _Small _zero_point(z, int tt, tdtype, str name, str tname):
    """A zero point of its tensor's dtype (type number tt; TypeError if it differs).
    Python ints are accepted for uint8/int8 tensors when in range."""
    cdef _Small r = _Small.__new__(_Small)
    cdef cnp.ndarray za
    r.orig = z
    r.ptr = &r.value
    r.ndim = 0
    if isinstance(z, _NP_GENERIC):
        if _scalar_typenum(z) != tt:
            raise TypeError(f"{name} must have the same dtype as {tname} ({tdtype}), "
                            f"got {z.dtype}")
        if tt == cnp.NPY_UINT8 or tt == cnp.NPY_INT8:
            cnp.PyArray_ScalarAsCtype(z, &r.value)
            return r
        # NumPy's C scalar helpers misread user-defined (ml_dtypes float8) scalars:
        # read the value as the 0-d array it stands for.
        z = np.asarray(z)
    if isinstance(z, int) and not isinstance(z, bool):
        if tt == cnp.NPY_UINT8:
            lo, hi = 0, 255
        elif tt == cnp.NPY_INT8:
            lo, hi = -128, 127
        else:
            raise TypeError(f"{name} must be an array of {tname}'s dtype {tdtype}, "
                            f"got a Python int")
        if not lo <= z <= hi:
            raise ValueError(f"{name}={_short_repr(z)} is out of range for {tname}'s dtype {tdtype}")
        r.value = <uint8_t>(z & 0xff)
        r.ndim = -1
        return r
    za = _arr(z, name)
    r.ndim = cnp.PyArray_NDIM(za)
    if cnp.PyArray_TYPE(za) != tt:
        raise TypeError(f"{name} must have the same dtype as {tname} ({tdtype}), "
                        f"got {_given(z, za)}")
    if cnp.PyArray_SIZE(za) == 1:
        r.value = (<uint8_t *>cnp.PyArray_DATA(za))[0]
        return r
    r.arr = za
    r.ptr = cnp.PyArray_DATA(za)
    return r


cdef double _py_real(v, str name) except? -1.0:
    """A Python int/float as a C double; a ValueError (naming the argument) when it
    does not fit."""
    try:
        return <double>v
    except OverflowError:
        raise ValueError(f"{name}={_short_repr(v)} is out of range for a float32 scale") from None


cdef str _short_repr(v):
    cdef str r = repr(v)
    return r if len(r) <= 40 else r[:18] + "..." + r[len(r) - 18:]


cdef inline float _check_scale_value(float v, str name, bint is_y) except? -1.0:
    if not isfinite(v) or (is_y and v == 0):
        raise ValueError(f"{name} must be finite{' and nonzero' if is_y else ''}, got {v}")
    return v


cdef _Small _scale(s, str name, bint is_y):
    """A scale as float32 (float16/bfloat16 widened exactly)."""
    cdef _Small r = _Small.__new__(_Small)
    cdef cnp.ndarray sa
    cdef int t
    cdef uint16_t h
    r.orig = s
    r.ptr = &r.fvalue
    r.ndim = 0
    if isinstance(s, _NP_GENERIC):  # before float: np.float64 is a float subclass
        t = _scalar_typenum(s)
        if t == cnp.NPY_FLOAT32:
            cnp.PyArray_ScalarAsCtype(s, &r.fvalue)
        elif t == cnp.NPY_FLOAT16:
            cnp.PyArray_ScalarAsCtype(s, &h)
            r.fvalue = gk_f16_to_f32(h)
        elif t != _BF16_NUM:
            raise TypeError(f"{name} must be float32, float16 or bfloat16, got {s.dtype}")
        if t != _BF16_NUM:
            _check_scale_value(r.fvalue, name, is_y)
            return r
        # NumPy's C scalar helpers misread user-defined (ml_dtypes bfloat16) scalars:
        # read the value as the 0-d array it stands for.
        s = np.asarray(s)
    elif isinstance(s, float) or (isinstance(s, int) and not isinstance(s, bool)):
        # a Python number is a weak scalar: rounded to float32 like NumPy would
        r.fvalue = _check_scale_value(<float>_py_real(s, name), name, is_y)
        r.ndim = -1
        return r
    sa = _arr(s, name)
    r.ndim = cnp.PyArray_NDIM(sa)
    t = cnp.PyArray_TYPE(sa)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT16 and t != _BF16_NUM:
        raise TypeError(f"{name} must be float32, float16 or bfloat16, got {_given(s, sa)}")
    if cnp.PyArray_SIZE(sa) == 1:
        if not (cnp.PyArray_ISNOTSWAPPED(sa) and cnp.PyArray_ISALIGNED(sa)):
            # a fresh copy: ascontiguousarray hands back the same unaligned array
            sa = np.array(sa, dtype=sa.dtype.newbyteorder("="), copy=True)
        if t == cnp.NPY_FLOAT32:
            r.fvalue = (<float *>cnp.PyArray_DATA(sa))[0]
        else:
            h = (<uint16_t *>cnp.PyArray_DATA(sa))[0]
            r.fvalue = gk_f16_to_f32(h) if t == cnp.NPY_FLOAT16 else gk_bf16_to_f32(h)
        _check_scale_value(r.fvalue, name, is_y)
        return r
    # Widening f16/bf16 -> f32 is exact, so NumPy's cast is the definition.
    # C-contiguous, aligned native float32 (the kernels read it as float *; an unaligned
    # view that is already contiguous float32 is copied too)
    r.arr = np.require(sa, dtype=np.float32, requirements=["C", "A"])
    if not np.isfinite(r.arr).all():
        raise ValueError(f"{name} must be finite, got non-finite values")
    if is_y and (r.arr == 0).any():
        raise ValueError(f"{name} must be nonzero, got a zero")
    r.ptr = cnp.PyArray_DATA(r.arr)
    return r


cdef int _same_shape(_Small s, _Small z, str sn, str zn) except -1:
    """ONNX: a scale has its zero point's shape.  A Python int/float (no shape of its
    own) matches any size-1 partner."""
    if s.arr is None and z.arr is None:
        # both size 1: shapes (1,)*ndim, equal iff the ndims are
        if s.ndim == -1 or z.ndim == -1 or s.ndim == z.ndim:
            return 0
    ss, zs = np.shape(s.orig), np.shape(z.orig)
    if ss != zs:
        raise ValueError(f"{sn} and {zn} must have the same shape, got "
                         f"{_shape_str(ss)} and {_shape_str(zs)}")
    return 0


cdef inline tuple _pyshape(cnp.ndarray x):
    return (<object>x).shape


cdef str _shape_str(tuple s):
    return "(" + ", ".join(str(x) for x in s) + (",)" if len(s) == 1 else ")")


cdef str _who(cnp.ndarray a, cnp.ndarray b, str an, str bn):
    return f"{an} {_shape_str(_pyshape(a))} @ {bn} {_shape_str(_pyshape(b))}"


cdef tuple _out_shape(cnp.ndarray a, cnp.ndarray b, Py_ssize_t M, Py_ssize_t N, int nb,
                      const ptrdiff_t *bshape):
    """The shape of the output numpy.matmul gives for a @ b (batch dims bshape[0, nb))."""
    out = [bshape[i] for i in range(nb)]
    if cnp.PyArray_NDIM(a) > 1:
        out.append(M)
    if cnp.PyArray_NDIM(b) > 1:
        out.append(N)
    return tuple(out)


cdef int _layout(cnp.ndarray z, _Side side, str name, tuple ctx, Py_ssize_t M, Py_ssize_t N,
                 int nb, const ptrdiff_t *bshape, ptrdiff_t *rs, ptrdiff_t *cs,
                 ptrdiff_t *bst) except -1:
    """Zero-point/scale layout of one side (see _Side).  rs/cs in elements, bst in bytes
    per output batch dim; 0 where broadcast.

    The output's own parameters (_SIDE_Y) broadcast against the output as it is returned:
    where numpy.matmul's promotion of a 1-D a (b) leaves the output without its M (N) dim,
    a size-1 dim is put in its place in z's shape first, so that e.g. y_scale (B, 1) for
    a [B, M, K] @ b [K] (output [B, M]) is per batch, not per row."""
    cdef int nd = cnp.PyArray_NDIM(z), lead, i
    cdef Py_ssize_t isz = cnp.PyArray_ITEMSIZE(z), zr, zc, d
    cdef cnp.npy_intp *shp = cnp.PyArray_DIMS(z)
    cdef cnp.npy_intp *st = cnp.PyArray_STRIDES(z)
    cdef cnp.npy_intp eshp[_MAXD + 2]
    cdef cnp.npy_intp est[_MAXD + 2]
    cdef bint no_m, no_n
    cdef int keep, j
    rs[0] = 0
    cs[0] = 0
    for i in range(nb):
        bst[i] = 0
    if cnp.PyArray_SIZE(z) == 1:
        return 0
    if side == _SIDE_Y and nd >= 1:
        no_m = cnp.PyArray_NDIM(<cnp.ndarray>ctx[0]) == 1
        no_n = cnp.PyArray_NDIM(<cnp.ndarray>ctx[1]) == 1
        if no_m or no_n:
            # z's dims with a size-1 dim where the output has no M (before z's last dim,
            # which is then N's) and no N (after all of them)
            keep = nd - 1 if no_m and not no_n else nd
            for i in range(keep):
                eshp[i] = shp[i]
                est[i] = st[i]
            j = keep
            if no_m:
                eshp[j] = 1
                est[j] = 0
                j += 1
                if not no_n:
                    eshp[j] = shp[nd - 1]
                    est[j] = st[nd - 1]
                    j += 1
            if no_n:
                eshp[j] = 1
                est[j] = 0
                j += 1
            shp = eshp
            st = est
            nd = j
    if nd == 1 and shp[0] == (N if side == _SIDE_B_COLS else M):
        if side == _SIDE_B_COLS:
            cs[0] = st[0] // isz
        else:
            rs[0] = st[0] // isz
        return 0
    if side == _SIDE_A_ROWS:
        expect = f"per-tensor (shape () or (1,)), per-row (M,) = ({M},) or N-D broadcastable to [..., M, 1]"
    elif side == _SIDE_B_COLS:
        expect = f"per-tensor (shape () or (1,)), per-column (N,) = ({N},) or N-D broadcastable to [..., 1, N]"
    elif cnp.PyArray_NDIM(<cnp.ndarray>ctx[0]) == 1 or cnp.PyArray_NDIM(<cnp.ndarray>ctx[1]) == 1:
        expect = (f"per-tensor (shape () or (1,)) or broadcastable to the output "
                  f"{_shape_str(_out_shape(ctx[0], ctx[1], M, N, nb, bshape))}")
    else:
        expect = f"per-tensor (shape () or (1,)), per-row (M,) = ({M},) or N-D broadcastable to [..., M, N]"
    bad = ValueError(f"{name} has shape {_shape_str(_pyshape(z))}; expected {expect} "
                     f"for {_who(ctx[0], ctx[1], ctx[2], ctx[3])}")
    if nd <= 1:
        raise bad
    zr = shp[nd - 2]
    zc = shp[nd - 1]
    if (zr != M and zr != 1) or (zc != N and zc != 1):
        raise bad
    if (side == _SIDE_A_ROWS and zc != 1) or (side == _SIDE_B_COLS and zr != 1):
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


cdef int _batch_strides(cnp.ndarray x, int nb, ptrdiff_t *bst) except -1:
    """Batch strides (bytes) of operand x aligned right to the output batch dims (whose
    broadcast _batch_shape has checked)."""
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
    """numpy.matmul's broadcast of the batch dims (all but the last two), for any rank
    NumPy arrays can have (np.broadcast_shapes stops at 32)."""
    cdef int nda = cnp.PyArray_NDIM(a), ndb = cnp.PyArray_NDIM(b)
    cdef int la = nda - 2 if nda > 2 else 0, lb = ndb - 2 if ndb > 2 else 0
    cdef int nb = la if la > lb else lb, i
    cdef cnp.npy_intp *sha = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp *shb = cnp.PyArray_DIMS(b)
    cdef cnp.npy_intp da, db
    out = [0] * nb
    for i in range(nb):
        da = sha[i - (nb - la)] if i >= nb - la else 1
        db = shb[i - (nb - lb)] if i >= nb - lb else 1
        if da != db and da != 1 and db != 1:
            raise ValueError(f"batch dimensions of {an} {_shape_str(_pyshape(a))} and {bn} "
                             f"{_shape_str(_pyshape(b))} do not broadcast")
        out[i] = db if da == 1 else da
    return tuple(out)


cdef int _operands(_QOp op, cnp.ndarray a, cnp.ndarray b, int ta, int tb, str an, str bn,
                   gk_qgemm_problem *p, gk_qbatch *bt) except -1:
    """numpy.matmul's shapes of a @ b (1-D promotion, broadcast batch dims): m, n, k,
    a, b and their strides in p; the output's batch shape and a's and b's batch strides
    in bt.  Every other pointer of p is NULL and every other batch stride 0."""
    cdef int nda = cnp.PyArray_NDIM(a), ndb = cnp.PyArray_NDIM(b)
    if nda == 0:
        raise ValueError(f"{_QOP_NAMES[op]}: {an} must have at least 1 dimension, got shape ()")
    if ndb == 0:
        raise ValueError(f"{_QOP_NAMES[op]}: {bn} must have at least 1 dimension, got shape ()")
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
        raise ValueError(f"{_QOP_NAMES[op]}: inner dimensions differ: {an} has shape "
                         f"{_shape_str(_pyshape(a))} (K={K}), {bn} has shape "
                         f"{_shape_str(_pyshape(b))} (K={Kb})")
    if M > _INT_LIMIT or N > _INT_LIMIT or K > _INT_LIMIT:
        raise ValueError(f"{_QOP_NAMES[op]}: M, N and K must each be below 2**31, got "
                         f"{an} {_shape_str(_pyshape(a))}, {bn} {_shape_str(_pyshape(b))}")
    if N == 1:
        b_cs = 1    # a single column: its stride is never used; lets small-M paths run
    cdef tuple bshape = _batch_shape(a, b, an, bn) if nda > 2 or ndb > 2 else ()
    cdef int nb = len(bshape), i, x
    bt.ndim = nb
    for i in range(nb):
        bt.shape[i] = bshape[i]
    for x in range(GK_QB_NOPS):
        for i in range(nb):
            bt.stride[x][i] = 0
    _batch_strides(a, nb, bt.stride[GK_QB_A])
    _batch_strides(b, nb, bt.stride[GK_QB_B])
    p.m = <int>M
    p.n = <int>N
    p.k = <int>K
    p.a_type = ta
    p.b_type = tb
    p.a = <const uint8_t *>cnp.PyArray_DATA(a)
    p.a_rs = a_rs
    p.a_cs = a_cs
    p.a_signed = ta == GK_QT_S8
    p.b = <const uint8_t *>cnp.PyArray_DATA(b)
    p.b_rs = b_rs
    p.b_cs = b_cs
    p.b_signed = tb == GK_QT_S8
    p.a_zp = NULL
    p.b_zp = NULL
    p.a_zp_rs = 0
    p.b_zp_cs = 0
    p.a_scale = NULL
    p.b_scale = NULL
    p.y_scale = NULL
    p.y_zp = NULL
    p.as_rs = p.bs_cs = p.ys_rs = p.ys_cs = p.yzp_rs = p.yzp_cs = 0
    p.y = NULL
    p.ldy = N
    return 0


cdef int _zero_points(gk_qgemm_problem *p, gk_qbatch *bt, _Small azp, _Small bzp,
                      tuple ctx) except -1:
    """a's and b's zero points (None: 0) into p and bt."""
    cdef ptrdiff_t unused
    if azp is not None:
        if azp.arr is not None:
            _layout(azp.arr, _SIDE_A_ROWS, "a_zero_point", ctx, p.m, p.n, bt.ndim, bt.shape,
                    &p.a_zp_rs, &unused, bt.stride[GK_QB_AZP])
        p.a_zp = <const uint8_t *>azp.ptr
    if bzp is not None:
        if bzp.arr is not None:
            _layout(bzp.arr, _SIDE_B_COLS, "b_zero_point", ctx, p.m, p.n, bt.ndim, bt.shape,
                    &unused, &p.b_zp_cs, bt.stride[GK_QB_BZP])
        p.b_zp = <const uint8_t *>bzp.ptr
    return 0


cdef int _requant(gk_qgemm_problem *p, gk_qbatch *bt, _Small azp, _Small bzp, _Small a_s,
                  _Small b_s, _Small y_s, _Small yzp, tuple ctx) except -1:
    """QLinearMatMul's scales and output zero point into p and bt."""
    cdef ptrdiff_t unused
    _same_shape(a_s, azp, "a_scale", "a_zero_point")
    _same_shape(b_s, bzp, "b_scale", "b_zero_point")
    _same_shape(y_s, yzp, "y_scale", "y_zero_point")
    if a_s.arr is not None:
        _layout(a_s.arr, _SIDE_A_ROWS, "a_scale", ctx, p.m, p.n, bt.ndim, bt.shape, &p.as_rs,
                &unused, bt.stride[GK_QB_AS])
    if b_s.arr is not None:
        _layout(b_s.arr, _SIDE_B_COLS, "b_scale", ctx, p.m, p.n, bt.ndim, bt.shape, &unused,
                &p.bs_cs, bt.stride[GK_QB_BS])
    if y_s.arr is not None:
        _layout(y_s.arr, _SIDE_Y, "y_scale", ctx, p.m, p.n, bt.ndim, bt.shape, &p.ys_rs,
                &p.ys_cs, bt.stride[GK_QB_YS])
    if yzp.arr is not None:
        _layout(yzp.arr, _SIDE_Y, "y_zero_point", ctx, p.m, p.n, bt.ndim, bt.shape, &p.yzp_rs,
                &p.yzp_cs, bt.stride[GK_QB_YZP])
    p.a_scale = <const float *>a_s.ptr
    p.b_scale = <const float *>b_s.ptr
    p.y_scale = <const float *>y_s.ptr
    p.y_zp = <const uint8_t *>yzp.ptr
    return 0
