# Dispatch report and override: GEMMKIT_ISA (read once at import), GEMMKIT_NUM_THREADS.
import os as _os

cdef extern from "gemmkit/gk_dispatch.h" nogil:
    ctypedef struct gk_qgemm_kernel:
        const char *isa
        int mr, nr, kstep
    unsigned gk_cpu_features()
    int gk_cpu_feature_names(const char **names, int cap)
    int gk_qgemm_kernel_count()
    const gk_qgemm_kernel *gk_qgemm_kernel_at(int i)
    int gk_qgemm_kernel_usable(int i)
    const gk_qgemm_kernel *gk_qgemm_active()
    int gk_select_isa(const char *name)
    const char *gk_active_isa()

# Every path gemmkit knows, on any platform (for error messages).
_KNOWN_ISAS = ("avx512vnni", "avxvnni", "avx2", "sse41", "i8mm", "neondot", "neon", "scalar")


def _compiled_isas():
    return [gk_qgemm_kernel_at(i).isa.decode() for i in range(gk_qgemm_kernel_count())]


def _available_isas():
    return [gk_qgemm_kernel_at(i).isa.decode()
            for i in range(gk_qgemm_kernel_count()) if gk_qgemm_kernel_usable(i)]


def _set_isa(name):
    """Switch the int8 kernel path (for tests and benchmarks); 'auto' picks the best."""
    cdef bytes b = str(name).encode()
    cdef int rc = gk_select_isa(b)
    if rc == 0:
        return
    avail = ", ".join(_available_isas())
    if rc == -1:
        if name in _KNOWN_ISAS:
            raise ValueError(f"GEMMKIT_ISA={name!r}: that path is not compiled into this build; "
                             f"available here: {avail} (or 'auto')")
        raise ValueError(f"GEMMKIT_ISA={name!r} is not a known path; known paths: "
                         f"{', '.join(_KNOWN_ISAS)}; available here: {avail} (or 'auto')")
    raise ValueError(f"GEMMKIT_ISA={name!r}: this CPU/OS does not support it; "
                     f"available here: {avail} (or 'auto')")


def _read_num_threads():
    v = _os.environ.get("GEMMKIT_NUM_THREADS", "1").strip() or "1"
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"GEMMKIT_NUM_THREADS={v!r} is not an integer") from None
    if n < 1:
        raise ValueError(f"GEMMKIT_NUM_THREADS={v!r} must be >= 1")
    return n


_num_threads_requested = _read_num_threads()


def cpu_info():
    """What gemmkit detected and uses.

    Returns a dict: ``isa`` (the int8 path in use), ``available`` (paths usable on this
    machine, best first), ``compiled`` (paths built into this binary), ``features`` (CPU
    features detected, with OS support checked), ``num_threads`` (threads used per call;
    GEMMKIT_NUM_THREADS is read, multi-threading is not implemented yet so this is 1) and
    ``num_threads_requested``."""
    cdef const char *names[32]
    cdef int n = gk_cpu_feature_names(names, 32)
    return {
        "isa": gk_active_isa().decode(),
        "available": _available_isas(),
        "compiled": _compiled_isas(),
        "features": [names[i].decode() for i in range(n)],
        "num_threads": 1,
        "num_threads_requested": _num_threads_requested,
    }


_env_isa = _os.environ.get("GEMMKIT_ISA", "").strip()
if _env_isa:
    _set_isa(_env_isa)
