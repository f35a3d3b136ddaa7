"""Helpers shared by the benchmark scripts (run as `python benchmarks/<script>.py`, so
this folder is on sys.path)."""
from __future__ import annotations


def cpu_name() -> str:
    """The CPU model as the OS names it (lscpu's "Model name"), for the table header."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()
