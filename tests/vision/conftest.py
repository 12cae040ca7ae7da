"""Fixtures the vision tests share."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
import torch
from peers import require_torchvision


@pytest.fixture(scope="module")
def tv() -> ModuleType:
    """torchvision, or the test is skipped (a module may define its own ``tv``)."""
    return require_torchvision()


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread for a module's tests (``pytest.mark.usefixtures("one_thread")``).

    The models' inputs are small: a second thread gains little, and on a CPU shared
    with other jobs OpenMP threads wait on each other (a file ran 4x slower).
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
