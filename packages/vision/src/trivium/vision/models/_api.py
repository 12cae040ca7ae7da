"""torchvision's model registry: :func:`list_models`, :func:`get_model_builder`, :func:`get_model`.

A script picks its model by name (``torchvision.models.get_model(args.model, ...)`` in
torchvision's reference scripts); the names are the builders' names, and a model's
module is the package of its builder (``models`` for the classifiers,
``models.detection``, ``models.segmentation``, ``models.video``), as in torchvision.

Example:
    >>> model = get_model("resnet18", weights=None, num_classes=3)
    >>> model.fc.out_features
    3
    >>> "fasterrcnn_resnet50_fpn" in list_models(include="fasterrcnn*")
    True
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import inspect
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from torch import nn

__all__ = ["get_model", "get_model_builder", "list_models"]

_TASK_PACKAGES = ("detection", "segmentation", "video")


@functools.cache
def _builders() -> dict[str, Callable[..., nn.Module]]:
    """Every model builder by name: the classifiers by family, and the task packages'
    public functions that take ``weights`` (their helpers take no weights)."""
    models = importlib.import_module("trivium.vision.models")
    found = {
        name: getattr(models, name)
        for names in models.CLASSIFICATION_FAMILIES.values()
        for name in names
    }
    for package in _TASK_PACKAGES:
        module = getattr(models, package)
        for name in module.__all__:
            fn = getattr(module, name)
            is_builder = name.islower() and inspect.isfunction(fn)
            if is_builder and "weights" in inspect.signature(fn).parameters:
                found[name] = fn
    return found


def _filters(patterns: Iterable[str] | str | None) -> list[str]:
    return [patterns] if isinstance(patterns, str) else list(patterns or ())


def list_models(
    module: ModuleType | None = None,
    include: Iterable[str] | str | None = None,
    exclude: Iterable[str] | str | None = None,
) -> list[str]:
    """The sorted names of the models, as torchvision's ``list_models``.

    Args:
        module: Only the models of this package (``models`` gives the classifiers,
            ``models.detection`` the detectors); None for all.
        include: ``fnmatch`` patterns; a model is kept if it matches any (None: all).
        exclude: ``fnmatch`` patterns, applied after ``include``, removing the matches.

    Returns:
        The model names.

    Example:
        >>> from trivium.vision import models
        >>> list_models(models.video, include="r*")
        ['r2plus1d_18', 'r3d_18']
    """
    if module is not None and not isinstance(module, ModuleType):
        raise TypeError(f"module must be a module or None, got {type(module).__name__}")
    everything = {
        name
        for name, fn in _builders().items()
        if module is None or fn.__module__.rsplit(".", 1)[0] == module.__name__
    }
    included = _filters(include)
    names = {n for p in included for n in fnmatch.filter(everything, p)} if included else everything
    for pattern in _filters(exclude):
        names -= set(fnmatch.filter(everything, pattern))
    return sorted(names)


def get_model_builder(name: str) -> Callable[..., nn.Module]:
    """The builder function of model ``name`` (its name is case-insensitive).

    Args:
        name: The model's name, as :func:`list_models` gives it.

    Returns:
        The builder, e.g. :func:`~trivium.vision.models.resnet18`.

    Example:
        >>> get_model_builder("mobilenet_v3_small").__name__
        'mobilenet_v3_small'
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    try:
        return _builders()[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config: Any) -> nn.Module:
    """The model ``name`` built with ``config`` (the builder's keyword arguments).

    Args:
        name: The model's name, as :func:`list_models` gives it.
        **config: The builder's arguments (``weights``, ``num_classes``, ...).

    Returns:
        The model.

    Example:
        >>> get_model("r3d_18", num_classes=2).fc.out_features
        2
    """
    return get_model_builder(name)(**config)
