"""Per-item ops: ``map``, ``parallel_map``, ``filter``, ``flatmap``, ``enumerate``.

``map``, ``filter`` and ``flatmap`` see one sample at a time wherever they stand (the
rows of a batch one by one), so :class:`trivium.data.DataLoader` runs them inside its
workers on each batch of the epoch's global order.

Example:
    >>> from trivium.data import IterPipe
    >>> list(IterPipe.from_iterable(range(4)).filter(lambda x: x % 2).map(str))
    ['1', '3']
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from trivium.core.errors import SkippedSamplesWarning
from trivium.core.seeding import derive_seed, sample_scope
from trivium.core.skipping import check_on_error
from trivium.core.threads import get_num_threads, get_thread_pool
from trivium.data.batches import TensorBatch, collate_column, is_batch, rows_of, take_rows
from trivium.data.pipes.base import (
    IterPipe,
    _check_map,
    _check_positive,
    _get_col,
    _set_col,
    register_op,
)

__all__ = ["Enumerate", "Filter", "FlatMap", "Map", "ParallelMap"]


class _SampleSeeds:
    """The seed of each sample's :func:`~trivium.core.seeding.sample_scope`, in order.

    ``seed`` is None outside :class:`trivium.data.DataLoader`: then no scope is opened
    and transforms draw from their own generators.
    """

    def __init__(self, seed: int | None) -> None:
        self.seed, self.count = seed, 0

    def next(self) -> int | None:
        if self.seed is None:
            return None
        self.count += 1
        return derive_seed(self.seed, self.count)


def _in_scope(seed: int | None, fn: Callable[..., Any], *args: Any) -> Any:
    if seed is None:
        return fn(*args)
    with sample_scope(seed):
        return fn(*args)


@register_op("map")
class Map(IterPipe):
    """``pipe.map(...)``: see :meth:`IterPipe.map`.

    Example:
        >>> list(Map(IterPipe.from_iterable([1]), str))
        ['1']
    """

    runs_in_workers = True
    _per_sample = True

    def __init__(
        self,
        source: IterPipe,
        fn: Callable[[Any], Any],
        input_col: Any = None,
        output_col: Any = None,
        *,
        on_error: str = "raise",
    ) -> None:
        _check_map("map", fn, input_col, output_col)
        self.source, self.fn = source, fn
        self.input_col, self.output_col = input_col, output_col
        check_on_error(on_error)
        self.on_error = on_error
        self.skipped = 0

    def _call(self, item: Any) -> Any:
        if self.input_col is None:
            return self.fn(item)
        value = self.fn(_get_col(item, self.input_col))
        col = self.input_col if self.output_col is None else self.output_col
        return _set_col(item, col, value)

    def _apply(self, items: Iterator[Any], seed: int | None = None) -> Iterator[Any]:
        seeds = _SampleSeeds(seed)
        for many, group in itertools.groupby(items, key=is_batch):
            if many:
                for batch in group:
                    yield from self._map_batch(batch, seeds)
                continue
            calls = ((self._call, item, seeds.next()) for item in group)
            yield from (out for ok, out in self._results(calls) if ok)

    def _map_batch(self, batch: Any, seeds: _SampleSeeds) -> Iterator[Any]:
        """The outputs for each sample of ``batch``: a TensorBatch again where they allow."""
        if not isinstance(batch, TensorBatch):  # Arrow rows come out as rows
            calls = ((self._call, row, seeds.next()) for row in rows_of(batch))
            yield from (out for ok, out in self._results(calls) if ok)
            return
        if self.input_col is None:
            calls = ((self._call, row, seeds.next()) for row in rows_of(batch))
            outs = [out for ok, out in self._results(calls) if ok]
            if outs and all(isinstance(o, dict) for o in outs):
                yield TensorBatch({k: collate_column([o[k] for o in outs]) for k in outs[0]})
            else:
                yield from outs
            return
        column = _get_col(batch, self.input_col)
        values = zip(*column, strict=True) if isinstance(self.input_col, list | tuple) else column
        calls = ((self.fn, value, seeds.next()) for value in values)
        results = list(self._results(calls))
        kept = [i for i, (ok, _) in enumerate(results) if ok]
        if not kept:
            return
        out = TensorBatch(take_rows(batch, kept))
        col = self.input_col if self.output_col is None else self.output_col
        out[col] = collate_column([value for ok, value in results if ok])
        yield out

    def _results(self, calls: Iterable[tuple[Callable, Any, int | None]]) -> Iterator[tuple]:
        """``(True, output)`` per call, in order, or ``(False, None)`` for a skipped one."""
        for fn, arg, seed in calls:
            yield self._settle(lambda fn=fn, arg=arg, seed=seed: _in_scope(seed, fn, arg))

    def _settle(self, run: Callable[[], Any]) -> tuple[bool, Any]:
        if self.on_error == "raise":
            return True, run()
        try:
            return True, run()
        except Exception:
            self.skipped += 1
            return False, None

    def __iter__(self) -> Iterator[Any]:
        before = self.skipped
        yield from self._apply(iter(self.source))
        _warn_skipped(self.skipped - before, self)


def _warn_skipped(count: int, op: Any) -> None:
    if count:
        warnings.warn(
            f"{count} samples skipped: {op!r} raised on them (on_error='skip')",
            SkippedSamplesWarning,
            stacklevel=3,
        )


@register_op("parallel_map")
class ParallelMap(Map):
    """``pipe.parallel_map(...)``: see :meth:`IterPipe.parallel_map`.

    Example:
        >>> list(ParallelMap(IterPipe.from_iterable([1, 2]), str, 2))
        ['1', '2']
    """

    def __init__(
        self,
        source: IterPipe,
        fn: Callable[[Any], Any],
        num_threads: int | None = None,
        input_col: Any = None,
        output_col: Any = None,
        on_error: str = "raise",
        max_in_flight: int | None = None,
    ) -> None:
        super().__init__(source, fn, input_col, output_col, on_error=on_error)
        self.num_threads = _check_positive(num_threads or get_num_threads(), "num_threads")
        self.max_in_flight = _check_positive(max_in_flight or 4 * self.num_threads, "max_in_flight")

    def _results(self, calls: Iterable[tuple[Callable, Any, int | None]]) -> Iterator[tuple]:
        shared = get_thread_pool()
        pool = shared if shared._max_workers >= self.num_threads else None
        own = None
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = own = ThreadPoolExecutor(self.num_threads, thread_name_prefix="trivium-pmap")
        pending: list[Any] = []
        try:
            for fn, arg, seed in calls:  # the scope opens in the pool's thread
                pending.append(pool.submit(_in_scope, seed, fn, arg))
                if len(pending) >= self.max_in_flight:
                    yield self._settle(pending.pop(0).result)
            while pending:
                yield self._settle(pending.pop(0).result)
        finally:
            for future in pending:
                future.cancel()
            if own is not None:
                own.shutdown(wait=False)


@register_op("filter")
class Filter(IterPipe):
    """``pipe.filter(...)``: see :meth:`IterPipe.filter`.

    Example:
        >>> list(Filter(IterPipe.from_iterable([0, 1]), bool))
        [1]
    """

    runs_in_workers = True
    _per_sample = True

    def __init__(
        self, source: IterPipe, filter_fn: Callable[[Any], bool], input_col: Any = None
    ) -> None:
        self.source, self.filter_fn, self.input_col = source, filter_fn, input_col

    def _keep(self, item: Any, seed: int | None) -> bool:
        col = self.input_col
        return bool(_in_scope(seed, self.filter_fn, item if col is None else _get_col(item, col)))

    def _apply(self, items: Iterator[Any], seed: int | None = None) -> Iterator[Any]:
        seeds = _SampleSeeds(seed)
        for item in items:
            if not is_batch(item):
                if self._keep(item, seeds.next()):
                    yield item
                continue
            kept = [i for i, row in enumerate(rows_of(item)) if self._keep(row, seeds.next())]
            if kept:
                yield take_rows(item, kept)


@register_op("flatmap")
class FlatMap(IterPipe):
    """``pipe.flatmap(...)``: see :meth:`IterPipe.flatmap`.

    Example:
        >>> list(FlatMap(IterPipe.from_iterable([[1, 2]]), None))
        [1, 2]
    """

    runs_in_workers = True
    _per_sample = True

    def __init__(self, source: IterPipe, fn: Callable[[Any], Iterable[Any]] | None) -> None:
        self.source, self.fn = source, fn

    def _apply(self, items: Iterator[Any], seed: int | None = None) -> Iterator[Any]:
        seeds = _SampleSeeds(seed)
        for item in items:
            if self.fn is None:
                yield from rows_of(item) if is_batch(item) else item
                continue
            for row in rows_of(item) if is_batch(item) else [item]:
                yield from _in_scope(seeds.next(), lambda r=row: list(self.fn(r)))


@register_op("enumerate")
class Enumerate(IterPipe):
    """``pipe.enumerate(...)``: see :meth:`IterPipe.enumerate`.

    Example:
        >>> list(Enumerate(IterPipe.from_iterable("a"), 0))
        [(0, 'a')]
    """

    def __init__(self, source: IterPipe, starting_index: int) -> None:
        self.source, self.starting_index = source, starting_index

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        return enumerate(items, self.starting_index)
