"""Pick one of several image functions by a tensor index, also under ``torch.compile``.

In eager mode the index is read on the host and only the chosen function runs.
Under ``torch.compile(fullgraph=True)`` a data-dependent Python branch would break
the graph, so the choice becomes nested ``torch.cond`` calls: still only the
chosen function runs, and the index never leaves the device.

Example:
    >>> import torch
    >>> switch(torch.tensor(1), [lambda x: x + 1, lambda x: x * 10], torch.ones(2)).tolist()
    [10.0, 10.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from trivium.core.tracing import is_tracing

__all__ = ["switch"]

ImageFn = Callable[[torch.Tensor], torch.Tensor]


def switch(
    index: torch.Tensor | int, branches: Sequence[ImageFn], img: torch.Tensor
) -> torch.Tensor:
    """``branches[index](img)``; every branch must keep the shape and dtype of ``img``.

    Example:
        >>> import torch
        >>> switch(0, [lambda x: -x], torch.ones(1)).tolist()
        [-1.0]
    """
    if not is_tracing():
        return branches[int(index)](img)
    # torch.cond needs one memory layout from every branch: a branch that returns its
    # input as it is (a decoded image's [C, H, W] view of [H, W, C] memory) and one that
    # returns a fresh tensor differ, so every branch gives a contiguous result.
    dense = [lambda x, fn=fn: fn(x).contiguous() for fn in branches]
    return _nested_cond(torch.as_tensor(index), dense, img)


def _nested_cond(index: torch.Tensor, branches: list[ImageFn], img: torch.Tensor) -> torch.Tensor:
    if len(branches) == 1:
        return branches[0](img)
    first, rest = branches[0], branches[1:]
    return torch.cond(index == 0, first, lambda x: _nested_cond(index - 1, rest, x), (img,))
