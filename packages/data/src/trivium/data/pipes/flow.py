"""Flow ops, how many items pass and when: ``header``, ``cycle``, ``cache``, ``prefetch``.

Example:
    >>> from trivium.data import IterPipe
    >>> list(IterPipe.from_iterable([1, 2]).cycle(2).header(3))
    [1, 2, 1]
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import threading
from collections.abc import Iterator
from typing import Any

from trivium.data.pipes.base import IterPipe, _check_positive, register_op

__all__ = ["Cache", "Cycle", "Header", "Prefetch"]


@register_op("header")
class Header(IterPipe):
    """``pipe.header(...)``: see :meth:`IterPipe.header`.

    Example:
        >>> list(Header(IterPipe.from_iterable(range(5)), 2))
        [0, 1]
    """

    not_exact = (
        "header counts items across the whole pass; the loader runs the pipe one batch "
        "at a time. Give the loader fewer samples (a torch.utils.data.Subset, or a "
        "sampler of the first N indices)"
    )

    def __init__(self, source: IterPipe, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"header: limit must be >= 0, got {limit}")
        self.source, self.limit = source, limit

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        return itertools.islice(items, self.limit)


@register_op("cycle")
class Cycle(IterPipe):
    """``pipe.cycle(...)``: see :meth:`IterPipe.cycle`.

    Example:
        >>> list(Cycle(IterPipe.from_iterable([1]), 3))
        [1, 1, 1]
    """

    not_exact = "cycle repeats the whole pass; the loader's epochs repeat the dataset"

    def __init__(self, source: IterPipe, count: int | None) -> None:
        if count is not None and count < 0:
            raise ValueError(f"cycle: count must be >= 0 or None, got {count}")
        self.source, self.count = source, count

    def __iter__(self) -> Iterator[Any]:
        rounds = itertools.count() if self.count is None else range(self.count)
        for _ in rounds:
            yield from self.source  # type: ignore[misc]


@register_op("cache")
class Cache(IterPipe):
    """``pipe.cache()``: see :meth:`IterPipe.cache`.

    Example:
        >>> list(Cache(IterPipe.from_iterable([1])))
        [1]
    """

    not_exact = (
        "cache keeps a whole pass; the loader runs the pipe one batch at a time. Cache "
        "inside the dataset, or read an ArrowDataset (memory-mapped)"
    )

    def __init__(self, source: IterPipe) -> None:
        self.source = source
        self._items: list[Any] | None = None

    def __iter__(self) -> Iterator[Any]:
        if self._items is not None:
            yield from self._items
            return
        items = []
        for item in self.source:  # type: ignore[union-attr]
            items.append(item)
            yield item
        self._items = items  # only a complete pass is cached


_END = object()


@register_op("prefetch")
class Prefetch(IterPipe):
    """``pipe.prefetch(...)``: see :meth:`IterPipe.prefetch`.

    Example:
        >>> list(Prefetch(IterPipe.from_iterable([1, 2]), 1))
        [1, 2]
    """

    def __init__(self, source: IterPipe, buffer_size: int) -> None:
        self.source = source
        self.buffer_size = _check_positive(buffer_size, "buffer_size")

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        q: queue.Queue[Any] = queue.Queue(self.buffer_size)
        stop = threading.Event()

        def produce() -> None:
            try:
                for item in items:
                    while not stop.is_set():
                        try:
                            q.put((True, item), timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put((True, _END))
            except BaseException as e:  # handed to the consumer, raised there
                q.put((False, e))

        # The producer runs in this context: a loader's reading (report, seeds) reaches it.
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(produce,), daemon=True, name="trivium-prefetch"
        )
        thread.start()
        try:
            while True:
                ok, item = q.get()
                if not ok:
                    raise item
                if item is _END:
                    return
                yield item
        finally:
            stop.set()
