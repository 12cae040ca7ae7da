"""What :class:`trivium.data.DataLoader` runs in each worker: the user's graph, batch by batch.

The loader finds the *source* of the dataset it is given (the bottom of a pipe's
graph, or the dataset itself) and reads it in the epoch's exact order
(:mod:`trivium.data.sharding`): each batch is a run of positions of that order, read
by one worker. :class:`Graph` binds a copy of the user's graph onto a
:class:`BatchSource` node in place of the source; for every batch the worker sets
the batch's items on that node and pulls the graph's outputs from its top, so
``map``, ``filter``, ``batch``, columnar ops and user operators run exactly as they
run outside a loader, one batch at a time. How a source is read:

- ``"map"``: a map-style dataset (``dataset[i]``, or a pipe whose source has
  :meth:`~trivium.data.IterPipe.random_access`) at the batch's positions;
- ``"arrow"``: an Arrow source, its rows taken as one ``RecordBatch`` per batch;
- ``"stream"``: a pipe source without random access, iterated by every worker, each
  keeping its own batches' items (exact, resumable; only the source is iterated
  twice, the ops run once per item);
- ``"iterable"``: any other ``IterableDataset``, as torch runs one: every worker
  iterates it (it splits itself with ``get_worker_info()``; in worker threads,
  :func:`trivium.data.get_worker_info`).

Example:
    >>> from trivium.data import IterPipe
    >>> graph = Graph(IterPipe.from_iterable(range(10)).map(lambda x: x * 2))
    >>> graph.kind, graph.items_per_output
    ('map', 1)
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import pickle
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, default_collate, default_convert

from trivium.core.batching import BatchSlots
from trivium.core.errors import TriviumError, watch_decode_warnings
from trivium.core.seeding import SampleScopes, derive_seed, sample_scope
from trivium.core.skipping import (
    Origin,
    SkipReport,
    describe_error,
    item_origin,
    name_some,
    recovered_file,
)
from trivium.data.batches import TensorBatch, is_batch
from trivium.data.origins import (
    Where,
    current_where,
    reading,
    recovered_name,
    report_or,
    set_where,
)
from trivium.data.pipes import IterPipe
from trivium.data.sharding import BatchesPlan, EpochPlan, StreamPlan, epoch_order
from trivium.data.transfer import inline_small_tensors, worker_collate
from trivium.data.workers import current_worker, warn_if_unsharded

__all__ = ["END", "BatchSource", "EpochStream", "Graph", "IterableStream", "WorkerError"]

END = "end"  # what an IterableStream worker sends once its dataset is exhausted


class BatchSource(IterPipe):
    """The source node of a bound graph: the items of the batch being read.

    Example:
        >>> node = BatchSource()
        >>> node.items = iter([1, 2])
        >>> list(node.map(str))
        ['1', '2']
    """

    def __init__(self) -> None:
        self.items: Iterator[Any] = iter(())

    def __iter__(self) -> Iterator[Any]:
        items, self.items = self.items, iter(())
        return iter(items)


class Graph:
    """The dataset a loader reads: its source, how to read it, and the ops above it.

    ``on_error`` is the loader's: what a data error reading a sample of a map-style
    source does (raise it naming the sample's file, or skip the sample).

    Example:
        >>> Graph([1, 2, 3]).kind, Graph([1, 2, 3]).num_samples()
        ('map', 3)
    """

    def __init__(self, dataset: Any, on_error: str = "raise") -> None:
        self.dataset, self.on_error = dataset, on_error
        node, ops = dataset, 0
        while isinstance(node, IterPipe) and node.source is not None:
            if node.not_exact is not None:
                raise TypeError(f"DataLoader: {type(node).__name__}: {node.not_exact}")
            node, ops = node.source, ops + 1
        self.ops = ops
        #: The source: a map-style dataset, an Arrow source, a pipe or an IterableDataset.
        self.source = node
        self.items_per_output = dataset.items_per_output() if ops else 1
        self.kind, self.root = self._kind(node)
        #: Whether batches are Arrow ``RecordBatch``\ es of the source's rows.
        self.columnar = self.kind == "arrow"
        if self.columnar and node.sharded:
            raise ValueError("DataLoader shards by itself: pass the source unsharded")

    @staticmethod
    def _kind(node: Any) -> tuple[str, Any]:
        """How the source is read, and what is read (``root``: the map-style dataset...)."""
        arrow = sys.modules.get("trivium.data.arrow_sources")  # not imported: not an Arrow source
        if arrow is not None and isinstance(node, arrow.ArrowSource):
            return "arrow", node
        if isinstance(node, IterPipe):
            data = node.random_access()
            return ("stream", node) if data is None else ("map", data)
        if isinstance(node, IterableDataset):
            return "iterable", node
        if hasattr(node, "__getitem__") and hasattr(node, "__len__"):
            return "map", node
        raise TypeError(
            "DataLoader needs a dataset: map-style (with __getitem__ and __len__), an "
            f"IterableDataset or an IterPipe, got {type(node).__name__}"
        )

    def num_samples(self) -> int:
        """How many positions one epoch of the source has (map-style and Arrow sources)."""
        if self.kind == "arrow":
            return int(sum(self.root.fragment_rows()))
        if self.kind == "map":
            return len(self.root)
        raise TypeError(f"DataLoader: a {self.kind} dataset has no length known in advance")

    def fragment_rows(self) -> list[int]:
        return list(self.root.fragment_rows()) if self.columnar else [self.num_samples()]

    def for_thread(self) -> Graph:
        """A copy for one worker thread: its own copy of a source it iterates or reads
        fragments of (its position, open files and cache), as a worker process has.

        A map-style source is shared: its ``__getitem__`` is called from every thread.
        """
        graph = copy.copy(self)
        if self.kind != "map":
            graph.source = copy.copy(self.source)
            if self.root is self.source:
                graph.root = graph.source
            if self.ops == 0:
                graph.dataset = graph.source
        return graph

    def bind(self) -> tuple[BatchSource, Any]:
        """A copy of the user's graph over a new :class:`BatchSource`: (that node, the top)."""
        leaf = BatchSource()
        if not self.ops:
            return leaf, leaf
        top = node = copy.copy(self.dataset)
        for _ in range(self.ops - 1):
            node.source = copy.copy(node.source)
            node = node.source
        node.source = leaf
        return leaf, top

    def origin(self, index: int) -> Origin | None:
        """Where sample ``index`` of a map-style source comes from, if the source says."""
        return item_origin(self.root, index)

    def failed(self, error: Exception, origin: Origin | None, report: SkipReport) -> None:
        """Skip a sample on a data error with ``on_error="skip"``; else raise, naming it."""
        if self.on_error == "skip" and isinstance(error, TriviumError | OSError):
            path, reason = describe_error(error)
            report.skip(path or (str(origin) if origin else "a sample"), reason)
            return
        named = error if origin is None else origin.attach(error)
        if named is error:
            raise error
        raise named from error

    def rows(
        self,
        ids: list[int],
        positions: list[int],
        seed: int,
        epoch: int,
        warnings: _SampleWarnings,
    ) -> Iterator[Any]:
        """The samples ``root[i]`` of a map-style source, one at a time, each saying where
        it comes from.

        Each is read in its own ``sample_scope``, seeded from ``(seed, epoch,
        position)``. A data error names the sample's file (``raise``) or drops the
        sample, named in the batch's report (``skip``); the ``DecodeWarning``\\ s
        issued while a sample is read name it in the report, through ``warnings``
        (the sink of the block the batch's run watches them in, :meth:`_Stream._run`).
        Pulled inside :func:`trivium.data.origins.reading`, as the graph runs.
        """
        report = report_or(None)
        assert report is not None, "read inside trivium.data.origins.reading"
        root = self.root
        for i, p in zip(ids, positions, strict=True):
            where = warnings.where = _ItemWhere(self, i, report)
            try:
                with sample_scope(seed, epoch, p):
                    row = root[i]
            except Exception as error:
                warnings.where = None
                self.failed(error, where(None), report)
                continue
            warnings.where = None  # what the ops above do with the sample is theirs
            set_where(where)
            yield row

    def read_rows(
        self, ids: list[int], positions: list[int], seed: int, epoch: int,
        warnings: _SampleWarnings, report: SkipReport,
    ) -> tuple[list[Any], _BatchWheres]:  # fmt: skip
        """:meth:`rows` all at once, for a graph without ops: the samples, and where each
        comes from (an object per sample made only if asked).

        The samples are read one after another, each in its own stream
        (:class:`~trivium.core.seeding.SampleScopes`), nothing between them.
        """
        root, failed = self.root, self.failed
        where = _ItemWhere(self, -1, report)  # pointed at each sample in turn
        out: list[Any] = []
        kept: list[int] = []  # the ids of the samples in ``out``
        warnings.where = where
        with SampleScopes() as scopes:
            for i, p in zip(ids, positions, strict=True):
                where.index = i
                scopes.start(seed, epoch, p)
                try:
                    out.append(root[i])
                except Exception as error:
                    warnings.where = None
                    failed(error, self.origin(i), report)
                    warnings.where = where
                    continue
                kept.append(i)
        warnings.where = None
        return out, _BatchWheres(self, kept, report)

    def arrow_rows(self, ids: np.ndarray) -> Iterator[Any]:
        """The rows ``ids`` of an Arrow source, as one ``RecordBatch`` saying where each is from."""
        root, rows = self.root, ids.tolist()
        batch = root.take(ids)
        set_where(lambda row: None if row is None else root.row_origin(rows[row]))
        yield batch


class _SampleWarnings:
    """The sink of one ``watch_decode_warnings`` block open over a whole batch's run, that
    passes each ``DecodeWarning`` to the sample being read (none: between samples).

    A block per sample costs as much as reading a small sample; this one is opened once
    per batch and only pointed at each sample in turn (:meth:`Graph.rows`).

    Example:
        >>> seen = []
        >>> class Where:
        ...     recovered = seen.append
        >>> sink = _SampleWarnings()
        >>> sink("between samples")
        >>> sink.where = Where()
        >>> sink("damaged")
        >>> seen
        ['damaged']
    """

    __slots__ = ("where",)

    def __init__(self) -> None:
        self.where: _ItemWhere | None = None

    def __call__(self, message: str) -> None:
        if self.where is not None:
            self.where.recovered(message)


class _MapRows:
    """The samples of one batch of a map-style source, set on the graph's leaf.

    Pulled through the graph's ops one at a time (:meth:`Graph.rows`); a graph without
    ops reads them all at once (:meth:`Graph.read_rows`).
    """

    __slots__ = ("epoch", "graph", "ids", "positions", "seed", "warnings")

    def __init__(
        self, graph: Graph, ids: list[int], positions: list[int], seed: int, epoch: int,
        warnings: _SampleWarnings,
    ) -> None:  # fmt: skip
        self.graph, self.ids, self.positions = graph, ids, positions
        self.seed, self.epoch, self.warnings = seed, epoch, warnings

    def __iter__(self) -> Iterator[Any]:
        return self.graph.rows(self.ids, self.positions, self.seed, self.epoch, self.warnings)

    def read(self, report: SkipReport) -> tuple[list[Any], _BatchWheres]:
        return self.graph.read_rows(
            self.ids, self.positions, self.seed, self.epoch, self.warnings, report
        )


class _BatchWheres:
    """Where each sample of a batch read by :meth:`Graph.read_rows` comes from, as the
    :class:`_ItemWhere` of each (made when iterated: most batches never ask)."""

    __slots__ = ("graph", "ids", "report")

    def __init__(self, graph: Graph, ids: list[int], report: SkipReport) -> None:
        self.graph, self.ids, self.report = graph, ids, report

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[_ItemWhere]:
        graph, report = self.graph, self.report
        return (_ItemWhere(graph, i, report) for i in self.ids)


class _ItemWhere:
    """Where sample ``index`` of a map-style source comes from (looked up when asked)."""

    __slots__ = ("graph", "index", "report")

    def __init__(self, graph: Graph, index: int, report: SkipReport) -> None:
        self.graph, self.index, self.report = graph, index, report

    def __call__(self, row: int | None) -> Origin | None:
        return self.graph.origin(self.index)

    def recovered(self, message: str) -> None:
        """Name the sample in the report: a ``DecodeWarning`` was issued reading it."""
        self.report.recover(recovered_name(message, None, self, None), message)


@dataclasses.dataclass
class Batching:
    """How a stream turns the outputs of one run of the graph into what the loader yields.

    ``batch_size=None`` (``unbatched``): each run gives at most one item, passed
    through ``collate_fn`` (default ``default_convert``); otherwise the outputs are
    collated (``default_collate``), an Arrow batch handed on as it is.
    """

    collate_fn: Callable[[Any], Any] | None
    unbatched: bool
    columnar: bool


def _write(tensor: torch.Tensor | None, values: np.ndarray, what: str) -> torch.Tensor:
    """``values`` in ``tensor`` (shared with persistent workers, so of one length)."""
    if tensor is None or (len(tensor) != len(values) and not tensor.is_shared()):
        tensor = torch.zeros(len(values), dtype=torch.int64)
    if len(tensor) != len(values):
        raise ValueError(
            f"DataLoader(persistent_workers=True): the sampler gave {len(values)} {what} this "
            f"epoch and {len(tensor)} before; persistent workers need the same number each epoch"
        )
    tensor.copy_(torch.from_numpy(np.asarray(values, dtype=np.int64)))
    return tensor


class _Stream(IterableDataset):
    """What the loader's workers share: how to batch, the batch buffers, the epoch's state.

    What changes from epoch to epoch (seed, epoch, shuffle, resume point, and the
    order a sampler gave) is read from ``epoch_state`` (and ``order``) when an
    iteration starts: persistent workers share those tensors with the main process,
    which writes each new epoch into them.
    """

    def __init__(self, graph: Graph, batching: Batching, slots: BatchSlots | None) -> None:
        self.graph, self.batching, self.slots = graph, batching, slots
        self.epoch_state = torch.zeros(4, dtype=torch.int64)
        # A sampler's order of the epoch, and a batch sampler's bounds of its batches.
        self.order: torch.Tensor | None = None
        self.bounds: torch.Tensor | None = None

    def start_epoch(
        self, seed: int, epoch: int, shuffle: bool, start: int, order: Any = None
    ) -> None:
        """Write the epoch into what the workers read (``order``: a :class:`SamplerOrder`)."""
        if order is not None:
            self.order = _write(self.order, order.indices, "indices")
            if order.bounds is not None:
                self.bounds = _write(self.bounds, order.bounds, "batches")
        self.epoch_state.copy_(torch.tensor([seed, epoch, int(shuffle), start]))

    def share_memory(self) -> None:
        for tensor in (self.epoch_state, self.order, self.bounds):
            if tensor is not None:
                tensor.share_memory_()

    @property
    def users_dataset(self) -> Any:
        """The dataset the user gave the loader (what ``get_worker_info().dataset`` names)."""
        return self.graph.dataset

    def for_thread(self) -> _Stream:
        """A copy for one worker thread (see :meth:`Graph.for_thread`)."""
        stream = copy.copy(self)
        stream.graph = self.graph.for_thread()
        return stream

    def _worker(self) -> tuple[Any, int, int]:
        info = current_worker()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        if _in_process(info) and self.slots is not None:
            self.slots.use_in_worker(worker)
        return info, worker, workers

    def _run(
        self,
        top: Any,
        seed: int,
        epoch: int,
        first: int,
        report: SkipReport,
        warnings: _SampleWarnings | None = None,
    ) -> Any:
        """One run of the bound graph (its source already set), as the batch to yield.

        ``warnings``: the sink the source's rows point at each sample they read.
        """
        # What draws outside a sample's scope (collate_fn: MixUp, batched crops, ...)
        # draws from the batch's.
        batch_seed = derive_seed(seed, epoch, first, -1)
        out: list[Any] = []
        wheres: list[Where | None] | _BatchWheres = []
        rows = top.items if isinstance(top, BatchSource) else None
        watch = contextlib.nullcontext() if warnings is None else watch_decode_warnings(warnings)
        with sample_scope(batch_seed), reading(report, batch_seed), watch:
            if isinstance(rows, _MapRows):  # no ops: the source's samples are the outputs
                top.items = iter(())
                out, wheres = rows.read(report)
            else:
                for item in top:  # lazy: where is that of the item just made
                    out.append(item)
                    wheres.append(current_where())
            return self._finish(out, wheres, report)

    def _finish(self, out: list[Any], wheres: Iterable[Where | None], report: SkipReport) -> Any:
        batching = self.batching
        if not out:
            return None
        if batching.unbatched:  # one item, wrapped: a None item is not an empty batch
            if len(out) > 1:
                raise ValueError(
                    f"DataLoader(batch_size=None): one run of the pipe over its batch of the "
                    f"source gave {len(out)} items (a flatmap or unbatch); the loader's state "
                    "counts the source's items, so each run must give at most one. Pass "
                    "batch_size=N to batch the outputs instead"
                )
            return ((batching.collate_fn or default_convert)(out[0]),)
        if batching.columnar and all(is_batch(o) for o in out):
            out = [dict(o) if isinstance(o, TensorBatch) else o for o in out]
            batch = out[0] if len(out) == 1 else out
            return batching.collate_fn(batch) if batching.collate_fn else batch
        collate = batching.collate_fn
        if collate is None:
            collate = worker_collate if _in_process(current_worker()) else default_collate
        return _Collation(collate, self.graph, report).run(out, wheres)

    @staticmethod
    def _sent(info: Any, batch: Any) -> Any:
        """The batch as it leaves the worker: a process's small tensors inlined for pickling."""
        return inline_small_tensors(batch) if _in_process(info) else batch


def _in_process(info: Any) -> bool:
    """Whether ``info`` is that of a worker process (not a worker thread, not the main thread)."""
    return info is not None and getattr(info, "worker_method", None) != "thread"


class EpochStream(_Stream):
    """What each worker iterates: its batches of one rank's epoch plan, as ``(k, report, batch)``.

    Batch ``k`` of the plan is made by worker ``k % num_workers``; a ``"stream"``
    source ends with ``(None, count, None)``, the number of batches the rank has.
    """

    def __init__(
        self,
        graph: Graph,
        plan: EpochPlan | BatchesPlan | StreamPlan,
        window: int | None,
        batching: Batching,
        slots: BatchSlots | None = None,
    ) -> None:
        super().__init__(graph, batching, slots)
        self.plan, self.window = plan, window

    def __iter__(self) -> Iterator[tuple[Any, Any, Any]]:
        info, worker, workers = self._worker()
        seed, epoch, shuffle, start = self.epoch_state.tolist()
        leaf, top = self.graph.bind()
        warnings = _SampleWarnings()  # this worker's: one iteration runs in one thread
        k = worker  # the batch being made, which an error is sent as
        try:
            if self.graph.kind == "stream":
                batches = self._stream_batches(leaf, start, worker, workers)
            else:
                order = self._order(seed, epoch, bool(shuffle))
                batches = self._planned_batches(
                    leaf, order, seed, epoch, start, worker, workers, warnings
                )
            for k, first in batches:
                if k is None:
                    yield None, first, None  # the end of a stream: its number of batches
                    return
                report = SkipReport()  # travels back with the batch
                batch = self._sent(info, self._run(top, seed, epoch, first, report, warnings))
                yield k, report if report or report.skipped_samples else None, batch
                k += workers
        except Exception as error:
            if info is None:
                raise
            # torch would re-raise only the error's type and text: send the error itself
            yield k, WorkerError.of(error, info), None

    def _order(self, seed: int, epoch: int, shuffle: bool) -> np.ndarray:
        if self.order is not None:  # a sampler's
            return self.order.numpy()
        return epoch_order(
            self.graph.fragment_rows(), seed=seed, epoch=epoch, shuffle=shuffle, window=self.window
        )

    def _planned_batches(
        self,
        leaf: BatchSource,
        order: np.ndarray,
        seed: int,
        epoch: int,
        start: int,
        worker: int,
        workers: int,
        warnings: _SampleWarnings,
    ) -> Iterator[tuple[int, int]]:
        """This worker's batches of a map-style or Arrow source: each sets the leaf's items."""
        graph = self.graph
        plan = self.plan.starting_at(start)
        if self.bounds is not None:
            plan = BatchesPlan(self.bounds.numpy(), start)
        n = len(order)
        last_use = None
        if graph.columnar and graph.root.read_cache is not None:
            from trivium.data.shared_cache import fragment_uses

            _, last_use = fragment_uses(order, plan, graph.fragment_rows())
        for k in range(worker, plan.num_batches, workers):
            if last_use is not None:  # unmap what none of this worker's batches needs again
                graph.root.release_fragments(last_use < k)
            positions = plan.batch_positions(k)
            ids = order[positions % n]
            if graph.columnar:
                leaf.items = graph.arrow_rows(ids)
            else:
                leaf.items = _MapRows(
                    graph, ids.tolist(), positions.tolist(), seed, epoch, warnings
                )
            yield k, int(positions[0])

    def _stream_batches(
        self, leaf: BatchSource, start: int, worker: int, workers: int
    ) -> Iterator[tuple[int | None, int]]:
        """This worker's batches of a source without random access, read in its order.

        Every worker iterates the source; batch ``c`` (of ``size`` items after the
        ``start`` consumed ones) goes to rank ``c % R``, and there to worker
        ``(c // R) % W``. Ends with ``(None, batches of this rank)``.
        """
        plan = self.plan
        size, ranks, rank = plan.batch_size, plan.world_size, plan.rank
        items = itertools.islice(iter(self.graph.source), start, None)
        position, c = start, 0
        while True:
            chunk = list(itertools.islice(items, size))
            if not chunk or (len(chunk) < size and plan.drop_last):
                yield None, _rank_batches(c, ranks, rank)
                return
            mine = c % ranks == rank and (c // ranks) % workers == worker
            if mine:
                leaf.items = iter(chunk)
                yield c // ranks, position
            position += len(chunk)
            c += 1


def _rank_batches(total: int, ranks: int, rank: int) -> int:
    """How many of ``total`` batches dealt round-robin over ``ranks`` go to ``rank``."""
    return max(0, (total - rank + ranks - 1) // ranks)


class IterableStream(_Stream):
    """An ``IterableDataset`` run as torch runs one: every worker iterates it, batching
    its own items; yields ``(worker, state, batch)``, and ``(worker, END, None)`` at its end.

    ``state`` is the dataset's ``state_dict()`` after the batch, where it has one:
    what resuming that worker needs. ``resume`` holds each worker's state to load.
    """

    def __init__(
        self, graph: Graph, batching: Batching, batch_size: int, drop_last: bool, slots: Any
    ) -> None:
        super().__init__(graph, batching, slots)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.resume: list[Any] | None = None

    def __iter__(self) -> Iterator[tuple[int, Any, Any]]:
        info, worker, _ = self._worker()
        dataset = self.graph.source
        stateful = hasattr(dataset, "state_dict") and hasattr(dataset, "load_state_dict")
        if self.resume is not None and self.resume[worker] is not None:
            dataset.load_state_dict(self.resume[worker])
        seed, epoch = self.epoch_state.tolist()[:2]
        size = 1 if self.batching.unbatched else self.batch_size
        try:
            items = iter(dataset)
            for j in itertools.count():
                chunk = list(itertools.islice(items, size))
                if not chunk or (len(chunk) < size and self.drop_last):
                    break
                if j == 0:
                    warn_if_unsharded(dataset)
                leaf = BatchSource()
                leaf.items = iter(chunk)
                report = SkipReport()
                batch = self._run(leaf, seed, epoch, derive_seed(worker, j), report)
                state = dataset.state_dict() if stateful else None
                yield worker, state, self._sent(info, batch)
        except Exception as error:
            if info is None:
                raise
            yield -1, WorkerError.of(error, info), None
            return
        yield worker, END, None


class _Collation:
    """``collate_fn`` over a batch's samples, each failure and recovery named.

    Collating a batch is one call, so what goes wrong in it (a fused decode meeting a
    damaged image) is about one of the samples but says not which. Only then are the
    samples collated one by one to find it: the error is raised naming that sample's
    file, or with ``on_error="skip"`` the sample is dropped and the rest collated.
    A ``DecodeWarning`` that names no file is traced to its sample the same way.
    """

    def __init__(self, collate: Callable[[Any], Any], graph: Graph, report: SkipReport) -> None:
        self.collate, self.graph, self.report = collate, graph, report

    def run(self, out: list[Any], wheres: Iterable[Where | None]) -> Any:
        unnamed: list[str] = []  # DecodeWarnings that name no file
        try:
            with watch_decode_warnings(lambda m: self._recovered(m, None, unnamed)):
                batch = self.collate(out)
        except Exception as error:
            return self._apart(out, wheres, error)
        if unnamed:
            for sample, where in zip(out, wheres, strict=True):
                self._alone(sample, where)
        return batch

    def _recovered(self, message: str, where: Where | None, unnamed: list[str]) -> None:
        name = recovered_name(message, None, where, None)
        if name == message and recovered_file(message) == message and where is None:
            unnamed.append(message)
            return
        self.report.recover(name, message)

    def _alone(self, sample: Any, where: Where | None) -> Exception | None:
        """The error of collating ``sample`` by itself (None if it collates)."""
        unnamed: list[str] = []
        try:
            with watch_decode_warnings(lambda m: self._recovered(m, where, unnamed)):
                self.collate([sample])
        except Exception as error:
            return error
        return None

    def _apart(self, out: list[Any], wheres: Iterable[Where | None], error: Exception) -> Any:
        failures = [(self._alone(s, w), w) for s, w in zip(out, wheres, strict=True)]
        bad = [(e, w) for e, w in failures if e is not None]
        if not bad:  # only together do they fail: say which samples were collated
            files = [str(o) for o in (w(None) for w in wheres if w is not None) if o]
            if files:
                error.add_note(f"while collating {name_some(files, len(files))}")
            raise error
        for failure, where in bad:
            self.graph.failed(failure, None if where is None else where(None), self.report)
        kept = [s for (e, _), s in zip(failures, out, strict=True) if e is None]
        return self.collate(kept) if kept else None


class WorkerError:
    """An error raised in a worker process, sent to the main process as the error itself.

    torch's loader sends only an error's type and text, rebuilding it with the text
    as its one argument: a ``TriviumError`` would lose its ``path`` (and a
    ``PathNotFoundError`` its ``errno``). This carries the error, which pickles with
    them, and the worker's traceback as a note.

    Example:
        >>> sent = WorkerError(ValueError("bad"), "in worker 0")
        >>> try:
        ...     sent.raise_it()
        ... except ValueError as error:
        ...     print(error, error.__notes__)
        bad ['in worker 0']
    """

    def __init__(self, error: BaseException, where: str) -> None:
        self.error, self.where = error, where

    @staticmethod
    def of(error: BaseException, info: Any) -> WorkerError:
        """The error raised in the worker ``info`` describes (a process or a thread)."""
        kind = "process" if _in_process(info) else "thread"
        where = f"in DataLoader worker {kind} {info.id}:\n" + "".join(
            traceback.format_exception(error)
        )
        if kind == "thread":  # handed over as it is
            return WorkerError(error, where)
        try:
            pickle.dumps(error)
        except Exception:  # not picklable: torch's way, its text at least
            raise error from None
        return WorkerError(error, where)

    def raise_it(self) -> None:
        error = self.error
        if self.where not in getattr(error, "__notes__", ()):
            error.add_note(self.where)
        raise error
