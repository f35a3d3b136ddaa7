# cython: language_level=3
"""gemmkit._core: argument normalisation and nogil entry points into the C drivers.

Each op family lives in its own .pxi, included here so that everything shares one
module (one import, one dispatch table)."""
cimport numpy as cnp
import numpy as np

cnp.import_array()

include "_dispatch.pxi"
include "_codecs.pxi"
include "_qgemm.pxi"
include "_gemm.pxi"
