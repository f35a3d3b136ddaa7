"""Bad inputs: the right exception type, raised before any work, with a message that names
the offending argument (and shows the dtypes / shapes involved)."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import oracles as o


def _gk():
    import gemmkit
    return gemmkit


U8, S8 = np.uint8, np.int8
E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ = o.FLOAT8_TYPES


def A(shape=(3, 4), dt=U8):
    return np.ones(shape, dt)


def B(shape=(4, 5), dt=S8):
    return np.ones(shape, dt)


def _names(name):
    """Regex that finds ``name`` (or any of a tuple of names) as a whole word (A must not
    match inside 'Argument')."""
    names = (name,) if isinstance(name, str) else tuple(name)
    alt = "|".join(re.escape(n) for n in names)
    return rf"(?<![A-Za-z_])(?:{alt})(?![A-Za-z_])"


def raises(exc, name, *also, ci=False):
    """pytest.raises that also checks the message names ``name`` (case-insensitively if
    ``ci``) and mentions each regex in ``also``."""
    class _Ctx:
        def __enter__(self):
            self.cm = pytest.raises(exc)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *a):
            r = self.cm.__exit__(*a)
            msg = str(self.info.value)
            flags = re.IGNORECASE if ci else 0
            assert re.search(_names(name), msg, flags), \
                f"message does not name {name!r}: {msg!r}"
            for s in also:
                assert re.search(s, msg), f"message lacks {s!r}: {msg!r}"
            return r
    return _Ctx()


# ----------------------------------------------------------------------------------------
# MatMulInteger: dtypes
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [np.float32, np.float64, np.int16, np.int32, np.uint16,
                                 np.bool_, np.float16, ml_dtypes.bfloat16, E4M3FN])
def test_mmi_bad_A_dtype(bad):
    with raises(TypeError, "A", np.dtype(bad).name):
        _gk().matmul_integer(A(dt=bad), B())


@pytest.mark.parametrize("bad", [np.float32, np.int16, np.int64, E5M2])
def test_mmi_bad_B_dtype(bad):
    with raises(TypeError, "B", np.dtype(bad).name):
        _gk().matmul_integer(A(), B(dt=bad))


@pytest.mark.parametrize("ta,zdt", [(U8, S8), (S8, U8), (U8, np.int32), (U8, np.float32)])
def test_mmi_a_zero_point_dtype_must_equal_A(ta, zdt):
    with raises(TypeError, "a_zero_point", np.dtype(ta).name, np.dtype(zdt).name):
        _gk().matmul_integer(A(dt=ta), B(), np.zeros((), zdt))


@pytest.mark.parametrize("tb,zdt", [(S8, U8), (U8, S8), (S8, np.int16)])
def test_mmi_b_zero_point_dtype_must_equal_B(tb, zdt):
    with raises(TypeError, "b_zero_point", np.dtype(tb).name, np.dtype(zdt).name):
        _gk().matmul_integer(A(), B(dt=tb), None, np.zeros((1,), zdt))


@pytest.mark.parametrize("ta,value", [(U8, 256), (U8, -1), (S8, 128), (S8, -129),
                                      (U8, 10**30)])
def test_mmi_python_int_zero_point_out_of_range(ta, value):
    with raises(ValueError, "a_zero_point"):
        _gk().matmul_integer(A(dt=ta), B(), value)
    with raises(ValueError, "b_zero_point"):
        _gk().matmul_integer(A((3, 4), S8), B((4, 5), ta), None, value)


# ----------------------------------------------------------------------------------------
# MatMulInteger: shapes
# ----------------------------------------------------------------------------------------

def test_mmi_inner_dim_mismatch_shows_shapes():
    with raises(ValueError, "A", r"3,\s*4", r"5,\s*6"):
        _gk().matmul_integer(A((3, 4)), B((5, 6)))


def test_mmi_inner_dim_mismatch_1d():
    with pytest.raises(ValueError):
        _gk().matmul_integer(A((4,)), B((5,)))


@pytest.mark.parametrize("which", ["A", "B"])
def test_mmi_0d_tensor_rejected(which):
    a = np.array(3, U8) if which == "A" else A()
    b = np.array(3, S8) if which == "B" else B()
    with raises(ValueError, which):
        _gk().matmul_integer(a, b)


def test_mmi_batch_dims_not_broadcastable():
    with pytest.raises(ValueError, match=r"2.*3|3.*2"):
        _gk().matmul_integer(A((2, 3, 4)), B((3, 4, 5)))


@pytest.mark.parametrize("shape", [(4,), (2,), (5,), (1, 3), (3, 4), (3, 2), (2, 3, 1)])
def test_mmi_a_zero_point_bad_shape(shape):
    # A is (3, 4): valid are (), (1,), (3,), (3, 1), and N-D broadcasting to [..., 3, 1]
    # without enlarging the output's batch dims (there are none here).
    with raises(ValueError, "a_zero_point", r"\b3\b|\b4\b"):
        _gk().matmul_integer(A((3, 4)), B((4, 5)), np.zeros(shape, U8))


@pytest.mark.parametrize("shape", [(4,), (3,), (5, 1), (4, 5), (1, 4), (2, 1, 5)])
def test_mmi_b_zero_point_bad_shape(shape):
    with raises(ValueError, "b_zero_point"):
        _gk().matmul_integer(A((3, 4)), B((4, 5)), None, np.zeros(shape, S8))


def test_mmi_zero_point_batch_dims_must_not_enlarge_output():
    # Output batch [2]; a zero point with batch [3] or [4, 2] would enlarge it.
    with raises(ValueError, "a_zero_point"):
        _gk().matmul_integer(A((2, 3, 4)), B((4, 5)), np.zeros((3, 3, 1), U8))
    with raises(ValueError, "a_zero_point"):
        _gk().matmul_integer(A((2, 3, 4)), B((4, 5)), np.zeros((4, 2, 3, 1), U8))
    with raises(ValueError, "b_zero_point"):
        _gk().matmul_integer(A((2, 3, 4)), B((4, 5)), None, np.zeros((2, 2, 1, 5), S8))


def test_mmi_square_zero_point_is_ambiguous_only_as_2d():
    # A (3, 3): a (1, 3) a_zero_point is not broadcastable to [3, 1] -> error, even though
    # NumPy would happily broadcast it.
    with raises(ValueError, "a_zero_point"):
        _gk().matmul_integer(A((3, 3)), B((3, 5)), np.zeros((1, 3), U8))


def test_mmi_list_input_is_not_silently_narrowed():
    # A list is not an 8-bit array: whether it is rejected outright or converted with
    # np.asarray (-> int64), the result is a TypeError naming A, never a silent cast.
    with pytest.raises(TypeError, match=_names("A")):
        _gk().matmul_integer([[1, 2], [3, 4]], B((2, 2)))


# ----------------------------------------------------------------------------------------
# QLinearMatMul
# ----------------------------------------------------------------------------------------

F32 = np.float32


def q_args(**over):
    args = dict(a=A((3, 4), U8), a_scale=F32(0.1), a_zero_point=U8(1),
                b=B((4, 5), S8), b_scale=F32(0.2), b_zero_point=S8(0),
                y_scale=F32(0.5), y_zero_point=U8(3))
    args.update(over)
    return args


def ql(**over):
    a = q_args(**over)
    return _gk().qlinear_matmul(a["a"], a["a_scale"], a["a_zero_point"], a["b"], a["b_scale"],
                                a["b_zero_point"], a["y_scale"], a["y_zero_point"])


def test_ql_valid_baseline_works():
    y = ql()
    assert y.shape == (3, 5) and y.dtype == np.uint8


@pytest.mark.parametrize("bad", [np.float32, np.int16, np.int32, np.float16])
def test_ql_bad_a_dtype(bad):
    with raises(TypeError, "a", np.dtype(bad).name):
        ql(a=A((3, 4), bad), a_zero_point=np.zeros((), bad))


@pytest.mark.parametrize("bad", [np.float64, np.uint16])
def test_ql_bad_b_dtype(bad):
    with raises(TypeError, "b", np.dtype(bad).name):
        ql(b=B((4, 5), bad), b_zero_point=np.zeros((), bad))


@pytest.mark.parametrize("bad", [np.int16, np.int32, np.float32, np.float16])
def test_ql_bad_y_zero_point_dtype(bad):
    with raises(TypeError, "y_zero_point", np.dtype(bad).name):
        ql(y_zero_point=np.zeros((), bad))


@pytest.mark.parametrize("arg,tensor_dt,zp_dt", [
    ("a_zero_point", U8, S8), ("a_zero_point", E4M3FN, E5M2), ("a_zero_point", S8, E4M3FN),
    ("b_zero_point", S8, U8), ("b_zero_point", E5M2FNUZ, E5M2),
])
def test_ql_zero_point_dtype_must_equal_tensor(arg, tensor_dt, zp_dt):
    t = "a" if arg == "a_zero_point" else "b"
    shape = (3, 4) if t == "a" else (4, 5)
    over = {t: np.zeros(shape, tensor_dt), arg: np.zeros((), zp_dt)}
    with raises(TypeError, arg, np.dtype(tensor_dt).name, np.dtype(zp_dt).name):
        ql(**over)


@pytest.mark.parametrize("arg", ["a_scale", "b_scale", "y_scale"])
@pytest.mark.parametrize("bad", [np.float64, np.int32, np.uint8, E4M3FN])
def test_ql_bad_scale_dtype(arg, bad):
    with raises(TypeError, arg, np.dtype(bad).name):
        ql(**{arg: np.ones((), bad)})


@pytest.mark.parametrize("arg,zp_arg,shape", [
    ("a_scale", "a_zero_point", (3,)), ("a_scale", "a_zero_point", (1,)),
    ("b_scale", "b_zero_point", (5,)), ("b_scale", "b_zero_point", (1, 5)),
    ("y_scale", "y_zero_point", (3,)),
])
def test_ql_scale_shape_must_equal_zero_point_shape(arg, zp_arg, shape):
    # zero point per tensor (shape ()), scale of another (valid on its own) shape
    with raises(ValueError, arg):
        ql(**{arg: np.ones(shape, F32)})


def test_ql_scale_shape_must_equal_zero_point_shape_per_row():
    with raises(ValueError, "a_scale"):
        ql(a_scale=np.ones((3, 1), F32), a_zero_point=np.ones((3,), U8))


@pytest.mark.parametrize("arg,value", [
    ("y_scale", 0.0), ("y_scale", -0.0), ("y_scale", np.nan), ("y_scale", np.inf),
    ("y_scale", -np.inf), ("a_scale", np.nan), ("a_scale", np.inf), ("b_scale", -np.inf),
    ("b_scale", np.nan),
])
def test_ql_nonfinite_or_zero_scales(arg, value):
    with raises(ValueError, arg):
        ql(**{arg: F32(value)})


@pytest.mark.parametrize("sdt", [np.float16, ml_dtypes.bfloat16])
def test_ql_nonfinite_half_scales(sdt):
    with raises(ValueError, "y_scale"):
        ql(a_scale=np.asarray(0.1, sdt), b_scale=np.asarray(0.2, sdt),
           y_scale=np.asarray(0, sdt))
    with raises(ValueError, "a_scale"):
        ql(a_scale=np.asarray(np.inf, sdt), b_scale=np.asarray(0.2, sdt),
           y_scale=np.asarray(0.5, sdt))


def test_ql_one_zero_in_per_row_y_scale():
    with raises(ValueError, "y_scale"):
        ql(y_scale=np.array([1.0, 0.0, 2.0], F32), y_zero_point=np.zeros((3,), U8))


def test_ql_one_nan_in_per_column_b_scale():
    with raises(ValueError, "b_scale"):
        ql(b_scale=np.array([1.0, 1.0, np.nan, 1.0, 1.0], F32),
           b_zero_point=np.zeros((5,), S8))


def test_ql_inner_dim_mismatch_shows_shapes():
    # a's and b's shapes both shown (the API's argument names are a, b; "A"/"B" accepted)
    with raises(ValueError, "a", r"3,\s*4", r"5,\s*5", ci=True):
        ql(b=B((5, 5), S8))


def test_ql_0d_input_rejected():
    with raises(ValueError, "a"):
        ql(a=np.array(1, U8))


@pytest.mark.parametrize("arg,shape", [("a_zero_point", (4,)), ("a_zero_point", (1, 3)),
                                       ("b_zero_point", (4,)), ("b_zero_point", (5, 1)),
                                       ("y_zero_point", (5,)), ("y_zero_point", (3, 5, 1))])
def test_ql_zero_point_bad_shape(arg, shape):
    scale = arg.replace("zero_point", "scale")
    dt = {"a_zero_point": U8, "b_zero_point": S8, "y_zero_point": U8}[arg]
    # zero point and scale share the bad shape: naming either one is right
    with raises(ValueError, (arg, scale)):
        ql(**{arg: np.zeros(shape, dt), scale: np.ones(shape, F32)})


def test_ql_zero_point_batch_dims_must_not_enlarge_output():
    with raises(ValueError, ("a_zero_point", "a_scale")):
        ql(a_zero_point=np.zeros((2, 3, 1), U8), a_scale=np.ones((2, 3, 1), F32))
    with raises(ValueError, ("y_zero_point", "y_scale")):
        ql(y_zero_point=np.zeros((2, 1, 5), U8), y_scale=np.ones((2, 1, 5), F32))


def test_ql_python_int_zero_point_out_of_range():
    with raises(ValueError, "a_zero_point"):
        ql(a_zero_point=300)
    with raises(ValueError, "b_zero_point"):
        ql(b_zero_point=-200)


# ----------------------------------------------------------------------------------------
# private ISA switch
# ----------------------------------------------------------------------------------------

def test_set_isa_unknown_name():
    from gemmkit import _core
    before = _gk().cpu_info()["isa"]
    with pytest.raises(ValueError, match="bogus"):
        _core._set_isa("bogus")
    assert _gk().cpu_info()["isa"] == before


def test_set_isa_every_available_then_restore():
    gk = _gk()
    from gemmkit import _core
    before = gk.cpu_info()["isa"]
    info = gk.cpu_info()
    assert info["available"], info
    assert info["isa"] in info["available"]
    assert "scalar" in info["available"]
    try:
        for name in info["available"]:
            _core._set_isa(name)
            assert gk.cpu_info()["isa"] == name
    finally:
        _core._set_isa(before)


def _masked(a, first_masked=True):
    m = np.zeros(np.shape(a), bool)
    if first_masked:
        m.flat[0] = True
    return np.ma.masked_array(a, mask=m)


def test_masked_arrays_with_masked_elements_are_refused():
    """The ops return plain arrays computed from the data: a mask would be dropped and the
    masked elements' data used as values, so a masked element is a ValueError naming the
    argument; a masked array with nothing masked is its data."""
    gk = _gk()
    f32 = np.ones((3, 3), np.float32)
    cases = [
        ("gemm: A", lambda: gk.gemm(_masked(f32), f32)),
        ("gemm: B", lambda: gk.gemm(f32, _masked(f32))),
        ("gemm: C", lambda: gk.gemm(f32, f32, _masked(f32))),
        ("pack_b: B", lambda: gk.pack_b(_masked(f32), "gemm")),
        ("pack_b: B", lambda: gk.pack_b(_masked(B()), "matmul_integer")),
        ("MatMulInteger: A", lambda: gk.matmul_integer(_masked(A()), B())),
        ("MatMulInteger: B", lambda: gk.matmul_integer(A(), _masked(B()))),
        ("a_zero_point", lambda: gk.matmul_integer(A(), B(), _masked(np.zeros(3, U8)))),
        ("b_zero_point", lambda: gk.matmul_integer(A(), B(), None, _masked(np.zeros(5, S8)))),
        ("QLinearMatMul: a", lambda: gk.qlinear_matmul(_masked(A()), 1.0, U8(0), B(), 1.0, S8(0),
                                                       1.0, U8(0))),
        ("b_scale", lambda: gk.qlinear_matmul(A(), 1.0, U8(0), B(), _masked(np.ones(5, np.float32)),
                                              S8(0), 1.0, U8(0))),
        ("y_zero_point", lambda: gk.qlinear_matmul(A(), 1.0, U8(0), B(), 1.0, S8(0), 1.0,
                                                   _masked(np.zeros(5, U8)))),
    ]
    for name, call in cases:
        with pytest.raises(ValueError, match=re.escape(name) + " is a masked array with 1 masked"):
            call()
    # nothing masked: the data, as a plain ndarray
    y = gk.gemm(_masked(f32, False), f32)
    assert type(y) is np.ndarray and np.array_equal(y, f32 @ f32)
    yi = gk.matmul_integer(_masked(A(), False), B())
    assert type(yi) is np.ndarray and np.array_equal(yi, o.matmul_integer(A(), B()))


def test_values_numpy_holds_as_objects_are_named():
    """None, a Fraction or a PackedB where an array belongs: the TypeError says what was
    passed (np.asarray makes each an object array, which read as "got object")."""
    from fractions import Fraction
    gk = _gk()
    a, b = A(), B()
    one = np.float32(1)
    with pytest.raises(TypeError, match=r"a_zero_point must have the same dtype as a "
                       r"\(uint8\), got None$"):
        gk.qlinear_matmul(a, one, None, b, one, np.int8(0), one, np.uint8(0))
    with pytest.raises(TypeError, match=r"a_scale must be float32, float16 or bfloat16, "
                       r"got a fractions\.Fraction$"):
        gk.qlinear_matmul(a, Fraction(1, 2), np.uint8(0), b, one, np.int8(0), one,
                          np.uint8(0))
    with pytest.raises(TypeError, match=r"y_scale must be float32, float16 or bfloat16, "
                       r"got None$"):
        gk.qlinear_matmul(a, one, np.uint8(0), b, one, np.int8(0), None, np.uint8(0))
    pb = gk.pack_b(b, "matmul_integer")
    with pytest.raises(TypeError, match=r"MatMulInteger: A must be uint8 or int8, got a "
                       r"gemmkit\._core\.PackedB$"):
        gk.matmul_integer(pb, b)
    with pytest.raises(TypeError, match=r"QLinearMatMul: a must be .*, got None$"):
        gk.qlinear_matmul(None, one, np.uint8(0), b, one, np.int8(0), one, np.uint8(0))
