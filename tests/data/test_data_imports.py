"""Import structure of ``trivium.data``: no cycles between its modules, none of vision or audio.

The graph is read from the source with ``ast`` (every import statement, at module
level or inside a function, ``TYPE_CHECKING`` blocks included); a cycle is found
with a depth-first search. The second check imports ``trivium.data`` in a fresh
interpreter and looks at ``sys.modules``.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import trivium.data

PACKAGE = "trivium.data"
ROOT = pathlib.Path(trivium.data.__file__).parent


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """The modules of the package that ``tree`` (module ``name``) imports."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                package = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            out.add(base)
            out |= {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in out if m == PACKAGE or m.startswith(PACKAGE + ".")}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(ROOT.rglob("*.py"))
    modules = {module_name(p): p for p in paths}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = imported(tree, name, path.name == "__init__.py")
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_the_modules_of_trivium_data() -> None:
    graph = import_graph()
    assert "trivium.data.pipes.base" in graph and "trivium.data.columnar" in graph
    assert "trivium.data.pipes.base" in graph["trivium.data.columnar"]
    assert find_cycle(graph) is None


def test_importing_trivium_data_imports_neither_vision_nor_audio() -> None:
    code = (
        "import sys, trivium.data; print(sorted(m for m in sys.modules "
        "if m.startswith(('trivium.vision', 'trivium.audio'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
