# Dispatch report and override: GEMMKIT_ISA (read once at import).
import os as _os

# Gemm element types in cpu_info()'s report (the order of enum gk_gemm_dtype).
_GEMM_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", "int32", "uint32", "int64",
                     "uint64")


def _levels():
    return [gk_isa_level_name(i).decode() for i in range(gk_isa_level_count())]


def _compiled_isas():
    """Levels some engine has a family for, best first."""
    return [gk_isa_level_name(i).decode() for i in reversed(range(gk_isa_level_count()))
            if gk_isa_level_compiled(i)]


def _available_isas():
    """Levels usable on this machine (compiled and supported by the CPU/OS), best first."""
    return [gk_isa_level_name(i).decode() for i in reversed(range(gk_isa_level_count()))
            if gk_isa_level_usable(i)]


def _set_isa(name):
    """Cap every engine at an ISA level (GEMMKIT_ISA; tests and benchmarks switch it between
    calls); 'auto' picks the best usable one."""
    cdef bytes b = str(name).encode()
    cdef int rc = gk_select_isa(b)
    if rc == GK_SELECT_OK:
        return
    avail = ", ".join(_available_isas())
    if rc == GK_SELECT_NOT_COMPILED:
        raise ValueError(f"GEMMKIT_ISA={name!r}: no kernel for that level is compiled into "
                         f"this build; available here: {avail} (or 'auto')")
    if rc == GK_SELECT_UNKNOWN:
        raise ValueError(f"GEMMKIT_ISA={name!r} is not a known level on this architecture; "
                         f"known: {', '.join(_levels())}; available here: {avail} (or 'auto')")
    raise ValueError(f"GEMMKIT_ISA={name!r}: this CPU/OS does not support it; "
                     f"available here: {avail} (or 'auto')")


def _qgemm_family_info():
    """Block sizes of the int8 family in use (tests derive their shapes from them):
    register tile mr x nr, depth step kstep, the small-M limit (0: none) and the one for
    K * N >= 2**20 (smallm_wide_max; 0: none past smallm_max), packed element
    sizes, the depth block kc (deeper products run in blocks of at most kc), kc_deep (0:
    none; the depth block of products whose partial sums exceed half of L2), the depth
    beyond which the driver runs chunks, whether the family runs whole columns of
    tiles itself (ucolumn), the fraction of L2 its blocks take on a CPU with a slow L3
    (slow_l3_block_div; 0: none) and whether this CPU's L3 is one (l3_slow)."""
    cdef const gk_qgemm_kernel *k = gk_qgemm_active()
    return {"isa": k.isa.decode(), "mr": k.mr, "nr": k.nr, "kstep": k.kstep,
            "smallm_max": k.smallm_max, "smallm_wide_max": k.smallm_wide_max,
            "a_elem_bytes": k.a_elem_bytes, "b_elem_bytes": k.b_elem_bytes,
            "kc": gk_qgemm_kc(k), "kc_deep": k.kc_deep, "kchunk": _QGEMM_KCHUNK,
            "ucolumn": k.ucolumn != NULL, "slow_l3_block_div": k.slow_l3_block_div,
            "l3_slow": bool(gk_cpu_caches().l3_slow)}


def _qgemm_blocking(int m, int n, int k, bint cached=False):
    """How the int8 family in use blocks a packed m x n x k product (tests build their
    shapes from it): depth blocks (kcb deep, nblk of them), A blocks of mc rows, B blocks
    of nc columns, and ms rows per partial-sum scratch (any output kind).  cached: B read
    from a cache (pack_b, a batch's shared B), whose depth blocks are always kc."""
    cdef gk_qgemm_blocking bl
    gk_qgemm_blocking_of(gk_qgemm_active(), m, n, k, not cached, &bl)
    return {"kcb": bl.kcb, "nblk": bl.nblk, "mc": bl.mc, "nc": bl.nc, "ms": bl.ms}


def _engines():
    """Each engine's family at the selected level."""
    return {
        "qgemm": gk_qgemm_active().isa.decode(),
        "gemm": {n: gk_gemm_kernel_for(i).isa.decode() for i, n in enumerate(_GEMM_DTYPE_NAMES)},
        "codecs": gk_codecs_active().isa.decode(),
    }


def cpu_info():
    """What gemmkit detected on this CPU and what each engine uses.

    Returns a new dict (typed as ``gemmkit.CpuInfo``) with exactly these keys:

    ``isa`` : str
        The selected ISA level: the best usable one, or ``GEMMKIT_ISA``.  Levels, x86:
        scalar < sse41 < avx2 < avxvnni < avx512 < avx512vnni < amx; ARM64: scalar <
        neon < neondot < i8mm.
    ``engines`` : dict
        The kernel family each engine uses at that level: ``"qgemm"`` (MatMulInteger,
        QLinearMatMul), ``"gemm"`` (a dict from each Gemm dtype name -- float16,
        bfloat16, float32, float64, int32, uint32, int64, uint64 -- to its family) and
        ``"codecs"`` (casts and the float16/bfloat16 conversions).  A family is named by
        its level, or by its level plus the one feature it needs beyond it, e.g.
        bfloat16's ``"avx512bf16"`` at level avx512.
    ``available`` : list of str
        Levels usable on this machine (compiled in and supported by the CPU and OS),
        best first.
    ``compiled`` : list of str
        Levels some engine has a family for in this build, best first.
    ``features`` : list of str
        CPU features detected, with OS support checked (e.g. ``"avx2"``, ``"fma"``,
        ``"avx512vnni"``).
    ``caches`` : dict
        ``"l1d"``, ``"l2"`` (one core's) and ``"l3"``: sizes in bytes as the CPU reports
        them through CPUID (they size the kernels' cache blocks); 0 where none is
        reported, e.g. on ARM64.
    ``num_threads`` : int
        Threads a call from this Python thread may use now (``get_num_threads()``).
    ``num_threads_process`` : int
        The process-wide setting (``set_num_threads``).
    ``num_threads_source`` : str
        Where the process setting came from at import: ``"GEMMKIT_NUM_THREADS"``,
        ``"OMP_NUM_THREADS"`` or ``"cpus"`` (the CPUs this process may use).
    ``usable_cpus`` : int
        CPUs this process may run on: its affinity mask, capped by a cgroup CPU quota.
    ``pool_threads`` : int
        Pool worker threads alive now (0 before the first call that used several).

    Raises nothing.  (An invalid ``GEMMKIT_ISA`` already raised ValueError at import.)
    """
    cdef const char *names[32]
    cdef int n = gk_cpu_feature_names(names, 32)
    cdef const gk_cpu_cache_sizes *c = gk_cpu_caches()
    return {
        "isa": gk_isa_level_name(gk_selected_level()).decode(),
        "engines": _engines(),
        "available": _available_isas(),
        "compiled": _compiled_isas(),
        "features": [names[i].decode() for i in range(n)],
        "caches": {"l1d": c.l1d, "l2": c.l2, "l3": c.l3},
        **_threads_info(),
    }


def _avx_upper_in_use():
    """Tests: whether this thread's ymm/zmm upper halves are in use right now (x86 XINUSE
    bits 2 and 6); None where the CPU cannot tell.  gemmkit's kernels must return with
    them clear (vzeroupper), or the caller's legacy-SSE code that runs next slows down."""
    cdef int r = gk_cpu_avx_upper_in_use()
    return None if r < 0 else bool(r)


def _threads_info():
    from gemmkit import _threads
    return _threads._info()


_env_isa = _os.environ.get("GEMMKIT_ISA", "").strip()
if _env_isa:
    _set_isa(_env_isa)
