"""The modules of `ips` import one another without cycles, and only down the layers that
docs/api.md lists.

The graph has an edge A → B for every `import` of B in A, at module level or inside a
function: a lazy import hides a cycle from the interpreter, not from the design.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import ips

SRC = Path(ips.__file__).parent
API = SRC.parents[1] / "docs" / "api.md"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
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
    assert "ips.files" in graph["ips.scoring"]
    assert "ips.figures.style" in graph["ips.figures.case_study"]
    assert "ips.scoring" in graph["ips.cli"]  # a function-level import


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def layers(text: str) -> list[str]:
    """The modules of docs/api.md's list, in its order (a folder stands for its package)."""
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
    order = ["ips.files", "ips.figures", "ips.cli"]
    graph = {"ips.files": {"ips.cli"}, "ips.figures.a": {"ips.figures.b", "ips.files"},
             "ips.figures.b": set(), "ips.cli": {"ips.figures.a"}}
    assert upward_imports(graph, order) == ["ips.files -> ips.cli"]
    assert layers("src/ips/files.py   x\nsrc/ips/figures/   y\nsrc/ips/data/   z\n") == [
        "ips.files", "ips.figures"]


def test_every_module_is_listed_and_imports_point_down_the_list():
    order = layers(API.read_text(encoding="utf-8"))
    graph = import_graph(type_checking=False)
    top = {m.split(".")[1] if m.count(".") else m for m in graph} - {"ips", "__main__"}
    assert sorted(top - {m.split(".")[1] for m in order}) == []  # every module has a layer
    assert upward_imports(graph, order) == []
