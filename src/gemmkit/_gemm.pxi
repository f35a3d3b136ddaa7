# Gemm: argument checking and the nogil call into the C driver (src/csrc/gemm/gk_gemm_driver.c).
# Included by _core.pyx (which cimports numpy as cnp and imports numpy as np).
#
# Inputs are never copied: the driver gets data pointers and byte strides (negative,
# zero or F-order all fine) and packs panels itself.  The only allocation here is Y.

from libc.stdint cimport uint64_t
from libc.math cimport isinf, fabs
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport (PyLong_AsLongLongAndOverflow, PyLong_AsLongAndOverflow,
                           PyLong_AsUnsignedLongLong, PyLong_AsDouble)
import ml_dtypes as _gk_ml_dtypes

cdef int _GK_BF16_NUM = np.dtype(_gk_ml_dtypes.bfloat16).num
_GK_GEMM_SUPPORTED = "float16, bfloat16, float32, float64, int32, int64, uint32, uint64"


cdef cnp.ndarray _gemm_native(cnp.ndarray x):
    """x, or its copy in native byte order where it is one of gemm's dtypes stored the
    other way round (read by value, as numpy.matmul reads it; the kernels take native
    order only).  Any other dtype is returned as it is, for the dtype checks to name."""
    if cnp.PyArray_ISNOTSWAPPED(x):
        return x
    native = (<object>x).dtype.newbyteorder("=")
    if native.name in _GK_GEMM_SUPPORTED.split(", "):
        return (<object>x).astype(native)
    return x


cdef int _gemm_dtype(cnp.ndarray x):
    """The gk_gemm_dtype of x, or -1 if unsupported (a non-native byte order included:
    _gemm_native makes gemm's operands native first)."""
    cdef cnp.dtype d = x.descr
    cdef int t = d.type_num
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(x)
    if not cnp.PyArray_ISNOTSWAPPED(x):
        return -1
    if t == cnp.NPY_FLOAT:
        return GK_DT_F32
    if t == cnp.NPY_DOUBLE:
        return GK_DT_F64
    if t == cnp.NPY_FLOAT16:
        return GK_DT_F16
    if t == _GK_BF16_NUM:
        return GK_DT_BF16
    if d.kind == b'i':
        return GK_DT_I32 if size == 4 else (GK_DT_I64 if size == 8 else -1)
    if d.kind == b'u':
        return GK_DT_U32 if size == 4 else (GK_DT_U64 if size == 8 else -1)
    return -1


def _gemm_family_info(dtype):
    """The Gemm kernel family that runs `dtype` (anything np.dtype accepts): a dict with
    its "isa" (the family's name: a level of _levels(), or a level's name plus the one
    extra feature it needs, e.g. "avx512bf16"), its dispatch "level" (one of _levels()),
    register tile "mr" x "nr", cache blocks "mc", "kc", "nc" (K beyond kc runs in K
    blocks, M beyond mc in row blocks, N beyond nc in column stripes), "kc_sub" (0, or the
    depth of the sub-blocks a K block runs in), "kc_thin" (0, or its own K block of thin
    products), "kc_thin_t" / "kc_thin_t_memory" (the K block of thin products with a
    transposed B', cached / larger than the last-level cache), "thin_t_tiles" (0, or the
    column tiles such a product with 1..3 rows runs as one strip where B' fits half the
    last-level cache), the size
    rule "min_rows" / "min_depth" / "min_macs" (calls with fewer rows,
    a shallower K or fewer multiply-adds run on the fallback; 0: none), "thin_16bit" (the
    isa of the family that runs a float16/bfloat16 product of 1..3 rows with B's rows
    contiguous, reading B in place: this one, a later one it hands such calls to, or
    None), "fused" (its
    micro-kernel fuses multiply and add and it brings a separately rounded one too) and
    "fallback": the isa of the family that runs the calls this one declines (None: it
    takes every call).  For tests and benchmarks that shape problems around the blocking."""
    cdef cnp.ndarray x = np.empty(0, dtype)
    cdef int dt = _gemm_dtype(x)
    cdef const gk_gemm_kernel *k
    cdef const gk_gemm_kernel *nxt = NULL
    cdef const gk_gemm_kernel *t16 = NULL
    if dt < 0:
        raise TypeError(f"_gemm_family_info: unsupported dtype {x.dtype}; supported: "
                        f"{_GK_GEMM_SUPPORTED}")
    cdef int mc, kc, nc
    k = gk_gemm_kernel_for(dt)
    gk_gemm_blocking(k, &mc, &kc, &nc)  # the sizes the driver runs with (runtime caches)
    if _gemm_declines_some(k):
        nxt = gk_gemm_kernel_after(k)
    t16 = gk_gemm_thin_16bit_family(k)
    return {"isa": k.isa.decode("ascii"),
            "level": gk_isa_level_name(gk_gemm_kernel_level(k)).decode("ascii"),
            "mr": k.mr, "nr": k.nr, "mc": mc, "kc": kc, "nc": nc, "kc_sub": k.kc_sub,
            "kc_thin": k.kc_thin,
            "kc_thin_t": GK_GEMM_THIN_T_KC,
            "kc_thin_t_memory": k.kc_thin_t if k.kc_thin_t > 0 else GK_GEMM_THIN_T_KC,
            "thin_t_tiles": k.thin_t_tiles,
            "min_rows": k.min_rows, "min_depth": k.min_depth,
            "min_macs": k.min_macs, "fused": k.ukernel_rounded != NULL,
            "thin_16bit": t16.isa.decode("ascii") if t16 != NULL else None,
            "fallback": nxt.isa.decode("ascii") if nxt != NULL else None}


cdef bint _gemm_declines_some(const gk_gemm_kernel *k):
    return (k.check_packed != NULL or k.min_rows > 0 or
            k.min_depth > 0 or k.min_macs > 0)


def _gemm_size_rules(bint on):
    """Switches the Gemm families' size rules (calls below a family's min_rows / min_macs
    run on its fallback) on or off; returns the previous setting.  For tests, which run a
    family on every shape; between calls only."""
    return bool(gk_gemm_set_size_rules(on))


def _gemm_memory_bytes(size_t nbytes):
    """Sets the size of B' above which the thin paths read B' as streaming from memory
    (0: the last-level cache's size, the default); returns the previous value.  For
    tests, which force that variant on small shapes; between calls only."""
    return gk_gemm_set_memory_bytes(nbytes)


def _gemm_with_fallback(A, B, C=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    """gemm run by the family that takes the calls the dispatched family of A's dtype
    declines (gk_gemm_kernel_after; the dispatched one itself when it declines nothing).
    For the tests: a declined call must give exactly this result."""
    cdef cnp.ndarray x = np.asarray(A)
    cdef int dt = _gemm_dtype(x) if x.ndim == 2 else -1
    cdef const gk_gemm_kernel *k
    if dt < 0:
        return _gemm_impl(A, B, C, alpha, beta, transA, transB, 1, NULL)
    k = gk_gemm_kernel_for(dt)
    if _gemm_declines_some(k):
        k = gk_gemm_kernel_after(k)
    return _gemm_impl(A, B, C, alpha, beta, transA, transB, 1, k)


# ---- scalar arguments ------------------------------------------------------------------
#
# What counts as a real number (alpha, beta) or a 0/1 flag (transA, transB, broadcast):
# Python int/bool/float (and their subclasses, read through the C value, never a __float__
# override), the NumPy integer/bool/floating scalars, the ml_dtypes float scalars gemmkit
# supports, and 0-d arrays of those dtypes.  The table maps a scalar type (or a 0-d array's
# dtype.type) to how its value is read; anything not in it is a TypeError -- str, bytes,
# complex, None, lists, object arrays, Fraction, Decimal, other ml_dtypes.
cdef enum:
    _GK_R_INT = 1     # integer-valued: int(v) is exact (NumPy ints, np.bool_)
    _GK_R_FLOAT = 2   # float(v) is exact (float16/32/64; bfloat16/float8 via their __float__)
    _GK_R_LONGDOUBLE = 3  # extended precision: rounded to float64 (ValueError if it overflows)

cdef dict _GK_REAL_KIND = {np.bool_: _GK_R_INT}
for _gk_ch in np.typecodes["AllInteger"]:
    _GK_REAL_KIND[np.dtype(_gk_ch).type] = _GK_R_INT
for _gk_t in (np.float16, np.float32, np.float64, _gk_ml_dtypes.bfloat16,
              _gk_ml_dtypes.float8_e4m3fn, _gk_ml_dtypes.float8_e4m3fnuz,
              _gk_ml_dtypes.float8_e5m2, _gk_ml_dtypes.float8_e5m2fnuz):
    _GK_REAL_KIND[_gk_t] = _GK_R_FLOAT
if np.dtype(np.longdouble).itemsize > 8:
    _GK_REAL_KIND[np.longdouble] = _GK_R_LONGDOUBLE
else:
    _GK_REAL_KIND[np.longdouble] = _GK_R_FLOAT

cdef dict _GK_INT_RANGE = {GK_DT_I32: (-2**31, 2**31 - 1), GK_DT_U32: (0, 2**32 - 1),
                           GK_DT_I64: (-2**63, 2**63 - 1), GK_DT_U64: (0, 2**64 - 1)}

_GK_REAL_ACCEPTED = ("a real number (Python int/float/bool, NumPy integer/bool/floating "
                     "scalar, ml_dtypes bfloat16/float8 scalar, or a 0-d array of those)")


cdef str _gk_short(object v):
    """repr(v), cut to fit an error message (and never raising: huge ints can't repr)."""
    try:
        r = repr(v)
    except Exception:
        return f"<{type(v).__name__} without repr>"
    return r if len(r) <= 80 else r[:77] + "..."


cdef str _gk_describe(object v):
    """What the caller passed: its type and value (shape and dtype for arrays)."""
    if cnp.PyArray_Check(v):
        return f"{type(v).__name__} of shape {(<object>v).shape} and dtype {(<object>v).dtype}"
    return f"{type(v).__name__} {_gk_short(v)}"


cdef int _gemm_real_kind(object v) except -1:
    """_GK_R_* for a real number v (a 0-d array reads as its dtype's scalar), 0 otherwise:
    v is then a Python int/float subclass when isinstance says so, else not a real."""
    k = _GK_REAL_KIND.get(type(v))
    if k is None and cnp.PyArray_Check(v) and cnp.PyArray_NDIM(v) == 0:
        k = _GK_REAL_KIND.get((<object>v).dtype.type)
    return 0 if k is None else <int>k


cdef inline int _gemm_flag(object v, str name) except -1:
    """transA/transB/broadcast: an integer (Python, NumPy scalar or 0-d integer/bool array)
    equal to 0 or 1.  Floats (even 1.0) and non-numbers are a TypeError."""
    cdef int ovf = 0
    cdef long x
    if v is False:  # the common cases: pointer compares and a compact int
        return 0
    if v is True:
        return 1
    if type(v) is int:
        x = PyLong_AsLongAndOverflow(v, &ovf)
        if ovf == 0 and (x == 0 or x == 1):
            return <int>x
    return _gemm_flag_slow(v, name)


cdef int _gemm_flag_slow(object v, str name) except -1:
    cdef object t = type(v)
    cdef object x = v
    cdef int k
    if t is not int and t is not bool:
        k = _gemm_real_kind(v)
        if k == _GK_R_INT:
            x = int(v)
        elif k == 0 and isinstance(v, int):
            x = int.__index__(v)  # an int subclass: its value, not an __eq__ override
        else:
            raise TypeError(f"gemm: {name} must be an integer 0 or 1 (Python int/bool, "
                            f"NumPy integer/bool scalar or 0-d array), got {_gk_describe(v)}")
    if x == 0:
        return 0
    if x == 1:
        return 1
    raise ValueError(f"gemm: {name} must be 0 or 1, got {_gk_short(v)}")


ctypedef struct _gk_real:
    double d          # the value rounded to float64 (what float dtypes and the float path use)
    uint64_t u        # integer dtypes, exact != 0: the integer value modulo 2**64
    int exact


cdef int _gemm_real_int(object v, str name, bint int_dt, _gk_real *r) except -1:
    """v: a Python int (or subclass).  Integer dtypes: exact, in [-2**63, 2**64 - 1]."""
    cdef int ovf = 0
    cdef long long x = PyLong_AsLongLongAndOverflow(v, &ovf)
    if ovf == 0:
        r.d = <double>x  # correctly rounded (RNE) like float(v)
        r.u = <uint64_t>x  # two's complement: x modulo 2**64
        r.exact = int_dt
        return 0
    if int_dt:
        if ovf > 0:
            try:
                r.u = PyLong_AsUnsignedLongLong(v)
            except OverflowError:
                pass
            else:
                r.d = PyLong_AsDouble(v)
                r.exact = 1
                return 0
        raise ValueError(f"gemm: {name} = {_gk_short(v)} is out of range: an integer "
                         f"{name} on an integer dtype must lie in [-2**63, 2**64 - 1] (it "
                         f"is applied modulo 2**bits)")
    try:
        r.d = PyLong_AsDouble(v)
    except OverflowError:
        raise ValueError(f"gemm: {name} = {_gk_short(v)} is out of range: it does not "
                         f"fit a float64") from None
    r.exact = 0
    return 0


cdef object _GK_NP_F32 = np.float32
cdef object _GK_NP_F64 = np.float64


cdef inline int _gemm_real(object v, str name, bint int_dt, _gk_real *r) except -1:
    """Reads alpha/beta into r (see _GK_REAL_KIND for what is accepted)."""
    cdef object t = type(v)
    cdef int ovf = 0
    cdef long long x
    r.exact = 0
    if t is float or t is _GK_NP_F64:  # np.float64 is a float subclass
        r.d = PyFloat_AS_DOUBLE(v)
        return 0
    if t is int or t is bool:
        x = PyLong_AsLongLongAndOverflow(v, &ovf)
        if ovf == 0:  # as in _gemm_real_int
            r.d = <double>x
            r.u = <uint64_t>x
            r.exact = int_dt
            return 0
        return _gemm_real_int(v, name, int_dt, r)
    if t is _GK_NP_F32:  # exact widening
        r.d = (<PyFloatScalarObject *>v).obval
        return 0
    return _gemm_real_slow(v, name, int_dt, r)


cdef int _gemm_real_slow(object v, str name, bint int_dt, _gk_real *r) except -1:
    cdef int k = _gemm_real_kind(v)
    if k == _GK_R_FLOAT:
        r.d = float(v)  # exact; ml_dtypes scalars/arrays through their own conversion
    elif k == _GK_R_INT:
        return _gemm_real_int(int(v), name, int_dt, r)
    elif k == _GK_R_LONGDOUBLE:
        with np.errstate(over="ignore"):
            r.d = float(np.float64(v))  # one RNE rounding
        if isinf(r.d) and not np.isinf(v):
            raise ValueError(f"gemm: {name} = {_gk_describe(v)} is out of range: it does "
                             f"not fit a float64")
    elif isinstance(v, float):
        r.d = PyFloat_AS_DOUBLE(v)
    elif isinstance(v, int):
        return _gemm_real_int(v, name, int_dt, r)
    else:
        raise TypeError(f"gemm: {name} must be {_GK_REAL_ACCEPTED}, got {_gk_describe(v)}")
    return 0


cdef object _gemm_weak_c(object v, cnp.ndarray a, int dt):
    """C given as a Python int/float/bool: a "weak" scalar (NEP 50), converted to A's
    dtype.  Returns the 0-d array."""
    cdef double d
    cdef object dtype = (<object>a).dtype
    if dt >= GK_DT_I32:
        if type(v) is float:
            raise TypeError(f"gemm: C is the Python float {v!r} but A has integer dtype "
                            f"{dtype}; pass an int or an array of A's dtype")
        lo, hi = _GK_INT_RANGE[dt]
        if not (lo <= v <= hi):
            raise ValueError(f"gemm: C = {_gk_short(v)} is out of range for A's dtype "
                             f"{dtype} [{lo}, {hi}]")
        return np.array(int(v), dtype)
    if type(v) is float:
        d = PyFloat_AS_DOUBLE(v)
    else:
        try:
            d = PyLong_AsDouble(v)
        except OverflowError:
            raise ValueError(f"gemm: C = {_gk_short(v)} is out of range: it does not fit "
                             f"a float64") from None
    if dt == GK_DT_F64 or not (fabs(d) > 65504.0):  # NaN included: no overflow possible
        return np.array(d, dtype)
    with np.errstate(over="ignore"):  # IEEE rounding to +-inf, no warning
        return np.array(d, dtype)


def gemm(A, B, C=None, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=1):
    """ONNX Gemm (opsets 1, 6, 7, 9, 11, 13): ``Y = alpha * A' @ B' + beta * C``.

    ``A' = A.T`` if transA else A, ``B' = B.T`` if transB else B; A' is (M, K), B' is
    (K, N).  Positional order is the ONNX input order, then the attributes.

    Parameters
    ----------
    A : array_like, 2-D, one of float16, ``ml_dtypes.bfloat16``, float32, float64,
        int32, int64, uint32, uint64 (either byte order: a non-native A, B or C is read
        by value through a native copy, as ``numpy.matmul`` reads it)
    B : array_like, 2-D, A's dtype; or a ``PackedB`` made by ``pack_b(B, "gemm",
        transB=t)``, in which case gemm must be called with ``transB=t``.
    C : optional bias, A's dtype: an array unidirectionally broadcastable to (M, N) --
        shape ``()``, ``(1,)``, ``(N,)``, ``(1, 1)``, ``(1, N)``, ``(M, 1)`` or
        ``(M, N)`` -- or a NumPy scalar of A's dtype (bfloat16 included, read exactly),
        or a Python int/float/bool, converted to A's dtype as a NEP 50 "weak" scalar.
        None: no C term.
    alpha, beta : real numbers (default 1.0): Python int/float/bool, NumPy integer,
        bool or floating scalars, ml_dtypes bfloat16/float8 scalars, or 0-d arrays of
        those.
    transA, transB : 0 or 1 (default 0): a Python int/bool, a NumPy integer/bool scalar
        or a 0-d integer/bool array.
    broadcast : 0 or 1 (default 1).  Opsets 1 and 6 have this attribute with default 0:
        with ``broadcast=0`` C must have shape (M, N) exactly.  Opsets 7+ dropped it and
        always broadcast C, which is ``broadcast=1``.  (C is required by ONNX before
        opset 11 and optional since; gemmkit always accepts None.)

    Any strides (C or F order, negative, zero, offsets) and read-only views; nothing is
    copied (but a byte-swapped operand).  Types per opset: the float types (opsets 1+), the integer types (9+) and
    bfloat16 (13+) all run on every call: the opset does not restrict gemmkit.

    Arithmetic.  float32 accumulates in float32 and float64 in float64; float16 and
    bfloat16 accumulate in float32 and round once at the end.  Float dtypes use
    float32(alpha), float32(beta) (float64 for float64; an int alpha/beta is rounded to
    float64 first).  ``alpha * (A' @ B')`` is computed literally: NaN and inf propagate
    per IEEE (alpha = 0 with an inf in A gives NaN).  ``beta == 0`` means C's values are
    not read (C's dtype and shape are still checked).  Integer dtypes with integral
    alpha and beta are exact and wrap modulo 2**bits (as NumPy): an integer alpha/beta
    (in [-2**63, 2**64 - 1]) is applied modulo 2**bits, an integral float by its exact
    value.  A non-integral alpha, or C used with a non-integral beta, follows the onnx
    reference: ``Y = cast(float64(A' @ B', wrapped) * alpha + float64(C) * beta)``,
    where cast truncates toward zero and wraps modulo 2**bits (NaN and inf give 0).
    Integer results are exact on every kernel path.  Results do not depend on the
    thread count (K is never split); float results may differ between kernel paths
    (``GEMMKIT_ISA``) in the last bits, within float32/float64 accumulation error.

    Returns
    -------
    numpy.ndarray of A's dtype, shape (M, N), C-contiguous, newly allocated.

    Threads: the GIL is released while the kernels run and calls are thread-safe; the
    output is split over ``gemmkit.get_num_threads()`` threads.

    Raises
    ------
    TypeError
        A's dtype is unsupported; B or C has another dtype than A; C
        is a Python float for an integer A; alpha/beta is not a real number (str,
        complex, None, a list, an array with ndim > 0, Fraction, Decimal, ...);
        transA/transB/broadcast is not an integer (a float, even 1.0, a str, None, an
        array with ndim > 0).
    ValueError
        A or B is not 2-D; the inner dimensions differ; C's shape does not broadcast to
        (M, N), or is not exactly (M, N) with ``broadcast=0``; a flag is an integer
        other than 0 or 1; alpha/beta is out of range (integer dtypes: outside
        [-2**63, 2**64 - 1]; float dtypes: beyond float64); a Python int C is outside
        A's integer range or beyond float64; B is a ``PackedB`` made for another op or
        with another transB.
    MemoryError
        No memory for the workspace.

    Checks run before any work; messages name the argument and show what was given.

    Example
    -------
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    >>> gemmkit.gemm(A, A, np.float32(1.0), alpha=2.0, transB=1)
    array([[11., 23.],
           [23., 51.]], dtype=float32)
    """
    cdef PackedB pk = None
    if isinstance(B, PackedB):
        pk = <PackedB>B
        pk._check_call("gemm")
        if _gemm_flag(transB, "transB") != pk.transB:
            raise ValueError(f"gemm: B is a PackedB made with transB={pk.transB}; call gemm "
                             f"with transB={pk.transB} (got transB={transB})")
        B = pk.b
    return _gemm_impl(A, B, C, alpha, beta, transA, transB, broadcast, NULL, pk)


def _gemm_with_wide_tile(int family, A, B, C=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    """gemm run by gk_gemm_wide_tile_families[family] (scalar families at AVX-512 / AMX tile
    shapes, never selected by the dispatch) instead of the dispatched family; the dtype
    must be that family's.  Returns (Y, family info dict).  For the tests: the engine must
    not cap or assume a tile size."""
    cdef int n = 0
    while gk_gemm_wide_tile_families[n] != NULL:
        n += 1
    if not 0 <= family < n:
        raise IndexError(f"_gemm_with_wide_tile: family must be in [0, {n}), got {family}")
    cdef const gk_gemm_kernel *k = gk_gemm_wide_tile_families[family]
    info = {"isa": k.isa.decode("ascii"), "dtype": k.dtype, "mr": k.mr, "nr": k.nr,
            "mc": k.mc, "kc": k.kc, "nc": k.nc}
    return _gemm_impl(A, B, C, alpha, beta, transA, transB, 1, k), info


def _gemm_wide_tile_dtypes():
    """NumPy dtypes served by gk_gemm_wide_tile_families, in order."""
    names = {GK_DT_F16: "float16", GK_DT_BF16: _gk_ml_dtypes.bfloat16, GK_DT_F32: "float32",
             GK_DT_F64: "float64", GK_DT_I32: "int32", GK_DT_U32: "uint32",
             GK_DT_I64: "int64", GK_DT_U64: "uint64"}
    out = []
    cdef int n = 0
    while gk_gemm_wide_tile_families[n] != NULL:
        out.append(np.dtype(names[gk_gemm_wide_tile_families[n].dtype]))
        n += 1
    return out


cdef object _gemm_impl(A, B, C, alpha, beta, transA, transB, broadcast,
                       const gk_gemm_kernel *kern, PackedB pk=None):
    """gemm's body; kern: the family to run (NULL: the dispatched one)."""
    cdef cnp.ndarray a, b, c = None, y
    cdef int ta = _gemm_flag(transA, "transA")
    cdef int tb = _gemm_flag(transB, "transB")
    cdef int bc = _gemm_flag(broadcast, "broadcast")
    cdef _gk_real ra, rb
    cdef int dt, dtc
    cdef Py_ssize_t M, N, K, Kb, cm, cn
    cdef cnp.npy_intp dims[2]
    cdef gk_gemm_args args
    cdef int rc
    cdef object tc

    a = _gemm_native(_arr(A, "gemm: A"))
    b = _gemm_native(_arr(B, "gemm: B"))

    # ---- dtypes (TypeError) ----
    dt = _gemm_dtype(a)
    if dt < 0:
        raise TypeError(f"gemm: A has unsupported dtype {(<object>a).dtype}; supported: "
                        f"{_GK_GEMM_SUPPORTED}")
    if _gemm_dtype(b) != dt:
        raise TypeError(f"gemm: B has dtype {(<object>b).dtype} but A has dtype {(<object>a).dtype}; "
                        f"A, B and C must share one dtype ({_GK_GEMM_SUPPORTED})")
    # alpha/beta are read knowing A's dtype: integers are exact (and range-checked) for
    # integer dtypes, rounded to float64 for float dtypes
    _gemm_real(alpha, "alpha", dt >= GK_DT_I32, &ra)
    _gemm_real(beta, "beta", dt >= GK_DT_I32, &rb)
    if C is not None:
        if cnp.PyArray_Check(C):
            c = _arr(C, "gemm: C")
        else:
            tc = type(C)
            if tc is float or tc is int or tc is bool:
                c = _gemm_weak_c(C, a, dt)
            else:  # NumPy scalars keep their dtype (np.asarray reads ml_dtypes ones exactly)
                c = np.asarray(C)
    if c is not None:
        c = _gemm_native(c)
    if c is not None and _gemm_dtype(c) != dt:
        raise TypeError(f"gemm: C has dtype {(<object>c).dtype} but A has dtype {(<object>a).dtype}; "
                        f"A, B and C must share one dtype ({_GK_GEMM_SUPPORTED})")

    # ---- shapes (ValueError) ----
    if cnp.PyArray_NDIM(a) != 2:
        raise ValueError(f"gemm: A must be 2-D, got shape {(<object>a).shape}")
    if cnp.PyArray_NDIM(b) != 2:
        raise ValueError(f"gemm: B must be 2-D, got shape {(<object>b).shape}")
    M = cnp.PyArray_DIM(a, ta)
    K = cnp.PyArray_DIM(a, 1 - ta)
    Kb = cnp.PyArray_DIM(b, tb)
    N = cnp.PyArray_DIM(b, 1 - tb)
    if K != Kb:
        raise ValueError(
            f"gemm: inner dimensions differ: A has shape {(<object>a).shape}, so "
            f"A{'.T' if ta else ''} has K={K}; B has shape {(<object>b).shape}, so "
            f"B{'.T' if tb else ''} has K={Kb} (transA={ta}, transB={tb})")

    args.c = NULL
    args.c_rs = 0
    args.c_cs = 0
    if c is not None:
        if bc == 0:
            if not (cnp.PyArray_NDIM(c) == 2 and cnp.PyArray_DIM(c, 0) == M
                    and cnp.PyArray_DIM(c, 1) == N):
                raise ValueError(f"gemm: with broadcast=0, C must have shape ({M}, {N}) "
                                 f"exactly, got {(<object>c).shape}")
        if cnp.PyArray_NDIM(c) == 0:
            cm = 1
            cn = 1
        elif cnp.PyArray_NDIM(c) == 1:
            cm = 1
            cn = cnp.PyArray_DIM(c, 0)
        elif cnp.PyArray_NDIM(c) == 2:
            cm = cnp.PyArray_DIM(c, 0)
            cn = cnp.PyArray_DIM(c, 1)
        else:
            cm = -1
            cn = -1
        if not ((cm == 1 or cm == M) and (cn == 1 or cn == N)):
            raise ValueError(f"gemm: C of shape {(<object>c).shape} is not unidirectionally "
                             f"broadcastable to (M, N) = ({M}, {N})")
        args.c = cnp.PyArray_DATA(c)
        # stride 0 on broadcast (size-1) axes; a size-1 axis of a size-1 output reads
        # index 0 only, so its stride never matters
        if cnp.PyArray_NDIM(c) == 2:
            args.c_rs = cnp.PyArray_STRIDE(c, 0) if cm != 1 else 0
            args.c_cs = cnp.PyArray_STRIDE(c, 1) if cn != 1 else 0
        elif cnp.PyArray_NDIM(c) == 1:
            args.c_cs = cnp.PyArray_STRIDE(c, 0) if cn != 1 else 0

    dims[0] = M
    dims[1] = N
    y = cnp.PyArray_EMPTY(2, dims, cnp.PyArray_TYPE(a), 0)

    args.dtype = dt
    args.m = M
    args.n = N
    args.k = K
    args.a = cnp.PyArray_DATA(a)
    args.a_rs = cnp.PyArray_STRIDE(a, ta)
    args.a_cs = cnp.PyArray_STRIDE(a, 1 - ta)
    args.b = cnp.PyArray_DATA(b)
    args.b_rs = cnp.PyArray_STRIDE(b, tb)
    args.b_cs = cnp.PyArray_STRIDE(b, 1 - tb)
    args.y = cnp.PyArray_DATA(y)
    args.ldy = N
    args.alpha = ra.d
    args.beta = rb.d
    args.alpha_u64 = ra.u if ra.exact else 0
    args.beta_u64 = rb.u if rb.exact else 0
    args.alpha_exact = ra.exact
    args.beta_exact = rb.exact
    if kern != NULL and kern.dtype != dt:
        raise TypeError(f"gemm: this kernel family does not serve dtype {(<object>a).dtype}")
    cdef const void *packed = NULL
    if kern == NULL:
        kern = gk_gemm_kernel_for(dt)
        if pk is not None:
            packed = pk._gemm_packing(kern, &args)
    with nogil:
        rc = gk_gemm_run_packed(kern, &args, packed)
    if rc != GK_GEMM_OK:
        if rc == GK_GEMM_ENOMEM:
            raise MemoryError(f"gemm: out of memory for workspace (M={M}, N={N}, K={K})")
        raise RuntimeError(f"gemm: internal error {rc}")
    return y
