"""``IterPipe`` and ``MapPipe``: datasets composed by chaining, as torchdata's DataPipes.

An ``IterPipe`` is a ``torch.utils.data.IterableDataset``; every chained op returns a
new pipe that reads from the one before it (nothing runs until iterated). Per-item
ops (``map``, ``filter``, ``flatmap``, ``parallel_map``, the columnar ops) are also
what :class:`trivium.data.DataLoader` runs inside its workers on each batch of the
epoch's global order; ``shuffle`` there becomes part of that order.

Example:
    >>> from trivium.data import IterPipe
    >>> pipe = IterPipe.from_iterable(range(10)).filter(lambda x: x % 2).map(lambda x: x * 10)
    >>> list(pipe.batch(2))
    [[10, 30], [50, 70], [90]]
"""

from __future__ import annotations

import itertools
import queue
import random
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from torch.utils.data import Dataset, IterableDataset
from torch.utils.data import default_collate as torch_default_collate

from trivium.core.errors import SkippedSamplesWarning
from trivium.core.seeding import derive_seed, sample_scope
from trivium.core.threads import get_num_threads, get_thread_pool
from trivium.data.batches import TensorBatch, collate_column, is_batch, rows_of, take_rows

__all__ = ["IterPipe", "MapPipe", "SkippedSamplesWarning"]

_ON_ERROR = ("raise", "skip")


def _check_on_error(on_error: str) -> str:
    if on_error not in _ON_ERROR:
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    return on_error


def _check_positive(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def _check_map(name: str, fn: Any, input_col: Any, output_col: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{name}: fn must be callable, got {type(fn).__name__}")
    if output_col is not None and input_col is None:
        raise ValueError(f"{name}: output_col needs input_col")


def _get_col(item: Any, col: Any) -> Any:
    if isinstance(col, list | tuple):
        return tuple(item[c] for c in col)
    return item[col]


def _set_col(item: Any, col: Any, value: Any) -> Any:
    if isinstance(item, tuple):
        out = list(item)
        out[col] = value
        return tuple(out)
    item = item.copy()  # dict or list: never change the caller's object
    item[col] = value
    return item


class IterPipe(IterableDataset):
    """Base of every iterable pipe; also the chaining API.

    Subclasses that transform another pipe set ``self.source`` and implement
    ``_apply(iterator)``; a root implements ``__iter__``.

    Example:
        >>> list(IterPipe.from_iterable("ab").enumerate())
        [(0, 'a'), (1, 'b')]
    """

    source: IterPipe | None = None
    # Whether the op only transforms items one batch at a time, so that the
    # DataLoader may run it on each batch of the global order inside a worker.
    _per_batch = False
    # Whether the op calls user code per sample and so takes the seed of the batch's
    # sample scopes (``_apply(items, seed)``).
    _per_sample = False

    @staticmethod
    def from_iterable(iterable: Iterable[Any]) -> IterPipe:
        """Wrap any re-iterable object (like torchdata's ``IterableWrapper``).

        Example:
            >>> list(IterPipe.from_iterable([1, 2]))
            [1, 2]
        """
        return _FromIterable(iterable)

    def __iter__(self) -> Iterator[Any]:
        if self.source is None:
            raise NotImplementedError(f"{type(self).__name__} must implement __iter__")
        return self._apply(iter(self.source))

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        raise NotImplementedError

    def __repr__(self) -> str:
        inner = "" if self.source is None else repr(self.source)
        return f"{type(self).__name__}({inner})"

    # ---- per-item ops
    def map(
        self,
        fn: Callable[[Any], Any],
        input_col: Any = None,
        output_col: Any = None,
        *,
        on_error: str = "raise",
    ) -> IterPipe:
        """Apply ``fn`` to each sample, or to ``sample[input_col]`` (stored in ``output_col``).

        Per sample wherever it stands: on a batch (a RecordBatch, or what
        ``to_tensors()`` makes of one) ``fn`` sees one row at a time. After
        ``to_tensors()`` the outputs are put back into the batch (stacked when they
        are tensors of one shape); rows of a RecordBatch come out as rows. To call a
        function on whole batches, use :meth:`map_batches`.

        ``on_error="skip"`` drops the samples on which ``fn`` raises (only those);
        they are counted in ``pipe.skipped`` and reported with a
        :class:`SkippedSamplesWarning`.

        Example:
            >>> pipe = IterPipe.from_iterable([{"x": 1}, {"x": 2}])
            >>> list(pipe.map(lambda v: v + 1, input_col="x", output_col="y"))
            [{'x': 1, 'y': 2}, {'x': 2, 'y': 3}]
        """
        return Map(self, fn, input_col, output_col, on_error=on_error)

    def parallel_map(
        self,
        fn: Callable[[Any], Any],
        num_threads: int | None = None,
        input_col: Any = None,
        output_col: Any = None,
        *,
        on_error: str = "raise",
        max_in_flight: int | None = None,
    ) -> IterPipe:
        """``map`` on a thread pool, in order: for GIL-free work such as image decode.

        At most ``max_in_flight`` items (default ``4 * num_threads``) are pending.

        Example:
            >>> list(IterPipe.from_iterable(range(5)).parallel_map(lambda x: x * x, 2))
            [0, 1, 4, 9, 16]
        """
        return ParallelMap(self, fn, num_threads, input_col, output_col, on_error, max_in_flight)

    def filter(self, filter_fn: Callable[[Any], bool], input_col: Any = None) -> IterPipe:
        """Keep the items for which ``filter_fn`` (of the item or ``item[input_col]``) is true.

        Example:
            >>> list(IterPipe.from_iterable(range(5)).filter(lambda x: x > 2))
            [3, 4]
        """
        return Filter(self, filter_fn, input_col)

    def flatmap(self, fn: Callable[[Any], Iterable[Any]] | None = None) -> IterPipe:
        """Replace each item by the items of ``fn(item)`` (of the item itself when ``None``).

        Example:
            >>> list(IterPipe.from_iterable([1, 2]).flatmap(lambda x: [x] * x))
            [1, 2, 2]
        """
        return FlatMap(self, fn)

    def enumerate(self, starting_index: int = 0) -> IterPipe:
        """Pair each item with its index: ``(i, item)``.

        Example:
            >>> list(IterPipe.from_iterable("xy").enumerate(1))
            [(1, 'x'), (2, 'y')]
        """
        return Enumerate(self, starting_index)

    # ---- grouping
    def batch(self, batch_size: int, drop_last: bool = False) -> IterPipe:
        """Group items into lists of ``batch_size`` (the last one may be shorter).

        Example:
            >>> list(IterPipe.from_iterable(range(5)).batch(2, drop_last=True))
            [[0, 1], [2, 3]]
        """
        return Batch(self, batch_size, drop_last)

    def unbatch(self) -> IterPipe:
        """Undo ``batch``: yield the items of each batch (rows of a RecordBatch as dicts).

        Example:
            >>> list(IterPipe.from_iterable([[1, 2], [3]]).unbatch())
            [1, 2, 3]
        """
        return Unbatch(self)

    def collate(self, collate_fn: Callable[[Any], Any] | None = None) -> IterPipe:
        """Apply ``collate_fn`` (torch's ``default_collate`` by default) to each batch.

        Example:
            >>> list(IterPipe.from_iterable([[1, 2]]).collate())
            [tensor([1, 2])]
        """
        return Map(self, collate_fn or torch_default_collate)

    def bucket_by_length(
        self,
        batch_size: int,
        len_fn: Callable[[Any], int] = len,
        *,
        bucket_size: int | None = None,
        drop_last: bool = False,
        seed: int | None = None,
    ) -> IterPipe:
        """Batches of items of similar length (e.g. utterances), to waste little padding.

        Items are read ``bucket_size`` at a time (default ``100 * batch_size``), sorted
        by ``len_fn`` and cut into batches, which are yielded in a random order
        (reproducible with ``seed``). Memory is bounded by ``bucket_size`` items.

        Example:
            >>> words = ["aaa", "b", "cc", "dddd", "e", "ff"]
            >>> pipe = IterPipe.from_iterable(words).bucket_by_length(2, seed=0)
            >>> sorted(pipe)
            [['aaa', 'dddd'], ['b', 'e'], ['cc', 'ff']]
        """
        return BucketByLength(self, batch_size, len_fn, bucket_size, drop_last, seed)

    # ---- order
    def shuffle(self, buffer_size: int = 10_000, *, seed: int | None = None) -> IterPipe:
        """Shuffle through a buffer of ``buffer_size`` items (reproducible with ``seed``).

        Under :class:`trivium.data.DataLoader` the shuffle becomes part of the
        epoch's global order (windows of ``buffer_size`` rows), so it is exact,
        resumable and independent of the number of workers.

        Example:
            >>> sorted(IterPipe.from_iterable(range(5)).shuffle(3, seed=0))
            [0, 1, 2, 3, 4]
        """
        return Shuffle(self, buffer_size, seed)

    def shard(self, num_shards: int, shard_index: int) -> IterPipe:
        """Keep every ``num_shards``-th item starting at ``shard_index``.

        Arrow sources shard whole fragments instead (a shard reads only its files
        and row groups). :class:`trivium.data.DataLoader` shards by itself.

        Example:
            >>> list(IterPipe.from_iterable(range(7)).shard(3, 1))
            [1, 4]
        """
        return Shard(self, num_shards, shard_index)

    def header(self, limit: int = 10) -> IterPipe:
        """Only the first ``limit`` items.

        Example:
            >>> list(IterPipe.from_iterable(range(100)).header(3))
            [0, 1, 2]
        """
        return Header(self, limit)

    def cycle(self, count: int | None = None) -> IterPipe:
        """Repeat the pipe ``count`` times (forever when ``None``).

        Example:
            >>> list(IterPipe.from_iterable([1, 2]).cycle(2))
            [1, 2, 1, 2]
        """
        return Cycle(self, count)

    def cache(self) -> IterPipe:
        """Keep the items in memory after the first full pass; later passes replay them.

        Example:
            >>> pipe = IterPipe.from_iterable(range(3)).map(lambda x: x + 1).cache()
            >>> list(pipe), list(pipe)
            ([1, 2, 3], [1, 2, 3])
        """
        return Cache(self)

    def prefetch(self, buffer_size: int = 10) -> IterPipe:
        """Produce up to ``buffer_size`` items ahead on a background thread.

        Example:
            >>> list(IterPipe.from_iterable(range(4)).prefetch(2))
            [0, 1, 2, 3]
        """
        return Prefetch(self, buffer_size)

    # ---- several pipes
    def zip(self, *others: Iterable[Any]) -> IterPipe:
        """Tuples of one item from each pipe; stops with the shortest.

        Example:
            >>> list(IterPipe.from_iterable([1, 2]).zip(IterPipe.from_iterable("ab")))
            [(1, 'a'), (2, 'b')]
        """
        return Zip(self, *others)

    def concat(self, *others: Iterable[Any]) -> IterPipe:
        """This pipe's items, then each other pipe's.

        Example:
            >>> list(IterPipe.from_iterable([1]).concat([2, 3]))
            [1, 2, 3]
        """
        return Concat(self, *others)

    def mux(self, *others: Iterable[Any]) -> IterPipe:
        """One item from each pipe in turn, until one is exhausted (torchdata's ``mux``).

        Example:
            >>> list(IterPipe.from_iterable([1, 2, 3]).mux([10, 20]))
            [1, 10, 2, 20, 3]
        """
        return Mux(self, *others)

    # ---- columnar ops (see trivium.data.columnar)
    def map_batches(
        self, fn: Callable[[Any], Any], input_col: Any = None, output_col: Any = None
    ) -> IterPipe:
        """Apply ``fn`` to each whole batch (a RecordBatch, or a dict after ``to_tensors()``).

        With ``input_col``, ``fn`` gets that column of the batch (all its rows) and its
        result is stored in ``output_col`` (default: ``input_col``); a batched kernel
        such as ``DecodeRandomResizedCrop`` on a list of JPEGs runs here. A random
        ``fn`` draws once per batch unless it draws per row itself (``per_sample=True``).

        Example:
            >>> import pyarrow as pa, pyarrow.compute as pc
            >>> rb = pa.record_batch({"x": [1, 2]})
            >>> double = lambda b: b.set_column(0, "x", pc.multiply(b["x"], 2))
            >>> next(iter(IterPipe.from_iterable([rb]).map_batches(double)))["x"].to_pylist()
            [2, 4]
        """
        from trivium.data.columnar import MapBatches

        return MapBatches(self, fn, input_col, output_col)

    def select(self, columns: Sequence[str]) -> IterPipe:
        """Keep only ``columns`` of each RecordBatch, in that order.

        Example:
            >>> import pyarrow as pa
            >>> rb = pa.record_batch({"x": [1], "y": [2]})
            >>> next(iter(IterPipe.from_iterable([rb]).select(["y"]))).schema.names
            ['y']
        """
        from trivium.data.columnar import Select

        return Select(self, columns)

    def rename(self, mapping: dict[str, str]) -> IterPipe:
        """Rename columns of each RecordBatch (``{old: new}``).

        Example:
            >>> import pyarrow as pa
            >>> rb = pa.record_batch({"x": [1]})
            >>> next(iter(IterPipe.from_iterable([rb]).rename({"x": "z"}))).schema.names
            ['z']
        """
        from trivium.data.columnar import Rename

        return Rename(self, mapping)

    def with_column(self, name: str, expression: Any) -> IterPipe:
        """Add (or replace) column ``name`` computed from each RecordBatch.

        ``expression`` is a function of the batch (e.g. using ``pyarrow.compute``)
        or a ``pyarrow.compute.Expression``.

        Example:
            >>> import pyarrow as pa, pyarrow.compute as pc
            >>> rb = pa.record_batch({"x": [1, 2]})
            >>> pipe = IterPipe.from_iterable([rb]).with_column("y", pc.field("x") * 3)
            >>> next(iter(pipe))["y"].to_pylist()
            [3, 6]
        """
        from trivium.data.columnar import WithColumn

        return WithColumn(self, name, expression)

    def to_rows(self) -> IterPipe:
        """Turn each RecordBatch into its rows, as dicts.

        Example:
            >>> import pyarrow as pa
            >>> list(IterPipe.from_iterable([pa.record_batch({"x": [1, 2]})]).to_rows())
            [{'x': 1}, {'x': 2}]
        """
        from trivium.data.columnar import ToRows

        return ToRows(self)

    def to_tensors(self, columns: Sequence[str] | None = None) -> IterPipe:
        """Turn each RecordBatch into a dict of tensors (see :func:`trivium.data.to_tensors`).

        Example:
            >>> import pyarrow as pa
            >>> rb = pa.record_batch({"x": [1, 2]})
            >>> next(iter(IterPipe.from_iterable([rb]).to_tensors()))
            TensorBatch({'x': tensor([1, 2])})
        """
        from trivium.data.columnar import ToTensors

        return ToTensors(self, columns)


class _FromIterable(IterPipe):
    def __init__(self, iterable: Iterable[Any]) -> None:
        if isinstance(iterable, Iterator):
            raise TypeError("from_iterable needs a re-iterable object (a list...), not an iterator")
        self.iterable = iterable

    def __iter__(self) -> Iterator[Any]:
        return iter(self.iterable)

    def __repr__(self) -> str:
        return f"IterPipe.from_iterable({type(self.iterable).__name__})"


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


class Map(IterPipe):
    """``pipe.map(...)``: see :meth:`IterPipe.map`.

    Example:
        >>> list(Map(IterPipe.from_iterable([1]), str))
        ['1']
    """

    _per_batch = True
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
        self.on_error = _check_on_error(on_error)
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


class Filter(IterPipe):
    """``pipe.filter(...)``: see :meth:`IterPipe.filter`.

    Example:
        >>> list(Filter(IterPipe.from_iterable([0, 1]), bool))
        [1]
    """

    _per_batch = True
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


class FlatMap(IterPipe):
    """``pipe.flatmap(...)``: see :meth:`IterPipe.flatmap`.

    Example:
        >>> list(FlatMap(IterPipe.from_iterable([[1, 2]]), None))
        [1, 2]
    """

    _per_batch = True
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

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        while batch := list(itertools.islice(items, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch


class Unbatch(IterPipe):
    """``pipe.unbatch()``: see :meth:`IterPipe.unbatch`.

    Example:
        >>> list(Unbatch(IterPipe.from_iterable([[1], [2]])))
        [1, 2]
    """

    _per_batch = True

    def __init__(self, source: IterPipe) -> None:
        self.source = source

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        for batch in items:
            yield from rows_of(batch) if is_batch(batch) else batch


class BucketByLength(IterPipe):
    """``pipe.bucket_by_length(...)``: see :meth:`IterPipe.bucket_by_length`.

    Example:
        >>> list(BucketByLength(IterPipe.from_iterable(["a", "bb"]), 2, len, None, False, 0))
        [['a', 'bb']]
    """

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


class Shuffle(IterPipe):
    """``pipe.shuffle(...)``: see :meth:`IterPipe.shuffle`.

    Example:
        >>> sorted(Shuffle(IterPipe.from_iterable([2, 1]), 2, 0))
        [1, 2]
    """

    def __init__(self, source: IterPipe, buffer_size: int, seed: int | None) -> None:
        self.source = source
        self.buffer_size = _check_positive(buffer_size, "buffer_size")
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


class Header(IterPipe):
    """``pipe.header(...)``: see :meth:`IterPipe.header`.

    Example:
        >>> list(Header(IterPipe.from_iterable(range(5)), 2))
        [0, 1]
    """

    def __init__(self, source: IterPipe, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"header: limit must be >= 0, got {limit}")
        self.source, self.limit = source, limit

    def _apply(self, items: Iterator[Any]) -> Iterator[Any]:
        return itertools.islice(items, self.limit)


class Cycle(IterPipe):
    """``pipe.cycle(...)``: see :meth:`IterPipe.cycle`.

    Example:
        >>> list(Cycle(IterPipe.from_iterable([1]), 3))
        [1, 1, 1]
    """

    def __init__(self, source: IterPipe, count: int | None) -> None:
        if count is not None and count < 0:
            raise ValueError(f"cycle: count must be >= 0 or None, got {count}")
        self.source, self.count = source, count

    def __iter__(self) -> Iterator[Any]:
        rounds = itertools.count() if self.count is None else range(self.count)
        for _ in rounds:
            yield from self.source  # type: ignore[misc]


class Cache(IterPipe):
    """``pipe.cache()``: see :meth:`IterPipe.cache`.

    Example:
        >>> list(Cache(IterPipe.from_iterable([1])))
        [1]
    """

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


class Prefetch(IterPipe):
    """``pipe.prefetch(...)``: see :meth:`IterPipe.prefetch`.

    Example:
        >>> list(Prefetch(IterPipe.from_iterable([1, 2]), 1))
        [1, 2]
    """

    _per_batch = True

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

        thread = threading.Thread(target=produce, daemon=True, name="trivium-prefetch")
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


class Concat(Zip):
    """``pipe.concat(...)``: see :meth:`IterPipe.concat`.

    Example:
        >>> list(Concat(IterPipe.from_iterable([1]), [2]))
        [1, 2]
    """

    def __iter__(self) -> Iterator[Any]:
        return itertools.chain(*self.pipes)


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


class MapPipe(Dataset):
    """A map-style dataset composed by chaining: ``ds[i]``, ``len(ds)``, ``map``, ``to_iter_pipe``.

    Wraps any sequence (or object with ``__getitem__`` and ``__len__``); works with
    any sampler, and :class:`trivium.data.DataLoader` reads it in its global order.

    Example:
        >>> ds = MapPipe([1, 2, 3]).map(lambda x: x * 2)
        >>> len(ds), ds[2], list(ds.to_iter_pipe())
        (3, 6, [2, 4, 6])
    """

    def __init__(self, data: Sequence[Any] | Dataset) -> None:
        if not hasattr(data, "__getitem__") or not hasattr(data, "__len__"):
            raise TypeError(f"MapPipe needs __getitem__ and __len__, got {type(data).__name__}")
        self.data = data

    def __len__(self) -> int:
        return len(self.data)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Any:
        return self.data[index]

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """Several items at once (torch's DataLoader uses this for whole batches)."""
        getitems = getattr(self.data, "__getitems__", None)
        if getitems is not None:
            return list(getitems(list(indices)))
        return [self.data[i] for i in indices]

    def map(self, fn: Callable[[Any], Any]) -> MapPipe:
        """A MapPipe whose item ``i`` is ``fn(self[i])``.

        Example:
            >>> MapPipe(["a"]).map(str.upper)[0]
            'A'
        """
        return _MappedMapPipe(self, fn)

    def to_iter_pipe(self) -> IterPipe:
        """An IterPipe over the items in index order (the loader reads it in its own order).

        Example:
            >>> list(MapPipe([5, 6]).to_iter_pipe())
            [5, 6]
        """
        return _MapToIter(self)


class _MappedMapPipe(MapPipe):
    def __init__(self, data: MapPipe, fn: Callable[[Any], Any]) -> None:
        super().__init__(data)
        self.fn = fn

    def __getitem__(self, index: int) -> Any:
        return self.fn(self.data[index])

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        return [self.fn(x) for x in self.data.__getitems__(indices)]  # type: ignore[union-attr]


class _MapToIter(IterPipe):
    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self.dataset)):
            yield self.dataset[i]
