"""Batches as a function of the step number, so that a resumed run repeats them exactly.

Example:
    >>> batch_indices(0, num_items=5, batch_size=2, seed=0) == batch_indices(0, 5, 2, 0)
    True
    >>> len({i for s in range(2) for i in batch_indices(s, 4, 2, 0)})  # an epoch: all items
    4
"""

from __future__ import annotations

import torch

__all__ = ["batch_indices", "step_generator"]


def step_generator(seed: int, step: int) -> torch.Generator:
    """A CPU generator for what is random at ``step`` (crops, offsets), from ``seed``.

    Example:
        >>> a = torch.rand(1, generator=step_generator(0, 3))
        >>> bool(torch.equal(a, torch.rand(1, generator=step_generator(0, 3))))
        True
    """
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


def batch_indices(step: int, num_items: int, batch_size: int, seed: int) -> list[int]:
    """Item indices of ``step``'s batch: epochs are seeded permutations, walked in order.

    An epoch holds ``num_items // batch_size`` full batches (at least one; items
    repeat when the dataset is smaller than a batch).

    Example:
        >>> len(batch_indices(7, num_items=3, batch_size=4, seed=1))
        4
    """
    if num_items < 1:
        raise ValueError("the dataset is empty: no batches to draw")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    per_epoch = max(1, num_items // batch_size)
    epoch, position = divmod(step, per_epoch)
    gen = torch.Generator().manual_seed(seed * 7919 + epoch)
    repeats = -(-batch_size // num_items)
    order = torch.cat([torch.randperm(num_items, generator=gen) for _ in range(repeats)])
    start = (position * batch_size) % len(order)
    return order[start : start + batch_size].tolist()
