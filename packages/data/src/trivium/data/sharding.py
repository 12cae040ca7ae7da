"""The epoch plan: a global sample order fixed by (seed, epoch), cut into batches and slots.

How exact sharding, deterministic shuffling and resume fit together:

1. **Global order.** Every dataset the loader reads is addressable by a global row id
   in ``[0, N)``: an index for a map-style dataset; for an Arrow source, the row's
   place in the concatenation of its fragments ((file, row group) pieces).
   :func:`epoch_order` turns (seed, epoch) into a permutation of those ids. For a
   map-style dataset it is a full permutation. For a fragmented source the fragments
   are permuted, then rows are permuted within consecutive windows of ``window``
   rows (the shuffle buffer: reading a window needs only the fragments it covers).
   Nothing about workers or ranks enters the order.
2. **Positions to ranks.** A resume offset ``start`` says how many positions of the
   order are already consumed. Position ``start + i * R + r`` goes to rank ``r`` of
   ``R`` (its local index ``i``), so every rank gets the same number of samples:
   with ``drop_last`` the tail that does not fill every rank (and the last partial
   batch) is dropped; otherwise the ranks are padded by wrapping around to the
   beginning of the order, as ``DistributedSampler`` does.
3. **Batches to workers.** A rank's local indices are cut into batches of
   ``batch_size``; local batch ``k`` is built by worker ``k % W``. Torch's loader
   takes batches from its workers round-robin, so the rank sees its batches in
   order ``k = 0, 1, 2, ...`` whatever ``W`` is.
4. **Resume.** After every rank has yielded ``k`` batches, exactly the positions
   ``[start, start + k * batch_size * R)`` are consumed: a prefix of the global
   order. The resume state is that one number (plus seed and epoch), so a job can
   go on with another number of workers, ranks or even batch size and still see
   each remaining sample exactly once.

A ``sampler`` gives the order instead of :func:`epoch_order` (the same plan over
its indices); a ``batch_sampler`` gives the batches too (:class:`BatchesPlan`: its
batches, in order, as runs of positions of their concatenation). A source without
random access is read in its own order, cut into batches the same way
(:class:`StreamPlan`: the number of batches is known at its end).

Example:
    >>> plan = EpochPlan(num_samples=9, batch_size=2, world_size=2, rank=1)
    >>> [plan.batch_positions(k).tolist() for k in range(plan.num_batches)]
    [[1, 3], [5, 7], [9]]
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["BatchesPlan", "EpochPlan", "SamplerOrder", "StreamPlan", "epoch_order", "epoch_rng"]


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """The NumPy generator of one epoch: depends on ``seed`` and ``epoch`` only.

    Example:
        >>> int(epoch_rng(0, 1).integers(100)) == int(epoch_rng(0, 1).integers(100))
        True
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch])))


def epoch_order(
    fragment_rows: Sequence[int],
    *,
    seed: int,
    epoch: int,
    shuffle: bool,
    window: int | None = None,
) -> np.ndarray:
    """The global row ids of one epoch, in the order they are read.

    ``fragment_rows`` are the row counts of the fragments (one fragment holding every
    row for a map-style dataset). With ``shuffle`` the fragments are permuted, then
    the rows within each window of ``window`` rows (``None``: one window over all).

    Example:
        >>> epoch_order([2, 3], seed=0, epoch=0, shuffle=False).tolist()
        [0, 1, 2, 3, 4]
        >>> sorted(epoch_order([2, 3], seed=0, epoch=0, shuffle=True, window=2).tolist())
        [0, 1, 2, 3, 4]
    """
    rows = np.asarray(fragment_rows, dtype=np.int64)
    total = int(rows.sum())
    if not shuffle:
        return np.arange(total, dtype=np.int64)
    rng = epoch_rng(seed, epoch)
    offsets = np.concatenate([[0], np.cumsum(rows)[:-1]])
    frag_order = rng.permutation(len(rows))
    if len(rows):
        ids = np.concatenate([np.arange(offsets[f], offsets[f] + rows[f]) for f in frag_order])
    else:
        ids = np.zeros(0, dtype=np.int64)
    if window is None or window >= total:
        return ids[rng.permutation(total)]
    for lo in range(0, total, window):
        chunk = ids[lo : lo + window]
        ids[lo : lo + window] = chunk[rng.permutation(len(chunk))]
    return ids


@dataclass(frozen=True)
class EpochPlan:
    """Which global positions one rank reads, batch by batch (see the module docstring).

    Positions ``>= num_samples`` are padding: read them as ``position % num_samples``.

    Example:
        >>> plan = EpochPlan(num_samples=5, batch_size=2, world_size=2, rank=0, drop_last=True)
        >>> plan.num_batches, plan.batch_positions(0).tolist()
        (1, [0, 2])
    """

    num_samples: int
    batch_size: int
    world_size: int = 1
    rank: int = 0
    start: int = 0
    drop_last: bool = False

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank must be in [0, {self.world_size}), got {self.rank}")
        if not 0 <= self.start <= self.num_samples:
            raise ValueError(f"start must be in [0, {self.num_samples}], got {self.start}")

    @property
    def local_samples(self) -> int:
        """How many positions this rank reads (the same on every rank)."""
        remaining = self.num_samples - self.start
        if self.drop_last:
            per_rank = remaining // self.world_size
            return per_rank // self.batch_size * self.batch_size
        return math.ceil(remaining / self.world_size)

    @property
    def num_batches(self) -> int:
        """How many batches this rank yields (the same on every rank)."""
        return math.ceil(self.local_samples / self.batch_size)

    def batch_positions(self, k: int) -> np.ndarray:
        """The global positions of local batch ``k``."""
        lo = k * self.batch_size
        local = np.arange(lo, min(lo + self.batch_size, self.local_samples), dtype=np.int64)
        return self.start + local * self.world_size + self.rank

    def consumed_after(self, batches: int) -> int:
        """Positions consumed by every rank together once each has yielded ``batches``."""
        return min(self.num_samples, self.start + batches * self.batch_size * self.world_size)

    def starting_at(self, start: int) -> EpochPlan:
        """This plan, resumed after ``start`` consumed positions."""
        return dataclasses.replace(self, start=start)


@dataclass(frozen=True)
class BatchesPlan:
    """The batches of a batch sampler: batch ``b`` is positions ``bounds[b]:bounds[b + 1]``.

    ``start`` (positions consumed) is where a batch begins. One rank: the batch
    sampler splits ranks itself, as ``DistributedSampler`` does.

    Example:
        >>> plan = BatchesPlan(np.array([0, 2, 5]), start=2)
        >>> plan.num_batches, plan.batch_positions(0).tolist(), plan.consumed_after(1)
        (1, [2, 3, 4], 5)
    """

    bounds: np.ndarray
    start: int = 0

    @functools.cached_property
    def _first(self) -> int:
        """The batch that begins at ``start`` (found once: every batch asks)."""
        first = int(np.searchsorted(self.bounds, self.start))
        if first >= len(self.bounds) or self.bounds[first] != self.start:
            raise ValueError(
                f"the resume point {self.start} falls inside a batch of the batch sampler "
                f"(its batches start at {self.bounds[:-1].tolist()[:8]}...)"
            )
        return first

    @property
    def num_batches(self) -> int:
        return len(self.bounds) - 1 - self._first

    def batch_positions(self, k: int) -> np.ndarray:
        b = self._first + k
        return np.arange(self.bounds[b], self.bounds[b + 1], dtype=np.int64)

    def consumed_after(self, batches: int) -> int:
        return int(self.bounds[min(self._first + batches, len(self.bounds) - 1)])

    def starting_at(self, start: int) -> BatchesPlan:
        return dataclasses.replace(self, start=start)


@dataclass(frozen=True)
class StreamPlan:
    """Batches of a source read in its own order: batch ``c`` after ``start`` is rank ``c % R``'s.

    Its number of batches is known once the source is exhausted.

    Example:
        >>> StreamPlan(batch_size=4, world_size=2, start=8).consumed_after(3)
        32
    """

    batch_size: int
    world_size: int = 1
    rank: int = 0
    start: int = 0
    drop_last: bool = False

    def consumed_after(self, batches: int) -> int:
        return self.start + batches * self.batch_size * self.world_size

    def starting_at(self, start: int) -> StreamPlan:
        return dataclasses.replace(self, start=start)


@dataclass(frozen=True)
class SamplerOrder:
    """A sampler's indices for one epoch; a batch sampler's also the ``bounds`` of its batches.

    Example:
        >>> order = SamplerOrder.of_batches([[3, 1], [0]])
        >>> order.indices.tolist(), order.bounds.tolist()
        ([3, 1, 0], [0, 2, 3])
    """

    indices: np.ndarray
    bounds: np.ndarray | None = None

    @staticmethod
    def of(sampler: Iterable[int]) -> SamplerOrder:
        return SamplerOrder(np.fromiter((int(i) for i in sampler), dtype=np.int64))

    @staticmethod
    def of_batches(batches: Iterable[Sequence[int]]) -> SamplerOrder:
        batches = [list(b) for b in batches]
        sizes = np.array([len(b) for b in batches], dtype=np.int64)
        indices = np.array([int(i) for b in batches for i in b], dtype=np.int64)
        return SamplerOrder(indices, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))

    def to_state(self) -> dict[str, Any]:
        """As a state dict holds it (tensors: ``torch.load(weights_only=True)`` reads them)."""
        bounds = None if self.bounds is None else torch.from_numpy(self.bounds)
        return {"indices": torch.from_numpy(self.indices), "bounds": bounds}

    @staticmethod
    def from_state(state: dict[str, Any]) -> SamplerOrder:
        bounds = state["bounds"]
        return SamplerOrder(
            np.asarray(state["indices"], dtype=np.int64),
            None if bounds is None else np.asarray(bounds, dtype=np.int64),
        )
