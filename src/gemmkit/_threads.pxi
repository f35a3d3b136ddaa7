# Thread settings (the pool itself is C: src/csrc/core/gk_parallel.c).  The public API
# (set_num_threads, get_num_threads, threads, the threadpoolctl controller) is in
# gemmkit/_threads.py; these are its hooks into C.


def _set_process_threads(int n):
    gk_parallel_set_threads(n)


def _get_process_threads():
    return gk_parallel_get_threads()


def _set_local_threads(int n):
    """This OS thread's override (0 removes it)."""
    gk_parallel_set_local(n)


def _get_local_threads():
    return gk_parallel_get_local()


def _effective_threads():
    return gk_parallel_threads()


def _pool_size():
    """Worker threads alive (none before the first parallel call)."""
    return gk_parallel_pool_size()


_MAX_THREADS = GK_MAX_THREADS


def _grid(m, n, k, int mr, int nr, double min_work, int threads, bint rows_too=True,
          bint b_shared=False):
    """gk_parallel_grid's split (tests): (parts, tm, tn)."""
    cdef int tm = 1, tn = 1
    cdef int flags = (1 if rows_too else 0) | (2 if b_shared else 0)
    cdef int t = gk_parallel_grid(m, n, k, mr, nr, min_work, threads, flags, &tm, &tn)
    return t, tm, tn


def _parallel_tuning(share_b=None, parts_per_thread=None):
    """The parallel drivers' policy (gk_parallel_set_tuning; benchmarks and tests compare
    the settings in one process): whether a split product packs B' once for all threads,
    and the parts made per thread.  Arguments left None keep their value.  Returns the
    previous (share_b, parts_per_thread)."""
    cdef int old_share = gk_parallel_share_b(), old_parts = gk_parallel_parts_per_thread()
    gk_parallel_set_tuning(old_share if share_b is None else int(bool(share_b)),
                           old_parts if parts_per_thread is None else int(parts_per_thread))
    return bool(old_share), old_parts


def _set_work_scale(double scale):
    """Factor on every least-work-per-thread threshold (tests: 0 splits even tiny products
    over every thread).  Returns the previous factor."""
    cdef double old = gk_parallel_work_scale()
    gk_parallel_set_work_scale(scale)
    return old
