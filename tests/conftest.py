"""Shared test fixtures: where the committed assets live (``tests/image_assets.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from image_assets import IMAGES


@pytest.fixture(scope="session")
def images_dir() -> Path:
    return IMAGES
