"""The package's shape: its stages import one another without cycles and only down the
layers docs/api.md lists; no module over 600 lines, no function over 80; a leading
underscore means private (a name used in its module only, a module in its package only);
every package's docstring names its modules; the test models stay out of the runtime; the workflow's and the commands' start loads no
heavy library.

The graph has an edge A → B for every `import` of B in A, at module level or inside a
function: a lazy import hides a cycle from the interpreter, not from the design.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import ips

SRC = Path(ips.__file__).parent
API = SRC.parents[1] / "docs" / "api.md"


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[ast.AST]:
    """The import nodes under `if TYPE_CHECKING:` (annotations, never run)."""
    return {n for node in ast.walk(tree) if isinstance(node, ast.If)
            and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for stmt in node.body for n in ast.walk(stmt)}


def import_graph(src: Path = SRC, type_checking: bool = True) -> dict[str, set[str]]:
    """Module → the `ips` modules it imports (`from ips import x` names x if a module);
    `type_checking=False` leaves out the imports under `if TYPE_CHECKING:`."""
    files = {_module_name(p): p for p in src.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        tree = ast.parse(path.read_text(), str(path))
        skip = set() if type_checking else _type_checking_only(tree)
        for node in ast.walk(tree):
            if node in skip:
                continue
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in files)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in files:
                        edges.add(sub)
                    elif base in files:
                        edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_graph_sees_imports():
    graph = import_graph()
    assert "ips.formats.hdf5" in graph["ips.formats.values"]
    assert "ips.figures.style" in graph["ips.figures.plots.case_study"]
    assert "ips.scoring.shard" in graph["ips.cli.score"]  # a function-level import


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def layers(text: str) -> list[str]:
    """The packages and modules of docs/api.md's list, in its order (a folder stands for its
    package)."""
    found = re.findall(r"^src/ips/(\S+?)(?:\.py|/)\s", text, flags=re.M)
    return ["ips." + p.replace("/", ".") for p in found if p != "data"]


def upward_imports(graph: dict[str, set[str]], order: list[str]) -> list[str]:
    """Imports of a module listed later than the importer (within a package: free)."""
    def layer(module: str) -> int | None:
        hits = [i for i, m in enumerate(order) if module == m or module.startswith(m + ".")]
        return hits[-1] if hits else None

    return [f"{a} -> {b}" for a, bs in sorted(graph.items()) for b in sorted(bs)
            if None not in (layer(a), layer(b)) and layer(b) > layer(a)]


def test_upward_imports_are_found():
    order = ["ips.outputs", "ips.figures", "ips.cli"]
    graph = {"ips.outputs": {"ips.cli.main"}, "ips.figures.a": {"ips.figures.b", "ips.outputs"},
             "ips.figures.b": {"ips.figures.a"}, "ips.cli.main": {"ips.figures.a"}}
    assert upward_imports(graph, order) == ["ips.outputs -> ips.cli.main"]
    assert layers("src/ips/outputs.py   x\nsrc/ips/figures/   y\nsrc/ips/data/   z\n") == [
        "ips.outputs", "ips.figures"]


def test_every_module_is_listed_and_imports_point_down_the_list():
    order = layers(API.read_text(encoding="utf-8"))
    graph = import_graph(type_checking=False)
    top = {m.split(".")[1] for m in graph if m.count(".")} - {"__main__"}
    assert sorted(top - {m.split(".")[1] for m in order}) == []  # every module has a layer
    assert upward_imports(graph, order) == []


MAX_MODULE_LINES, MAX_FUNCTION_LINES = 600, 80


def oversized(src: Path = SRC) -> list[str]:
    """Modules over MAX_MODULE_LINES lines and functions (decorators to last line) over
    MAX_FUNCTION_LINES, with their counts."""
    found = []
    for path in sorted(src.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = _module_name(path, src)
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            found.append(f"module {name} {n}")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if (n := node.end_lineno - first + 1) > MAX_FUNCTION_LINES:
                    found.append(f"function {name}.{node.name} {n}")
    return found


def test_oversized_modules_and_functions_are_found(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "big.py").write_text("@staticmethod\ndef f():\n" + body)
    (tmp_path / "small.py").write_text("def g():\n" + body[: -len("    x79 = 79\n")])
    name = tmp_path.name
    assert oversized(tmp_path) == [f"function {name}.big.f {MAX_FUNCTION_LINES + 2}"]


def test_no_module_over_600_lines_and_no_function_over_80():
    assert oversized() == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(roots=(SRC, SRC.parents[1] / "tests", SRC.parents[1] / "benchmarks"),
                 src: Path = SRC) -> list[str]:
    """Each use of a private name outside its module ("file: module.name"), and each import
    of a private module (`pkg/_m.py`) from outside its package ("file: pkg._m"), in the
    files under `roots`; names reached as `from ips.x import _n` or as `m._n` for a module
    `m` imported from ips."""
    modules = {_module_name(p, src) for p in src.rglob("*.py")}
    found = []
    for path in sorted(f for root in roots for f in Path(root).rglob("*.py")):
        inside = _module_name(path, src) if path.is_relative_to(src) else ""
        bound: dict[str, str] = {}  # local name → the ips module it names
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [(a.name, a.asname or a.name.partition(".")[0]) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ips"):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    if sub in modules:
                        targets.append((sub, a.asname or a.name))
                    elif _private(a.name):
                        found.append(f"{path.name}: {node.module}.{a.name}")
                    targets.append((node.module, None))
            for module, local in targets:
                if module not in modules:
                    continue
                if local and module.count(".") >= 1:
                    bound[local] = module
                package, _, last = module.rpartition(".")
                if _private(last) and not inside.startswith(package + "."):
                    found.append(f"{path.name}: {module}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr)
                    and isinstance(node.value, ast.Name) and node.value.id in bound):
                found.append(f"{path.name}: {bound[node.value.id]}.{node.attr}")
    return sorted(set(found))


def test_private_uses_are_found(tmp_path):
    pkg = tmp_path / "ips"
    (pkg / "stage").mkdir(parents=True)
    for f in ("__init__.py", "stage/__init__.py", "stage/_shared.py", "stage/a.py", "b.py"):
        (pkg / f).write_text("")
    (pkg / "stage" / "a.py").write_text(
        "from ips.stage._shared import x\nfrom ips.stage import a\na._own = 1\n")
    (pkg / "b.py").write_text("from ips.stage import _shared\nfrom ips.stage.a import _f\n"
                              "from ips.stage import a as m\nm._g()\n")
    assert private_uses([pkg], pkg) == [
        "a.py: ips.stage.a._own", "b.py: ips.stage._shared", "b.py: ips.stage.a._f",
        "b.py: ips.stage.a._g"]


def test_private_names_stay_in_their_module():
    assert private_uses() == []


def unlisted_modules(src: Path = SRC) -> list[str]:
    """The modules and sub-packages that their package's docstring does not name as
    ``name`` (its list of what it holds)."""
    found = []
    for init in sorted(src.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        members = [p.stem for p in init.parent.glob("*.py")
                   if p.name not in ("__init__.py", "__main__.py")]
        members += [d.name for d in init.parent.iterdir() if (d / "__init__.py").is_file()]
        found += [f"{_module_name(init, src)}.{m}" for m in sorted(members)
                  if f"``{m}``" not in doc]
    return found


def test_unlisted_modules_are_found(tmp_path):
    pkg = tmp_path / "ips"
    (pkg / "stage").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Modules: ``stage``, ``a``."""')
    (pkg / "stage" / "__init__.py").write_text('"""Modules: `b`."""')
    for f in ("a.py", "__main__.py", "stage/b.py"):
        (pkg / f).write_text("")
    assert unlisted_modules(pkg) == ["ips.stage.b"]


def test_every_package_docstring_names_its_modules():
    assert unlisted_modules() == []


def test_the_test_models_are_not_imported_by_the_package():
    graph = import_graph()
    assert sorted(m for m, bs in graph.items() if "ips.models.testing" in bs) == []


HEAVY = ("matplotlib", "scipy", "xarray", "torch", "transformers", "h5py", "h5netcdf",
         "tokenizers")


def _loaded(code: str, modules=HEAVY) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `code`."""
    probe = code + f"\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return eval(out)  # a list of names printed by the probe above


def test_a_snakemake_start_imports_no_heavy_library():
    """Every snakemake start (each Slurm job step, each job of a group) imports what the
    Snakefile and workflow/rules/common.smk import from ips, and every command imports
    `ips.cli.main.main` before its handler: 2 s of matplotlib, SciPy and xarray once, through the
    figures package and the file helpers; none of them now."""
    root = SRC.parents[1]
    lines = [line for f in ("Snakefile", "workflow/rules/common.smk")
             for line in (root / f).read_text().splitlines() if line.startswith("from ips")]
    assert any("captions" in line for line in lines) and any("ips.models" in line for line in lines)
    assert _loaded("\n".join([*lines, "from ips.cli.main import main"])) == []


def test_scoring_and_fitting_import_no_statistics():
    """`ips score` and `ips fit` import the mask design and the sparse estimator; SciPy's
    statistics cost each score job 0.6 s of its 6-11 s in the miniature (docs/miniature.md),
    and only the τ sweep of `ips factors` uses them."""
    code = "import ips.scoring.shard, ips.interactions.sparse, ips.fitting.cube, ips.cli.score"
    assert _loaded(code, ("scipy.stats",)) == []
