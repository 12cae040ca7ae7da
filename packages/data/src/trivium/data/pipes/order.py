"""Order ops: ``shuffle`` and ``shard``.

Example:
    >>> from trivium.data import IterPipe
    >>> list(IterPipe.from_iterable(range(6)).shard(2, 1))
    [1, 3, 5]
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

from trivium.data.pipes.base import IterPipe, _check_positive, register_op

__all__ = ["Shard", "Shuffle"]

DEFAULT_BUFFER_SIZE = 10_000  # items in the buffer of shuffle()


@register_op("shuffle")
class Shuffle(IterPipe):
    """``pipe.shuffle(...)``: see :meth:`IterPipe.shuffle`.

    Example:
        >>> sorted(Shuffle(IterPipe.from_iterable([2, 1]), 2, 0))
        [1, 2]
    """

    not_exact = (
        "a shuffle buffer carries items from one batch to the next, so no state could "
        "say which were consumed; DataLoader(shuffle=True) shuffles the epoch's order "
        "exactly (and shuffle_window=N sets how many rows of an Arrow source it permutes "
        "together)"
    )

    def __init__(self, source: IterPipe, buffer_size: int | None, seed: int | None) -> None:
        self.source = source
        size = DEFAULT_BUFFER_SIZE if buffer_size is None else buffer_size
        self.buffer_size = _check_positive(size, "buffer_size")
        self.seed = seed
        self._epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle differently (and reproducibly, with a seed) in epoch ``epoch``."""
        self._epoch = epoch

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        # Unseeded, it draws its seed from the global generator (seeded by a run's
        # seed_everything, and alike in every DataLoader worker of a stream source).
        seed = random.getrandbits(64) if self.seed is None else self.seed
        rng = random.Random(str((seed, self._epoch)))
        buffer: list[Any] = []
        for item in items:
            if len(buffer) < self.buffer_size:
                buffer.append(item)
                continue
            i = rng.randrange(self.buffer_size)
            yield buffer[i]
            buffer[i] = item
        rng.shuffle(buffer)
        yield from buffer


@register_op("shard")
class Shard(IterPipe):
    """``pipe.shard(...)``: see :meth:`IterPipe.shard`.

    Example:
        >>> list(Shard(IterPipe.from_iterable(range(4)), 2, 0))
        [0, 2]
    """

    not_exact = "DataLoader shards by itself (over workers and ranks): pass the pipe unsharded"

    def __init__(self, source: IterPipe, num_shards: int, shard_index: int) -> None:
        _check_positive(num_shards, "num_shards")
        if not 0 <= shard_index < num_shards:
            raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index}")
        self.source, self.num_shards, self.shard_index = source, num_shards, shard_index

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        return itertools.islice(items, self.shard_index, None, self.num_shards)
