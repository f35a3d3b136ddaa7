"""Helpers shared by the benchmark scripts (run as `python benchmarks/<script>.py`, so
this folder is on sys.path)."""
from __future__ import annotations

import os
import sys


def one_thread() -> int:
    """Pins gemmkit to one thread for the whole process (the one-thread tables compare it
    with one-thread onnxruntime / NumPy) and returns the count gemmkit then reports, so
    the header and --json state what ran, not what was meant."""
    import gemmkit as gk
    gk.set_num_threads(1)
    n = gk.get_num_threads()
    if n != 1:
        raise SystemExit(f"gemmkit runs on {n} threads after set_num_threads(1): "
                         "a `with gemmkit.threads(...)` or threadpoolctl limit is active")
    return n


def cpu_name() -> str:
    """The CPU model as the OS names it (lscpu's "Model name"), for the table header."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import subprocess
    # ARM Linux has no "model name" in /proc/cpuinfo (lscpu names the core); macOS: sysctl
    for cmd, key in ((["lscpu"], "Model name:"),
                     (["sysctl", "-n", "machdep.cpu.brand_string"], "")):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in out.splitlines():
            if line.startswith(key) and line[len(key):].strip():
                return line[len(key):].strip()
    import platform
    return platform.processor() or platform.machine()


def cpu_class(features) -> str:
    """The CPU class the issue's targets are set per, from gemmkit's detected features
    (gk.cpu_info()["features"]: what the CPU has and the OS lets a process use)."""
    f = set(features)
    flags = set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "amx-int8" in f:
        return "AMX class (e.g. Sapphire Rapids)"
    if "avx512vnni" in f:
        refused = " (the CPU has AMX, refused to this process)" if "amx_int8" in flags else ""
        return "AVX-512 VNNI class (e.g. Zen 4)" + refused
    if "avx2" in f:
        return "AVX2 class (e.g. Zen 2)" + (" with AVX-VNNI" if "avxvnni" in f else "")
    return "other"


def llc_bytes():
    """The size of the last-level cache cpu0 sees (Linux sysfs), or None."""
    import glob
    best = None
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(os.path.join(d, "type")) as fh:
                if fh.read().strip() == "Instruction":
                    continue
            with open(os.path.join(d, "level")) as fh:
                level = int(fh.read())
            with open(os.path.join(d, "size")) as fh:
                s = fh.read().strip()
        except (OSError, ValueError):
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
        try:
            size = int(s.rstrip("KMG")) * mult
        except ValueError:
            continue
        if best is None or level > best[0]:
            best = (level, size)
    return best[1] if best else None


def build_c_lib(name: str, *extra: str, quiet: bool = True) -> str:
    """benchmarks/c/<name>.c compiled with the C compiler ($CC, else cc) into a shared
    library in a fresh temporary directory; returns its path.  Raises OSError or
    subprocess.CalledProcessError where that fails (no compiler); quiet: the compiler's
    output is captured (callers that fall back), else it goes to the terminal."""
    import subprocess
    import tempfile
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c", name + ".c")
    so = os.path.join(tempfile.mkdtemp(), name + ".so")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", src, "-o", so,
                    *extra], check=True, capture_output=quiet)
    return so


def peak_gops(loop, iters: int = 100000, tries: int = 5) -> float:
    """Best rate of a benchmarks/c peak loop (ctypes function: iterations -> multiply-adds
    done), in G operations/s counting a multiply-add as two."""
    import time
    best = 0.0
    for _ in range(tries):
        t0 = time.perf_counter()
        macs = loop(iters)
        best = max(best, 2.0 * macs / (time.perf_counter() - t0) / 1e9)
    return best


# ---------------------------------------------------------------------- --json output
#
# Each script keeps what it prints as rows (dicts) and, given --json PATH, writes them with
# the machine they were measured on; benchmarks/report.py draws them.  Units: times in
# seconds (keys ending _s), rates in G operations/s counting a multiply-add as two
# (_gops; GFLOP/s for float types), bandwidths in GB/s = 1e9 bytes/s (_gbs), percentages
# 0..100 (pct_), None where the table prints "-" or "n/a".

JSON_SCHEMA = 1
_ROWS: list = []
_META: dict = {}


def add_json_option(ap) -> None:
    ap.add_argument("--json", metavar="PATH", default=None,
                    help="also write every row printed, with the CPU and the measured "
                         "peaks / bandwidth, as JSON to PATH (benchmarks/report.py plots it); "
                         "the text output is unchanged")


def record(section: str, **fields) -> None:
    """Keeps one printed row for --json."""
    _ROWS.append({"section": section, **fields})


def record_meta(**fields) -> None:
    """Keeps run-wide values (peaks, bandwidths, thread count, versions) for --json."""
    _META.update(fields)


def machine_info() -> dict:
    """The CPU and software the run was measured on."""
    import datetime
    import platform

    import numpy as np

    import gemmkit as gk
    info = gk.cpu_info()
    out = {"cpu_model": cpu_name(), "cpu_class": cpu_class(info["features"]),
           "machine": platform.machine(), "platform": platform.platform(),
           "features": list(info["features"]), "isa": info["isa"],
           "available": list(info["available"]), "engines": info["engines"],
           "caches": info.get("caches"), "llc_bytes": llc_bytes(),
           "usable_cpus": info.get("usable_cpus"), "cpu_count": os.cpu_count(),
           "python": platform.python_version(), "gemmkit": gk.__version__,
           "numpy": np.__version__,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    ort = sys.modules.get("onnxruntime")
    out["onnxruntime"] = getattr(ort, "__version__", None)
    return out


def write_json(path, bench: str) -> None:
    """Writes the rows and run-wide values kept so far, if path is given."""
    if not path:
        return
    import json
    doc = {"schema": JSON_SCHEMA, "bench": bench, "argv": sys.argv[1:],
           "machine": machine_info(), "meta": _META, "rows": _ROWS}
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=_json_default)
        f.write("\n")


def _json_default(x):
    """NumPy scalars (and anything else with .item()) as Python numbers."""
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"not JSON serializable: {type(x).__name__}")
