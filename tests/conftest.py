"""Shared test fixtures: where the committed assets live, a loopback file server."""

from __future__ import annotations

import sys
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
@pytest.fixture(autouse=True, scope="module")
def _fresh_compile_caches() -> None:
    """Each test file starts from empty torch.compile caches.

    Which files share a pytest worker changes from run to run; code every transform
    shares (``ImageTransform.forward``) would otherwise reach Dynamo's recompile limit
    or not depending on what ran before it.
    """
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        dynamo.reset()


_SLOW_START_METHODS = {"spawn", "forkserver"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and _SLOW_START_METHODS & set(callspec.id.split("-")):
            item.add_marker(pytest.mark.slow)
