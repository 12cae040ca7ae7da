"""The peers' pure-Python code (torchvision transforms, torchaudio transforms and models).

The registry has only CUDA builds of torchvision and torchaudio, whose C++
extensions cannot load beside a CPU torch. Their transforms, functional kernels
and models are plain Python on torch ops and do not need those extensions, so
this module imports them with the extension loading skipped:

* torchvision: ``register_fake`` for its C++ detection/decode ops is skipped (the
  ops themselves stay unavailable: ``torchvision.io`` decoding and ``ops.nms`` fail);
* torchaudio: its ``_extension`` module is replaced by one reporting "not built"
  (as torchaudio does on a build without extensions).

Where the real extensions load, the peers are imported as usual. Tests use
``pytest.importorskip``-style skips when neither works; benchmarks print that the
peer is missing.

Example:
    >>> tv = import_torchvision()
    >>> tv is None or hasattr(tv, "transforms")
    True
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from types import ModuleType
from unittest import mock

import torch

__all__ = ["import_torchaudio", "import_torchvision", "require_torchaudio", "require_torchvision"]


def _forget(prefix: str) -> None:
    for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[name]


def _import_peer(
    name: str, without_extension: Callable[[], AbstractContextManager[object]]
) -> ModuleType | None:
    """``name`` imported as usual, else (its C++ extension is a CUDA build) under
    ``without_extension``; None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
    except (RuntimeError, OSError):  # the C++ extension is a CUDA build
        _forget(name)
        with without_extension():
            return importlib.import_module(name)


def _skip_fake_registration() -> AbstractContextManager[object]:
    """torchvision's ``register_fake`` calls for its C++ ops skipped."""
    return mock.patch.object(torch.library, "register_fake", lambda *a, **k: lambda fn: fn)


@contextlib.contextmanager
def _extension_not_built() -> Iterator[None]:
    """torchaudio's ``_extension`` replaced (for good) by one reporting "not built"."""
    stub = types.ModuleType("torchaudio._extension")
    stub._IS_TORCHAUDIO_EXT_AVAILABLE = False
    stub._IS_ALIGN_AVAILABLE = False
    stub._load_lib = lambda lib: False
    stub.fail_if_no_align = lambda fn: fn
    sys.modules["torchaudio._extension"] = stub
    yield


def import_torchvision() -> ModuleType | None:
    """torchvision (with ``transforms.v2``), or None when it is not installed.

    Example:
        >>> tv = import_torchvision()
        >>> tv is None or callable(tv.transforms.v2.functional.resize)
        True
    """
    torchvision = _import_peer("torchvision", _skip_fake_registration)
    if torchvision is not None:
        importlib.import_module("torchvision.transforms.v2")
    return torchvision


def import_torchaudio() -> ModuleType | None:
    """torchaudio (transforms, functional, models), or None when it is not installed.

    Example:
        >>> ta = import_torchaudio()
        >>> ta is None or callable(ta.transforms.MelSpectrogram)
        True
    """
    torchaudio = _import_peer("torchaudio", _extension_not_built)
    if torchaudio is not None:
        for sub in ("transforms", "functional", "models"):
            importlib.import_module(f"torchaudio.{sub}")
    return torchaudio


def _require(importer: Callable[[], ModuleType | None], name: str) -> ModuleType:
    """The peer ``importer`` gives, skipping the calling test when it is not installed."""
    import pytest

    module = importer()
    if module is None:
        pytest.skip(f"{name} is not installed")
    return module


def require_torchvision() -> ModuleType:
    """torchvision for a test, skipping the test when it is not installed.

    Example:
        >>> callable(require_torchvision)
        True
    """
    return _require(import_torchvision, "torchvision")


def require_torchaudio() -> ModuleType:
    """torchaudio for a test, skipping the test when it is not installed.

    Example:
        >>> callable(require_torchaudio)
        True
    """
    return _require(import_torchaudio, "torchaudio")
