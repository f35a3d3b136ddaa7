"""Run by scripts/test_qemu_x86.sh under `qemu-x86_64-static -cpu <model>`: the installed
package must import without an illegal instruction, pick the expected path and give
exact results on every path usable on that CPU model.

    python tests/emulated_check.py EXPECTED_ISA [--quick]
"""
import sys

import numpy as np

import gemmkit as gk
from gemmkit import _core


def wrap32(x):
    return ((x + 2**31) % 2**32 - 2**31).astype(np.int32)


def check_path(path, rng, quick):
    _core._set_isa(path)
    shapes = [(1, 1, 1), (5, 17, 3), (33, 65, 31), (8, 300, 129)]
    if not quick:
        shapes += [(64, 64, 64), (127, 129, 65), (1, 1000, 200), (130, 40, 70)]
    n = 0
    for (M, K, N) in shapes:
        for ta, tb in [(np.uint8, np.int8), (np.int8, np.uint8), (np.uint8, np.uint8),
                       (np.int8, np.int8)]:
            A = rng.integers(np.iinfo(ta).min, np.iinfo(ta).max + 1, (M, K)).astype(ta)
            B = rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1, (K, N)).astype(tb)
            az = rng.integers(np.iinfo(ta).min, np.iinfo(ta).max + 1, M).astype(ta)
            bz = tb(rng.integers(np.iinfo(tb).min, np.iinfo(tb).max + 1))
            want = wrap32((A.astype(np.int64) - az[:, None].astype(np.int64)) @
                          (B.astype(np.int64) - np.int64(bz)))
            got = gk.matmul_integer(A, B, az, bz)
            assert np.array_equal(got, want), (path, M, K, N, ta, tb)
            n += 1
    # extremes: 255 x -128 over deep K, and the int32 wrap
    A = np.full((3, 4100), 255, np.uint8)
    B = np.full((4100, 5), -128, np.int8)
    assert np.array_equal(gk.matmul_integer(A, B), np.full((3, 5), 255 * -128 * 4100, np.int32))
    K = 40000 if not quick else 20000
    A = np.full((2, K), 255, np.uint8)
    B = np.full((K, 3), 127, np.int8)
    want = wrap32(np.full((2, 3), 255 * 255 * K, np.int64))   # b_zp = -128 -> 255 * 255
    assert np.array_equal(gk.matmul_integer(A, B, None, np.int8(-128)), want)
    # requantization
    a = rng.integers(0, 256, (9, 70), dtype=np.uint8)
    b = rng.integers(-128, 128, (70, 11)).astype(np.int8)
    acc = (a.astype(np.int64) - 7) @ b.astype(np.int64)
    m = np.float64(np.float32(np.float32(np.float32(0.05) * np.float32(0.02)) / np.float32(0.3)))
    want = np.clip(np.rint(acc * m) + 100, 0, 255).astype(np.uint8)
    got = gk.qlinear_matmul(a, np.float32(0.05), np.uint8(7), b, np.float32(0.02), np.int8(0),
                            np.float32(0.3), np.uint8(100))
    assert np.array_equal(got, want), path
    return n + 3


def main():
    expected = sys.argv[1]
    quick = "--quick" in sys.argv
    info = gk.cpu_info()
    print(f"  detected features: {info['features']}")
    print(f"  available: {info['available']}; in use: {info['isa']}")
    if info["isa"] != expected:
        print(f"  FAIL: expected the {expected} path to be chosen")
        return 1
    rng = np.random.default_rng(7)
    total = 0
    for path in info["available"]:
        total += check_path(path, rng, quick)
        print(f"  {path}: exact")
    print(f"{total} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
