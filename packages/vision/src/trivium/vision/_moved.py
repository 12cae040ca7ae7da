"""Modules that moved: their old paths stay importable for one release, with a warning."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved_module(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves ``old``'s names from ``new``.

    Each public name read through ``old`` comes from ``new`` with a
    ``DeprecationWarning`` naming the new path; other names raise ``AttributeError``.

    Example:
        >>> import warnings
        >>> getattr_ = moved_module("old.place", "trivium.vision.corpora")
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     getattr_("build_image_corpus").__name__
        'build_image_corpus'
        >>> str(caught[0].message)
        'old.place is deprecated: import build_image_corpus from trivium.vision.corpora'
    """

    def __getattr__(name: str) -> Any:
        module = importlib.import_module(new)
        if name.startswith("_") or not hasattr(module, name):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old} is deprecated: import {name} from {new}", DeprecationWarning, stacklevel=2
        )
        return getattr(module, name)

    return __getattr__
