"""The coverage tables: which of torchvision's and torchaudio's public names Trivium has.

``.venv/bin/python docs/coverage.py`` rewrites ``docs/snippets/coverage/vision.md`` and
``audio.md`` (included by the vision and audio guides) from the code: for each peer
module, its public names (``__all__``, else the names without a leading underscore;
for ``torchvision.models`` the model builders of ``list_models()``) and which of them
the Trivium module has (a builder of a subpackage, ``torchvision.models.segmentation``,
in Trivium's subpackage of that name). ``tests/test_coverage.py`` fails when a file is not current.

Example::

    .venv/bin/python docs/coverage.py          # rewrite the tables
    .venv/bin/python docs/coverage.py --check  # exit 1 if a table is stale
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "snippets" / "coverage"
# (table, peer module, Trivium module)
SURFACES = [
    ("vision", "torchvision.transforms.v2", "trivium.vision.transforms"),
    ("vision", "torchvision.transforms.v2.functional", "trivium.vision.transforms.functional"),
    ("vision", "torchvision.io", "trivium.vision.io"),
    ("vision", "torchvision.ops", "trivium.vision.ops"),
    ("vision", "torchvision.datasets", "trivium.vision.datasets"),
    ("vision", "torchvision.models", "trivium.vision.models"),
    ("audio", "torchaudio.functional", "trivium.audio.functional"),
    ("audio", "torchaudio.transforms", "trivium.audio.transforms"),
    ("audio", "torchaudio.datasets", "trivium.audio.datasets"),
]


def peer_names(module: ModuleType) -> list[str]:
    """The public names of a peer module (builders, for torchvision.models)."""
    if module.__name__ == "torchvision.models":
        return sorted(module.list_models())
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
        names = [n for n in names if not isinstance(getattr(module, n), ModuleType)]
    return sorted(set(names))


def _has(module: ModuleType, peer: ModuleType, name: str) -> bool:
    """Whether the Trivium ``module`` has the peer's ``name``; a torchvision model builder is
    looked up in the subpackage mirroring the peer's (``models.segmentation``, ``models.video``)."""
    if peer.__name__ != "torchvision.models":
        return hasattr(module, name)
    home = peer.get_model_builder(name).__module__.removeprefix("torchvision.models")
    subpackage = home.split(".")[1] if home.count(".") > 1 else ""
    if subpackage:
        try:
            module = importlib.import_module(f"{module.__name__}.{subpackage}")
        except ImportError:
            return False
    return hasattr(module, name)


def table(rows: list[tuple[str, list[str], list[str]]], version: str) -> str:
    """The Markdown of one guide's table: peer module, count, names missing."""
    lines = [
        f"| {version} module | Trivium has | missing |",
        "| --- | ---: | --- |",
    ]
    for peer, names, missing in rows:
        shown = ", ".join(f"`{n}`" for n in missing) if missing else "none"
        lines.append(f"| `{peer}` | {len(names) - len(missing)} of {len(names)} | {shown} |")
    return "\n".join(lines) + "\n"


def render() -> dict[str, str]:
    """``{"vision": markdown, "audio": markdown}`` from the installed code and peers."""
    sys.path.insert(0, str(ROOT / "tests"))
    from peers import require_torchaudio, require_torchvision

    versions = {
        "vision": f"torchvision {require_torchvision().__version__.split('+')[0]}",
        "audio": f"torchaudio {require_torchaudio().__version__.split('+')[0]}",
    }
    rows: dict[str, list[tuple[str, list[str], list[str]]]] = {"vision": [], "audio": []}
    for guide, peer, ours in SURFACES:
        peer_module = importlib.import_module(peer)
        names = peer_names(peer_module)
        module = importlib.import_module(ours)
        missing = [n for n in names if not _has(module, peer_module, n)]
        rows[guide].append((peer, names, missing))
    return {guide: table(rows[guide], versions[guide]) for guide in rows}


def main(argv: list[str] | None = None) -> int:
    """Rewrite the tables, or with ``--check`` say which is stale (exit status 1)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    stale = []
    for guide, text in render().items():
        path = OUT / f"{guide}.md"
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print("stale: " + ", ".join(str(p.relative_to(ROOT)) for p in stale))
        print("run: .venv/bin/python docs/coverage.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
