"""Build of gemmkit's one extension module, gemmkit._core.

The C core is laid out engine first, ISA last: src/csrc/<engine>/ (core, qgemm, gemm,
codecs) holds the baseline files, src/csrc/<engine>/{scalar,x86,arm}/ the kernel families.
Baseline code (Cython's generated C and src/csrc/*/*.c) is compiled for the platform's
baseline ISA.  Each runtime-dispatched ISA lives in its own files, named by suffix
(src/csrc/qgemm/x86/*_avx2.c, src/csrc/qgemm/arm/*_neondot.c, ...), compiled separately with that
ISA's flags and linked in; the build defines GK_HAVE_<ISA> for each group the compiler
accepted, so the dispatcher only lists paths that exist.  No flag ever targets the build
machine's own CPU (wheels must run on any CPU of their platform).
"""
import glob
import os
import platform
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _rel(pattern):
    return sorted(os.path.relpath(p, HERE)
                  for p in glob.glob(os.path.join(HERE, pattern), recursive=True))


def _machine():
    m = os.environ.get("GEMMKIT_TARGET_ARCH") or platform.machine()
    m = m.lower()
    if m in ("x86_64", "amd64", "x64", "i686", "x86"):
        return "x86"
    if m in ("aarch64", "arm64", "armv8"):
        return "arm64"
    return "other"


# ISA groups: (name, file suffix, directory, gcc/clang flags, msvc flags).
# The scalar oracle is its own group: built without auto-vectorisation so it stays scalar.
X86_GROUPS = [
    ("amx", "src/csrc/*/x86/*_amx.c",
     ["-mamx-tile", "-mamx-int8", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni",
      "-mavx2", "-mfma"], ["/arch:AVX512"]),
    ("sse41", "src/csrc/*/x86/*_sse41.c", ["-msse4.1"], []),
    ("avx2", "src/csrc/*/x86/*_avx2.c", ["-mavx2", "-mfma", "-mf16c"], ["/arch:AVX2"]),
    ("avxvnni", "src/csrc/*/x86/*_avxvnni.c", ["-mavx2", "-mfma", "-mavxvnni"], ["/arch:AVX2"]),
    ("avx512vnni", "src/csrc/*/x86/*_avx512vnni.c",
     ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni", "-mavx2", "-mfma"],
     ["/arch:AVX512"]),
]
ARM64_GROUPS = [
    ("neon", "src/csrc/*/arm/*_neon.c", [], []),
    ("neondot", "src/csrc/*/arm/*_neondot.c", ["-march=armv8.2-a+dotprod"], []),
    ("i8mm", "src/csrc/*/arm/*_i8mm.c", ["-march=armv8.2-a+dotprod+i8mm"], []),
]
# The baseline C files of every engine (no ISA flags).
BASELINE_GLOB = "src/csrc/*/*.c"
SCALAR_GROUP = ("scalar", "src/csrc/*/scalar/*.c",
                ["-fno-tree-vectorize", "-fno-tree-slp-vectorize"], [])
CLANG_SCALAR_FLAGS = ["-fno-vectorize", "-fno-slp-vectorize"]


def isa_groups():
    arch = _machine()
    groups = [SCALAR_GROUP]
    if arch == "x86":
        groups += X86_GROUPS
    elif arch == "arm64":
        groups += ARM64_GROUPS
    return groups


if __name__ == "__main__" and sys.argv[1:] == ["print-isa-groups"]:
    # One line per group, "name|gcc flags|source glob", for the C test scripts
    # (tests/c/run_native.sh, scripts/test_qemu_aarch64.sh), so flags live only here.
    # GEMMKIT_TARGET_ARCH=arm64 prints the ARM64 groups on any host.  The first line,
    # "baseline||glob", names the files built without ISA flags.
    print(f"baseline||{BASELINE_GLOB}")
    for name, pattern, gflags, _ in isa_groups():
        print(f"{name}|{' '.join(gflags)}|{pattern}")
    sys.exit(0)

import numpy  # noqa: E402
from Cython.Build import cythonize  # noqa: E402
from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402


class build_ext_isa(build_ext):
    """Compiles each ISA group with its own flags, then the baseline extension."""

    def _is_msvc(self):
        return self.compiler.compiler_type == "msvc"

    def _is_clang(self):
        cc = " ".join(getattr(self.compiler, "compiler_so", []) or [])
        return "clang" in cc or sys.platform == "darwin"

    def _flags_ok(self, flags):
        if not flags:
            return True
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write("int gk_probe(void) { return 0; }\n")
            try:
                self.compiler.compile([src], output_dir=tmp, extra_postargs=flags)
                return True
            except Exception:
                return False

    def build_extension(self, ext):
        msvc = self._is_msvc()
        base = ["/O2", "/fp:precise"] if msvc else ["-O3", "-ffp-contract=off", "-fno-strict-aliasing"]
        if not msvc:
            base.append("-std=gnu99")
        for name, pattern, gflags, mflags in isa_groups():
            sources = _rel(pattern)
            if not sources:
                continue
            flags = mflags if msvc else gflags
            if name == "scalar" and not msvc and self._is_clang():
                flags = CLANG_SCALAR_FLAGS
            if not self._flags_ok(flags):
                print(f"gemmkit: compiler rejects {flags}; {name} path not built")
                continue
            objects = self.compiler.compile(
                sources,
                output_dir=self.build_temp,
                include_dirs=ext.include_dirs,
                macros=list(ext.define_macros),
                extra_postargs=base + flags,
                debug=self.debug,
            )
            ext.extra_objects.extend(objects)
            ext.define_macros.append((f"GK_HAVE_{name.upper()}", "1"))
        ext.extra_compile_args = list(ext.extra_compile_args or []) + base
        super().build_extension(ext)


ext = Extension(
    "gemmkit._core",
    sources=["src/gemmkit/_core.pyx"] + _rel(BASELINE_GLOB),
    include_dirs=["include", "src/csrc", numpy.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    libraries=[] if sys.platform == "win32" else ["m"],
    # every C file, header and .pxi: a change anywhere relinks the module
    depends=(_rel("src/csrc/**/*.c") + _rel("src/csrc/**/*.h") + _rel("include/gemmkit/*.h")
             + _rel("src/gemmkit/*.pxi")),
)

setup(
    ext_modules=cythonize(
        [ext],
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
    cmdclass={"build_ext": build_ext_isa},
)
