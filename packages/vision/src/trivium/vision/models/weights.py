"""Model weights from a local file or a state dict (nothing is ever downloaded).

torchvision's builders take ``weights=`` as an enum that names a download. Here the
same argument takes what a machine without internet access has: a path to a file
saved with ``torch.save(model.state_dict(), path)`` (torchvision's own ``.pth``
downloads are such files) or the state dict itself.

Example:
    >>> import torch
    >>> state = load_weights({"fc.weight": torch.zeros(10, 4)}, "demo")
    >>> num_classes_of(state, "fc.weight")
    10
"""

from __future__ import annotations

import enum
import errno
import os
import pickle
import re
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, TypeAlias

import torch
from torch import Tensor

from trivium.core.errors import DecodeError

__all__ = ["Weights", "load_weights", "num_classes_of", "override_named_param"]

Weights: TypeAlias = str | os.PathLike[str] | Mapping[str, Tensor]

# What torchvision's weight enums are called ("DEFAULT", "IMAGENET1K_V2",
# "ResNet50_Weights.IMAGENET1K_V1"): named in the error instead of "no such file".
_ENUM_NAME = re.compile(r"(\w+_Weights\.)?(DEFAULT|[A-Z][A-Z0-9]*(_[A-Z0-9]+)+)")

_EXPECTED = "weights must be a local file path (str or os.PathLike) or a state dict (Mapping)"


def load_weights(weights: Weights, model_name: str) -> dict[str, Tensor]:
    """The state dict in ``weights``: a local file path or a state dict (a Mapping).

    A file is read with ``torch.load(path, map_location="cpu", weights_only=True)``.
    A missing file raises ``FileNotFoundError``; a file that does not hold a state
    dict raises :class:`~trivium.core.errors.DecodeError` naming it; anything else
    (a torchvision weights enum or its name, a URL) raises ``ValueError``, since
    nothing can be downloaded. ``model_name`` only appears in the messages.

    Example:
        >>> import torch
        >>> sorted(load_weights({"b": torch.zeros(1), "a": torch.ones(1)}, "demo"))
        ['a', 'b']
        >>> load_weights("IMAGENET1K_V1", "resnet50")
        Traceback (most recent call last):
        ...
        ValueError: resnet50: weights='IMAGENET1K_V1' names torchvision pretrained weights, \
which cannot be downloaded here; weights must be a local file path (str or os.PathLike) \
or a state dict (Mapping), e.g. the .pth file of those weights copied to this machine
    """
    if isinstance(weights, Mapping):
        return _checked_state(weights, model_name, source=None)
    if isinstance(weights, enum.Enum):
        raise ValueError(
            f"{model_name}: weights={weights} names torchvision pretrained weights, which "
            f"cannot be downloaded here; {_EXPECTED}, e.g. the .pth file of those weights "
            "copied to this machine"
        )
    if not isinstance(weights, str | os.PathLike):
        raise ValueError(f"{model_name}: {_EXPECTED}, got {type(weights).__name__}: {weights!r}")
    path = os.fspath(weights)
    if not isinstance(path, str):
        raise ValueError(f"{model_name}: {_EXPECTED}, got the bytes path {path!r}")
    if not os.path.exists(path):
        _reject_remote_name(path, model_name)
        raise FileNotFoundError(
            errno.ENOENT, f"{model_name}: no weights file at {path} ({_EXPECTED})", path
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, ValueError) as e:
        reason = f"{model_name}: not a readable torch weights file ({e})"
        raise DecodeError(reason, path=path) from e
    if not isinstance(state, Mapping):
        raise DecodeError(
            f"{model_name}: the file holds a {type(state).__name__}, not a state dict", path=path
        )
    return _checked_state(state, model_name, source=path)


def _reject_remote_name(name: str, model_name: str) -> None:
    if "://" in name:
        raise ValueError(
            f"{model_name}: weights={name!r} is a URL; nothing is downloaded here. "
            f"{_EXPECTED}: download the file elsewhere and pass its local path"
        )
    if _ENUM_NAME.fullmatch(name):
        raise ValueError(
            f"{model_name}: weights={name!r} names torchvision pretrained weights, which cannot "
            f"be downloaded here; {_EXPECTED}, e.g. the .pth file of those weights copied "
            "to this machine"
        )


def _checked_state(
    state: Mapping[Any, Any], model_name: str, source: str | None
) -> dict[str, Tensor]:
    bad = [key for key, value in state.items() if not isinstance(value, Tensor)]
    if bad:
        # A training checkpoint ({"model": ..., "optimizer": ..., "epoch": ...}) is the usual case.
        hint = f"; keys that are not tensors: {sorted(map(str, bad))[:8]}"
        nested = [key for key in bad if isinstance(state[key], Mapping)]
        if nested:
            hint += f" (a training checkpoint? pass its state dict, e.g. checkpoint[{nested[0]!r}])"
        reason = f"{model_name}: weights are not a state dict of tensors{hint}"
        if source is not None:
            raise DecodeError(reason, path=source)
        raise ValueError(reason)
    out = OrderedDict(state)
    metadata = getattr(state, "_metadata", None)
    if metadata is not None:  # module versions, which steer loading (e.g. BatchNorm's)
        out._metadata = metadata  # type: ignore[attr-defined]
    return out


def num_classes_of(state: Mapping[str, Tensor], key: str) -> int | None:
    """The number of outputs of the classifier weight ``state[key]``, or None if absent.

    Example:
        >>> import torch
        >>> num_classes_of({"fc.weight": torch.zeros(7, 3)}, "fc.weight"), num_classes_of({}, "fc")
        (7, None)
    """
    weight = state.get(key)
    return None if weight is None or weight.dim() == 0 else int(weight.shape[0])


def override_named_param(kwargs: dict[str, Any], param: str, value: Any, reason: str) -> None:
    """Set ``kwargs[param] = value``, or raise ``ValueError`` if the caller gave another value.

    As torchvision's builders do for what their weights or architecture fix (the
    classes of pretrained weights, ResNeXt's groups); ``reason`` says where
    ``value`` comes from.

    Example:
        >>> kwargs = {}
        >>> override_named_param(kwargs, "groups", 32, "resnext50_32x4d has 32 groups")
        >>> kwargs
        {'groups': 32}
        >>> override_named_param({"groups": 8}, "groups", 32, "resnext50_32x4d has 32 groups")
        Traceback (most recent call last):
        ...
        ValueError: groups=8 was given, but resnext50_32x4d has 32 groups
    """
    if param in kwargs and kwargs[param] != value:
        raise ValueError(f"{param}={kwargs[param]!r} was given, but {reason}")
    kwargs[param] = value
