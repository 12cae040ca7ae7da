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

import math
from collections.abc import Sequence

import torch
from torch.utils.data import get_worker_info

__all__ = ["empty_batch", "stack_batch"]


def empty_batch(shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised contiguous CPU tensor, in shared memory when made in a DataLoader worker.

    For filling a batch in place (a decoder writing each sample into its slot);
    sending it to the main process then copies nothing.

    Example:
        >>> empty_batch((2, 3), torch.uint8).shape
        torch.Size([2, 3])
    """
    if get_worker_info() is None:
        return torch.empty(tuple(shape), dtype=dtype)
    numel = math.prod(shape)
    storage = torch.UntypedStorage._new_shared(numel * dtype.itemsize)
    return torch.empty(0, dtype=dtype).set_(storage).view(tuple(shape))


def stack_batch(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(tensors)``, into shared memory when called in a DataLoader worker.

    Samples that are permuted views of dense memory (a ``[C, H, W]`` view of
    ``[H, W, C]`` pixels) are stacked in their memory order: the batch is a
    ``[N, C, H, W]`` view of ``[N, H, W, C]`` memory (channels last), the same values.

    Example:
        >>> import torch
        >>> stack_batch([torch.arange(3), torch.arange(3)]).shape
        torch.Size([2, 3])
    """
    if not tensors:
        raise ValueError("stack_batch needs at least one tensor")
    order = _memory_order(tensors[0])
    dense = [t.permute(order) for t in tensors]
    first = dense[0]
    if get_worker_info() is None or first.device.type != "cpu":
        out = torch.stack(dense)
    else:
        out = torch.stack(dense, out=empty_batch((len(dense), *first.shape), first.dtype))
    return out.permute(0, *[1 + order.index(d) for d in range(len(order))])


def _memory_order(tensor: torch.Tensor) -> list[int]:
    """The dims of ``tensor`` from outermost to innermost in memory, if it is dense that way.

    A ``[C, H, W]`` view of ``[H, W, C]`` memory (what image decoders return) gives
    ``[1, 2, 0]``: stacking in that order is a plain copy per sample, and the batch
    keeps the samples' layout (channels last) instead of being transposed into a
    new one. Anything else gives the identity order.
    """
    identity = list(range(tensor.dim()))
    order = sorted(identity, key=lambda d: -tensor.stride(d))
    return order if tensor.permute(order).is_contiguous() else identity
