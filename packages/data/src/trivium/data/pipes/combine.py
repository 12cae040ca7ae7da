"""Ops over several pipes: ``zip``, ``concat``, ``mux``.

Example:
    >>> from trivium.data import IterPipe
    >>> list(IterPipe.from_iterable([1, 2]).concat([3]))
    [1, 2, 3]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from trivium.data.pipes.base import IterPipe, register_op

__all__ = ["Concat", "Mux", "Zip"]


@register_op("zip")
class Zip(IterPipe):
    """``pipe.zip(...)``: see :meth:`IterPipe.zip`.

    Example:
        >>> list(Zip(IterPipe.from_iterable([1]), [2]))
        [(1, 2)]
    """

    def __init__(self, *pipes: Iterable[Any]) -> None:
        self.pipes = pipes

    def __iter__(self) -> Iterator[Any]:
        return zip(*self.pipes, strict=False)


@register_op("concat")
class Concat(Zip):
    """``pipe.concat(...)``: see :meth:`IterPipe.concat`.

    Example:
        >>> list(Concat(IterPipe.from_iterable([1]), [2]))
        [1, 2]
    """

    def __iter__(self) -> Iterator[Any]:
        return itertools.chain(*self.pipes)


@register_op("mux")
class Mux(Zip):
    """``pipe.mux(...)``: see :meth:`IterPipe.mux`.

    Example:
        >>> list(Mux(IterPipe.from_iterable([1, 2]), [3]))
        [1, 3, 2]
    """

    def __iter__(self) -> Iterator[Any]:
        iterators = [iter(p) for p in self.pipes]
        while True:
            for it in iterators:
                try:
                    yield next(it)
                except StopIteration:
                    return
