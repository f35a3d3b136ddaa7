"""Threads: how many a call uses, and the controls the ecosystem expects.

Policy (the pool is C, src/csrc/core/gk_parallel.c): one pool per process, created by the
first call that runs on more than one thread (importing gemmkit starts no thread).  A call
uses up to ``get_num_threads()`` threads, itself included, taking whichever pool workers
are idle at that moment and never waiting for busy ones.  So Python threads calling
gemmkit at once neither queue behind one another nor oversubscribe the machine: together
they run at most the setting's worker count plus the calling threads themselves.  Small
products stay on one thread.  Results never depend on the thread count (the output is
split, never K).

The setting, first match wins:
  1. ``with gemmkit.threads(n):`` -- this Python thread only, inside the block;
  2. ``gemmkit.set_num_threads(n)`` (or threadpoolctl's ``threadpool_limits``) -- the process;
  3. ``GEMMKIT_NUM_THREADS``, else ``OMP_NUM_THREADS`` (what dask, Ray and joblib set per
     worker), read at import;
  4. the CPUs this process may run on: its affinity mask, capped by a cgroup CPU quota.
"""
from __future__ import annotations

import contextlib
import math
import os
from typing import Iterator, SupportsIndex

from . import _core

__all__ = ["set_num_threads", "get_num_threads", "threads"]


def _parse_count(name: str, value: str, strict: bool) -> int | None:
    """An environment variable's thread count; OMP_NUM_THREADS may be a list ("4,2": the
    outermost level counts).  Invalid: ValueError when strict, else None."""
    text = value.split(",")[0].strip()
    try:
        n = int(text)
    except ValueError:
        if strict:
            raise ValueError(f"{name}={value!r} is not an integer") from None
        return None
    if n < 1:
        if strict:
            raise ValueError(f"{name}={value!r} must be >= 1")
        return None
    return min(n, _core._MAX_THREADS)


def _cgroup_quota() -> int | None:
    """CPUs allowed by a cgroup CPU quota (v2 cpu.max or v1 cfs_quota_us), rounded up;
    None when there is none or it cannot be read."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        path = path.lstrip("/")
        if controllers == "":  # cgroup v2
            for base in (os.path.join("/sys/fs/cgroup", path), "/sys/fs/cgroup"):
                try:
                    with open(os.path.join(base, "cpu.max")) as f:
                        quota, period = f.read().split()[:2]
                except (OSError, ValueError):
                    continue
                if quota == "max":
                    return None
                return max(1, math.ceil(int(quota) / int(period)))
        elif "cpu" in controllers.split(","):  # cgroup v1
            for base in (os.path.join("/sys/fs/cgroup", controllers, path),
                         os.path.join("/sys/fs/cgroup/cpu", path), "/sys/fs/cgroup/cpu"):
                try:
                    with open(os.path.join(base, "cpu.cfs_quota_us")) as f:
                        quota_us = int(f.read())
                    with open(os.path.join(base, "cpu.cfs_period_us")) as f:
                        period_us = int(f.read())
                except (OSError, ValueError):
                    continue
                if quota_us <= 0 or period_us <= 0:
                    return None
                return max(1, math.ceil(quota_us / period_us))
    return None


def _usable_cpus() -> int:
    """CPUs this process may use: the affinity mask (not the host's count), capped by a
    cgroup CPU quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        n = min(n, quota)
    return max(1, min(n, _core._MAX_THREADS))


def _initial_setting() -> tuple[int, str]:
    """(threads, source) from the environment, read once at import."""
    v = os.environ.get("GEMMKIT_NUM_THREADS", "").strip()
    if v:
        n = _parse_count("GEMMKIT_NUM_THREADS", v, strict=True)
        assert n is not None  # strict: an invalid value raised
        return n, "GEMMKIT_NUM_THREADS"
    v = os.environ.get("OMP_NUM_THREADS", "").strip()
    if v:
        n = _parse_count("OMP_NUM_THREADS", v, strict=False)
        if n is not None:
            return n, "OMP_NUM_THREADS"
    return _usable_cpus(), "cpus"


def _check_count(n: object, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, SupportsIndex):
        raise TypeError(f"{what}: expected an int >= 1, got {type(n).__name__}")
    try:
        count = int(n.__index__())
    except TypeError:  # e.g. a 1-element array: NumPy's own message names no argument
        raise TypeError(f"{what}: expected an int >= 1, got {type(n).__name__} "
                        f"{n!r:.40}") from None
    if count < 1:
        raise ValueError(f"{what}: expected an int >= 1, got {count}")
    if count > _core._MAX_THREADS:
        raise ValueError(f"{what}: at most {_core._MAX_THREADS} threads, got {count}")
    return count


def set_num_threads(n: SupportsIndex) -> int:
    """Set how many threads every gemmkit call of this process may use (itself included),
    unless a ``with gemmkit.threads(n):`` block of the calling thread overrides it.

    n: an int (or anything with ``__index__``, not a bool), 1 <= n <= 256.  Overrides
    ``GEMMKIT_NUM_THREADS`` / ``OMP_NUM_THREADS`` (read at import) and the CPU count;
    threadpoolctl's ``threadpool_limits(n, user_api="gemmkit")`` sets the same value.
    Applies to MatMulInteger, QLinearMatMul, Gemm and cast alike.  Small products still
    run on fewer threads, and results never depend on the count (the output is split,
    never K).  Thread-safe; takes effect for calls that start after it returns.

    Returns the previous process setting (an int).

    Raises TypeError if n is not an integer (a float, a bool, None, a str) and
    ValueError if it is below 1 or above 256.
    """
    count = _check_count(n, "set_num_threads(n)")
    old = _core._get_process_threads()
    _core._set_process_threads(count)
    return old


def get_num_threads() -> int:
    """How many threads a gemmkit call made from this Python thread may use now (an int
    >= 1, the calling thread included): the innermost ``with gemmkit.threads(n):`` block
    of this thread, else the process setting (``set_num_threads``, else
    ``GEMMKIT_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the CPUs this process may
    use: its affinity mask capped by a cgroup CPU quota).  Products too small to pay for
    waking a thread run on fewer.  Raises nothing.
    """
    return _core._effective_threads()


@contextlib.contextmanager
def threads(n: SupportsIndex) -> Iterator[int]:
    """Context manager: ``with gemmkit.threads(n):`` -- gemmkit calls made by this Python
    thread inside the block may use n threads; other Python threads keep their setting.

    n: an int (or anything with ``__index__``, not a bool), 1 <= n <= 256.  Blocks nest
    (the innermost wins) and the previous setting comes back on exit, also when the block
    raises.  The ``as`` target is n.  A thread-local override: it takes precedence over
    ``set_num_threads`` and the environment for this thread only.

    Raises TypeError if n is not an integer and ValueError if it is below 1 or above 256
    (when the ``with`` statement is entered).
    """
    count = _check_count(n, "threads(n)")
    old = _core._get_local_threads()
    _core._set_local_threads(count)
    try:
        yield count
    finally:
        _core._set_local_threads(old)


def _info() -> dict[str, int | str]:
    """cpu_info()'s thread report."""
    return {
        "num_threads": _core._effective_threads(),
        "num_threads_process": _core._get_process_threads(),
        "num_threads_source": _source,
        "usable_cpus": _usable_cpus(),
        "pool_threads": _core._pool_size(),
    }


def _register_threadpoolctl() -> bool:
    """A threadpoolctl controller, so ``threadpool_limits(1)`` limits gemmkit as it limits
    OpenBLAS (user_api and internal_api "gemmkit").  threadpoolctl finds the extension
    module among the loaded libraries by its name and calls its exported
    gk_parallel_get_threads / gk_parallel_set_threads."""
    try:
        import threadpoolctl  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return False
    if not hasattr(threadpoolctl, "register") or not hasattr(threadpoolctl, "LibController"):
        return False

    class GemmkitController(threadpoolctl.LibController):  # type: ignore[misc, unused-ignore]
        user_api = "gemmkit"
        internal_api = "gemmkit"
        filename_prefixes = ("_core.",)
        check_symbols = ("gk_parallel_get_threads", "gk_parallel_set_threads")

        def get_num_threads(self) -> int:
            return int(self.dynlib.gk_parallel_get_threads())

        def set_num_threads(self, num_threads: int) -> None:
            self.dynlib.gk_parallel_set_threads(int(num_threads))

        def get_version(self) -> str:
            from . import __version__
            return __version__

    threadpoolctl.register(GemmkitController)
    return True


_initial, _source = _initial_setting()
_core._set_process_threads(_initial)
_register_threadpoolctl()
