# cython: language_level=3
"""gemmkit._core: argument normalisation and nogil entry points into the C drivers.

Every C declaration is in _core.pxd (Cython reads it first).  Each job has its own .pxi,
included here so that everything shares one module (one import, one dispatch):
_dispatch.pxi (cpu_info, GEMMKIT_ISA), _threads.pxi (the
thread pool's settings), _codecs.pxi (codec helpers), _qgemm.pxi
(matmul_integer, qlinear_matmul; argument normalisation in _qargs.pxi), _gemm.pxi,
_pack.pxi (pack_b, PackedB)."""
cimport numpy as cnp
import numpy as np

cnp.import_array()

include "_dispatch.pxi"
include "_threads.pxi"
include "_codecs.pxi"
include "_qgemm.pxi"
include "_gemm.pxi"
include "_pack.pxi"
