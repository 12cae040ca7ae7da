"""Per-item ops: ``map``, ``parallel_map``, ``filter``, ``flatmap``, ``enumerate``.

``map``, ``filter`` and ``flatmap`` see one sample at a time wherever they stand (the
rows of a batch one by one). In a :class:`trivium.data.DataLoader` each sample's call
runs in its own :func:`~trivium.core.seeding.sample_scope`, seeded from the batch
being read (:func:`trivium.data.origins.op_seed`).

Example:
    >>> from trivium.data import IterPipe
    >>> list(IterPipe.from_iterable(range(4)).filter(lambda x: x % 2).map(str))
    ['1', '3']
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from trivium.core.errors import SkippedSamplesWarning, watch_decode_warnings
from trivium.core.seeding import derive_seed, sample_scope
from trivium.core.skipping import SkipReport, check_on_error, describe_error, name_some
from trivium.core.threads import get_num_threads, get_thread_pool
from trivium.data.batches import TensorBatch, collate_column, is_batch, rows_of, take_rows
from trivium.data.origins import (
    Where,
    current_where,
    name_sample,
    op_seed,
    recovered_name,
    report_or,
    row_where,
    rows_where,
    set_where,
)
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


class _Call(NamedTuple):
    """One call of a map's function: on what, seeded how, and where the sample comes from."""

    fn: Callable[[Any], Any]
    arg: Any
    seed: int | None
    item: Any  # the sample (a path names it)
    where: Where | None
    row: int | None  # its row in the batch ``where`` describes


class _Recovered:
    """Names in ``report`` the file behind each ``DecodeWarning`` of one call."""

    __slots__ = ("call", "report")

    def __init__(self, call: _Call, report: SkipReport) -> None:
        self.call, self.report = call, report

    def __call__(self, message: str) -> None:
        call = self.call
        self.report.recover(recovered_name(message, call.item, call.where, call.row), message)


def _run(call: _Call, report: SkipReport) -> Any:
    """The call in its sample scope; its ``DecodeWarning``\\ s recorded in ``report``.

    Runs in the thread that decodes (a ``parallel_map`` pool thread too): the watch
    is that thread's own.
    """
    with watch_decode_warnings(_Recovered(call, report)):
        if call.seed is None:
            return call.fn(call.arg)
        with sample_scope(call.seed):
            return call.fn(call.arg)


@register_op("map")
class Map(IterPipe):
    """``pipe.map(...)``: see :meth:`IterPipe.map`.

    Example:
        >>> list(Map(IterPipe.from_iterable([1]), str))
        ['1']
    """

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
        self.skip_report = SkipReport()
        self._calls = 0  # samples seen: names a sample that is neither a path nor from a file

    @property
    def skipped(self) -> int:
        """Samples skipped so far (``skip_report`` names them)."""
        return self.skip_report.skipped_samples

    def _call(self, item: Any) -> Any:
        if self.input_col is None:
            return self.fn(item)
        value = self.fn(_get_col(item, self.input_col))
        col = self.input_col if self.output_col is None else self.output_col
        return _set_col(item, col, value)

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        seeds = _SampleSeeds(op_seed(self))
        for many, group in itertools.groupby(items, key=is_batch):
            if many:
                for batch in group:
                    yield from self._map_batch(batch, seeds)
                continue
            # where is read as each item is taken: the pipes are lazy, it is that item's
            calls = (
                _Call(self._call, item, seeds.next(), item, current_where(), None) for item in group
            )
            for ok, out, call in self._results(calls):
                if ok:
                    set_where(call.where)  # what the item yielded comes from, for the next op
                    yield out

    def _map_batch(self, batch: Any, seeds: _SampleSeeds) -> Iterator[Any]:
        """The outputs for each sample of ``batch``: a TensorBatch again where they allow."""
        where = current_where()
        rows = list(rows_of(batch))
        if not isinstance(batch, TensorBatch):  # Arrow rows come out as rows
            calls = (_Call(self._call, r, seeds.next(), r, where, k) for k, r in enumerate(rows))
            for ok, out, call in self._results(calls):
                if ok:
                    set_where(row_where(where, call.row))  # type: ignore[arg-type]
                    yield out
            return
        if self.input_col is None:
            calls = (_Call(self._call, r, seeds.next(), r, where, k) for k, r in enumerate(rows))
            results = list(self._results(calls))
            kept = [call.row for ok, _, call in results if ok]
            outs = [out for ok, out, _ in results if ok]
            if outs and all(isinstance(o, dict) for o in outs):
                set_where(rows_where(where, kept))
                yield TensorBatch({k: collate_column([o[k] for o in outs]) for k in outs[0]})
            else:
                for row, out in zip(kept, outs, strict=True):
                    set_where(row_where(where, row))  # type: ignore[arg-type]
                    yield out
            return
        column = _get_col(batch, self.input_col)
        values = zip(*column, strict=True) if isinstance(self.input_col, list | tuple) else column
        calls = (
            _Call(self.fn, value, seeds.next(), row, where, k)
            for k, (value, row) in enumerate(zip(values, rows, strict=True))
        )
        results = list(self._results(calls))
        kept = [call.row for ok, _, call in results if ok]
        if not kept:
            return
        out = TensorBatch(take_rows(batch, kept))
        col = self.input_col if self.output_col is None else self.output_col
        out[col] = collate_column([value for ok, value, _ in results if ok])
        set_where(rows_where(where, kept))
        yield out

    def _results(self, calls: Iterable[_Call]) -> Iterator[tuple[bool, Any, _Call]]:
        """``(True, output, call)`` per call, in order, or ``(False, None, call)`` if skipped."""
        for call in calls:
            yield self._settle(None, call)

    def _report(self) -> SkipReport:
        """Where skips and recoveries go: the loader's batch report, else this pipe's."""
        return report_or(self.skip_report)  # type: ignore[return-value]

    def _settle(self, future: Any, call: _Call) -> tuple[bool, Any, _Call]:
        """The call's outcome: run here, or the ``future`` a pool ran it in."""
        self._calls += 1
        try:
            return True, _run(call, self._report()) if future is None else future.result(), call
        except Exception as error:
            if self.on_error == "raise":
                origin = None if call.where is None else call.where(call.row)
                named = error if origin is None else origin.attach(error)
                if named is error:
                    raise
                raise named from error
            name = name_sample(error, call.item, call.where, call.row, self._calls)
            self._report().skip(name, describe_error(error)[1])
            return False, None, call

    def __iter__(self) -> Iterator[Any]:
        before = self.skip_report.skipped_samples
        known = len(self.skip_report.skipped)
        yield from self._apply(iter(self.source))
        _warn_skipped(self.skip_report, before, known, self)


def _warn_skipped(report: SkipReport, before: int, known: int, op: Any) -> None:
    count = report.skipped_samples - before
    if count:
        names = list(report.skipped)[known:] or list(report.skipped)
        warnings.warn(
            f"{count} samples skipped: {op!r} raised on them (on_error='skip'): "
            f"{name_some(names, len(names))}; its skip_report lists them all",
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

    def _results(self, calls: Iterable[_Call]) -> Iterator[tuple[bool, Any, _Call]]:
        shared = get_thread_pool()
        pool = shared if shared._max_workers >= self.num_threads else None
        own = None
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = own = ThreadPoolExecutor(self.num_threads, thread_name_prefix="trivium-pmap")
        pending: list[tuple[Any, _Call]] = []
        try:
            for call in calls:  # the scope and the watch open in the pool's thread
                pending.append((pool.submit(_run, call, self._report()), call))
                if len(pending) >= self.max_in_flight:
                    future, done = pending.pop(0)
                    yield self._settle(future, done)
            while pending:
                future, done = pending.pop(0)
                yield self._settle(future, done)
        finally:
            for future, _ in pending:
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

    def __init__(
        self, source: IterPipe, filter_fn: Callable[[Any], bool], input_col: Any = None
    ) -> None:
        self.source, self.filter_fn, self.input_col = source, filter_fn, input_col

    def _keep(self, item: Any, seed: int | None) -> bool:
        col = self.input_col
        return bool(_in_scope(seed, self.filter_fn, item if col is None else _get_col(item, col)))

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        seeds = _SampleSeeds(op_seed(self))
        for item in items:
            if not is_batch(item):
                if self._keep(item, seeds.next()):
                    yield item
                continue
            where = current_where()
            kept = [i for i, row in enumerate(rows_of(item)) if self._keep(row, seeds.next())]
            if kept:
                set_where(rows_where(where, kept))
                yield take_rows(item, kept)


@register_op("flatmap")
class FlatMap(IterPipe):
    """``pipe.flatmap(...)``: see :meth:`IterPipe.flatmap`.

    Example:
        >>> list(FlatMap(IterPipe.from_iterable([[1, 2]]), None))
        [1, 2]
    """

    def __init__(self, source: IterPipe, fn: Callable[[Any], Iterable[Any]] | None) -> None:
        self.source, self.fn = source, fn

    def items_per_output(self) -> int | None:
        return None  # one item makes any number

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        seeds = _SampleSeeds(op_seed(self))
        for item in items:
            where = current_where()
            batch = is_batch(item)
            for k, row in enumerate(rows_of(item) if batch else [item]):
                outs = row if self.fn is None and not batch else [row]
                if self.fn is not None:
                    outs = _in_scope(seeds.next(), lambda r=row: list(self.fn(r)))
                for out in outs:
                    if batch:
                        set_where(row_where(where, k))
                    yield out


@register_op("enumerate")
class Enumerate(IterPipe):
    """``pipe.enumerate(...)``: see :meth:`IterPipe.enumerate`.

    Example:
        >>> list(Enumerate(IterPipe.from_iterable("a"), 0))
        [(0, 'a')]
    """

    not_exact = (
        "enumerate counts the items of the whole pass; the loader runs the pipe one batch "
        "at a time. Number the samples in the dataset (its index is known to it)"
    )

    def __init__(self, source: IterPipe, starting_index: int) -> None:
        self.source, self.starting_index = source, starting_index

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        return enumerate(items, self.starting_index)
