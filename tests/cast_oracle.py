"""A scalar-semantics oracle for gemmkit.cast, written from the format definitions and the
ONNX Cast tables (opset 19+), not from any library's conversion.

Values are handled exactly in float64 (every float32/float16/bfloat16/float8 value is a
float64; float64 inputs are themselves): rounding to a format's grid divides by a power of
two (exact), rounds with np.rint (ties to even) and multiplies back (exact).  Codes are
assembled from sign, exponent and mantissa fields with integer arithmetic.

NaN results (a choice the ONNX tables leave open, documented in gemmkit.cast):
  float8: E4M3FN S.1111.111, E5M2 S.11111.10 (quiet), fnuz 0x80; S the input's sign.
  float16/bfloat16/float32/float64: sign kept, quiet bit set, the source payload's top bits
  (a float8 NaN carries no payload: it decodes to the default quiet NaN with its sign).
  Two exceptions keep every bit: the same type (a copy) and bfloat16 -> float32 (the bfloat16
  is the top half of the float32).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class Fmt:
    name: str
    mbits: int      # stored mantissa bits
    ebits: int      # exponent field bits
    bias: int
    kind: str       # "ieee" (inf + NaN at the all-ones exponent), "fn" (E4M3FN), "fnuz"
    nbits: int      # total bits of a code

    @property
    def emin(self):  # exponent of the smallest normal
        return 1 - self.bias

    @property
    def max_code(self):  # magnitude code of the largest finite value
        if self.kind == "ieee":
            return (((1 << self.ebits) - 2) << self.mbits) | ((1 << self.mbits) - 1)
        if self.kind == "fn":
            return (1 << (self.nbits - 1)) - 2
        return (1 << (self.nbits - 1)) - 1

    @property
    def sign_bit(self):
        return 1 << (self.nbits - 1)

    @property
    def max_value(self):
        e, m = self.max_code >> self.mbits, self.max_code & ((1 << self.mbits) - 1)
        return float(np.ldexp(float((1 << self.mbits) + m), e - self.bias - self.mbits))


FORMATS = {
    np.dtype(np.float64): Fmt("float64", 52, 11, 1023, "ieee", 64),
    np.dtype(np.float32): Fmt("float32", 23, 8, 127, "ieee", 32),
    np.dtype(np.float16): Fmt("float16", 10, 5, 15, "ieee", 16),
    np.dtype(ml_dtypes.bfloat16): Fmt("bfloat16", 7, 8, 127, "ieee", 16),
    np.dtype(ml_dtypes.float8_e4m3fn): Fmt("float8_e4m3fn", 3, 4, 7, "fn", 8),
    np.dtype(ml_dtypes.float8_e4m3fnuz): Fmt("float8_e4m3fnuz", 3, 4, 8, "fnuz", 8),
    np.dtype(ml_dtypes.float8_e5m2): Fmt("float8_e5m2", 2, 5, 15, "ieee", 8),
    np.dtype(ml_dtypes.float8_e5m2fnuz): Fmt("float8_e5m2fnuz", 2, 5, 16, "fnuz", 8),
}
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
FLOAT8 = [d for d, f in FORMATS.items() if f.nbits == 8]


def bits_of(a):
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize * 8]).astype(np.uint64)


def decode(bits, f: Fmt):
    """Codes -> (value as float64 with NaN replaced by 0, is_nan, sign (0/1), payload).
    The payload is the NaN's mantissa field as a fraction of 2^mbits (numerator, mbits)."""
    bits = np.asarray(bits, dtype=np.uint64)
    sign = (bits >> np.uint64(f.nbits - 1)) & np.uint64(1)
    mag = bits & np.uint64(f.sign_bit - 1)
    e = (mag >> np.uint64(f.mbits)).astype(np.int64)
    m = (mag & np.uint64((1 << f.mbits) - 1)).astype(np.int64)
    emax_field = (1 << f.ebits) - 1
    if f.kind == "ieee":
        nan = (e == emax_field) & (m != 0)
        inf = (e == emax_field) & (m == 0)
    elif f.kind == "fn":
        nan = mag == np.uint64(f.sign_bit - 1)
        inf = np.zeros(bits.shape, bool)
    else:
        nan = bits == np.uint64(f.sign_bit)
        inf = np.zeros(bits.shape, bool)
    sig = np.where(e == 0, m, m + (1 << f.mbits)).astype(np.float64)
    ex = np.where(e == 0, 1, e) - f.bias - f.mbits
    val = np.ldexp(sig, ex.astype(np.int64))
    val = np.where(inf, np.inf, val)
    val = np.where(nan, 0.0, val)
    val = np.where(sign == 1, -val, val)
    payload = np.where(nan, m, 0)
    return val, nan, sign.astype(np.int64), payload


def encode(val, nan, sign, payload, src_mbits, f: Fmt, saturate: bool, src_is_fp8: bool):
    """Exact values (float64, +-inf allowed; NaN flagged separately) -> codes of f, ONNX Cast
    rules.  Returns uint64 codes."""
    val = np.asarray(val, dtype=np.float64)
    sb = np.uint64(f.sign_bit)
    sgn = np.where(sign == 1, sb, np.uint64(0)).astype(np.uint64)
    av = np.abs(val)
    finite = np.isfinite(av)
    avf = np.where(finite, av, 0.0)
    # round to the grid with an unbounded exponent
    _, ex = np.frexp(avf)
    e = np.maximum(ex.astype(np.int64) - 1, f.emin)
    q = e - f.mbits
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.ldexp(np.rint(np.ldexp(avf, -q)), q)
    over = ~finite | (r > f.max_value)
    # code of an in-range rounded value
    rr = np.where(over, 0.0, r)
    _, rex = np.frexp(rr)
    re = rex.astype(np.int64) - 1
    sub = rr < np.ldexp(1.0, f.emin)
    with np.errstate(over="ignore", invalid="ignore"):
        m_sub = np.ldexp(rr, -(f.emin - f.mbits))
        m_nrm = np.ldexp(rr, -(re - f.mbits)) - (1 << f.mbits)
    efield = np.where(sub, 0, re + f.bias)
    mfield = np.where(sub, m_sub, m_nrm).astype(np.uint64)
    code = (efield.astype(np.uint64) << np.uint64(f.mbits)) | mfield
    zero = code == 0
    if f.kind == "fnuz":
        code = np.where(zero, np.uint64(0), code | sgn)
    else:
        code = code | sgn
    # overflow and infinities
    is_f8 = f.nbits == 8
    if is_f8 and saturate:
        ovf = np.uint64(f.max_code) | sgn
    elif f.kind == "ieee":
        ovf = np.uint64(((1 << f.ebits) - 1) << f.mbits) | sgn
    elif f.kind == "fn":
        ovf = np.uint64(f.sign_bit - 1) | sgn
    else:
        ovf = np.full(code.shape, np.uint64(f.sign_bit))
    code = np.where(over, ovf, code)
    # NaN
    if is_f8:
        if f.kind == "fnuz":
            nanc = np.full(code.shape, np.uint64(f.sign_bit))
        elif f.kind == "fn":
            nanc = np.uint64(f.sign_bit - 1) | sgn
        else:  # E5M2: quiet NaN S.11111.10
            nanc = np.uint64((((1 << f.ebits) - 1) << f.mbits) | (1 << (f.mbits - 1))) | sgn
    else:
        p = np.asarray(payload, dtype=np.uint64)
        if src_is_fp8:
            p = np.zeros(code.shape, np.uint64)
        elif f.mbits >= src_mbits:
            p = p << np.uint64(f.mbits - src_mbits)
        else:
            p = p >> np.uint64(src_mbits - f.mbits)
        nanc = (np.uint64(((1 << f.ebits) - 1) << f.mbits) | np.uint64(1 << (f.mbits - 1))
                | p | sgn)
    return np.where(nan, nanc, code).astype(np.uint64)


def cast(x, dtype, saturate=True):
    """The expected codes (as an unsigned integer array of the destination's width)."""
    x = np.asarray(x)
    sf, df = FORMATS[x.dtype], FORMATS[np.dtype(dtype)]
    if sf is df:  # the same type: a copy, every bit kept
        return bits_of(x).astype(UINT[df.nbits])
    if sf.name == "bfloat16" and df.name == "float32":
        # bfloat16 is the top half of a float32: the exact bit widening, NaNs unchanged
        # (a signaling NaN stays signaling)
        return (bits_of(x) << np.uint64(16)).astype(np.uint32)
    val, nan, sign, payload = decode(bits_of(x), sf)
    out = encode(val, nan, sign, payload, sf.mbits, df, saturate, sf.nbits == 8)
    return out.astype(UINT[df.nbits])
