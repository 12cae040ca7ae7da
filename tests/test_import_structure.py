"""Import structure: the layers, no cycles inside a package, no private name across
packages, no module that only hands on another's names.

The layers (see the design notes): core imports no other Trivium package; vision,
audio and data import core and not each other; pipelines, above them, imports any of
them and none imports it. The graph
of each package is read from the source with ``ast`` (every import statement, at
module level or inside a function, ``TYPE_CHECKING`` blocks included); a cycle is
found with a depth-first search. ``from package import submodule`` depends on the
submodule; ``from module import name`` on the module. Other checks import a package
in a fresh interpreter and look at ``sys.modules``.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

PACKAGES = ("trivium.core", "trivium.vision", "trivium.audio", "trivium.data", "trivium.pipelines")
# What each package may import besides itself.
BELOW = {
    "trivium.core": set(),
    "trivium.vision": {"trivium.core"},
    "trivium.audio": {"trivium.core"},
    "trivium.data": {"trivium.core"},
    "trivium.pipelines": {"trivium.core", "trivium.vision", "trivium.audio", "trivium.data"},
}


def package_root(package: str) -> pathlib.Path:
    return pathlib.Path(importlib.import_module(package).__file__).parent


def module_name(path: pathlib.Path, package: str) -> str:
    parts = path.relative_to(package_root(package)).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((package, *parts))


def imported(tree: ast.AST, name: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules that ``tree`` (module ``name``) imports, among ``modules``."""
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
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                out.add(submodule if submodule in modules else base)
    return out & modules


def import_graph(package: str) -> dict[str, set[str]]:
    paths = sorted(package_root(package).rglob("*.py"))
    modules = {module_name(p, package): p for p in paths}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = imported(tree, name, path.name == "__init__.py", set(modules))
        graph[name] = targets - {name}
    return graph


def private_imports_across_packages(package: str) -> list[str]:
    """``file:line name`` for each private name ``package`` takes from another package."""
    found = []
    for path in sorted(package_root(package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            other = node.module.split(".")[:2]
            if other[0] != "trivium" or ".".join(other) == package:
                continue
            names = [a.name for a in node.names if a.name.startswith("_")]
            if any(part.startswith("_") for part in node.module.split(".")):
                names.append(node.module)
            found += [f"{path.name}:{node.lineno} {n}" for n in names]
    return found


def imports_outside_the_layers_below(package: str) -> list[str]:
    """``file:line module`` for each import of a Trivium package that ``package`` may not
    use (module level or inside a function, ``TYPE_CHECKING`` blocks included)."""
    found = []
    for path in sorted(package_root(package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            for name in names:
                top = ".".join(name.split(".")[:2])
                if name.startswith("trivium.") and top != package and top not in BELOW[package]:
                    found.append(f"{path.relative_to(package_root(package))}:{node.lineno} {name}")
    return found


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


def defines_nothing(tree: ast.Module) -> bool:
    """Whether a module only imports, documents and hands names on (``__all__``,
    a module ``__getattr__``): a re-export left where a module used to be."""

    def hands_on(node: ast.stmt) -> bool:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Expr):
            return True
        if isinstance(node, ast.FunctionDef):
            return node.name == "__getattr__"
        targets = node.targets if isinstance(node, ast.Assign) else []
        return bool(targets) and all(
            isinstance(t, ast.Name) and t.id in ("__all__", "__getattr__") for t in targets
        )

    return all(hands_on(node) for node in tree.body)


def reexport_modules(package: str) -> list[str]:
    """The modules of ``package`` (``__init__.py`` aside) that define nothing of their own."""
    return [
        str(path.relative_to(package_root(package)))
        for path in sorted(package_root(package).rglob("*.py"))
        if path.name != "__init__.py" and defines_nothing(ast.parse(path.read_text()))
    ]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_reads_submodule_and_name_imports() -> None:
    graph = import_graph("trivium.data")
    assert "trivium.data.pipes.base" in graph["trivium.data.columnar"]
    vision = import_graph("trivium.vision")
    # jpeg.py: ``from trivium.vision.io.image import ops``
    assert "trivium.vision.io.image.ops" in vision["trivium.vision.io.image.jpeg"]
    assert "trivium.vision.io" not in vision["trivium.vision.io.image.jpeg"]


def test_the_layer_check_finds_a_function_level_import(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "trivium_fake"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "m.py").write_text("def f():\n    from trivium.vision.io import decode_jpeg\n")
    monkeypatch.setitem(BELOW, "trivium_fake", {"trivium.core"})
    monkeypatch.setattr(sys.modules[__name__], "package_root", lambda package: fake)
    assert imports_outside_the_layers_below("trivium_fake") == ["m.py:2 trivium.vision.io"]


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_only_down_the_layers(package: str) -> None:
    assert imports_outside_the_layers_below(package) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_between_the_modules_of_a_package(package: str) -> None:
    assert find_cycle(import_graph(package)) is None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_imported_from_another_package(package: str) -> None:
    assert private_imports_across_packages(package) == []


def test_a_module_left_to_hand_on_names_is_found() -> None:
    moved = ast.parse('"""Moved."""\nfrom x import y\n__getattr__ = y("old", "new")\n')
    assert defines_nothing(moved)
    assert not defines_nothing(ast.parse("import x\n\ndef f():\n    return x\n"))
    assert not defines_nothing(ast.parse("LIMIT = 3\n"))


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_only_hands_on_names(package: str) -> None:
    assert reexport_modules(package) == []


def test_importing_vision_leaves_torch_dynamo_unloaded() -> None:
    """torch.compile's machinery (dynamo, sympy: ~70 MiB a process) loads only when used."""
    code = (
        "import sys, trivium.vision.datasets, trivium.vision.transforms, trivium.vision.models\n"
        "print(sorted(m for m in ('torch._dynamo', 'sympy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_loader_over_a_map_style_dataset_leaves_pyarrow_unloaded() -> None:
    """pyarrow (and pandas with it: ~80 MiB a process) loads only for Arrow sources."""
    code = (
        "import sys, torch\n"
        "from trivium.data import DataLoader, IterPipe\n"
        "batches = list(DataLoader([torch.zeros(2)] * 8, batch_size=4, num_workers=0))\n"
        "items = list(IterPipe.from_iterable(range(4)).map(str).batch(2))\n"
        "loaded = 'pyarrow' in sys.modules\n"
        "from trivium.data import ParquetSource\n"
        "print(len(batches), items, loaded, 'pyarrow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "[['0',", "'1'],", "['2',", "'3']]", "False", "True"]
