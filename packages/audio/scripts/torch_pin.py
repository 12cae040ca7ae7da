"""Pins the torch that trivium-audio is built against in the wheel's dependencies.

A scikit-build-core dynamic-metadata provider (``[[tool.dynamic-metadata]]`` in
``pyproject.toml``): the operator library links libtorch, whose C++ ABI changes with
every release, so the wheel requires the same torch release, as torchvision's does.
The local label is left out (``2.13.0+cpu`` pins ``torch==2.13.0``), so a wheel built
against the CPU torch also installs beside the CUDA build of that release.

Example:
    >>> dynamic_metadata({}, {})["dependencies"][0].startswith("torch==")
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def dynamic_metadata(settings: Mapping[str, Any], project: Mapping[str, Any]) -> dict[str, Any]:
    """``{"dependencies": ["torch==<the installed torch's release>"]}``."""
    import torch

    release = torch.__version__.split("+")[0]
    return {"dependencies": [f"torch=={release}"]}


def dynamic_wheel(settings: Mapping[str, Any]) -> dict[str, bool]:
    """The pin is the building torch's, so an sdist marks its dependencies dynamic."""
    return {"dependencies": True}
