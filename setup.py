"""Build of gemmkit's one extension module, gemmkit._core.

The C core is laid out engine first, ISA last: src/csrc/<engine>/ (core, qgemm, gemm,
codecs) holds the baseline files, src/csrc/<engine>/{scalar,x86,arm}/ the kernel families.
Baseline code (Cython's generated C and src/csrc/*/*.c) is compiled for the platform's
baseline ISA.  Each runtime-dispatched ISA lives in its own files, named by suffix
(src/csrc/qgemm/x86/*_avx2.c, src/csrc/qgemm/arm/*_neondot.c, ...), compiled separately with that
ISA's flags and linked in; the build defines GK_HAVE_<ISA> for each group it built, so the
dispatcher only lists paths that exist.  No flag ever targets the build machine's own CPU
(wheels must run on any CPU of their platform).

Which groups: those of the build's TARGET architecture (target_arch(): GEMMKIT_TARGET_ARCH,
then macOS ARCHFLAGS, then the platform setuptools builds for -- cibuildwheel's
_PYTHON_HOST_PLATFORM / VSCMD_ARG_TGT_ARCH / --plat-name -- and only then the build
machine), so a cross build (an arm64 wheel built on an x86 Mac, win-arm64 on win-amd64)
gets its own kernels.  Each group is first probed: a small file calling a real intrinsic of
that ISA is compiled with the group's flags; a compiler that cannot build it (too old, wrong
target, a broken intrinsic header) leaves the group out with a printed note -- the build goes
on with the rest.  A universal2 (multi-arch) macOS build compiles every file once for both
slices, so an ISA file would reach the other slice's compile too: it is built from the
baseline and the scalar kernels only (correct on both, no SIMD).  Build one wheel per
architecture (cibuildwheel's default, see pyproject.toml; for a local install on a
universal2 Python: ARCHFLAGS="-arch arm64" pip install .) for the SIMD kernels.

`python setup.py print-isa-groups` prints the groups as "name|flags|glob" lines for the C test
scripts (the first one, "baseline||glob", names the files built without ISA flags), and
`python setup.py print-isa-probe NAME` the probe source of one group.  Importing this file
(tests/test_build_config.py) builds nothing.
"""
import glob
import os
import platform
import shlex
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _rel(pattern):
    return sorted(os.path.relpath(p, HERE)
                  for p in glob.glob(os.path.join(HERE, pattern), recursive=True))


# --- target architecture ------------------------------------------------------------------
# "x86" (x86-64 / x86), "arm64", "universal2" (several architectures in one compile: no ISA
# group can be built) or "other" (scalar kernels only).
_ARCH_NAMES = {
    "x86_64": "x86", "amd64": "x86", "x64": "x86", "x86_64h": "x86", "x86": "x86",
    "i386": "x86", "i486": "x86", "i586": "x86", "i686": "x86", "win32": "x86", "intel": "x86",
    "aarch64": "arm64", "arm64": "arm64", "arm64e": "arm64", "armv8": "arm64",
    "universal2": "universal2", "universal": "universal2",
}


def normalize_arch(name):
    """An architecture name as platforms spell it (x86_64, AMD64, arm64, aarch64, i686, ...)
    or the tail of a platform tag -> "x86", "arm64", "universal2" or "other"."""
    return _ARCH_NAMES.get((name or "").strip().lower(), "other")


def _platform_arch(plat):
    """The architecture of a platform tag: "macosx-11.0-arm64", "linux-aarch64", "win-amd64",
    "win32", "macosx-10.9-universal2" -> its last "-" field, normalized."""
    plat = (plat or "").strip().lower()
    return normalize_arch("win32" if plat == "win32" else plat.rsplit("-", 1)[-1])


def archflags_arches(archflags):
    """The architectures named by macOS ARCHFLAGS ("-arch arm64 -arch x86_64"), in order."""
    try:
        words = shlex.split(archflags or "")
    except ValueError:
        words = (archflags or "").split()
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-arch"]


def target_arch(environ=None, sys_platform=None, plat_name=None, machine=None):
    """(arch, why): the architecture this build compiles FOR, and where that came from.

    In order: GEMMKIT_TARGET_ARCH (explicit override); on macOS, ARCHFLAGS (what setuptools
    hands the compiler: one -arch -> that one, several different ones -> "universal2");
    plat_name (the platform setuptools builds for: build_ext's --plat-name, which defaults to
    _PYTHON_HOST_PLATFORM on Linux/macOS and to VSCMD_ARG_TGT_ARCH on Windows); on Windows
    VSCMD_ARG_TGT_ARCH (the MSVC target cibuildwheel sets for win-arm64 cross builds);
    _PYTHON_HOST_PLATFORM (cibuildwheel's and crossenv's cross-build target); and last the
    build machine (platform.machine()).  Pure: every input may be passed in for tests."""
    env = os.environ if environ is None else environ
    sys_platform = sys.platform if sys_platform is None else sys_platform
    host = env.get("_PYTHON_HOST_PLATFORM", "")
    forced = env.get("GEMMKIT_TARGET_ARCH", "").strip()
    if forced:
        return normalize_arch(forced), f"GEMMKIT_TARGET_ARCH={forced}"
    macos = sys_platform == "darwin" or host.startswith("macosx") or \
        (plat_name or "").startswith("macosx")
    if macos and env.get("ARCHFLAGS", "").strip():
        arches = {normalize_arch(a) for a in archflags_arches(env["ARCHFLAGS"])}
        if len(arches) == 1:
            return arches.pop(), f"ARCHFLAGS={env['ARCHFLAGS']}"
        if len(arches) > 1:
            return "universal2", f"ARCHFLAGS={env['ARCHFLAGS']}"
    if plat_name:
        return _platform_arch(plat_name), f"plat_name={plat_name}"
    windows = sys_platform == "win32" or host.startswith("win")
    if windows and env.get("VSCMD_ARG_TGT_ARCH", "").strip():
        tgt = env["VSCMD_ARG_TGT_ARCH"].strip()
        return normalize_arch(tgt), f"VSCMD_ARG_TGT_ARCH={tgt}"
    if host:
        return _platform_arch(host), f"_PYTHON_HOST_PLATFORM={host}"
    machine = platform.machine() if machine is None else machine
    return normalize_arch(machine), f"build machine {machine}"


# --- ISA groups ---------------------------------------------------------------------------
# (name, source glob, gcc/clang flags, msvc flags).  msvc flags None: MSVC cannot build the
# group (no per-file flag enables the feature, nor defines its __ARM_FEATURE_ macro).
# The scalar oracle is its own group: built without auto-vectorisation so it stays scalar.
X86_GROUPS = [
    ("amx", "src/csrc/*/x86/*_amx.c",
     ["-mamx-tile", "-mamx-int8", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni",
      "-mavx2", "-mfma"], ["/arch:AVX512"]),
    ("sse41", "src/csrc/*/x86/*_sse41.c", ["-msse4.1"], []),
    ("avx2", "src/csrc/*/x86/*_avx2.c", ["-mavx2", "-mfma", "-mf16c"], ["/arch:AVX2"]),
    ("avxvnni", "src/csrc/*/x86/*_avxvnni.c", ["-mavx2", "-mfma", "-mavxvnni"], ["/arch:AVX2"]),
    ("avx512", "src/csrc/*/x86/*_avx512.c",
     ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma", "-mf16c"],
     ["/arch:AVX512"]),
    ("avx512vnni", "src/csrc/*/x86/*_avx512vnni.c",
     ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni", "-mavx2", "-mfma"],
     ["/arch:AVX512"]),
    # the avx512 group + vdpbf16ps (no ISA level of its own: its Gemm entry names the
    # extra feature bit); MSVC not tried (the kernel's __m512bh casts are GCC/clang's)
    ("avx512bf16", "src/csrc/*/x86/*_avx512bf16.c",
     ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma", "-mf16c",
      "-mavx512bf16"], None),
    # the amx group + tdpbf16ps (no ISA level of its own: its Gemm entry names the extra
    # feature bit); MSVC not tried
    ("amxbf16", "src/csrc/*/x86/*_amxbf16.c",
     ["-mamx-tile", "-mamx-int8", "-mamx-bf16", "-mavx512f", "-mavx512bw", "-mavx512vl",
      "-mavx512vnni", "-mavx2", "-mfma"], None),
]
# Groups whose kernels call a function of another group (the bfloat16 dot-product families
# share the avx512 group's fused bfloat16 epilogue): built only after and with that group.
GROUP_NEEDS = {"avx512bf16": "avx512", "amxbf16": "avx512"}
ARM64_GROUPS = [
    ("neon", "src/csrc/*/arm/*_neon.c", [], []),
    ("neondot", "src/csrc/*/arm/*_neondot.c", ["-march=armv8.2-a+dotprod"], None),
    ("i8mm", "src/csrc/*/arm/*_i8mm.c", ["-march=armv8.2-a+dotprod+i8mm"], None),
    # the neon group + BFMMLA (no ISA level of its own: its Gemm entry names the feature)
    ("neonbf16", "src/csrc/*/arm/*_neonbf16.c", ["-march=armv8.2-a+bf16"], None),
]
# The baseline C files of every engine (no ISA flags).
BASELINE_GLOB = "src/csrc/*/*.c"
SCALAR_GROUP = ("scalar", "src/csrc/*/scalar/*.c",
                ["-fno-tree-vectorize", "-fno-tree-slp-vectorize"], [])
CLANG_SCALAR_FLAGS = ["-fno-vectorize", "-fno-slp-vectorize"]

# One real instruction of each group (with the instructions the group's kernels depend on
# beside it: F16C for avx2, the tile load/store for amx), in a function of pointer
# arguments so that it is compiled AND assembled: a flag the compiler merely accepts, or an
# intrinsic header that emits invalid assembly for the target (GCC 12's AMX tile loads
# under the LLP64 ABI of mingw-w64), fails here and not in the middle of the build.
ISA_PROBES = {
    "sse41": """#include <smmintrin.h>
int gk_probe(const int *p)
{
    __m128i a = _mm_loadu_si128((const __m128i *)p);
    return _mm_cvtsi128_si32(_mm_mullo_epi32(a, _mm_cvtepu8_epi32(a)));
}
""",
    "avx2": """#include <immintrin.h>
int gk_probe(const short *p, const unsigned short *h, float *o)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)p);
    __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
    _mm256_storeu_ps(o, _mm256_fmadd_ps(f, f, f));
    return _mm_cvtsi128_si32(_mm256_castsi256_si128(_mm256_madd_epi16(a, a)));
}
""",
    "avxvnni": """#include <immintrin.h>
int gk_probe(const int *p)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)p);
    return _mm_cvtsi128_si32(_mm256_castsi256_si128(_mm256_dpbusd_avx_epi32(a, a, a)));
}
""",
    "avx512": """#include <immintrin.h>
void gk_probe(const double *p, float *o, long long *q, unsigned m)
{
    __m512d a = _mm512_maskz_loadu_pd((__mmask8)m, p);
    __m512i i = _mm512_cvtpd_epi64(_mm512_fmadd_pd(a, a, a)); /* DQ */
    _mm512_storeu_si512(q, _mm512_mullo_epi64(i, i));
    _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_loadu_ps(o), _mm512_set1_ps(o[16]),
                                        _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)q))));
}
""",
    "avx512vnni": """#include <immintrin.h>
int gk_probe(const int *p, unsigned long long m)
{
    __m512i a = _mm512_maskz_loadu_epi8((__mmask64)m, p);
    __m256i b = _mm256_dpbusd_epi32(_mm512_castsi512_si256(a), _mm256_loadu_si256((const __m256i *)p),
                                    _mm512_castsi512_si256(a));
    a = _mm512_dpbusd_epi32(a, a, _mm512_castsi256_si512(b));
    return _mm_cvtsi128_si32(_mm512_castsi512_si128(a));
}
""",
    "avx512bf16": """#include <immintrin.h>
void gk_probe(const int *p, float *o, unsigned m)
{
    __m512i a = _mm512_maskz_loadu_epi16((__mmask32)m, p);
    __m512 acc = _mm512_dpbf16_ps(_mm512_loadu_ps(o), (__m512bh)a,
                                  (__m512bh)_mm512_set1_epi32(p[16]));
    _mm512_storeu_ps(o, acc);
}
""",
    "amx": """#include <immintrin.h>
void gk_probe(const void *cfg, const void *a, const void *b, void *c)
{
    _tile_loadconfig(cfg);
    _tile_zero(0);
    _tile_loadd(1, a, 64);
    _tile_loadd(2, b, 64);
    _tile_dpbusd(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
}
""",
    "amxbf16": """#include <immintrin.h>
void gk_probe(const void *cfg, const void *a, const void *b, void *c)
{
    _tile_loadconfig(cfg);
    _tile_zero(0);
    _tile_loadd(1, a, 64);
    _tile_stream_loadd(2, b, 64);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
}
""",
    "neon": """#include <arm_neon.h>
int gk_probe(const int8_t *p, const int16_t *q)
{
    int32x4_t acc = vpadalq_s16(vld1q_s32((const int32_t *)q), vmull_s8(vld1_s8(p), vld1_s8(p + 8)));
    return vgetq_lane_s32(acc, 0);
}
""",
    "neondot": """#include <arm_neon.h>
#ifndef __ARM_FEATURE_DOTPROD
#error "no FEAT_DotProd (__ARM_FEATURE_DOTPROD) under these flags"
#endif
unsigned gk_probe(const uint8_t *p)
{
    uint8x16_t a = vld1q_u8(p);
    return vgetq_lane_u32(vdotq_u32(vdupq_n_u32(0), a, a), 0);
}
""",
    "i8mm": """#include <arm_neon.h>
#if !defined(__ARM_FEATURE_MATMUL_INT8) || !defined(__ARM_FEATURE_DOTPROD)
#error "no FEAT_I8MM + FEAT_DotProd under these flags"
#endif
int gk_probe(const uint8_t *p, const int8_t *q)
{
    int32x4_t acc = vusmmlaq_s32(vdupq_n_s32(0), vld1q_u8(p), vld1q_s8(q));
    return vgetq_lane_s32(acc, 0);
}
""",
    "neonbf16": """#include <arm_neon.h>
#ifndef __ARM_FEATURE_BF16_VECTOR_ARITHMETIC
#error "no FEAT_BF16 (__ARM_FEATURE_BF16_VECTOR_ARITHMETIC) under these flags"
#endif
float gk_probe(const float *o, const uint16_t *p)
{
    float32x4_t acc = vbfmmlaq_f32(vld1q_f32(o), vreinterpretq_bf16_u16(vld1q_u16(p)),
                                   vreinterpretq_bf16_u16(vld1q_u16(p + 8)));
    return vgetq_lane_f32(acc, 0);
}
""",
}


def isa_groups(arch=None):
    """The groups built for `arch` (default: target_arch()), the scalar oracle first."""
    if arch is None:
        arch = target_arch()[0]
    groups = [SCALAR_GROUP]
    if arch == "x86":
        groups += X86_GROUPS
    elif arch == "arm64":
        groups += ARM64_GROUPS
    return groups


def _main_print():
    """`setup.py print-isa-groups` / `print-isa-probe NAME`: True when handled."""
    args = sys.argv[1:]
    if args == ["print-isa-groups"]:
        # One line per group, "name|gcc flags|source glob", for the C test scripts
        # (tests/c/run_native.sh, scripts/test_qemu_*.sh, scripts/test_cross_builds.sh), so
        # flags live only here.  GEMMKIT_TARGET_ARCH=arm64 prints the ARM64 groups on any
        # host.  The first line, "baseline||glob", names the files built without ISA flags.
        print(f"baseline||{BASELINE_GLOB}")
        for name, pattern, gflags, _ in isa_groups():
            print(f"{name}|{' '.join(gflags)}|{pattern}")
        return True
    if len(args) == 2 and args[0] == "print-isa-probe":
        if args[1] not in ISA_PROBES:
            sys.exit(f"no probe for {args[1]!r}; groups with one: {', '.join(ISA_PROBES)}")
        sys.stdout.write(ISA_PROBES[args[1]])
        return True
    return False


def _build():
    import numpy
    from Cython.Build import cythonize
    from setuptools import Extension, setup
    from setuptools.command.build_ext import build_ext

    class build_ext_isa(build_ext):
        """Compiles each ISA group with its own flags, then the baseline extension."""

        def _is_msvc(self):
            return self.compiler.compiler_type == "msvc"

        def _is_clang(self):
            cc = " ".join(getattr(self.compiler, "compiler_so", []) or [])
            return "clang" in cc or sys.platform == "darwin"

        def _compiles(self, source, flags):
            """True when `source` compiles and assembles with `flags`."""
            with tempfile.TemporaryDirectory() as tmp:
                src = os.path.join(tmp, "gk_probe.c")
                with open(src, "w") as f:
                    f.write(source)
                try:
                    self.compiler.compile([src], output_dir=tmp, extra_postargs=flags)
                    return True
                except Exception:
                    return False

        def build_extension(self, ext):
            msvc = self._is_msvc()
            base = ["/O2", "/fp:precise"] if msvc else ["-O3", "-ffp-contract=off",
                                                        "-fno-strict-aliasing"]
            if not msvc:
                # a call to an undeclared function is a build error, not a guess at int
                base += ["-std=gnu99", "-Werror=implicit-function-declaration"]
            arch, why = target_arch(plat_name=self.plat_name)
            print(f"gemmkit: target architecture {arch} ({why})")
            if arch == "universal2":
                print("gemmkit: a multi-architecture compile cannot take one architecture's "
                      "ISA flags: building the scalar kernels only (build one wheel per "
                      "architecture for the SIMD kernels)")
            for name, pattern, gflags, mflags in isa_groups(arch):
                sources = _rel(pattern)
                if not sources:
                    continue
                if msvc and mflags is None:
                    print(f"gemmkit: MSVC has no flag for the {name} instructions; "
                          f"{name} path not built")
                    continue
                flags = mflags if msvc else gflags
                need = GROUP_NEEDS.get(name)
                if need and (f"GK_HAVE_{need.upper()}", "1") not in ext.define_macros:
                    print(f"gemmkit: {name} calls the {need} group's code, which was not "
                          f"built; {name} path not built")
                    continue
                if name == "scalar":
                    if not msvc and self._is_clang():
                        flags = CLANG_SCALAR_FLAGS
                    if flags and not self._compiles("int gk_probe(void) { return 0; }\n",
                                                    base + flags):
                        # the oracle is required: without the flags it may be vectorised
                        print(f"gemmkit: compiler rejects {flags}; scalar kernels built "
                              "without them")
                        flags = []
                elif not self._compiles(ISA_PROBES[name], base + flags):
                    print(f"gemmkit: the compiler cannot build {name} instructions with "
                          f"{' '.join(flags) or 'its default flags'} (probe failed); "
                          f"{name} path not built")
                    continue
                objects = self.compiler.compile(
                    sources,
                    output_dir=self.build_temp,
                    include_dirs=ext.include_dirs,
                    macros=list(ext.define_macros),
                    extra_postargs=base + flags,
                    debug=self.debug,
                    depends=ext.depends,
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
        # the thread pool (src/csrc/core/gk_parallel.c): pthreads on POSIX, Win32 on Windows
        extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
        # every C file, header, template and .pxi: a change anywhere rebuilds
        depends=(_rel("src/csrc/**/*.c") + _rel("src/csrc/**/*.h") + _rel("src/csrc/**/*.inc")
                 + _rel("include/gemmkit/*.h") + _rel("src/gemmkit/*.pxi")
                 + _rel("src/gemmkit/*.pxd")),
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


# setuptools runs this file as __main__ (python setup.py ..., and PEP 517's build_meta);
# imported under any other name (tests/test_build_config.py) it only defines the helpers.
if __name__ == "__main__" and not _main_print():
    _build()
