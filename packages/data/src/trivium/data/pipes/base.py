"""``IterPipe``: the base of every iterable pipe, its node contract and its chaining API.

An ``IterPipe`` is a ``torch.utils.data.IterableDataset``; every chained op returns a
new pipe that wraps the one before it (its ``source``) and only pulls items from it:
nothing runs until iterated. The ops live in modules by concern (``items``,
``grouping``, ``order``, ``flow``, ``combine`` beside this one, and
:mod:`trivium.data.columnar`); each registers the class behind its chaining method
with :func:`register_op`.

The node contract, as torchdata's nodes: ``reset(state=None)`` starts the pipe over
(or where ``state`` left it), ``next()`` gives the next item (``StopIteration`` at
the end) and ``state_dict()`` says where it stands. :class:`trivium.data.DataLoader`
runs the graph as it is; all it asks of an op beyond iteration is
:meth:`IterPipe.items_per_output` and, for an op that carries items from one batch
of the epoch to the next, its :attr:`IterPipe.not_exact` reason.

Example:
    >>> from trivium.data import IterPipe
    >>> pipe = IterPipe.from_iterable(range(10)).filter(lambda x: x % 2).map(lambda x: x * 10)
    >>> list(pipe.batch(2))
    [[10, 30], [50, 70], [90]]
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

from torch.utils.data import Dataset, IterableDataset
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
    #: Why this op cannot run in :class:`trivium.data.DataLoader`'s exact order, and the
    #: exact way to get what it does there; None (the default) where it can. An op
    #: that carries items from one batch of the epoch to the next (a shuffle buffer,
    #: a cache, a running count) sets it: the loader refuses the pipe with this text.
    not_exact: ClassVar[str | None] = None
    # The op class behind each chaining method, registered by the op's module.
    _ops: ClassVar[dict[str, Callable[..., IterPipe]]] = {}
    # The cursor of the node contract (reset / next / state_dict).
    _cursor: Iterator[Any] | None = None
    _yielded: int = 0

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

    def random_access(self) -> Any | None:
        """The map-style dataset this source yields in index order, or None.

        :class:`trivium.data.DataLoader` reads a source that has one in its own exact
        order (sharded over workers and ranks, shuffled, resumable), and runs the ops
        above it on each batch. An op returns None: it is no source.

        Example:
            >>> IterPipe.from_iterable([3, 4]).random_access()
            [3, 4]
            >>> IterPipe.from_iterable([3, 4]).map(str).random_access() is None
            True
        """
        return None

    def items_per_output(self) -> int | None:
        """How many items of the graph's source make one item of this pipe (None: it varies).

        1 through per-item ops (a ``filter`` makes at most one), ``n`` after
        ``batch(n)``, None after an op that makes several items of one (``flatmap``,
        ``unbatch``). :class:`trivium.data.DataLoader` cuts the epoch into batches of
        this many source items, so that ``DataLoader(pipe.batch(n), batch_size=None)``
        yields the pipe's batches in the exact, resumable order. An op that groups
        items overrides it.

        Example:
            >>> pipe = IterPipe.from_iterable(range(6)).map(str)
            >>> pipe.items_per_output(), pipe.batch(3).items_per_output()
            (1, 3)
        """
        return 1 if self.source is None else self.source.items_per_output()

    # ---- the node contract
    def reset(self, state: dict[str, Any] | None = None) -> None:
        """Start over: the next :meth:`next` gives the first item (or the one after ``state``).

        A source seeks to ``state``; an op without a cheaper way replays its items up
        to there (exact for a deterministic pipe).

        Example:
            >>> pipe = IterPipe.from_iterable("abc")
            >>> pipe.reset({"yielded": 2}); pipe.next()
            'c'
        """
        skip = 0 if state is None else int(state["yielded"])
        self._cursor = itertools.islice(iter(self), skip, None)
        self._yielded = skip

    def next(self) -> Any:
        """The next item; ``StopIteration`` at the end (after :meth:`reset`, or from the start).

        Example:
            >>> pipe = IterPipe.from_iterable([1, 2])
            >>> pipe.next(), pipe.next()
            (1, 2)
        """
        if self._cursor is None:
            self.reset()
        item = next(self._cursor)  # type: ignore[arg-type]
        self._yielded += 1
        return item

    def __next__(self) -> Any:
        return self.next()

    def state_dict(self) -> dict[str, Any]:
        """Where :meth:`next` stands: ``reset(state)`` goes on from there.

        Example:
            >>> pipe = IterPipe.from_iterable("abc"); _ = pipe.next()
            >>> pipe.state_dict()
            {'yielded': 1}
        """
        return {"yielded": self._yielded}

    def _chain(self, name: str, *args: Any, **kwargs: Any) -> IterPipe:
        """The op registered for chaining method ``name``, reading from this pipe."""
        op = IterPipe._ops.get(name)
        if op is None:  # the columnar ops register when their module (pyarrow) is imported
            importlib.import_module("trivium.data.columnar")
            op = IterPipe._ops.get(name)
        if op is None:
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

        ``buffer_size`` (default 10000) counts the items this pipe yields (for an Arrow
        source, its RecordBatches). A buffer carries items from one batch to the next,
        so :class:`trivium.data.DataLoader` refuses it: there, ``shuffle=True``
        shuffles the epoch's order exactly (resumable, on any number of workers), and
        ``shuffle_window`` sets how many rows of an Arrow source it permutes together.

        Example:
            >>> sorted(IterPipe.from_iterable(range(5)).shuffle(3, seed=0))
            [0, 1, 2, 3, 4]
        """
        return self._chain("shuffle", buffer_size, seed)

    def shard(self, num_shards: int, shard_index: int) -> IterPipe:
        """Keep every ``num_shards``-th item starting at ``shard_index``.

        Arrow sources shard whole fragments instead (a shard reads only its files
        and row groups). :class:`trivium.data.DataLoader` shards by itself and refuses it.

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

    def random_access(self) -> Any | None:
        data = self.iterable
        if isinstance(data, IterableDataset) or not isinstance(data, Sequence | Dataset):
            return None
        return data if hasattr(data, "__len__") else None

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
