"""Shared test fixtures: where the committed assets live, a loopback file server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from file_server import FileServer, serve
from image_assets import IMAGES


@pytest.fixture(scope="session")
def images_dir() -> Path:
    return IMAGES


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[FileServer]:
    """A loopback HTTP server over ``tmp_path / "served"`` (see ``tests/file_server.py``)."""
    with serve(tmp_path / "served") as server:
        yield server
