"""Scaling out with dask: gemmkit products on a dask.distributed cluster of process workers.

A large activation array, a dask array of [rows, K] in row chunks, times one weight matrix:
the weight is packed once with ``gemmkit.pack_b`` and scattered to every worker (a PackedB
pickles as its canonical arrays and packs again where it lands, for that worker's CPU), and
each row block is one gemmkit call on a worker.  K is never split, so every block is a whole
product and the result equals one call on the whole array: bit for bit for the int8 ops
and for float32 Gemm.

    python examples/dask_matmul.py                        # 2 workers, 1 gemmkit thread each
    python examples/dask_matmul.py --workers 4 --gemmkit-threads 2 --rows 65536

Needs ``pip install "dask[distributed]"`` (in gemmkit's test extras).  The README's
"Scaling out with dask" shows the heart of this file verbatim, and tests/test_dask.py runs
it (as a script, and its functions against the exact oracles).
"""
import argparse
import sys

import dask
import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

import gemmkit as gk


def local_cluster(n_workers=2, gemmkit_threads=1, **kwargs):
    """A LocalCluster of `n_workers` process workers, one dask thread each, whose gemmkit
    calls run on `gemmkit_threads` threads each."""
    # gemmkit reads GEMMKIT_NUM_THREADS when it is imported, and a worker process may
    # import it before LocalCluster(env=...) takes effect (a spawned worker re-imports
    # the main script first), so it goes into the environment the worker processes are
    # spawned with.  Without it gemmkit follows the OMP_NUM_THREADS=1 that dask puts there.
    with dask.config.set({"distributed.nanny.pre-spawn-environ.GEMMKIT_NUM_THREADS":
                          str(gemmkit_threads)}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                            **kwargs)


def map_rows(client, op, x, *args, **kwargs):
    """op(block, *args, **kwargs) on every row block of the 2-D dask array x, as a dask
    array: op is gemmkit.matmul_integer, qlinear_matmul or gemm, args the ones after A,
    with x's own parameters per tensor (a bias C per column or per tensor)."""
    x = x.rechunk({1: -1})  # K in one chunk: each block is a whole product
    meta = op(np.zeros((1, x.shape[1]), x.dtype), *args, **kwargs)  # dtype and width
    # the weight pickled to every worker once, under a fresh key: a content-hashed key
    # can meet the release of an earlier scatter of the same weight still in flight
    args = [client.scatter(a, broadcast=True, hash=False) if isinstance(a, gk.PackedB)
            else a for a in args]
    return x.map_blocks(op, *args, **kwargs, dtype=meta.dtype, meta=meta[:0],
                        chunks=(x.chunks[0], meta.shape[1:]))


def worker_threads():
    """(threads, where the setting came from) of gemmkit in this process."""
    return gk.get_num_threads(), gk.cpu_info()["num_threads_source"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--chunk", type=int, default=2048, help="rows per block")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gemmkit-threads", type=int, default=1)
    args = ap.parse_args(argv)
    rows, k, n, chunk = args.rows, args.k, args.n, args.chunk
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (k, n), dtype=np.int8)           # int8 weights [K, N]
    w_scale = rng.uniform(0.5, 1.0, n).astype(np.float32) / k    # per output column
    w_zp = rng.integers(-3, 4, n, dtype=np.int8)
    wf = rng.standard_normal((n, k), dtype=np.float32)           # float32 weights [N, K]
    bias = rng.standard_normal(n, dtype=np.float32)
    x_scale, x_zp = np.float32(0.02), np.uint8(128)
    y_scale, y_zp = np.float32(0.05), np.uint8(128)

    with local_cluster(args.workers, args.gemmkit_threads) as cluster, Client(cluster) as client:
        # activations made on the workers and kept there, in row blocks
        x = da.random.default_rng(1).integers(0, 256, (rows, k), dtype=np.uint8,
                                              chunks=(chunk, k)).persist()
        acc = map_rows(client, gk.matmul_integer, x,
                       gk.pack_b(w, "matmul_integer", b_zero_point=w_zp), x_zp)
        y8 = map_rows(client, gk.qlinear_matmul, x, x_scale, x_zp,
                      gk.pack_b(w, "qlinear_matmul", b_scale=w_scale, b_zero_point=w_zp),
                      None, None, y_scale, y_zp)
        yf = map_rows(client, gk.gemm, x.astype(np.float32),
                      gk.pack_b(wf, "gemm", transB=1), bias, transB=1)
        acc, y8, yf = dask.compute(acc, y8, yf)
        threads = client.run(worker_threads)
        x = x.compute()

    print(f"{len(threads)} workers; gemmkit threads per worker: "
          f"{sorted(t for t, _ in threads.values())} "
          f"(from {', '.join(sorted({s for _, s in threads.values()}))})")
    # the same products in this process, unpacked, in one call each
    xf = x.astype(np.float32)
    same = {"matmul_integer": np.array_equal(acc, gk.matmul_integer(x, w, x_zp, w_zp)),
            "qlinear_matmul": np.array_equal(
                y8, gk.qlinear_matmul(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp)),
            "gemm": np.array_equal(yf, gk.gemm(xf, wf, bias, transB=1))}
    nblocks = -(-rows // chunk)
    for (name, ok), y in zip(same.items(), (acc, y8, yf)):
        print(f"{name:15s} {y.dtype}{list(y.shape)} in {nblocks} row blocks: "
              f"{'equal to' if ok else 'DIFFERENT FROM'} one call in this process")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
