"""The documentation's sources (mkdocs.yml, docs/, the READMEs).

`make docs` builds the site strict (broken links and references fail it); these tests
check what the build cannot: every benchmark page is listed and short, each
API page names a module that exists, user docs state facts rather than how numbers
moved, the griffe extension reads the docstrings as written, and the READMEs' and
getting-started examples run.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BENCHMARK_PAGES = DOCS / "benchmarks"
# A section of a benchmark page: what was run, on what, and two or three notes.
MAX_NOTE_LINES = 10
PYTHON_BLOCK = re.compile(r"^```python\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def _user_docs() -> list[Path]:
    """Markdown a user reads: the READMEs and the site's pages and fragments."""
    readmes = [ROOT / "README.md", *sorted(ROOT.glob("packages/*/README.md"))]
    return readmes + sorted(DOCS.rglob("*.md"))


def _python_blocks(path: Path) -> list[str]:
    return [m["code"] for m in PYTHON_BLOCK.finditer(path.read_text())]


def test_every_benchmark_page_is_listed_and_in_the_nav():
    listed = re.findall(r"\]\(benchmarks/([\w-]+\.md)\)", (DOCS / "benchmarks.md").read_text())
    pages = sorted(p.name for p in BENCHMARK_PAGES.glob("*.md"))
    assert sorted(listed) == pages
    nav = re.findall(r"benchmarks/([\w-]+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert sorted(nav) == pages


@pytest.mark.parametrize("page", sorted(BENCHMARK_PAGES.glob("*.md")), ids=lambda p: p.name)
def test_a_benchmark_page_is_tables_commands_and_a_few_notes(page: Path):
    """Rendered as plain Markdown (no includes), each section short enough to read at a glance."""
    text = page.read_text()
    assert text.startswith("# "), f"{page.name}: no title"
    assert "--8<--" not in text, f"{page.name}: an include does not render outside the site"
    assert re.search(r"^\|[ :-]*-{3}", text, re.MULTILINE), f"{page.name}: no table"
    commands = re.findall(r"^```\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert any(re.search(r"benchmarks/\w+\.py|make demo|examples/\w+", c) for c in commands) or (
        re.search(r"`examples/\w+/train\.py", text)
    ), f"{page.name}: no command"
    for section in re.split(
        r"^#{1,2} ", re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S), flags=re.M
    ):
        prose = [line for line in section.splitlines()[1:] if line.strip() and line[0] != "|"]
        assert len(prose) <= MAX_NOTE_LINES, f"{page.name}: {section.splitlines()[0]!r} is long"


def test_api_pages_name_modules_that_exist():
    modules = []
    for page in sorted((DOCS / "api").glob("*.md")):
        modules += re.findall(r"^::: (\S+)$", page.read_text(), re.MULTILINE)
    assert "trivium.core" in modules and "trivium.data" in modules
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    assert not missing


HISTORY = re.compile(
    r"went from|last stop|since then|\btoday\b|run before|earlier run|before (this|the) change"
    r"|from stop to stop|in the runs? before",
    re.IGNORECASE,
)


@pytest.mark.parametrize("path", _user_docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_say_what_is_not_how_it_changed(path: Path):
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not hits


@pytest.fixture(scope="module")
def docstrings():
    """docs/griffe_docstrings.py, the extension mkdocs.yml gives mkdocstrings."""
    griffe = pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location(
        "griffe_docstrings", DOCS / "griffe_docstrings.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, griffe


def test_example_sections_become_google_examples(docstrings):
    module, griffe = docstrings
    text = "Summary.\n\nExample:\n    >>> 1 + 1\n    2\n"
    rewritten = module.rewrite(text, griffe.Module("m"))
    assert rewritten == "Summary.\n\nExamples:\n    >>> 1 + 1\n    2\n"
    sections = griffe.Docstring(rewritten, parser="google").parse()
    assert [s.kind.value for s in sections] == ["text", "examples"]


def test_grouped_parameters_are_split_with_their_shared_description(docstrings):
    module, griffe = docstrings
    func = griffe.Function(
        "f", parameters=griffe.Parameters(griffe.Parameter("a"), griffe.Parameter("b"))
    )
    text = "Args:\n    a, b: the sizes,\n        in pixels.\n\n    c: other.\n\nMore text."
    rewritten = module.rewrite(text, func)
    assert rewritten == (
        "Args:\n    a: the sizes,\n        in pixels.\n    b: the sizes,\n        in pixels.\n\n"
        "    c: other.\n\nMore text."
    )
    # Outside a parameters section a comma-separated line is left alone.
    assert module.rewrite("Returns:\n    x, y: a pair.", func) == "Returns:\n    x, y: a pair."


def test_roles_become_optional_links_resolved_from_the_object(docstrings):
    module, griffe = docstrings
    package = griffe.Module("trivium")
    cls = griffe.Class("Loader", parent=package)
    cls.set_member("set_epoch", griffe.Function("set_epoch", parent=cls))
    package.set_member("Loader", cls)
    text = "See :meth:`set_epoch`, :class:`~torch.Tensor`\\ s and :func:`trivium.x.y`."
    assert module.rewrite(text, cls) == (
        'See <autoref identifier="trivium.Loader.set_epoch" optional><code>set_epoch</code>'
        '</autoref>, <autoref identifier="torch.Tensor" optional><code>Tensor</code>'
        '</autoref>s and <autoref identifier="trivium.x.y" optional><code>trivium.x.y</code>'
        "</autoref>."
    )


def _run(code: str, namespace: dict | None = None) -> dict:
    namespace = {} if namespace is None else namespace
    exec(compile(code, "<docs example>", "exec"), namespace)
    return namespace


@pytest.fixture
def jpeg_shards(tmp_path: Path) -> Path:
    """Parquet shards of a test JPEG with labels, as `trivium-data convert` writes them."""
    import trivium.data as td

    jpeg = (ROOT / "tests/assets/images/jpeg/tv-grace_hopper_517x606.jpg").read_bytes()
    td.write_parquet([{"image": jpeg, "label": i} for i in range(8)], tmp_path / "shards")
    return tmp_path / "shards"


@pytest.mark.parametrize("package", ["core", "vision", "audio"])
def test_package_readme_example_runs(package: str, monkeypatch):
    monkeypatch.chdir(ROOT)
    (code,) = _python_blocks(ROOT / "packages" / package / "README.md")
    _run(code)


def test_readme_example_runs(jpeg_shards: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    (code,) = _python_blocks(ROOT / "README.md")
    namespace = _run(code.replace('"shards/"', repr(str(jpeg_shards))))
    batch = next(iter(namespace["loader"]))
    assert batch["image"].shape == (8, 3, 224, 224)
    assert batch["label"].tolist() == list(range(8))


def test_getting_started_examples_run(jpeg_shards: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    decode, transforms, loader, audio = _python_blocks(DOCS / "getting-started.md")
    namespace = _run(decode)
    assert tuple(namespace["image"].shape) == (3, 606, 517)
    _run(transforms, namespace)
    assert tuple(namespace["image"].shape) == (3, 224, 224)
    _run(loader.replace('"shards/"', repr(str(jpeg_shards))), namespace)
    assert namespace["state"] is not None
    assert tuple(_run(audio)["mel"].shape[:2]) == (1, 80)
