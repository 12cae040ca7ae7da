"""The coverage tables in the guides (docs/snippets/coverage/) are the code's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from peers import import_torchaudio, import_torchvision

ROOT = Path(__file__).resolve().parents[1]


def _coverage():
    spec = importlib.util.spec_from_file_location("coverage_tables", ROOT / "docs" / "coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(
    import_torchvision() is None or import_torchaudio() is None,
    reason="the peers' names come from torchvision and torchaudio",
)
def test_the_coverage_tables_are_current() -> None:
    coverage = _coverage()
    for guide, text in coverage.render().items():
        committed = (coverage.OUT / f"{guide}.md").read_text()
        assert committed == text, f"coverage/{guide}.md is stale: run docs/coverage.py"


def test_a_missing_name_is_listed() -> None:
    coverage = _coverage()
    text = coverage.table([("torchaudio.x", ["a", "b"], ["b"])], "torchaudio 0")
    assert "| `torchaudio.x` | 1 of 2 | `b` |" in text
