# Pre-packed weights: gemmkit.pack_b and the PackedB the ops accept in place of B.
#
# A PackedB holds its op's B-side arguments in canonical form (read-only, C-contiguous,
# native byte order: what it pickles) and, where the engine has a packed layout for them,
# B packed once for the kernel family in use when it was made.  A call reads that packing
# while the same family is active; under another one (GEMMKIT_ISA or _set_isa changed)
# the call packs the canonical B as usual: same results, the speed of an unpacked call.

_PACK_OPS = ("matmul_integer", "qlinear_matmul", "gemm")


cdef object _readonly_copy(x):
    """x as a new read-only C-contiguous array in native byte order (None stays None; a
    Python int or float stays itself: immutable, and the ops give a Python number rules of
    its own -- it matches any tensor dtype in range -- that an array of it would lose).
    The array's memory is an immutable bytes object, so no one can make it writeable
    again (an array owning its memory could be)."""
    if x is None or type(x) is int or type(x) is float:
        return x
    a = np.asarray(x)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return np.frombuffer(a.tobytes(order="C"), dtype=a.dtype).reshape(a.shape)


cdef object _PACK_TOKEN = object()  # see PackedB.__cinit__


cdef class PackedB:
    """B packed once for repeated products with the same weights; made by
    ``gemmkit.pack_b`` (calling ``PackedB(...)`` raises TypeError).

    Pass it as B (b) to the op it was made for -- ``matmul_integer``,
    ``qlinear_matmul`` or ``gemm`` -- and leave that op's B-side arguments
    (``b_zero_point``, ``b_scale``) unset: the pack holds them.  ``gemm`` must be called
    with the ``transB`` it was packed with.  Results are bit for bit those of the
    unpacked call.

    Attributes (all read-only; assigning one raises AttributeError)
    ----------
    op : str
        ``"matmul_integer"``, ``"qlinear_matmul"`` or ``"gemm"``.
    b : numpy.ndarray
        The canonical copy of B: read-only, C-contiguous, native byte order.
    b_zero_point, b_scale : numpy.ndarray, int, float or None
        Canonical read-only copies of the B-side arguments given to ``pack_b`` (a Python
        number is kept as given: the ops treat it as they treat a number passed to them).
    transB : int
        0 or 1; for ``gemm`` the pack holds ``B' = B.T`` when 1.
    isa : str
        The kernel family B was packed for (``cpu_info()["engines"]``).
    nbytes : int
        Bytes it owns: the canonical copies and the packed block.
    packed : bool
        Whether B is held packed (see the property's own help).

    Immutable and thread-safe: calls only read it, from any number of threads.
    Pickles as its canonical arguments and packs again when loaded, for the machine it
    lands on (so it can be shipped to dask or Ray workers).  A call made under another
    kernel family (``GEMMKIT_ISA``, or a bfloat16 call the ``amxbf16`` or ``avx512bf16``
    family hands on) packs B as usual: same result, unpacked speed.
    """
    cdef readonly str op
    cdef readonly object b
    cdef readonly object b_zero_point
    cdef readonly object b_scale
    cdef readonly int transB
    cdef readonly str isa
    cdef object _blob                  # uint8 array, 64-byte aligned, or None
    cdef const gk_qgemm_kernel *_fam   # the int8 family _blob was packed for
    cdef const gk_gemm_kernel *_gfam   # the Gemm family _blob was packed for
    cdef Py_ssize_t _k, _n
    cdef Py_ssize_t _nmat              # int8: B matrices packed one after another (batched B)
    cdef ptrdiff_t _b_rs, _b_cs        # gemm: B' strides (bytes) as packed

    def __cinit__(self, *args, **kwargs):
        # only pack_b (passing the module's private token) makes one: a PackedB built any
        # other way (PackedB(...), PackedB.__new__(PackedB)) would have no B behind it
        if len(args) != 1 or args[0] is not _PACK_TOKEN or kwargs:
            raise TypeError("PackedB objects are made by gemmkit.pack_b(...)")

    def __init__(self, *args, **kwargs):  # reached only through PackedB(...), refused above
        raise TypeError("PackedB objects are made by gemmkit.pack_b(...)")

    @property
    def nbytes(self):
        """Bytes this pack owns (int): the canonical copies of B and of its zero point and
        scale, and the packed block."""
        n = self.b.nbytes
        for x in (self.b_zero_point, self.b_scale, self._blob):
            if isinstance(x, np.ndarray):
                n += x.nbytes
        return n

    @property
    def packed(self):
        """True when B is held packed (for the family named by ``isa``); False when the
        engine keeps no packed layout for these arguments (float8 B, 1-D B, a depth
        past the chunk size) and calls pack B as usual.  A batched B packs each of its
        matrices."""
        return self._blob is not None

    def __reduce__(self):
        return (_unpack_pickled, (self.op, self.b, self.b_zero_point, self.b_scale,
                                  self.transB))

    def __repr__(self):
        return (f"PackedB(op={self.op!r}, b={self.b.dtype}{list(self.b.shape)}, "
                f"isa={self.isa!r}, packed={self.packed}, nbytes={self.nbytes})")

    def _check_call(self, str op, **b_side):
        if op != self.op:
            raise ValueError(f"{op}: B is a PackedB made for {self.op} "
                             f"(pack_b(B, {op!r}, ...) makes one for {op})")
        for name, value in b_side.items():
            if value is not None:
                raise ValueError(f"{op}: {name} must be left unset when B is a PackedB "
                                 f"(the pack holds B's {name})")

    cdef const void *_int8_packing(self, const gk_qgemm_kernel *kern,
                                   const gk_qgemm_problem *p, const gk_qbatch *bt):
        """The packed blocks when they serve this call (same family, B laid out as packed:
        one matrix shared by every matrix of the batch, or _nmat C-contiguous matrices,
        each packed, from which every matrix of the batch takes its B), else NULL."""
        cdef int d
        if self._blob is None or kern != self._fam:
            return NULL
        if (p.b != <const uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>self.b) or p.k != self._k
                or p.n != self._n or p.b_rs != self._n or p.b_cs != 1):
            return NULL
        if self._nmat == 1:
            for d in range(bt.ndim):
                if bt.stride[GK_QB_B][d] != 0:
                    return NULL
        return cnp.PyArray_DATA(<cnp.ndarray>self._blob)

    cdef const void *_gemm_packing(self, const gk_gemm_kernel *kern, const gk_gemm_args *g):
        """The packed block when it serves this gemm call (same family, same B'), else
        NULL."""
        if self._blob is None or kern != self._gfam:
            return NULL
        if (g.b != cnp.PyArray_DATA(<cnp.ndarray>self.b) or g.k != self._k or g.n != self._n
                or g.b_rs != self._b_rs or g.b_cs != self._b_cs):
            return NULL
        return cnp.PyArray_DATA(<cnp.ndarray>self._blob)


def _unpack_pickled(op, b, b_zero_point, b_scale, transB=0):
    return pack_b(b, op, b_zero_point=b_zero_point, b_scale=b_scale, transB=transB)


cdef PackedB _pack_gemm_b(cnp.ndarray bb, transB):
    """pack_b(B, "gemm", transB=...)."""
    cdef int tb = _gemm_flag(transB, "transB")
    if cnp.PyArray_NDIM(bb) != 2:
        raise ValueError(f"gemm: B must be 2-D, got shape {(<object>bb).shape}")
    cdef Py_ssize_t K = cnp.PyArray_DIM(bb, tb)
    gemm(np.zeros((1, K), (<object>bb).dtype), bb, transB=tb)  # the op's own checks
    cdef PackedB pk = PackedB.__new__(PackedB, _PACK_TOKEN)
    pk.op = "gemm"
    pk.b = _readonly_copy(bb)
    pk.b_zero_point = None
    pk.b_scale = None
    pk.transB = tb
    pk._blob = None
    pk._fam = NULL
    cdef cnp.ndarray b = <cnp.ndarray>pk.b
    cdef int dt = _gemm_dtype(b)
    pk._gfam = gk_gemm_kernel_for(dt)
    pk.isa = pk._gfam.isa.decode()
    pk._k = K
    pk._n = cnp.PyArray_DIM(b, 1 - tb)
    pk._nmat = 1
    pk._b_rs = cnp.PyArray_STRIDE(b, tb)
    pk._b_cs = cnp.PyArray_STRIDE(b, 1 - tb)
    cdef size_t size = gk_gemm_packed_b_size(pk._gfam, pk._k, pk._n)
    if size == 0:
        return pk
    cdef gk_gemm_args args
    memset(&args, 0, sizeof(args))
    args.dtype = dt
    args.k = pk._k
    args.n = pk._n
    args.b = cnp.PyArray_DATA(b)
    args.b_rs = pk._b_rs
    args.b_cs = pk._b_cs
    blob = _empty_aligned64((<Py_ssize_t>size,), np.uint8)
    cdef void *mem = cnp.PyArray_DATA(<cnp.ndarray>blob)
    cdef int rc
    with nogil:
        rc = gk_gemm_pack_b_whole(pk._gfam, &args, mem)
    if rc != GK_GEMM_OK:
        raise RuntimeError(f"pack_b: internal error {rc}")
    pk._blob = blob
    return pk


def _pack_probe_batch(*params):
    """The batch dims (all but the last two) of the N-D ones among params, broadcast
    together; () when none has any or they do not broadcast (the op's check then
    reports the shapes)."""
    # by hand: np.broadcast_shapes stops at 32 dims, NumPy arrays at 64.  (No negative
    # index anywhere: the extension is built with wraparound off.)
    shapes = [np.shape(v)[:np.ndim(v) - 2] for v in params if v is not None and np.ndim(v) > 2]
    out = []
    for shp in shapes:
        if len(shp) > len(out):
            out = [1] * (len(shp) - len(out)) + out
        off = len(out) - len(shp)
        for i in range(len(shp)):
            if out[off + i] == 1:
                out[off + i] = shp[i]
            elif shp[i] != 1 and shp[i] != out[off + i]:
                return ()
    return tuple(out)


def pack_b(B, op, *, b_zero_point=None, b_scale=None, transB=0):
    """Pack B once for many products with the same weights: returns a ``PackedB`` that
    ``op`` accepts in place of B.

    Parameters
    ----------
    B : array_like
        The weights, as the op takes them: uint8/int8 (or float8 for qlinear_matmul)
        for the int8 ops, any numpy.matmul shape; 2-D of a Gemm dtype for gemm.
    op : str
        ``"matmul_integer"``: B with its optional ``b_zero_point``;
        ``"qlinear_matmul"``: B with its ``b_scale`` and ``b_zero_point``, both
        required, as in the op;
        ``"gemm"``: B with ``transB`` (0 or 1; the pack holds ``B' = B.T`` when 1, and
        gemm must then be called with the same transB).
    b_zero_point, b_scale : keyword-only, the op's B-side arguments (same dtypes,
        shapes and layouts as the op takes: per-tensor or per-column of B).
    transB : keyword-only, gemm only (default 0).

    The arguments are checked as the op checks them (same TypeError/ValueError) and
    copied (read-only, C-contiguous), so later changes to them do not affect the pack.
    B is packed for the kernel family in use now; a call made under another family packs
    B as usual.  A batched B (more than 2 dims) packs each of its matrices, and each
    matrix of a product reads its own.  For the int8 ops, B is held unpacked
    (``PackedB.packed`` is False; calls give the same results) when it is 1-D or float8,
    or deeper than the chunk size (2**18).  Calls with fewer than 8 rows read the packing
    on the AVX-512 VNNI path; the other paths keep their small-M kernel there, which
    reads B itself.

    Returns
    -------
    PackedB

    Threads: the GIL is released while B is packed; the PackedB can be shared by any
    number of threads.

    Raises
    ------
    TypeError
        B, b_zero_point or b_scale has a dtype the op rejects; transB is not an integer.
    ValueError
        op is not one of the three names; a B-side argument that op does not have is
        given (b_scale for matmul_integer, b_zero_point/b_scale for gemm, a nonzero
        transB for the int8 ops); qlinear_matmul without b_scale or b_zero_point; B is
        0-d (or not 2-D for gemm); a shape the op rejects.
    MemoryError
        No memory for the packed block.

    Example
    -------
    >>> w = np.arange(12, dtype=np.int8).reshape(3, 4)
    >>> pb = gemmkit.pack_b(w, "matmul_integer", b_zero_point=np.int8(1))
    >>> x = np.ones((2, 3), np.uint8)
    >>> bool((gemmkit.matmul_integer(x, pb) == gemmkit.matmul_integer(x, w, None, np.int8(1))).all())
    True
    """
    if not isinstance(op, str) or op not in _PACK_OPS:
        raise ValueError(f"pack_b: op must be one of {', '.join(map(repr, _PACK_OPS))}, "
                         f"got {op!r}")
    if op == "gemm":
        if b_zero_point is not None or b_scale is not None:
            raise ValueError("pack_b: gemm has no b_zero_point or b_scale")
        return _pack_gemm_b(_arr(B, "pack_b: B"), transB)
    try:
        tb_set = _gemm_flag(transB, "transB") != 0
    except (TypeError, ValueError):  # not 0 either: gemm's own wording would name gemm
        tb_set = True
    if tb_set:
        raise ValueError(f"pack_b: transB is a gemm argument; {op} has none, got {transB!r}")
    cdef cnp.ndarray bb = _arr(B, "pack_b: B")
    cdef PackedB pk = PackedB.__new__(PackedB, _PACK_TOKEN)
    cdef Py_ssize_t K = 1, N = 1
    if cnp.PyArray_NDIM(bb) == 0:
        raise ValueError(f"{op}: B must have at least 1 dimension, got shape ()")
    K = bb.shape[cnp.PyArray_NDIM(bb) - 2] if cnp.PyArray_NDIM(bb) >= 2 else bb.shape[0]
    # the op's own checks, on a one-row A: the same TypeError/ValueError as a call.  A
    # zero point or scale with batch dims of its own (N-D, broadcast with A's and B's)
    # gives the probe A those batch dims, as a call's A would have them.
    probe_a = np.zeros(_pack_probe_batch(b_zero_point, b_scale) + (1, K), np.uint8)
    if op == "matmul_integer" and b_scale is not None:
        raise ValueError("pack_b: b_scale is a qlinear_matmul argument; matmul_integer "
                         "has none")
    if op == "qlinear_matmul" and (b_scale is None or b_zero_point is None):
        raise ValueError("pack_b: qlinear_matmul needs b_scale and b_zero_point "
                         "(as the op does)")
    try:
        if op == "matmul_integer":
            matmul_integer(probe_a, bb, None, b_zero_point)
        else:
            qlinear_matmul(probe_a, np.float32(1), np.uint8(0), bb, b_scale,
                           b_zero_point, np.float32(1), np.uint8(0))
    except ValueError as exc:
        # the message names the probe's A, which the caller never passed: name B alone
        an, bn = ("A", "B") if op == "matmul_integer" else ("a", "b")
        probe = _who(probe_a, bb, an, bn)
        msg = str(exc)
        if probe not in msg:
            raise
        raise ValueError("pack_b: " + msg.replace(probe, f"{bn} {_shape_str(_pyshape(bb))}")) from None
    pk.op = op
    pk.b = _readonly_copy(bb)
    pk.b_zero_point = _readonly_copy(b_zero_point)
    pk.b_scale = _readonly_copy(b_scale)
    pk._blob = None
    pk.transB = 0
    pk._gfam = NULL
    pk._fam = gk_qgemm_active()
    pk.isa = pk._fam.isa.decode()
    pk._k = K
    pk._n = bb.shape[cnp.PyArray_NDIM(bb) - 1] if cnp.PyArray_NDIM(bb) >= 2 else 1
    pk._nmat = 1
    cdef int d
    for d in range(cnp.PyArray_NDIM(bb) - 2):
        pk._nmat *= bb.shape[d]
    cdef int tb = _qtype(<cnp.ndarray>pk.b)
    if (cnp.PyArray_NDIM(bb) < 2 or not _is_int8(tb) or pk._k <= 0 or pk._n <= 0
            or pk._nmat <= 0):
        return pk
    cdef size_t size = gk_qgemm_packed_b_size(pk._fam, <int>pk._k, <int>pk._n)
    if size == 0:
        return pk
    cdef gk_qgemm_problem p
    memset(&p, 0, sizeof(p))
    p.k = <int>pk._k
    p.n = <int>pk._n
    p.b_rs = pk._n
    p.b_cs = 1
    p.b_signed = tb == GK_QT_S8
    cdef const uint8_t *b0 = <const uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>pk.b)
    blob = _empty_aligned64((<Py_ssize_t>size * pk._nmat,), np.uint8)
    cdef unsigned char *mem = <unsigned char *>cnp.PyArray_DATA(<cnp.ndarray>blob)
    cdef int rc = 0
    cdef Py_ssize_t t
    with nogil:
        for t in range(pk._nmat):  # block t: the row-major K x N matrix t of the batch
            p.b = b0 + t * pk._k * pk._n
            rc = gk_qgemm_pack_b_whole(pk._fam, &p, mem + <size_t>t * size)
            if rc != 0:
                break
    if rc != 0:
        raise MemoryError(f"pack_b: out of memory packing B {bb.dtype}{list((<object>bb).shape)}")
    pk._blob = blob
    return pk
