"""Stray-instruction scan of a build: baseline code must run on every CPU of its platform.

setup.py compiles the baseline files (Cython's generated C and src/csrc/*/*.c, the scalar
oracle too) without ISA flags and each runtime-dispatched ISA group (src/csrc/*/x86/*_avx2.c,
...) with its own.  A flag that leaks into the baseline compile (-march=native in CFLAGS, a
distribution's Python built with -mavx2, a stray -mavx512f in setup.py) would let the
compiler use those instructions anywhere, and the wheel would die with SIGILL on an older
CPU before the dispatcher could choose.  This module disassembles the build and finds them:

* x86-64: an instruction that is VEX or EVEX encoded (AVX, AVX2, AVX-512, BMI1/2, AMX,
  AVX-VNNI: first opcode byte 0xc4/0xc5/0x62 after any segment / address-size prefix, which
  in 64-bit mode is never a legacy instruction), one naming a ymm, zmm or k mask register,
  or a legacy-encoded one of SSE3/SSSE3/SSE4.1/SSE4.2/POPCNT/LZCNT (x86-64's baseline is
  SSE2; GCC encodes these with VEX only when AVX is on).
* ARM64: a dot-product or int8/bf16 matrix instruction (FEAT_DotProd, FEAT_I8MM, FEAT_BF16)
  or an SVE z/p register: beyond the Armv8.0 AdvSIMD baseline that the neon group assumes.

Checks (scan_build): every baseline object has no such instruction; every object of an
ISA group that implies VEX (x86) or dotprod/i8mm (ARM64) has some (the positive control:
a scanner that finds nothing would fail here); and, given the linked extension, every
function in it that has such an instruction comes from an ISA object -- matched by symbol
name and size against the objects' symbol tables, static functions included.

    python tests/isa_scan.py --build-temp build/temp.linux-x86_64-cpython-311 \
        [--so path/to/_core....so] [--arch x86|arm64] [--setup setup.py] [--objdump CMD]

exits 1 with the offending instructions listed, 0 with a summary.  Used by
tests/test_baseline_isa.py and scripts/check_wheel*.sh.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys

# --- instruction classifiers -------------------------------------------------------------
_X86_SKIPPABLE_PREFIXES = {0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x67}
_X86_VEX_EVEX = {0xC4: "VEX", 0xC5: "VEX", 0x62: "EVEX"}
_X86_WIDE_REG = re.compile(r"%(?:ymm|zmm)\d+|%k[0-7]\b")
# Legacy-encoded instructions of the extensions after SSE2 (x86-64's baseline): SSE3, SSSE3,
# SSE4.1, SSE4.2, POPCNT, LZCNT/TZCNT.  (pextrw/pinsrw are SSE2; their b/d/q forms are not.)
_X86_POST_SSE2 = re.compile(
    r"^(?:addsubp[sd]|hadd[ps][sd]|hsubp[sd]|movddup|movs[hl]dup|lddqu|monitor|mwait"
    r"|pshufb|palignr|pabs[bwd]|phadd(?:sw|[wd])|phsub(?:sw|[wd])|pmaddubsw|pmulhrsw"
    r"|psign[bwd]|pmulld|pmuldq|pmin[su][bwd]|pmax[su][bwd]|p?blendv?p?[sdb]|pblendw"
    r"|pextr[bdq]|pinsr[bdq]|pmov[sz]x[bwd][wdq]|ptest|round[ps][sd]|dpp[sd]|mpsadbw"
    r"|phminposuw|insertps|extractps|packusdw|pcmpeqq|movntdqa|pcmpgtq|pcmp[ei]str[im]"
    r"|crc32[bwlq]?|popcnt[wlq]?|lzcnt[wlq]?|tzcnt[wlq]?)$")
_ARM_EXT_MNEMONIC = re.compile(
    r"^(?:sdot|udot|usdot|sudot|smmla|ummla|usmmla|bfdot|bfmmla|bfmlal[bt]|bfcvtn2?|bfcvt)\b")
_ARM_SVE_REG = re.compile(r"\b[zp]\d{1,2}\.[bhsdq]\b|\bp\d{1,2}/[zm]\b")


def x86_offence(raw: bytes, text: str) -> str | None:
    """Why this x86-64 instruction is beyond the SSE2 baseline, or None."""
    i = 0
    while i < len(raw) and raw[i] in _X86_SKIPPABLE_PREFIXES:
        i += 1
    if i < len(raw) and raw[i] in _X86_VEX_EVEX:
        return _X86_VEX_EVEX[raw[i]] + " encoded"
    m = _X86_WIDE_REG.search(text)
    if m:
        return f"register {m.group(0)}"
    words = text.split()
    if words and _X86_POST_SSE2.match(words[0]):
        return "after SSE2"
    return None


def arm64_offence(raw: bytes, text: str) -> str | None:
    """Why this AArch64 instruction is beyond the Armv8.0 AdvSIMD baseline, or None."""
    m = _ARM_EXT_MNEMONIC.match(text.strip())
    if m:
        return f"{m.group(0)} (dotprod/i8mm/bf16)"
    m = _ARM_SVE_REG.search(text)
    if m:
        return f"SVE register {m.group(0)}"
    return None


CLASSIFIERS = {"x86": x86_offence, "arm64": arm64_offence}

# The positive control: ISA groups of which every object ("each") or at least one object
# ("some") must show an instruction the scan reports.  Under AVX flags GCC VEX-encodes every
# SIMD instruction, so each AVX object shows some; an SSE4.1 float kernel may need nothing
# after SSE2, but the int8 one does.  ARM's "neon" group has no flags (AdvSIMD is the
# Armv8.0 baseline): it is held to the baseline rule.
EXPECT_HITS = {
    "x86": {"sse41": "some", "avx2": "each", "avxvnni": "each", "avx512": "each",
            "avx512vnni": "each", "avx512bf16": "each", "amx": "each", "amxbf16": "each"},
    "arm64": {"neondot": "some", "i8mm": "some", "neonbf16": "some"},
}

_FUNC_HEAD = re.compile(r"^[0-9a-fA-F]+ <(.+)>:$")
_INSN = re.compile(r"^\s*([0-9a-fA-F]+):\s*((?:[0-9a-fA-F]{2} )+)\s*(.*)$")
_INSN_ARM = re.compile(r"^\s*([0-9a-fA-F]+):\s*([0-9a-fA-F]{8})\s+(.*)$")


# --- tools ---------------------------------------------------------------------------------
def find_objdump(arch: str) -> str | None:
    """An objdump that can disassemble `arch` on this machine, or None."""
    native = {"x86_64": "x86", "amd64": "x86", "aarch64": "arm64", "arm64": "arm64"}
    import platform
    cands = []
    if arch == "x86":
        cands = ["x86_64-linux-gnu-objdump"]
    elif arch == "arm64":
        cands = ["aarch64-linux-gnu-objdump"]
    if native.get(platform.machine().lower()) == arch:
        cands.append("objdump")
    for c in cands:
        path = shutil.which(c)
        if path:
            return path
    return None


def _nm_for(objdump: str) -> str:
    """The nm beside an objdump (aarch64-linux-gnu-objdump -> aarch64-linux-gnu-nm)."""
    d, b = os.path.split(objdump)
    cand = os.path.join(d, b[: -len("objdump")] + "nm") if b.endswith("objdump") else ""
    return cand if cand and os.path.exists(cand) else (shutil.which("nm") or "nm")


def disassemble(path: str, arch: str, objdump: str) -> dict[str, list[tuple[str, str]]]:
    """{function: [(address, offending instruction + reason), ...]} for every function
    (symbol heading of objdump -d) of `path`; functions without offences map to []."""
    out = subprocess.run([objdump, "-d", "-w", path], capture_output=True, text=True,
                         check=True).stdout
    classify = CLASSIFIERS[arch]
    funcs: dict[str, list[tuple[str, str]]] = {}
    cur = None
    for line in out.splitlines():
        h = _FUNC_HEAD.match(line)
        if h:
            cur = h.group(1)
            funcs.setdefault(cur, [])
            continue
        if cur is None:
            continue
        if arch == "arm64":
            m = _INSN_ARM.match(line)
            if not m:
                continue
            addr, raw, text = m.group(1), bytes.fromhex(m.group(2)), m.group(3)
        else:
            m = _INSN.match(line)
            if not m:
                continue
            addr, raw, text = m.group(1), bytes.fromhex(m.group(2).replace(" ", "")), m.group(3)
        why = classify(raw, text)
        if why:
            funcs[cur].append((addr, f"{text.strip()}  [{why}]"))
    return funcs


def function_symbols(path: str, nm: str) -> dict[str, set[int]]:
    """{name: {sizes}} of the functions (text symbols, local ones too) defined in `path`."""
    out = subprocess.run([nm, "-S", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    syms: dict[str, set[int]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "TtWwi":
            syms.setdefault(parts[3], set()).add(int(parts[1], 16))
    return syms


# --- the build's layout ----------------------------------------------------------------------
def load_setup(setup_path: str):
    """setup.py imported as a module (it builds nothing unless run as __main__)."""
    spec = importlib.util.spec_from_file_location("gemmkit_setup_for_isa_scan", setup_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _glob_regex(pattern: str) -> re.Pattern:
    """A setup.py source glob as a regex over relative paths ('*' stays inside one folder)."""
    parts = [".*" if p == "**" else re.escape(p).replace(r"\*", "[^/]*")
             for p in pattern.split("/")]
    return re.compile("^" + "/".join(parts) + "$")


def classify_objects(build_temp: str, setup_mod, arch: str) -> dict[str, str]:
    """{object path: group} for every .o under build_temp: the name of its ISA group, or
    "baseline" (BASELINE_GLOB, the scalar oracle, a group without ISA flags, Cython's
    module, anything unrecognised -- an unknown object is held to the strictest rule)."""
    groups = setup_mod.X86_GROUPS if arch == "x86" else setup_mod.ARM64_GROUPS
    # a group built with ISA flags (-m..., -march=...); one without (ARM's neon) is baseline
    isa = [(name, _glob_regex(pattern)) for name, pattern, flags, _ in groups
           if any(f.startswith("-m") for f in flags)]
    out = {}
    for dirpath, _, files in os.walk(build_temp):
        for f in sorted(files):
            if not f.endswith(".o"):
                continue
            obj = os.path.join(dirpath, f)
            src = os.path.relpath(obj, build_temp).replace(os.sep, "/")[:-2] + ".c"
            out[obj] = next((name for name, rx in isa if rx.match(src)), "baseline")
    return out


class ScanResult:
    def __init__(self):
        self.failures: list[str] = []
        self.notes: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.failures


def _fmt(hits, limit=4):
    shown = [f"      {a}: {t}" for a, t in hits[:limit]]
    if len(hits) > limit:
        shown.append(f"      ... {len(hits) - limit} more")
    return "\n".join(shown)


def scan_objects(objects: dict[str, str], arch: str, objdump: str) -> tuple[ScanResult, dict]:
    """Baseline objects: no offence.  Objects of EXPECT_HITS groups: at least one."""
    res = ScanResult()
    per_group: dict[str, list[int]] = {}
    for obj, group in sorted(objects.items()):
        funcs = disassemble(obj, arch, objdump)
        hits = [(f"{fn}+{a}", t) for fn, lst in funcs.items() for a, t in lst]
        n_insn = len(hits)
        per_group.setdefault(group, [0, 0])
        per_group[group][0] += 1
        per_group[group][1] += n_insn
        if group == "baseline" and hits:
            res.failures.append(
                f"baseline object {obj} has {n_insn} instruction(s) beyond the {arch} "
                f"baseline:\n{_fmt(hits)}")
        elif EXPECT_HITS[arch].get(group) == "each" and not hits:
            res.failures.append(
                f"{group} object {obj} shows no {group} instruction: either the group lost "
                f"its flags or this scan is blind (positive control failed)")
    for group, rule in sorted(EXPECT_HITS[arch].items()):
        if rule == "some" and group in per_group and per_group[group][1] == 0:
            res.failures.append(
                f"no {group} object shows a {group} instruction: either the group lost its "
                f"flags or this scan is blind (positive control failed)")
    for group, (n, k) in sorted(per_group.items()):
        res.notes.append(f"{group:>11}: {n:3d} objects, {k:6d} instructions beyond the "
                         f"baseline")
    return res, per_group


def scan_extension(so: str, objects: dict[str, str], arch: str, objdump: str,
                   nm: str | None = None) -> ScanResult | None:
    """Every function of the linked extension with an offence must be defined by an ISA
    object (same name and size) and by no baseline object.  None when `so` was not linked
    from these objects (a global function of theirs is missing from it, or has another
    size): the attribution would be meaningless."""
    nm = nm or _nm_for(objdump)
    res = ScanResult()
    by_key: dict[tuple[str, int], set[str]] = {}
    globals_: set[tuple[str, int]] = set()
    for obj, group in objects.items():
        out = subprocess.run([nm, "-S", "--defined-only", obj], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "TtWwi":
                key = (parts[3], int(parts[1], 16))
                by_key.setdefault(key, set()).add(group)
                if parts[2] in "TW":
                    globals_.add(key)
    so_syms = function_symbols(so, nm)
    missing = [f"{n} (size {s})" for n, s in sorted(globals_) if s not in so_syms.get(n, ())]
    if missing:
        res.notes.append(f"{so} was not linked from these objects: "
                         f"{len(missing)} of their functions missing, e.g. {missing[:3]}")
        return None
    funcs = disassemble(so, arch, objdump)
    n_isa = 0
    for fn, hits in sorted(funcs.items()):
        if not hits:
            continue
        sizes = so_syms.get(fn, set())
        owners = set().union(*(by_key.get((fn, s), set()) for s in sizes)) if sizes else set()
        if not owners:
            res.failures.append(f"{so}: function {fn} ({len(hits)} instructions beyond the "
                                f"baseline) is defined by no build object:\n{_fmt(hits)}")
        elif "baseline" in owners:
            res.failures.append(f"{so}: function {fn} from a baseline object has {len(hits)} "
                                f"instructions beyond the baseline:\n{_fmt(hits)}")
        else:
            n_isa += 1
    res.notes.append(f"{os.path.basename(so)}: {len(funcs)} functions, {n_isa} with "
                     f"instructions beyond the baseline, all from ISA objects"
                     if res.ok else f"{os.path.basename(so)}: {len(res.failures)} bad "
                     f"functions")
    if n_isa == 0 and set(EXPECT_HITS[arch]) & set(objects.values()):
        res.failures.append(f"{so}: no function with ISA instructions found although ISA "
                            f"objects were linked (positive control failed)")
    return res


def scan_build(build_temp: str, setup_path: str, arch: str, so: str | None = None,
               objdump: str | None = None) -> ScanResult:
    """The whole check; see the module docstring."""
    objdump = objdump or find_objdump(arch)
    if objdump is None:
        raise FileNotFoundError(f"no objdump for {arch} on PATH")
    objects = classify_objects(build_temp, load_setup(setup_path), arch)
    if not objects:
        raise FileNotFoundError(f"no .o files under {build_temp}")
    res, _ = scan_objects(objects, arch, objdump)
    if so:
        ext = scan_extension(so, objects, arch, objdump)
        if ext is None:
            res.failures.append(f"{so} was not linked from the objects under {build_temp}")
        else:
            res.failures += ext.failures
            res.notes += ext.notes
    return res


def main(argv=None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-temp", required=True, help="setuptools' build_temp folder")
    ap.add_argument("--so", help="the linked extension module to attribute too")
    ap.add_argument("--arch", default="x86", choices=sorted(CLASSIFIERS))
    ap.add_argument("--setup", default=os.path.join(os.path.dirname(here), "setup.py"))
    ap.add_argument("--objdump", help="objdump to use (default: one for --arch on PATH)")
    a = ap.parse_args(argv)
    res = scan_build(a.build_temp, a.setup, a.arch, so=a.so, objdump=a.objdump)
    for n in res.notes:
        print(n)
    for f in res.failures:
        print("FAIL:", f)
    print(f"isa_scan ({a.arch}): {'ok' if res.ok else 'FAILED'}")
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
