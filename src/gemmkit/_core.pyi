# Type stubs for the compiled module gemmkit._core (Cython: _core.pyx and its .pxi files).
# The docstrings, with the full semantics, are in the .pxi sources (help() shows them).
#
# What the types can and cannot say: operands are anything np.asarray accepts
# (ArrayLike); their dtypes (uint8/int8/float8 for the int8 ops, one float or integer
# dtype for gemm) are checked at run time (TypeError), as are shapes (ValueError).
# Where a result's dtype follows an argument's static type, the overloads carry it
# through: gemm returns A's dtype, qlinear_matmul y_zero_point's, cast `dtype`'s or
# `out` itself.  ml_dtypes declares bfloat16 and the float8 types as plain
# type[numpy.generic], so their scalars are numpy.generic to a type checker.
from typing import Any, Callable, Literal, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from gemmkit._typing import CpuInfo, PackOp

_S = TypeVar("_S", bound=np.generic)
_ArrayT = TypeVar("_ArrayT", bound=np.ndarray[Any, Any])

# A zero point or scale: an array, a NumPy scalar, or a Python int (zero points of
# uint8/int8 tensors) / float or int (scales).
_ZeroPoint = ArrayLike
_Scale = ArrayLike
# gemm's alpha/beta: Python int/float/bool, NumPy integer/bool/floating scalars,
# ml_dtypes bfloat16/float8 scalars (numpy.generic, see above) and 0-d arrays.
_Real = float | np.generic | NDArray[Any]
# gemm's transA/transB/broadcast: 0 or 1 as a Python int/bool, a NumPy integer/bool
# scalar or a 0-d integer/bool array.
_Flag = int | np.integer[Any] | np.bool_ | NDArray[np.integer[Any]] | NDArray[np.bool_]
# cast's saturate: a bool, or the integer 0 or 1 (ONNX's attribute is an int).
_Saturate = int | np.bool_ | np.integer[Any]

class PackedB:
    # Made by pack_b only: calling PackedB(...) raises TypeError.
    def __init__(self, *args: object, **kwargs: object) -> None: ...
    # Read-only attributes (assigning any of them raises AttributeError).
    @property
    def op(self) -> PackOp: ...
    @property
    def b(self) -> NDArray[Any]: ...
    @property
    def b_zero_point(self) -> NDArray[Any] | None: ...
    @property
    def b_scale(self) -> NDArray[Any] | None: ...
    @property
    def transB(self) -> int: ...
    @property
    def isa(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def packed(self) -> bool: ...
    # Pickles as pack_b's canonical arguments: loading packs again.
    def __reduce__(self) -> tuple[Callable[..., PackedB], tuple[Any, ...]]: ...
    def _check_call(self, op: str, **b_side: object) -> None: ...

@overload
def matmul_integer(
    A: ArrayLike,
    B: PackedB,
    a_zero_point: _ZeroPoint | None = None,
    b_zero_point: None = None,
) -> NDArray[np.int32]: ...
@overload
def matmul_integer(
    A: ArrayLike,
    B: ArrayLike,
    a_zero_point: _ZeroPoint | None = None,
    b_zero_point: _ZeroPoint | None = None,
) -> NDArray[np.int32]: ...

# B packed: its b_scale and b_zero_point live in the pack and must be None here.
@overload
def qlinear_matmul(
    a: ArrayLike,
    a_scale: _Scale,
    a_zero_point: _ZeroPoint,
    b: PackedB,
    b_scale: None,
    b_zero_point: None,
    y_scale: _Scale,
    y_zero_point: _S | NDArray[_S],
) -> NDArray[_S]: ...
@overload
def qlinear_matmul(
    a: ArrayLike,
    a_scale: _Scale,
    a_zero_point: _ZeroPoint,
    b: PackedB,
    b_scale: None,
    b_zero_point: None,
    y_scale: _Scale,
    y_zero_point: ArrayLike,
) -> NDArray[Any]: ...
@overload
def qlinear_matmul(
    a: ArrayLike,
    a_scale: _Scale,
    a_zero_point: _ZeroPoint,
    b: ArrayLike,
    b_scale: _Scale,
    b_zero_point: _ZeroPoint,
    y_scale: _Scale,
    y_zero_point: _S | NDArray[_S],
) -> NDArray[_S]: ...
@overload
def qlinear_matmul(
    a: ArrayLike,
    a_scale: _Scale,
    a_zero_point: _ZeroPoint,
    b: ArrayLike,
    b_scale: _Scale,
    b_zero_point: _ZeroPoint,
    y_scale: _Scale,
    y_zero_point: ArrayLike,
) -> NDArray[Any]: ...

@overload
def gemm(
    A: NDArray[_S],
    B: ArrayLike | PackedB,
    C: ArrayLike | None = None,
    alpha: _Real = 1.0,
    beta: _Real = 1.0,
    transA: _Flag = 0,
    transB: _Flag = 0,
    broadcast: _Flag = 1,
) -> NDArray[_S]: ...
@overload
def gemm(
    A: ArrayLike,
    B: ArrayLike | PackedB,
    C: ArrayLike | None = None,
    alpha: _Real = 1.0,
    beta: _Real = 1.0,
    transA: _Flag = 0,
    transB: _Flag = 0,
    broadcast: _Flag = 1,
) -> NDArray[Any]: ...

# out given: written and returned (dtype may then be omitted).
@overload
def cast(x: ArrayLike, dtype: DTypeLike | None, saturate: _Saturate, out: _ArrayT) -> _ArrayT: ...
@overload
def cast(
    x: ArrayLike, dtype: DTypeLike | None = None, saturate: _Saturate = True, *, out: _ArrayT
) -> _ArrayT: ...
@overload
def cast(
    x: ArrayLike, dtype: type[_S] | np.dtype[_S], saturate: _Saturate = True, out: None = None
) -> NDArray[_S]: ...
@overload
def cast(
    x: ArrayLike, dtype: DTypeLike, saturate: _Saturate = True, out: None = None
) -> NDArray[Any]: ...

def cpu_info() -> CpuInfo: ...

@overload
def pack_b(
    B: ArrayLike,
    op: Literal["matmul_integer"],
    *,
    b_zero_point: _ZeroPoint | None = None,
    b_scale: None = None,
    transB: Literal[0] = 0,
) -> PackedB: ...
@overload
def pack_b(
    B: ArrayLike,
    op: Literal["qlinear_matmul"],
    *,
    b_zero_point: _ZeroPoint,
    b_scale: _Scale,
    transB: Literal[0] = 0,
) -> PackedB: ...
@overload
def pack_b(
    B: ArrayLike,
    op: Literal["gemm"],
    *,
    b_zero_point: None = None,
    b_scale: None = None,
    transB: _Flag = 0,
) -> PackedB: ...

# The hooks gemmkit._threads calls (the thread pool's settings).
_MAX_THREADS: int

def _set_process_threads(n: int) -> None: ...
def _get_process_threads() -> int: ...
def _set_local_threads(n: int) -> None: ...
def _get_local_threads() -> int: ...
def _effective_threads() -> int: ...
def _pool_size() -> int: ...
def _unpack_pickled(
    op: PackOp,
    b: NDArray[Any],
    b_zero_point: NDArray[Any] | None,
    b_scale: NDArray[Any] | None,
    transB: int = 0,
) -> PackedB: ...

# The contrib ops' C loops (gemmkit.contrib: DynamicQuantizeLinear, MatMulIntegerToFloat).
def _dql_u8(
    x: NDArray[np.float32],
) -> tuple[int, NDArray[np.uint8] | None, float, int, float, float]: ...
def _i32_scale(
    acc: NDArray[np.int32],
    sa: NDArray[np.float32],
    sb: NDArray[np.float32],
    bias: NDArray[np.float32] | None,
) -> NDArray[np.float32]: ...
