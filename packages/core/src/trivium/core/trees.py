"""Walk nested containers of tensors (batches, samples, checkpoints): one walker, torch's pytree.

:func:`map_tensors` rebuilds a nested value with a function applied to every tensor
in it. The containers torch's pytree knows (``dict``, ``OrderedDict``,
``defaultdict``, ``list``, ``tuple``, namedtuples, and anything registered with it)
are walked by pytree; dataclass instances, other mappings and subclasses of
``list`` and ``tuple`` are walked too and keep their type. Everything else is
returned as it is.

Example:
    >>> import torch
    >>> from trivium.core.trees import map_tensors
    >>> map_tensors(lambda t: t * 2, {"x": torch.ones(2), "ids": [torch.tensor(3), "a"]})
    {'x': tensor([2., 2.]), 'ids': [tensor(6), 'a']}
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import torch
from torch.utils import _pytree

__all__ = ["map_tensors"]

T = TypeVar("T")


def map_tensors(fn: Callable[[torch.Tensor], Any], tree: T) -> T:
    """``tree`` rebuilt with ``fn(t)`` in place of every tensor ``t`` inside it.

    Containers keep their type: a ``defaultdict`` its ``default_factory``, a
    namedtuple or dataclass instance its class (a dataclass is shallow-copied and its
    fields set, so frozen dataclasses and ``init=False`` fields work and
    ``__post_init__`` does not run again). Tensor subclasses count as tensors.

    Example:
        >>> import dataclasses, torch
        >>> @dataclasses.dataclass(frozen=True)
        ... class Batch:
        ...     image: torch.Tensor
        ...     name: str
        >>> map_tensors(torch.Tensor.double, Batch(torch.zeros(1), "a")).image.dtype
        torch.float64
    """
    return _pytree.tree_map(lambda leaf: _map_leaf(fn, leaf), tree)


def _map_leaf(fn: Callable[[torch.Tensor], Any], leaf: Any) -> Any:
    """``fn`` on a tensor; the containers pytree leaves alone are walked here."""
    if isinstance(leaf, torch.Tensor):
        return fn(leaf)
    if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
        out = copy.copy(leaf)
        for field in dataclasses.fields(leaf):
            object.__setattr__(out, field.name, map_tensors(fn, getattr(leaf, field.name)))
        return out
    if isinstance(leaf, dict):  # a dict subclass: a copy keeps its type and attributes
        out = copy.copy(leaf)
        for key, value in leaf.items():
            out[key] = map_tensors(fn, value)
        return out
    if isinstance(leaf, Mapping):
        return type(leaf)({key: map_tensors(fn, value) for key, value in leaf.items()})
    if isinstance(leaf, list | tuple):  # subclasses (namedtuples are pytree's)
        return type(leaf)(map_tensors(fn, value) for value in leaf)
    return leaf
