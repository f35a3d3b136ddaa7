"""The typed, documented API.

- The package ships py.typed, the compiled module's stubs (_core.pyi) and _typing.py.
- ``gemmkit.__all__`` is complete, every name in it is documented and statically visible
  to a type checker; the stubs' names and signatures match the runtime module's.
- ``mypy --strict`` accepts tests/typecheck/usage.py (the API used as users use it) and
  the package's stubs and typed modules, and rejects exactly the marked lines of
  tests/typecheck/usage_errors.py; ``stubtest`` finds no difference between the stubs and
  the compiled module, and does find one planted in a copy.
- Each public docstring states its op's facts (ONNX op, dtypes, layouts, errors) and its
  examples run.

The mypy tests check the package as imported here (an installed wheel or a source
build), copied to a temporary folder, so they check what users get.
"""
from __future__ import annotations

import ast
import doctest
import fnmatch
import importlib.util
import inspect
import os
import pydoc
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent / "typecheck"

# What the package's typing rests on: PEP 561's marker, the compiled module's stubs and
# the runtime module the stubs take their TypedDict/Protocol types from.
TYPING_FILES = ("py.typed", "_core.pyi", "_typing.py")
# Modules mypy checks strictly (with the usage files); onnx_ops is checked through its
# public signature only (test_public_python_signatures_are_annotated).
STRICT_MODULES = ("__init__.py", "_core.pyi", "_threads.py", "_typing.py")


@pytest.fixture(scope="module")
def gk():
    import gemmkit
    return gemmkit


@pytest.fixture(scope="module")
def pkg_dir(gk):
    return Path(gk.__file__).resolve().parent


def _needs_mypy():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install '.[test]' or mypy) -- the static "
                    "typing checks need it")


def _needs_onnx_for_stubtest():
    # stubtest type-checks the whole package, gemmkit.onnx_ops's onnx imports included: the
    # test-core extra (no onnx wheels on musllinux) has no onnx, and mypy stops on them
    pytest.importorskip("onnx", reason="stubtest type-checks gemmkit.onnx_ops, which "
                                       "imports onnx (not in the test-core extra)")


def _stub_tree(pkg_dir: Path) -> ast.Module:
    return ast.parse((pkg_dir / "_core.pyi").read_text(), "_core.pyi")


def _top_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _public(names) -> set[str]:
    return {n for n in names if not n.startswith("_")}


# ---- shipped files ---------------------------------------------------------------------

def test_typing_files_are_installed(pkg_dir):
    """py.typed and the stubs lie next to the compiled module in the package as imported
    (an install that lacks them types every gemmkit call as Any)."""
    missing = [f for f in TYPING_FILES if not (pkg_dir / f).is_file()]
    assert not missing, f"{pkg_dir} lacks {missing}"
    assert list(pkg_dir.glob("_core.*.so")) or list(pkg_dir.glob("_core*.pyd")), \
        f"no compiled _core next to _core.pyi in {pkg_dir}"


def test_packaging_lists_typing_files():
    """pyproject's package-data and MANIFEST.in (sdist) carry py.typed and the stubs."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "pyproject.toml").is_file():
        pytest.skip("not run from a source tree")
    pyproject = (root / "pyproject.toml").read_text()
    section = pyproject.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    assert '"py.typed"' in section and '"*.pyi"' in section, section
    manifest = (root / "MANIFEST.in").read_text()
    line = next(x for x in manifest.splitlines() if x.startswith("recursive-include src/gemmkit"))
    assert "*.pyi" in line.split() and "py.typed" in line.split(), line
    assert (root / "src" / "gemmkit" / "py.typed").is_file()
    # the files these tests read travel in the sdist too
    rules = [x.split()[1:] for x in manifest.splitlines() if x.startswith("recursive-include")]
    for f in HERE.iterdir():
        if not f.is_file() or f.suffix == ".pyc":
            continue
        rel = f.relative_to(root).as_posix()
        assert any(rel.startswith(d + "/") and any(fnmatch.fnmatch(f.name, p) for p in pats)
                   for d, *pats in rules), f"MANIFEST.in leaves {rel} out of the sdist"


# ---- __all__ and the stubs against the runtime -----------------------------------------

def test_all_is_complete_and_documented(gk, pkg_dir):
    names = gk.__all__
    assert len(names) == len(set(names)), "duplicates in gemmkit.__all__"
    for name in names:
        assert hasattr(gk, name), f"gemmkit.__all__ names {name!r}, which gemmkit lacks"
    # every public function or class gemmkit offers is in __all__ (modules aside)
    offered = {n for n in dir(gk) if not n.startswith("_")
               and not inspect.ismodule(getattr(gk, n))}
    assert offered == set(names) - {"__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", gk.__version__)
    for name in set(names) - {"__version__"}:
        doc = inspect.getdoc(getattr(gk, name)) or ""
        assert len(doc.splitlines()) >= 3, f"gemmkit.{name} is not documented: {doc!r}"


def test_all_names_are_visible_to_type_checkers(gk, pkg_dir):
    """Each name of __all__ is imported in __init__.py from a module whose types a checker
    reads -- its stub (.pyi) if it has one, else its source -- and defined there; a
    function defined in Python source is fully annotated."""
    init = ast.parse((pkg_dir / "__init__.py").read_text())
    source_of = {}
    for node in init.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                source_of[alias.asname or alias.name] = node.module
    static_all = next(ast.literal_eval(n.value) for n in init.body if isinstance(n, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets))
    assert static_all == gk.__all__
    for name in set(static_all) - {"__version__"}:
        module = source_of.get(name)
        assert module, f"gemmkit.{name} is not imported in __init__.py from a submodule"
        path = pkg_dir / f"{module}.pyi"
        if not path.is_file():
            path = pkg_dir / f"{module}.py"
        assert path.is_file(), f"gemmkit.{name}: {module} has neither a stub nor a .py"
        assert name in _top_level_names(ast.parse(path.read_text())), \
            f"{name} is not defined in {path.name}"
        fn = inspect.unwrap(getattr(gk, name))
        if path.suffix == ".py" and inspect.isfunction(fn):
            sig = inspect.signature(fn)
            assert all(p.annotation is not p.empty for p in sig.parameters.values()) and \
                sig.return_annotation is not sig.empty, f"{name} is not fully annotated"


def test_stub_names_match_the_compiled_module(gk, pkg_dir):
    import gemmkit._core as core
    runtime = {n for n in _public(dir(core)) if not inspect.ismodule(getattr(core, n))}
    stub = _public(_top_level_names(_stub_tree(pkg_dir)))
    assert stub == runtime, (f"in the stub only: {sorted(stub - runtime)}; "
                             f"at run time only: {sorted(runtime - stub)}")
    # every public stub function and class is gemmkit's public API
    assert stub <= set(gk.__all__)


def _stub_functions(tree: ast.Module) -> dict[str, list[ast.FunctionDef]]:
    out: dict[str, list[ast.FunctionDef]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append(node)
    return out


def _stub_params(fn: ast.FunctionDef):
    """(name, kind, default or inspect.Parameter.empty) for each parameter of a stub def."""
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [inspect.Parameter.empty] * (len(positional) - len(a.defaults)) + [
        ast.literal_eval(d) for d in a.defaults]
    out = [(p.arg, "positional", d) for p, d in zip(positional, defaults)]
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "keyword", inspect.Parameter.empty if d is None
                    else ast.literal_eval(d)))
    return out


def _runtime_params(fn):
    kinds = {inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
             inspect.Parameter.POSITIONAL_ONLY: "positional",
             inspect.Parameter.KEYWORD_ONLY: "keyword"}
    return [(p.name, kinds[p.kind], p.default)
            for p in inspect.signature(fn).parameters.values()]


def test_stub_signatures_match_the_compiled_module(pkg_dir):
    """Every overload of every public stub function has the runtime function's parameter
    names, order and kinds, and any default it states is the runtime default.  (stubtest
    checks this and more when mypy is installed; this holds without it.)"""
    import gemmkit._core as core
    for name, defs in _stub_functions(_stub_tree(pkg_dir)).items():
        if name.startswith("_"):
            continue
        runtime = _runtime_params(getattr(core, name))
        for fn in defs:
            stub = _stub_params(fn)
            assert [n for n, _, _ in stub] == [n for n, _, _ in runtime], \
                f"{name} (stub line {fn.lineno}): {stub} vs run time {runtime}"
            for (n, k, _), (_, rk, _) in zip(stub, runtime):
                # an overload may make a parameter keyword-only, never the reverse
                assert k == rk or k == "keyword", f"{name}({n}): {k} in the stub, {rk}"
            for (n, _, d), (_, _, rd) in zip(stub, runtime):
                if d is not inspect.Parameter.empty:
                    assert d == rd and type(d) is type(rd), f"{name}({n}=...): {d!r} vs {rd!r}"


def test_packedb_stub_matches_runtime(pkg_dir):
    import gemmkit._core as core
    cls = next(n for n in _stub_tree(pkg_dir).body
               if isinstance(n, ast.ClassDef) and n.name == "PackedB")
    stub_members = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    properties = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)
                  and any(isinstance(d, ast.Name) and d.id == "property"
                          for d in n.decorator_list)}
    runtime = _public(dir(core.PackedB))
    assert _public(stub_members) == runtime
    # read-only at run time, so read-only (properties without setters) in the stub
    assert properties == runtime
    assert "__reduce__" in stub_members


def test_public_python_signatures_are_annotated(gk):
    """The public functions written in Python carry complete annotations (what mypy reads
    for them: there is no stub)."""
    from gemmkit import onnx_ops
    for fn in (gk.set_num_threads, gk.get_num_threads, gk.threads, onnx_ops.run_node):
        sig = inspect.signature(fn)
        missing = [p.name for p in sig.parameters.values()
                   if p.annotation is inspect.Parameter.empty]
        assert not missing, f"{fn.__name__}: unannotated {missing}"
        assert sig.return_annotation is not inspect.Signature.empty, fn.__name__


def test_cpu_info_matches_its_typed_dict(gk):
    from gemmkit._typing import CacheSizes, Engines, GemmEngines
    info = gk.cpu_info()
    assert set(info) == set(gk.CpuInfo.__annotations__)
    assert set(info["engines"]) == set(Engines.__annotations__)
    assert set(info["engines"]["gemm"]) == set(GemmEngines.__annotations__)
    assert set(info["caches"]) == set(CacheSizes.__annotations__)
    for key in ("num_threads", "num_threads_process", "usable_cpus", "pool_threads"):
        assert type(info[key]) is int, key
    for key in ("available", "compiled", "features"):
        assert all(type(x) is str for x in info[key]), key
    assert info["num_threads_source"] in ("GEMMKIT_NUM_THREADS", "OMP_NUM_THREADS", "cpus")


# ---- the usage files run ---------------------------------------------------------------

def test_usage_file_runs(gk):
    """Every call in usage.py is a real, working call (it restores the thread setting)."""
    before = gk.get_num_threads()
    runpy.run_path(str(HERE / "usage.py"), run_name="__main__")
    assert gk.get_num_threads() == before


def test_usage_onnx_file_runs(gk):
    pytest.importorskip("onnx")
    runpy.run_path(str(HERE / "usage_onnx.py"), run_name="__main__")


# ---- mypy --strict and stubtest --------------------------------------------------------

def _copy_package(pkg_dir: Path, dest: Path, compiled: bool) -> Path:
    """The package's Python files, stubs and py.typed (and the compiled module when
    `compiled`) copied to dest/gemmkit."""
    out = dest / "gemmkit"
    out.mkdir(parents=True)
    for f in pkg_dir.iterdir():
        if f.suffix in (".py", ".pyi") or f.name == "py.typed" or (
                compiled and f.name.startswith("_core.") and f.suffix in (".so", ".pyd")):
            shutil.copy2(f, out / f.name)
    return out


def _run(args, cwd: Path, timeout: float = 600):
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


_ERROR = re.compile(r"^(?P<path>.+?):(?P<line>\d+): error: (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$")


def _expected_errors(path: Path) -> set[tuple[int, str]]:
    out = set()
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = re.search(r"#\s*E:\s*([\w-]+)\s*$", line)
        if m:
            out.add((i, m.group(1)))
    return out


@pytest.fixture(scope="module")
def mypy_result(pkg_dir, tmp_path_factory):
    """One mypy --strict run over the package's typed modules and stubs and the usage
    files: (returncode, {file name: {(line, code)}}, output)."""
    _needs_mypy()
    work = tmp_path_factory.mktemp("mypy")
    pkg = _copy_package(pkg_dir, work / "pkg", compiled=False)
    config = work / "mypy.ini"
    config.write_text("[mypy]\n")  # no user or project configuration
    files = [str(pkg / m) for m in STRICT_MODULES]
    files += [str(HERE / "usage.py"), str(HERE / "usage_errors.py")]
    if importlib.util.find_spec("onnx") is not None:
        files.append(str(HERE / "usage_onnx.py"))
    # onnx_ops (not strictly annotated inside) is followed silently: its signatures are
    # used, its body is not checked
    proc = _run(["-m", "mypy", "--config-file", str(config), "--strict",
                 "--follow-imports=silent", "--show-error-codes", "--no-color-output",
                 "--cache-dir", str(work / "cache"), *files], cwd=work)
    errors: dict[str, set[tuple[int, str]]] = {}
    for line in proc.stdout.splitlines():
        m = _ERROR.match(line)
        if m:
            errors.setdefault(Path(m["path"]).name, set()).add((int(m["line"]), m["code"] or ""))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 2: mypy itself failed
    return proc.returncode, errors, proc.stdout + proc.stderr


def test_mypy_strict_accepts_the_package_and_the_usage_file(mypy_result):
    _, errors, output = mypy_result
    unexpected = {f: e for f, e in errors.items() if f != "usage_errors.py"}
    assert not unexpected, output


def test_mypy_strict_rejects_exactly_the_marked_mistakes(mypy_result):
    """The check can fail: each marked line of usage_errors.py is an error with its code,
    and no other line is."""
    returncode, errors, output = mypy_result
    expected = _expected_errors(HERE / "usage_errors.py")
    assert len(expected) >= 10
    assert returncode == 1, output
    assert errors.get("usage_errors.py", set()) == expected, output


def test_stubtest_finds_no_difference(pkg_dir, tmp_path):
    """mypy's stubtest imports the compiled module and compares every name, signature and
    attribute with the stubs (and the annotated .py modules with themselves)."""
    _needs_mypy()
    _needs_onnx_for_stubtest()
    _copy_package(pkg_dir, tmp_path, compiled=True)
    proc = _run(["-m", "mypy.stubtest", "gemmkit", "--allowlist",
                 str(HERE / "stubtest_allowlist.txt")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stubtest_catches_a_wrong_stub(pkg_dir, tmp_path):
    """A parameter added to cpu_info and PackedB's isa left out in a copy of the stub:
    stubtest fails and names both."""
    _needs_mypy()
    _needs_onnx_for_stubtest()
    copy = _copy_package(pkg_dir, tmp_path, compiled=True)
    stub = copy / "_core.pyi"
    text = stub.read_text()
    wrong = text.replace("def cpu_info() -> CpuInfo: ...", "def cpu_info(x: int) -> CpuInfo: ...")
    wrong = wrong.replace("    @property\n    def isa(self) -> str: ...\n", "")
    assert "cpu_info(x: int)" in wrong and "def isa" not in wrong
    stub.write_text(wrong)
    proc = _run(["-m", "mypy.stubtest", "gemmkit", "--allowlist",
                 str(HERE / "stubtest_allowlist.txt")], cwd=tmp_path)
    assert proc.returncode != 0
    assert "gemmkit._core.cpu_info" in proc.stdout, proc.stdout
    assert "gemmkit._core.PackedB.isa" in proc.stdout, proc.stdout


# ---- docstrings ------------------------------------------------------------------------

# name -> phrases its docstring must contain (the op, its types, layouts and errors).
DOC_FACTS = {
    "matmul_integer": ["ONNX MatMulInteger", "opset 10", "int32", "uint8", "int8",
                       "2**32", "numpy.matmul", "per-tensor", "per-row", "per-column",
                       "[..., M, 1]", "[..., 1, N]", "PackedB", "GIL", "thread-safe",
                       "TypeError", "ValueError"],
    "qlinear_matmul": ["ONNX QLinearMatMul", "opsets 10 and 21", "uint8", "int8",
                       "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                       "float8_e5m2fnuz", "float32", "float16", "bfloat16",
                       "round_half_to_even", "saturate", "y_zero_point's dtype",
                       "per-row", "per-column", "same shape as its zero point",
                       "PackedB", "GIL", "TypeError", "ValueError"],
    "gemm": ["ONNX Gemm", "opsets 1, 6, 7, 9, 11, 13", "transA", "transB",
             "broadcast=0", "(M, N)", "unidirectionally broadcastable", "beta == 0",
             "2**bits", "float16", "bfloat16", "float32", "float64", "int32", "int64",
             "uint32", "uint64", "accumulate in float32", "onnx reference", "A's dtype",
             "PackedB", "GIL", "TypeError", "ValueError"],
    "cast": ["ONNX Cast", "saturate", "out", "float8_e4m3fn", "float8_e4m3fnuz",
             "float8_e5m2", "float8_e5m2fnuz", "bfloat16", "nearest even", "GIL",
             "TypeError", "ValueError"],
    "pack_b": ["PackedB", "matmul_integer", "qlinear_matmul", "gemm", "b_zero_point",
               "b_scale", "transB", "TypeError", "ValueError"],
    "PackedB": ["pack_b", "read-only", "Immutable", "thread-safe", "Pickles", "op", "b",
                "b_zero_point", "b_scale", "transB", "isa", "nbytes", "packed"],
    "set_num_threads": ["GEMMKIT_NUM_THREADS", "OMP_NUM_THREADS", "gemmkit.threads",
                        "previous", "TypeError", "ValueError"],
    "get_num_threads": ["gemmkit.threads", "set_num_threads", "GEMMKIT_NUM_THREADS",
                        "OMP_NUM_THREADS"],
    "threads": ["with gemmkit.threads(n):", "nest", "TypeError", "ValueError"],
}


@pytest.mark.parametrize("name", sorted(DOC_FACTS))
def test_docstring_states_the_facts(gk, name):
    doc = " ".join(inspect.getdoc(getattr(gk, name)).split())  # line breaks as spaces
    missing = [fact for fact in DOC_FACTS[name] if fact not in doc]
    assert not missing, f"gemmkit.{name}'s docstring lacks {missing}"


def test_cpu_info_docstring_names_every_key(gk):
    doc = inspect.getdoc(gk.cpu_info)
    for key in gk.CpuInfo.__annotations__:
        assert f"``{key}``" in doc, key
    for key in ("qgemm", "gemm", "codecs", "l1d", "l2", "l3"):
        assert f'"{key}"' in doc, key


@pytest.mark.parametrize("name", ["matmul_integer", "qlinear_matmul", "gemm", "cast",
                                  "pack_b", "cpu_info"])
def test_help_shows_the_signature(gk, name):
    """help() alone is enough: it shows the call signature above the docstring."""
    fn = getattr(gk, name)
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    assert f"{name}{inspect.signature(fn)}" in text
    assert inspect.getdoc(fn).splitlines()[0] in text


@pytest.mark.parametrize("name", ["matmul_integer", "qlinear_matmul", "gemm", "cast",
                                  "pack_b"])
def test_docstring_examples_run(gk, name):
    import ml_dtypes
    doc = inspect.getdoc(getattr(gk, name))
    test = doctest.DocTestParser().get_doctest(
        doc, {"np": np, "ml_dtypes": ml_dtypes, "gemmkit": gk}, f"gemmkit.{name}", None, 0)
    assert test.examples, f"gemmkit.{name} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=lambda s: None)
    assert result.failed == 0, f"gemmkit.{name}: {result.failed} example(s) failed"
