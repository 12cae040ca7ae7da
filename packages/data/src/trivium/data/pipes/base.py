"""``IterPipe``: the base of every iterable pipe and its chaining API.

An ``IterPipe`` is a ``torch.utils.data.IterableDataset``; every chained op returns a
new pipe that reads from the one before it (nothing runs until iterated). The ops
live in modules by concern (``items``, ``grouping``, ``order``, ``flow``,
``combine`` beside this one, and :mod:`trivium.data.columnar`); each registers the
class behind its chaining method with :func:`register_op`.

Example:
    >>> from trivium.data import IterPipe
    >>> pipe = IterPipe.from_iterable(range(10)).filter(lambda x: x % 2).map(lambda x: x * 10)
    >>> list(pipe.batch(2))
    [[10, 30], [50, 70], [90]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

from torch.utils.data import IterableDataset
from torch.utils.data import default_collate as torch_default_collate

__all__ = ["IterPipe", "register_op"]


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
    ``_apply(iterator)``; a root implements ``__iter__``. An op's class registers
    itself as the one behind its chaining method with :func:`register_op`, so this
    module imports none of them.

    Example:
        >>> list(IterPipe.from_iterable("ab").enumerate())
        [(0, 'a'), (1, 'b')]
    """

    source: IterPipe | None = None
    #: Whether :class:`trivium.data.DataLoader` may run this op inside its workers, on
    #: each batch of the epoch's global order (through :meth:`apply_in_worker`): true
    #: for ops that transform items one batch at a time (per-item and columnar ops).
    runs_in_workers: ClassVar[bool] = False
    # Whether the op calls user code per sample and so takes the seed of the batch's
    # sample scopes (``_apply(items, seed)``).
    _per_sample: ClassVar[bool] = False
    # The op class behind each chaining method, registered by the op's module.
    _ops: ClassVar[dict[str, Callable[..., IterPipe]]] = {}

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

    def apply_in_worker(self, items: Iterator[Any], seed: int | None) -> Iterator[Any]:
        """Run this op on the items of one batch, as :class:`trivium.data.DataLoader` does.

        The loader's protocol for what it runs inside its workers: an op whose
        ``runs_in_workers`` is true transforms ``items`` (one batch of the epoch's
        global order) without state carried from batch to batch; ``seed`` seeds the
        sample scopes of the random functions it calls per sample.

        Example:
            >>> pipe = IterPipe.from_iterable([]).map(lambda x: x + 1)
            >>> list(pipe.apply_in_worker(iter([1, 2]), seed=0))
            [2, 3]
        """
        if not self.runs_in_workers:
            raise TypeError(f"{type(self).__name__} does not run inside DataLoader workers")
        return self._apply(items, seed) if self._per_sample else self._apply(items)

    def _chain(self, name: str, *args: Any, **kwargs: Any) -> IterPipe:
        """The op registered for chaining method ``name``, reading from this pipe."""
        op = IterPipe._ops.get(name)
        if op is None:  # its module was not imported: import trivium.data
            raise NotImplementedError(f"no op registered for IterPipe.{name}")
        return op(self, *args, **kwargs)

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
        they are counted in ``pipe.skipped``, named in ``pipe.skip_report`` (a
        :class:`trivium.core.skipping.SkipReport`: the file the error names, or the
        sample itself when it is a path, or in a :class:`trivium.data.DataLoader` its
        file and row, in the loader's ``skip_report``) and a
        :class:`SkippedSamplesWarning` names the first few. Files whose decoders issue
        a ``DecodeWarning`` inside ``fn`` (damaged, decoded as far as readable) are
        named there as recovered. With ``"raise"``, an error that names no file is
        raised naming the sample's file where the loader knows it.

        Example:
            >>> pipe = IterPipe.from_iterable([{"x": 1}, {"x": 2}])
            >>> list(pipe.map(lambda v: v + 1, input_col="x", output_col="y"))
            [{'x': 1, 'y': 2}, {'x': 2, 'y': 3}]
        """
        return self._chain("map", fn, input_col, output_col, on_error=on_error)

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
        return self._chain(
            "parallel_map", fn, num_threads, input_col, output_col, on_error, max_in_flight
        )

    def filter(self, filter_fn: Callable[[Any], bool], input_col: Any = None) -> IterPipe:
        """Keep the items for which ``filter_fn`` (of the item or ``item[input_col]``) is true.

        Example:
            >>> list(IterPipe.from_iterable(range(5)).filter(lambda x: x > 2))
            [3, 4]
        """
        return self._chain("filter", filter_fn, input_col)

    def flatmap(self, fn: Callable[[Any], Iterable[Any]] | None = None) -> IterPipe:
        """Replace each item by the items of ``fn(item)`` (of the item itself when ``None``).

        Example:
            >>> list(IterPipe.from_iterable([1, 2]).flatmap(lambda x: [x] * x))
            [1, 2, 2]
        """
        return self._chain("flatmap", fn)

    def enumerate(self, starting_index: int = 0) -> IterPipe:
        """Pair each item with its index: ``(i, item)``.

        Example:
            >>> list(IterPipe.from_iterable("xy").enumerate(1))
            [(1, 'x'), (2, 'y')]
        """
        return self._chain("enumerate", starting_index)

    # ---- grouping
    def batch(self, batch_size: int, drop_last: bool = False) -> IterPipe:
        """Group items into lists of ``batch_size`` (the last one may be shorter).

        Example:
            >>> list(IterPipe.from_iterable(range(5)).batch(2, drop_last=True))
            [[0, 1], [2, 3]]
        """
        return self._chain("batch", batch_size, drop_last)

    def unbatch(self) -> IterPipe:
        """Undo ``batch``: yield the items of each batch (rows of a RecordBatch as dicts).

        Example:
            >>> list(IterPipe.from_iterable([[1, 2], [3]]).unbatch())
            [1, 2, 3]
        """
        return self._chain("unbatch")

    def collate(self, collate_fn: Callable[[Any], Any] | None = None) -> IterPipe:
        """Apply ``collate_fn`` (torch's ``default_collate`` by default) to each batch.

        Example:
            >>> list(IterPipe.from_iterable([[1, 2]]).collate())
            [tensor([1, 2])]
        """
        return self._chain("map", collate_fn or torch_default_collate)

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
        return self._chain("bucket_by_length", batch_size, len_fn, bucket_size, drop_last, seed)

    # ---- order
    def shuffle(self, buffer_size: int | None = None, *, seed: int | None = None) -> IterPipe:
        """Shuffle through a buffer of ``buffer_size`` items (reproducible with ``seed``).

        ``buffer_size`` (default 10000) counts the items this pipe yields (for an Arrow source, its
        RecordBatches) and means that wherever the pipe is iterated. Under
        :class:`trivium.data.DataLoader` a ``shuffle()`` makes the epoch's global
        order shuffled (exact, resumable, independent of the number of workers); the
        rows it permutes together are set by ``DataLoader(shuffle_window=...)``.
        A ``buffer_size`` given here is read there as ``shuffle_window`` too, with a
        ``DeprecationWarning``: that reading goes in the next release.

        Example:
            >>> sorted(IterPipe.from_iterable(range(5)).shuffle(3, seed=0))
            [0, 1, 2, 3, 4]
        """
        return self._chain("shuffle", buffer_size, seed)

    def shard(self, num_shards: int, shard_index: int) -> IterPipe:
        """Keep every ``num_shards``-th item starting at ``shard_index``.

        Arrow sources shard whole fragments instead (a shard reads only its files
        and row groups). :class:`trivium.data.DataLoader` shards by itself.

        Example:
            >>> list(IterPipe.from_iterable(range(7)).shard(3, 1))
            [1, 4]
        """
        return self._chain("shard", num_shards, shard_index)

    def header(self, limit: int = 10) -> IterPipe:
        """Only the first ``limit`` items.

        Example:
            >>> list(IterPipe.from_iterable(range(100)).header(3))
            [0, 1, 2]
        """
        return self._chain("header", limit)

    def cycle(self, count: int | None = None) -> IterPipe:
        """Repeat the pipe ``count`` times (forever when ``None``).

        Example:
            >>> list(IterPipe.from_iterable([1, 2]).cycle(2))
            [1, 2, 1, 2]
        """
        return self._chain("cycle", count)

    def cache(self) -> IterPipe:
        """Keep the items in memory after the first full pass; later passes replay them.

        Example:
            >>> pipe = IterPipe.from_iterable(range(3)).map(lambda x: x + 1).cache()
            >>> list(pipe), list(pipe)
            ([1, 2, 3], [1, 2, 3])
        """
        return self._chain("cache")

    def prefetch(self, buffer_size: int = 10) -> IterPipe:
        """Produce up to ``buffer_size`` items ahead on a background thread.

        Example:
            >>> list(IterPipe.from_iterable(range(4)).prefetch(2))
            [0, 1, 2, 3]
        """
        return self._chain("prefetch", buffer_size)

    # ---- several pipes
    def zip(self, *others: Iterable[Any]) -> IterPipe:
        """Tuples of one item from each pipe; stops with the shortest.

        Example:
            >>> list(IterPipe.from_iterable([1, 2]).zip(IterPipe.from_iterable("ab")))
            [(1, 'a'), (2, 'b')]
        """
        return self._chain("zip", *others)

    def concat(self, *others: Iterable[Any]) -> IterPipe:
        """This pipe's items, then each other pipe's.

        Example:
            >>> list(IterPipe.from_iterable([1]).concat([2, 3]))
            [1, 2, 3]
        """
        return self._chain("concat", *others)

    def mux(self, *others: Iterable[Any]) -> IterPipe:
        """One item from each pipe in turn, until one is exhausted (torchdata's ``mux``).

        Example:
            >>> list(IterPipe.from_iterable([1, 2, 3]).mux([10, 20]))
            [1, 10, 2, 20, 3]
        """
        return self._chain("mux", *others)

    # ---- columnar ops (see trivium.data.columnar)
    def map_batches(
        self,
        fn: Callable[[Any], Any],
        input_col: Any = None,
        output_col: Any = None,
        *,
        on_error: str = "raise",
    ) -> IterPipe:
        """Apply ``fn`` to each whole batch (a RecordBatch, or a dict after ``to_tensors()``).

        With ``input_col``, ``fn`` gets that column of the batch (all its rows) and its
        result is stored in ``output_col`` (default: ``input_col``); a batched kernel
        such as ``DecodeRandomResizedCrop`` on a list of JPEGs runs here. A random
        ``fn`` draws once per batch unless it draws per row itself (``per_sample=True``).

        ``on_error="skip"`` drops the batches on which ``fn`` raises, as ``map``'s
        drops samples: counted in ``pipe.skipped``, their files (in a
        :class:`trivium.data.DataLoader`, the files of their rows) named in
        ``pipe.skip_report`` (the loader's ``skip_report``) and a
        :class:`SkippedSamplesWarning`. With ``"raise"``, an error that names no file
        is raised naming the batch's file where its rows come from one.

        Example:
            >>> import pyarrow as pa, pyarrow.compute as pc
            >>> rb = pa.record_batch({"x": [1, 2]})
            >>> double = lambda b: b.set_column(0, "x", pc.multiply(b["x"], 2))
            >>> next(iter(IterPipe.from_iterable([rb]).map_batches(double)))["x"].to_pylist()
            [2, 4]
        """
        return self._chain("map_batches", fn, input_col, output_col, on_error=on_error)

    def select(self, columns: Sequence[str]) -> IterPipe:
        """Keep only ``columns`` of each RecordBatch, in that order.

        Example:
            >>> import pyarrow as pa
            >>> rb = pa.record_batch({"x": [1], "y": [2]})
            >>> next(iter(IterPipe.from_iterable([rb]).select(["y"]))).schema.names
            ['y']
        """
        return self._chain("select", columns)

    def rename(self, mapping: dict[str, str]) -> IterPipe:
        """Rename columns of each RecordBatch (``{old: new}``).

        Example:
            >>> import pyarrow as pa
            >>> rb = pa.record_batch({"x": [1]})
            >>> next(iter(IterPipe.from_iterable([rb]).rename({"x": "z"}))).schema.names
            ['z']
        """
        return self._chain("rename", mapping)

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
        return self._chain("with_column", name, expression)

    def to_rows(self) -> IterPipe:
        """Turn each RecordBatch into its rows, as dicts.

        Example:
            >>> import pyarrow as pa
            >>> list(IterPipe.from_iterable([pa.record_batch({"x": [1, 2]})]).to_rows())
            [{'x': 1}, {'x': 2}]
        """
        return self._chain("to_rows")

    def to_tensors(self, columns: Sequence[str] | None = None) -> IterPipe:
        """Turn each RecordBatch into a dict of tensors (see :func:`trivium.data.to_tensors`).

        Example:
            >>> import pyarrow as pa
            >>> rb = pa.record_batch({"x": [1, 2]})
            >>> next(iter(IterPipe.from_iterable([rb]).to_tensors()))
            TensorBatch({'x': tensor([1, 2])})
        """
        return self._chain("to_tensors", columns)


class _FromIterable(IterPipe):
    def __init__(self, iterable: Iterable[Any]) -> None:
        if isinstance(iterable, Iterator):
            raise TypeError("from_iterable needs a re-iterable object (a list...), not an iterator")
        self.iterable = iterable

    def __iter__(self) -> Iterator[Any]:
        return iter(self.iterable)

    def __repr__(self) -> str:
        return f"IterPipe.from_iterable({type(self.iterable).__name__})"


_Op = TypeVar("_Op", bound=type)


def register_op(name: str) -> Callable[[_Op], _Op]:
    """Class decorator: the op class behind the chaining method ``IterPipe.<name>``.

    ``pipe.<name>(*args)`` then returns ``cls(pipe, *args)``.

    Example:
        >>> @register_op("twice")
        ... class Twice(IterPipe):
        ...     def __init__(self, source): self.source = source
        ...     def _apply(self, items): return (x for x in items for _ in (0, 1))
        >>> list(IterPipe.from_iterable([1])._chain("twice"))
        [1, 1]
        >>> del IterPipe._ops["twice"]
    """

    def register(cls: _Op) -> _Op:
        IterPipe._ops[name] = cls
        return cls

    return register
