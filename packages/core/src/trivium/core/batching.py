"""Stacking samples into a batch that leaves a DataLoader worker without another copy.

A tensor a worker sends to the main process must live in shared memory; torch moves
one that does not into a new shared segment, a full extra copy of the batch.
:func:`stack_batch` stacks straight into shared memory inside a worker, as torch's
``default_collate`` does, and is a plain ``torch.stack`` everywhere else.

Example:
    >>> import torch
    >>> stack_batch([torch.zeros(2), torch.ones(2)])
    tensor([[0., 0.],
            [1., 1.]])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.utils.data import get_worker_info

__all__ = ["stack_batch"]


def stack_batch(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(tensors)``, into shared memory when called in a DataLoader worker.

    Example:
        >>> import torch
        >>> stack_batch([torch.arange(3), torch.arange(3)]).shape
        torch.Size([2, 3])
    """
    if not tensors:
        raise ValueError("stack_batch needs at least one tensor")
    first = tensors[0]
    if get_worker_info() is None or first.device.type != "cpu":
        return torch.stack(list(tensors))
    shape = (len(tensors), *first.shape)
    storage = first.untyped_storage()._new_shared(
        len(tensors) * first.numel() * first.element_size()
    )
    out = torch.empty(0, dtype=first.dtype).set_(storage).view(shape)
    return torch.stack(list(tensors), out=out)
