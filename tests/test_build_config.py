"""setup.py's choice of ISA groups by TARGET architecture, checked without building.

setup.py is imported under a name other than __main__, which defines its helpers and builds
nothing.  Every input of target_arch() is passed explicitly, so the answers do not depend
on the machine running the tests.
"""
import importlib.util
import os
import subprocess
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SETUP = os.path.join(_ROOT, "setup.py")

_spec = importlib.util.spec_from_file_location("gemmkit_setup", _SETUP)
setup_py = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(setup_py)


def arch(env=None, sys_platform="linux", plat_name=None, machine="x86_64"):
    return setup_py.target_arch(environ=env or {}, sys_platform=sys_platform,
                                plat_name=plat_name, machine=machine)[0]


def group_names(a):
    return [g[0] for g in setup_py.isa_groups(a)]


@pytest.mark.parametrize("name, want", [
    ("x86_64", "x86"), ("AMD64", "x86"), ("x64", "x86"), ("i686", "x86"),
    ("aarch64", "arm64"), ("arm64", "arm64"), ("ARM64", "arm64"),
    ("universal2", "universal2"), ("riscv64", "other"), ("ppc64le", "other"), ("", "other"),
])
def test_normalize_arch(name, want):
    assert setup_py.normalize_arch(name) == want


def test_build_machine_is_the_last_resort():
    assert arch(machine="x86_64") == "x86"
    assert arch(machine="aarch64") == "arm64"
    assert arch(sys_platform="darwin", machine="arm64") == "arm64"
    assert arch(sys_platform="win32", machine="AMD64") == "x86"
    assert arch(machine="s390x") == "other"


def test_override_wins_over_everything():
    env = {"GEMMKIT_TARGET_ARCH": "arm64", "ARCHFLAGS": "-arch x86_64",
           "_PYTHON_HOST_PLATFORM": "macosx-10.9-x86_64", "VSCMD_ARG_TGT_ARCH": "x64"}
    assert arch(env, sys_platform="darwin", plat_name="macosx-10.9-x86_64") == "arm64"
    assert arch({"GEMMKIT_TARGET_ARCH": "x86_64"}, machine="aarch64") == "x86"
    assert arch({"GEMMKIT_TARGET_ARCH": "  "}, machine="aarch64") == "arm64"  # blank: unset


@pytest.mark.parametrize("host, want", [
    ("macosx-11.0-arm64", "arm64"), ("macosx-10.9-x86_64", "x86"),
    ("macosx-10.9-universal2", "universal2"), ("linux-aarch64", "arm64"),
    ("linux-x86_64", "x86"), ("win-amd64", "x86"), ("win-arm64", "arm64"), ("win32", "x86"),
    ("linux-riscv64", "other"),
])
def test_python_host_platform_is_the_target(host, want):
    # cibuildwheel / crossenv cross builds: the target, whatever machine builds it
    other = "x86_64" if want == "arm64" else "aarch64"
    assert arch({"_PYTHON_HOST_PLATFORM": host}, machine=other) == want


def test_macos_archflags():
    # cibuildwheel sets both ARCHFLAGS and _PYTHON_HOST_PLATFORM on macOS
    env = {"ARCHFLAGS": "-arch arm64", "_PYTHON_HOST_PLATFORM": "macosx-11.0-arm64"}
    assert arch(env, sys_platform="darwin", machine="x86_64") == "arm64"
    env = {"ARCHFLAGS": "-arch x86_64", "_PYTHON_HOST_PLATFORM": "macosx-10.9-x86_64"}
    assert arch(env, sys_platform="darwin", machine="arm64") == "x86"
    # ARCHFLAGS is what setuptools passes the compiler: it beats a disagreeing platform tag
    assert arch({"ARCHFLAGS": "-arch arm64"}, sys_platform="darwin",
                plat_name="macosx-10.9-universal2", machine="x86_64") == "arm64"
    # both slices in one compile: universal2, in either order
    for flags in ("-arch arm64 -arch x86_64", "-arch x86_64 -arch arm64"):
        assert arch({"ARCHFLAGS": flags}, sys_platform="darwin", machine="arm64") == "universal2"
    # the same architecture twice is still one architecture
    assert arch({"ARCHFLAGS": "-arch x86_64 -arch x86_64h"}, sys_platform="darwin",
                machine="arm64") == "x86"
    # ARCHFLAGS means nothing to a Linux or Windows build
    assert arch({"ARCHFLAGS": "-arch arm64"}, sys_platform="linux", machine="x86_64") == "x86"
    assert arch({"ARCHFLAGS": "-arch arm64"}, sys_platform="win32", machine="AMD64") == "x86"
    # ARCHFLAGS without -arch falls through to the next source
    assert arch({"ARCHFLAGS": "-O2"}, sys_platform="darwin", machine="arm64") == "arm64"


def test_archflags_parsing():
    assert setup_py.archflags_arches("-arch arm64 -arch x86_64") == ["arm64", "x86_64"]
    assert setup_py.archflags_arches("  -arch   arm64 ") == ["arm64"]
    assert setup_py.archflags_arches("-arch") == []
    assert setup_py.archflags_arches("") == []


def test_plat_name_of_the_build():
    # build_ext's --plat-name (cibuildwheel's DIST_EXTRA_CONFIG on Windows) is the target
    assert arch(sys_platform="win32", plat_name="win-arm64", machine="AMD64") == "arm64"
    assert arch(sys_platform="win32", plat_name="win-amd64", machine="ARM64") == "x86"
    assert arch(sys_platform="darwin", plat_name="macosx-10.9-universal2",
                machine="arm64") == "universal2"


def test_windows_msvc_target():
    # cibuildwheel's win-arm64 cross build sets the MSVC target; a Linux build ignores it
    env = {"VSCMD_ARG_TGT_ARCH": "arm64"}
    assert arch(env, sys_platform="win32", machine="AMD64") == "arm64"
    assert arch({"VSCMD_ARG_TGT_ARCH": "x64"}, sys_platform="win32", machine="ARM64") == "x86"
    assert arch(env, sys_platform="linux", machine="x86_64") == "x86"


def test_groups_follow_the_architecture():
    x86 = group_names("x86")
    arm = group_names("arm64")
    assert x86[0] == arm[0] == "scalar"
    assert {"sse41", "avx2", "avxvnni", "avx512vnni", "amx"} <= set(x86)
    assert not {"neon", "neondot", "i8mm", "neonbf16"} & set(x86)
    assert {"neon", "neondot", "i8mm", "neonbf16"} <= set(arm)
    assert not {"sse41", "avx2", "avxvnni", "avx512vnni", "amx"} & set(arm)
    # no slice of a universal2 build gets the other's ISA flags: scalar only
    assert group_names("universal2") == ["scalar"]
    assert group_names("other") == ["scalar"]


def test_every_isa_group_has_a_real_probe():
    for name, pattern, gflags, mflags in setup_py.X86_GROUPS + setup_py.ARM64_GROUPS:
        probe = setup_py.ISA_PROBES[name]
        assert "gk_probe(" in probe
        assert "_mm" in probe or "_tile_" in probe or "vld1" in probe, name
    # MSVC has no flag for dotprod / i8mm / bf16: those groups are skipped there
    msvc = {g[0]: g[3] for g in setup_py.ARM64_GROUPS}
    assert msvc["neondot"] is None and msvc["i8mm"] is None and msvc["neonbf16"] is None


def _print_groups(env_extra, *args):
    env = {k: v for k, v in os.environ.items()
           if k not in ("GEMMKIT_TARGET_ARCH", "_PYTHON_HOST_PLATFORM", "ARCHFLAGS",
                        "VSCMD_ARG_TGT_ARCH")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, _SETUP, *(args or ("print-isa-groups",))], env=env,
                         cwd=_ROOT, capture_output=True, text=True, check=True).stdout
    return out


def test_print_isa_groups_follows_the_target():
    # the lines the C scripts read: "name|flags|glob", baseline first, scalar next
    lines = _print_groups({"_PYTHON_HOST_PLATFORM": "linux-aarch64"}).splitlines()
    assert lines[0] == "baseline||" + setup_py.BASELINE_GLOB
    assert [ln.split("|")[0] for ln in lines[1:]] == ["scalar", "neon", "neondot", "i8mm",
                                                   "neonbf16"]
    lines = _print_groups({"GEMMKIT_TARGET_ARCH": "x86_64",
                           "_PYTHON_HOST_PLATFORM": "linux-aarch64"}).splitlines()
    names = [ln.split("|")[0] for ln in lines[1:]]
    assert names[0] == "scalar" and "avx2" in names and "neon" not in names
    assert "avx2|-mavx2 -mfma -mf16c|src/csrc/*/x86/*_avx2.c" in lines


def test_print_isa_probe():
    assert "_mm256_madd_epi16" in _print_groups({}, "print-isa-probe", "avx2")
    assert "vusmmlaq_s32" in _print_groups({}, "print-isa-probe", "i8mm")
    assert "vbfmmlaq_f32" in _print_groups({}, "print-isa-probe", "neonbf16")
    with pytest.raises(subprocess.CalledProcessError):
        _print_groups({}, "print-isa-probe", "nosuchisa")
