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


# Worker start methods that import torch anew in every worker (spawn, forkserver) cost
# seconds per test: the quick tier (`make test`) runs fork and threads, the slow tier
# (`make test-slow`, also in CI) the other start methods too.
_SLOW_START_METHODS = {"spawn", "forkserver"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and _SLOW_START_METHODS & set(callspec.id.split("-")):
            item.add_marker(pytest.mark.slow)
