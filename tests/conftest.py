"""Shared test fixtures: where the committed assets live."""

from __future__ import annotations

from pathlib import Path

import pytest

ASSETS = Path(__file__).parent / "assets"
IMAGES = ASSETS / "images"


@pytest.fixture(scope="session")
def images_dir() -> Path:
    return IMAGES
