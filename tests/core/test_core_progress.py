"""Tests for trivium.core.progress."""

from __future__ import annotations

import io
import sys

import pytest
from tqdm import tqdm

from trivium.core import progress, progress_enabled


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _stderr(monkeypatch: pytest.MonkeyPatch, tty: bool) -> None:
    # Called inside each test: pytest's capturing swaps sys.stderr between setup and call.
    monkeypatch.delenv("TRIVIUM_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", FakeTTY() if tty else io.StringIO())


def test_disabled_when_stderr_is_not_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    _stderr(monkeypatch, tty=False)
    assert not progress_enabled()
    out = io.StringIO()
    bar = progress(range(3), desc="load", file=out)
    assert isinstance(bar, tqdm) and bar.disable
    assert list(bar) == [0, 1, 2]
    assert out.getvalue() == ""


def test_enabled_on_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    _stderr(monkeypatch, tty=True)
    assert progress_enabled()
    out = io.StringIO()
    bar = progress(range(3), desc="load", unit="img", file=out)
    assert not bar.disable and bar.total == 3
    assert list(bar) == [0, 1, 2]
    assert "load" in out.getvalue() and "img" in out.getvalue()


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_env_var_turns_bars_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    _stderr(monkeypatch, tty=True)
    monkeypatch.setenv("TRIVIUM_PROGRESS", value)
    assert not progress_enabled()
    assert progress(total=5).disable


def test_env_var_forces_bars_on(monkeypatch: pytest.MonkeyPatch) -> None:
    _stderr(monkeypatch, tty=False)
    monkeypatch.setenv("TRIVIUM_PROGRESS", "1")
    assert progress_enabled()
    out = io.StringIO()
    with progress(total=4, desc="files", file=out) as bar:
        bar.update(4)
    assert "files" in out.getvalue() and "4/4" in out.getvalue()


def test_explicit_disable_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    _stderr(monkeypatch, tty=True)
    assert progress(range(2), disable=True, file=io.StringIO()).disable
