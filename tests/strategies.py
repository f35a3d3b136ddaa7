"""Hypothesis strategies and memory-layout helpers shared by the int8 tests."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

# Edge sizes around typical kernel tiles (4, 8, 16, 32, 64, 128) plus primes.
EDGE_DIMS = list(range(1, 18)) + [31, 32, 33, 37, 41, 53, 63, 64, 65, 97, 127, 128, 129]
SMALL_DIMS = list(range(1, 18)) + [23, 29, 31, 32, 33]
# Deep K, mostly not a multiple of 4 / 8 / 16 / 32 / 64.
DEEP_K = [255, 257, 300, 509, 511, 513, 1000, 1021, 1023, 1025, 2047, 2049, 4099]

LAYOUTS = ("C", "F", "neg", "strided", "offset", "readonly", "swapped")


def relayout(x: np.ndarray, kind: str) -> np.ndarray:
    """An array equal to ``x`` (same values, shape, dtype) with another memory layout."""
    x = np.asarray(x)
    if kind == "C":
        return np.ascontiguousarray(x)
    if kind == "F":
        return np.asfortranarray(x)
    if x.ndim == 0:
        return x.copy()
    if kind == "neg":
        flip = (slice(None, None, -1),) * x.ndim
        return np.ascontiguousarray(x[flip])[flip]
    if kind == "strided":
        buf = np.zeros(tuple(2 * s + 1 for s in x.shape), dtype=x.dtype)
        view = buf[(slice(1, None, 2),) * x.ndim]
        view[...] = x
        return view
    if kind == "offset":
        buf = np.zeros(x.size + 1, dtype=x.dtype)
        view = buf[1:].reshape(x.shape)
        view[...] = x
        return view
    if kind == "readonly":
        y = x.copy()
        y.flags.writeable = False
        return y
    if kind == "swapped":
        if x.ndim < 2:
            return x.copy()
        return np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    raise ValueError(kind)


def layouts():
    return st.sampled_from(LAYOUTS)


def rand_int8(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape, dtype=np.int64).astype(dtype)


def rand_extreme(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Values biased to the ends of the range (the saturating-intermediate hazards)."""
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.min + 1, info.max - 1, info.max, 0, 1, -1 if info.min < 0 else 2],
                    dtype=np.int64)
    return rng.choice(pool, size=shape).astype(dtype)


def int8_dtypes():
    return st.sampled_from([np.dtype(np.uint8), np.dtype(np.int8)])


@st.composite
def mnk(draw, max_macs=400_000):
    """(M, N, K) from the edge lists; occasionally deep K with small M, N."""
    if draw(st.integers(0, 5)) == 0:
        k = draw(st.sampled_from(DEEP_K))
        m = draw(st.sampled_from(SMALL_DIMS[:17]))
        n = draw(st.sampled_from(SMALL_DIMS[:17]))
        return m, n, k
    while True:
        m = draw(st.sampled_from(EDGE_DIMS))
        n = draw(st.sampled_from(EDGE_DIMS))
        k = draw(st.sampled_from(EDGE_DIMS))
        if m * n * k <= max_macs:
            return m, n, k


@st.composite
def batch_shapes(draw):
    """(a_batch, b_batch) that broadcast against each other (numpy.matmul rules)."""
    out = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    a_b, b_b = [], []
    for d in out:
        a_b.append(d if draw(st.booleans()) else 1)
        b_b.append(d if draw(st.booleans()) else 1)
    # drop some leading dims entirely
    a_drop = draw(st.integers(0, len(a_b)))
    b_drop = draw(st.integers(0, len(b_b)))
    return tuple(a_b[a_drop:]), tuple(b_b[b_drop:])
