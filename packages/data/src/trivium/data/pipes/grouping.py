"""Grouping ops: ``batch``, ``unbatch``, ``bucket_by_length``.

Example:
    >>> from trivium.data import IterPipe
    >>> list(IterPipe.from_iterable(range(3)).batch(2).unbatch())
    [0, 1, 2]
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any

from trivium.data.batches import is_batch, rows_of
from trivium.data.pipes.base import IterPipe, _check_positive, register_op

__all__ = ["Batch", "BucketByLength", "Unbatch"]


@register_op("batch")
class Batch(IterPipe):
    """``pipe.batch(...)``: see :meth:`IterPipe.batch`.

    Example:
        >>> list(Batch(IterPipe.from_iterable(range(3)), 2, False))
        [[0, 1], [2]]
    """

    def __init__(self, source: IterPipe, batch_size: int, drop_last: bool) -> None:
        self.source = source
        self.batch_size = _check_positive(batch_size, "batch_size")
        self.drop_last = drop_last

    def items_per_output(self) -> int | None:
        per_item = self.source.items_per_output()  # type: ignore[union-attr]
        return None if per_item is None else per_item * self.batch_size

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        while batch := list(itertools.islice(items, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch


@register_op("unbatch")
class Unbatch(IterPipe):
    """``pipe.unbatch()``: see :meth:`IterPipe.unbatch`.

    Example:
        >>> list(Unbatch(IterPipe.from_iterable([[1], [2]])))
        [1, 2]
    """

    def __init__(self, source: IterPipe) -> None:
        self.source = source

    def items_per_output(self) -> int | None:
        return None  # a batch makes any number

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        for batch in items:
            yield from rows_of(batch) if is_batch(batch) else batch


@register_op("bucket_by_length")
class BucketByLength(IterPipe):
    """``pipe.bucket_by_length(...)``: see :meth:`IterPipe.bucket_by_length`.

    Example:
        >>> list(BucketByLength(IterPipe.from_iterable(["a", "bb"]), 2, len, None, False, 0))
        [['a', 'bb']]
    """

    not_exact = (
        "bucket_by_length sorts a bucket of items gathered across batches; the loader "
        "runs the pipe one batch at a time. Give the DataLoader a batch_sampler that "
        "groups indices of similar length"
    )

    def __init__(
        self,
        source: IterPipe,
        batch_size: int,
        len_fn: Callable[[Any], int],
        bucket_size: int | None,
        drop_last: bool,
        seed: int | None,
    ) -> None:
        self.source = source
        self.batch_size = _check_positive(batch_size, "batch_size")
        self.bucket_size = _check_positive(bucket_size or 100 * batch_size, "bucket_size")
        self.len_fn, self.drop_last, self.seed = len_fn, drop_last, seed

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        rng = random.Random(self.seed)
        while bucket := list(itertools.islice(items, self.bucket_size)):
            bucket.sort(key=self.len_fn)
            size = self.batch_size
            batches = [bucket[i : i + size] for i in range(0, len(bucket), size)]
            if self.drop_last and len(batches[-1]) < size:
                batches.pop()
            rng.shuffle(batches)
            yield from batches
