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

    def __init__(self, source: IterPipe, buffer_size: int | None, seed: int | None) -> None:
        self.source = source
        #: Whether ``buffer_size`` was given (the DataLoader reads it as its window then).
        self.buffer_size_given = buffer_size is not None
        size = DEFAULT_BUFFER_SIZE if buffer_size is None else buffer_size
        self.buffer_size = _check_positive(size, "buffer_size")
        self.seed = seed
        self._epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle differently (and reproducibly, with a seed) in epoch ``epoch``."""
        self._epoch = epoch

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        seed = None if self.seed is None else (self.seed, self._epoch)
        rng = random.Random(str(seed)) if seed is not None else random.Random()
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

    def __init__(self, source: IterPipe, num_shards: int, shard_index: int) -> None:
        _check_positive(num_shards, "num_shards")
        if not 0 <= shard_index < num_shards:
            raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index}")
        self.source, self.num_shards, self.shard_index = source, num_shards, shard_index

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        return itertools.islice(items, self.shard_index, None, self.num_shards)
