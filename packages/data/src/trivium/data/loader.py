"""``DataLoader``: exact sharding over workers and ranks, deterministic epochs, mid-epoch resume.

Built on torch's ``DataLoader`` (torchdata's ``StatefulDataLoader`` installs beside
torch 2.13, but its state is per worker and cannot be resumed on another number of
workers; the state here is one number). How the epoch is planned is described in
:mod:`trivium.data.sharding`; in short:

- the epoch's order of samples is fixed by ``(seed, epoch)`` alone;
- rank ``r`` of ``R`` reads positions ``r, r + R, ...``; every rank yields the same
  number of batches (``drop_last`` drops the uneven tail, otherwise ranks are padded
  by wrapping around);
- batch ``k`` of a rank is built by worker ``k % num_workers`` and the batches are
  yielded in order ``k = 0, 1, ...``;
- ``state_dict()`` records how many positions of the order all ranks together have
  consumed; ``load_state_dict()`` continues with exactly the rest, on any number of
  workers or ranks.

What the loader reads: a map-style dataset (``ArrowDataset``, ``MapPipe``, a list,
any ``Dataset`` with ``__len__``), or an ``IterPipe`` whose root is an Arrow source
(``ParquetSource`` ...) or ``MapPipe.to_iter_pipe()``, followed by per-item ops
(``map``, ``filter``, ``flatmap``, ``parallel_map``, ``select``, ``to_tensors``, ...).
Those ops run in the workers on each batch (the ops whose ``runs_in_workers`` is
true, through ``apply_in_worker``); a ``shuffle()`` in the chain shuffles the global
order, within windows of ``shuffle_window`` rows. An Arrow source gives each
batch as one ``RecordBatch`` (turn it into tensors with ``to_tensors``), or rows
after ``to_rows()`` (collated with ``collate_fn``). A ``filter`` (or
``on_error="skip"``) makes a batch smaller, never changes the number of batches;
a batch left empty is not yielded.

``batch_size=None`` (torch's way to load a dataset whose items already are batches):
each item of the dataset, after the chain's ops, is yielded as it is, passed through
``collate_fn`` (default: torch's ``default_convert``, NumPy arrays to tensors), never
collated. Sharding, ``drop_last``, equal counts per rank and resume then count items.
An op that turns one item into several (``flatmap``) is refused, as the state could
not say which of them were consumed; an Arrow source is refused too (its items are
rows: pass ``batch_size=N`` for ``N``-row batches).

Random transforms: each sample is read (``dataset[i]``) and mapped inside its own
:func:`trivium.core.seeding.sample_scope`, seeded from ``(seed, epoch, the sample's
position)``, so every sample, worker and epoch draws differently, the draws follow
from ``seed`` alone, do not depend on the number of workers, and a resumed epoch
repeats the augmentations of an uninterrupted one (with the same batch size and
number of ranks: the ops' streams are keyed by the batch's first position).

Example:
    >>> from trivium.data import DataLoader
    >>> loader = DataLoader(list(range(10)), batch_size=4, shuffle=True, seed=0)
    >>> loader.set_epoch(1)
    >>> batches = [b.tolist() for b in loader]
    >>> sorted(sum(batches, [])) == list(range(10)), len(batches)
    (True, 3)
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import multiprocessing
import os
import pickle
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, default_collate, default_convert, get_worker_info

from trivium.core.batching import BatchSlots
from trivium.core.devices import CUDAPrefetcher
from trivium.core.errors import TriviumError, watch_decode_warnings
from trivium.core.seeding import derive_seed, sample_scope
from trivium.core.skipping import (
    Origin,
    SkipReport,
    check_on_error,
    describe_error,
    item_origin,
    name_some,
    recovered_file,
)
from trivium.data.arrow_sources import ArrowSource, fragments_for_window
from trivium.data.batches import TensorBatch, is_batch
from trivium.data.origins import Where, current_where, reading, recovered_name, set_where
from trivium.data.pipes import IterPipe, Shuffle, SkippedSamplesWarning
from trivium.data.pipes.map_style import _MapToIter
from trivium.data.sharding import EpochPlan, epoch_order
from trivium.data.shared_cache import ReadAhead, SharedReadCache, fragment_uses
from trivium.data.transfer import inline_small_tensors

__all__ = ["DataLoader"]

_STATE_VERSION = 1
DEFAULT_ARROW_WINDOW = 16_384
_MAX_CACHED_FRAGMENTS = 256


class _Chain:
    """A dataset split into its root and the per-item ops the workers apply.

    ``on_error`` is the loader's: what a data error reading a sample of a map-style
    root does (raise it naming the sample's file, or skip the sample).
    """

    def __init__(self, dataset: Any, on_error: str = "raise") -> None:
        self.on_error = on_error
        self.ops: list[IterPipe] = []
        self.window: int | None = None
        self.pipe_shuffle = False
        node = dataset
        while isinstance(node, IterPipe) and node.source is not None:
            if isinstance(node, Shuffle):
                self.pipe_shuffle = True
                if node.buffer_size_given:  # the deprecated reading, see DataLoader
                    self.window = node.buffer_size
            elif node.runs_in_workers:
                self.ops.append(node)
            else:
                raise TypeError(
                    f"DataLoader: {type(node).__name__} cannot run inside the sharded global "
                    "order; only per-item ops (map, filter, flatmap, parallel_map, columnar ops) "
                    "and shuffle may sit between the source and the loader"
                )
            node = node.source
        self.ops.reverse()
        if isinstance(node, _MapToIter):
            node = node.dataset
        self.root = node
        self.columnar = isinstance(node, ArrowSource)
        if self.columnar:
            if node.sharded:
                raise ValueError("DataLoader shards by itself: pass the source unsharded")
        elif isinstance(node, IterableDataset) or not (
            hasattr(node, "__getitem__") and hasattr(node, "__len__")
        ):
            raise TypeError(
                "DataLoader needs a map-style dataset (with __getitem__ and __len__) or an "
                f"IterPipe over an Arrow source, got {type(node).__name__}"
            )

    def num_samples(self) -> int:
        if self.columnar:
            return int(sum(self.root.fragment_rows()))
        return len(self.root)

    def fragment_rows(self) -> list[int]:
        return list(self.root.fragment_rows()) if self.columnar else [len(self.root)]

    def origin(self, index: int) -> Origin | None:
        """Where sample ``index`` of a map-style root comes from, if the root says."""
        return item_origin(self.root, index)

    def read(
        self, ids: np.ndarray, positions: np.ndarray, seed: int, epoch: int, batch_seed: int
    ) -> tuple[list[Any], list[Where | None]]:
        """The items of one batch (rows ``ids`` at ``positions`` of the epoch's order), and
        where each comes from.

        Every sample is read and mapped in its own ``sample_scope``, seeded from
        ``(seed, epoch, position)`` for the dataset's ``__getitem__`` and from
        ``batch_seed``, the op and the sample's place in the batch for the ops. Runs
        inside :func:`trivium.data.origins.reading`: the ops learn where each item
        comes from as they take it.
        """
        if self.columnar:
            root, rows = self.root, ids.tolist()
            items: Iterator[Any] = iter([root.take(ids)])
            set_where(lambda row: None if row is None else root.row_origin(rows[row]))
        else:
            items = self._rows(ids, positions, seed, epoch)
        for i, op in enumerate(self.ops):
            items = op.apply_in_worker(items, derive_seed(batch_seed, i))
        out, wheres = [], []
        for item in items:  # lazy: where is that of the item just made
            out.append(item)
            wheres.append(current_where())
        return out, wheres

    def _rows(self, ids: np.ndarray, positions: np.ndarray, seed: int, epoch: int) -> Iterator[Any]:
        """The samples ``dataset[i]``, one at a time, each saying where it comes from.

        A data error names the sample's file (``raise``) or drops the sample, named in
        the batch's report (``skip``); the ``DecodeWarning``\\ s issued while a sample
        is read name it in the report.
        """
        report = _batch_report()
        for i, p in zip(ids.tolist(), positions.tolist(), strict=True):
            where = _ItemWhere(self, i, report)
            try:
                with (
                    sample_scope(derive_seed(seed, epoch, p)),
                    watch_decode_warnings(where.recovered),
                ):
                    row = self.root[i]
            except Exception as error:
                self.failed(error, where(None), report)
                continue
            set_where(where)
            yield row

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


class _ItemWhere:
    """Where sample ``index`` of a map-style root comes from (looked up when asked)."""

    __slots__ = ("chain", "index", "report")

    def __init__(self, chain: _Chain, index: int, report: SkipReport) -> None:
        self.chain, self.index, self.report = chain, index, report

    def __call__(self, row: int | None) -> Origin | None:
        return self.chain.origin(self.index)

    def recovered(self, message: str) -> None:
        """Name the sample in the report: a ``DecodeWarning`` was issued reading it."""
        self.report.recover(recovered_name(message, None, self, None), message)


def _batch_report() -> SkipReport:
    from trivium.data.origins import report_or

    report = report_or(None)
    assert report is not None, "read inside trivium.data.origins.reading"
    return report


class _EpochStream(IterableDataset):
    """What each torch worker iterates: its batches of one rank's epoch plan.

    What changes from epoch to epoch (seed, epoch, shuffle, resume point) is read
    from ``epoch_state`` when an iteration starts: persistent workers share that
    tensor with the main process, which writes each new epoch into it.
    """

    def __init__(
        self,
        chain: _Chain,
        plan: EpochPlan,
        window: int | None,
        collate_fn: Callable[[Any], Any] | None,
        unbatched: bool = False,
        slots: BatchSlots | None = None,
    ) -> None:
        self.chain, self.plan = chain, plan
        self.window, self.collate_fn = window, collate_fn
        self.unbatched = unbatched
        self.slots = slots  # the workers' reusable batch buffers
        self.epoch_state = torch.zeros(4, dtype=torch.int64)

    def start_epoch(self, seed: int, epoch: int, shuffle: bool, start: int) -> None:
        self.epoch_state.copy_(torch.tensor([seed, epoch, int(shuffle), start]))

    def __iter__(self) -> Iterator[tuple[int, int, Any]]:
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        if info is not None and self.slots is not None:
            self.slots.use_in_worker(worker)
        seed, epoch, shuffle, start = self.epoch_state.tolist()
        plan = dataclasses.replace(self.plan, start=start)
        order = epoch_order(
            self.chain.fragment_rows(),
            seed=seed,
            epoch=epoch,
            shuffle=bool(shuffle),
            window=self.window,
        )
        n = len(order)
        last_use = None
        if self.chain.columnar and self.chain.root.read_cache is not None:
            _, last_use = fragment_uses(order, plan, self.chain.fragment_rows())
        for k in range(worker, plan.num_batches, workers):
            if last_use is not None:  # unmap what none of this worker's batches needs again
                self.chain.root.release_fragments(last_use < k)
            positions = plan.batch_positions(k)
            # What draws outside a sample's scope (collate_fn: MixUp, batched crops, ...)
            # draws from the batch's.
            batch_seed = _batch_seed(seed, epoch, positions)
            report = SkipReport()  # travels back with the batch
            try:
                with sample_scope(batch_seed), reading(report):
                    ids = order[positions % n]
                    out, wheres = self.chain.read(ids, positions, seed, epoch, batch_seed)
                    batch = self._finish(out, wheres, report)
            except Exception as error:
                if info is None:
                    raise
                # torch would re-raise only the error's type and text: send the error itself
                yield k, _WorkerError.of(error, info.id), None
                return
            batch = batch if info is None else inline_small_tensors(batch)
            yield k, report if report or report.skipped_samples else None, batch

    def _finish(self, out: list[Any], wheres: list[Where | None], report: SkipReport) -> Any:
        if not out:
            return None
        if self.unbatched:  # one item, wrapped: a None item is not an empty batch
            if len(out) > 1:
                raise ValueError(
                    f"DataLoader(batch_size=None): one item of the dataset gave {len(out)} "
                    "(a flatmap); the loader's state counts items, so each must give at most "
                    "one. Flatten inside the dataset, or pass batch_size=N to batch the outputs"
                )
            return ((self.collate_fn or default_convert)(out[0]),)
        if self.chain.columnar and all(is_batch(o) for o in out):
            out = [dict(o) if isinstance(o, TensorBatch) else o for o in out]
            batch = out[0] if len(out) == 1 else out
            return self.collate_fn(batch) if self.collate_fn else batch
        return _Collation(self.collate_fn or default_collate, self.chain, report).run(out, wheres)


class _Collation:
    """``collate_fn`` over a batch's samples, each failure and recovery named.

    Collating a batch is one call, so what goes wrong in it (a fused decode meeting a
    damaged image) is about one of the samples but says not which. Only then are the
    samples collated one by one to find it: the error is raised naming that sample's
    file, or with ``on_error="skip"`` the sample is dropped and the rest collated.
    A ``DecodeWarning`` that names no file is traced to its sample the same way.
    """

    def __init__(self, collate: Callable[[Any], Any], chain: _Chain, report: SkipReport) -> None:
        self.collate, self.chain, self.report = collate, chain, report

    def run(self, out: list[Any], wheres: list[Where | None]) -> Any:
        unnamed: list[str] = []  # DecodeWarnings that name no file
        try:
            with watch_decode_warnings(lambda m: self._recovered(m, None, unnamed)):
                batch = self.collate(out)
        except Exception as error:
            return self._apart(out, wheres, error)
        if unnamed:
            self._trace_recoveries(out, wheres)
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

    def _trace_recoveries(self, out: list[Any], wheres: list[Where | None]) -> None:
        for sample, where in zip(out, wheres, strict=True):
            self._alone(sample, where)

    def _apart(self, out: list[Any], wheres: list[Where | None], error: Exception) -> Any:
        failures = [(self._alone(s, w), w) for s, w in zip(out, wheres, strict=True)]
        bad = [(e, w) for e, w in failures if e is not None]
        if not bad:  # only together do they fail: say which samples were collated
            files = [str(o) for o in (w(None) for w in wheres if w is not None) if o]
            if files:
                error.add_note(f"while collating {name_some(files, len(files))}")
            raise error
        for failure, where in bad:
            self.chain.failed(failure, None if where is None else where(None), self.report)
        kept = [s for (e, _), s in zip(failures, out, strict=True) if e is None]
        return self.collate(kept) if kept else None


class _WorkerError:
    """An error raised in a worker process, sent to the main process as the error itself.

    torch's loader sends only an error's type and text, rebuilding it with the text
    as its one argument: a ``TriviumError`` would lose its ``path`` (and a
    ``PathNotFoundError`` its ``errno``). This carries the error, which pickles with
    them, and the worker's traceback as a note.
    """

    def __init__(self, error: BaseException, where: str) -> None:
        self.error, self.where = error, where

    @staticmethod
    def of(error: BaseException, worker: int) -> _WorkerError:
        where = f"in DataLoader worker process {worker}:\n" + "".join(
            traceback.format_exception(error)
        )
        try:
            pickle.dumps(error)
        except Exception:  # not picklable: torch's way, its text at least
            raise error from None
        return _WorkerError(error, where)

    def raise_it(self) -> None:
        error = self.error
        if self.where not in getattr(error, "__notes__", ()):
            error.add_note(self.where)
        raise error


def _shut_down(workers: Iterator[Any]) -> None:
    """Stop the worker processes of torch's loader iterator now.

    An exception's traceback keeps the iterator alive in a reference cycle. The next
    loader's workers, forked before the cycle is collected, would inherit it, and their
    garbage collector would run its ``__del__``, which asserts that it is in the parent
    ("can only test a child process"). Once shut down, ``__del__`` does nothing.
    """
    shutdown = getattr(workers, "_shutdown_workers", None)  # torch's iterator, private
    if shutdown is not None:
        shutdown()


def _retire(workers: Iterator[Any]) -> Iterator[Any] | None:
    """Tell the worker processes of torch's loader iterator to exit, without waiting.

    For the end of an epoch whose batches have all arrived: torch would wait there for
    each worker process to end (tens of milliseconds each). The workers get their stop
    signal now and exit while the main process goes on; :func:`_reap` joins them later.
    Returns the iterator to reap, or None when it was shut down here (an iterator
    with a pin-memory thread, or no worker processes).
    """
    if getattr(workers, "_workers_done_event", None) is None or hasattr(
        workers, "_pin_memory_thread"
    ):
        _shut_down(workers)
        return None
    workers._workers_done_event.set()  # torch's private shutdown protocol, as _shut_down
    for worker_id, running in enumerate(workers._workers_status):
        if running:
            workers._mark_worker_as_unavailable(worker_id, shutdown=True)
    if workers._worker_pids_set:  # every batch arrived: how the workers end is not an error
        torch.utils.data._utils.signal_handling._remove_worker_pids(id(workers))
        workers._worker_pids_set = False
    return workers


def _reap(retired: list[Iterator[Any]], wait: bool) -> None:
    """Join the workers of retired iterators: all of them, or (``wait=False``) the exited ones."""
    for workers in list(retired):
        if wait or not any(w.is_alive() for w in workers._workers):
            _shut_down(workers)
            retired.remove(workers)


def _drop_cache(cache: SharedReadCache) -> None:
    """A loader's end: free its cache's fragments (kept between epochs) and let go of it.

    The files go at once; the directory goes with its last holder (worker processes
    still exiting hold it too).
    """
    if not cache.shared:  # a shared one: the other ranks' loaders free theirs
        cache.clear()
    cache.close()


def _batch_seed(seed: int, epoch: int, positions: np.ndarray) -> int:
    """The seed of a batch's scope: its first position in the epoch, not who reads it."""
    return derive_seed(seed, epoch, int(positions[0]), -1)


def _local_ranks(rank: int, world_size: int) -> list[int]:
    """The ranks on this machine, from torchrun's ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``."""
    try:
        local_rank = int(os.environ["LOCAL_RANK"])
        local_size = int(os.environ["LOCAL_WORLD_SIZE"])
    except (KeyError, ValueError):
        return [rank]
    first = rank - local_rank
    ranks = [r for r in range(first, first + local_size) if 0 <= r < world_size]
    return ranks if rank in ranks else [rank]


def _distributed() -> tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class DataLoader:
    """Batches of a dataset, sharded exactly over workers and ranks, resumable mid-epoch.

    Arguments follow ``torch.utils.data.DataLoader``; beyond it:

    Args:
        batch_size: samples per batch, or ``None`` to yield the items of a dataset
            whose items already are batches, unbatched, as torch does (see the module
            docstring).
        seed: fixes the order of every epoch together with :meth:`set_epoch`, and what
            every random transform draws for each sample (see the module docstring).
        shuffle_window: for an Arrow source, rows are shuffled within windows of this
            many rows after the fragments are permuted (default 16384); a
            ``shuffle()`` in the pipe, or ``shuffle=True``, turns shuffling on.
            Map-style data is fully permuted. (A ``shuffle(buffer_size=N)`` in the
            pipe is read as ``shuffle_window=N``, deprecated: ``buffer_size``
            counts the pipe's items outside a DataLoader.)
        rank: this process's rank (default: from ``torch.distributed`` when
            initialised, else 0).
        world_size: the number of ranks (default: from ``torch.distributed`` when
            initialised, else 1).
        device: move each batch there, overlapping the copy with compute on CUDA
            (``trivium.core.CUDAPrefetcher``).
        shared_cache: with workers over an Arrow source, read each fragment once
            into shared memory, where every worker maps it (default); under
            ``torchrun`` with several ranks on a machine (``LOCAL_WORLD_SIZE``), one
            cache serves all of them, so each fragment is read once per machine.
            When the whole dataset is one shuffle window, the fragments stay cached
            from one epoch to the next (read once for all epochs).
            ``False``: each worker reads and caches the fragments its batches need
            (:mod:`trivium.data.shared_cache`).
        on_error: ``"raise"`` (default): a sample that cannot be read or collated
            raises, naming its file; ``"skip"``: it is dropped and named in
            :attr:`skip_report` (batches keep their count; a batch left empty is not
            yielded).
        persistent_workers: keep the worker processes from one epoch to the next
            (torch's option): no start-up per epoch. The workers keep the dataset and the
            loader's settings as they were in the first epoch; ``set_epoch`` and
            ``load_state_dict`` still apply. Without it, once an epoch's last batch is
            out its workers are told to exit and joined later: the epoch does not wait
            for them.

    In the workers, batches made with :func:`trivium.core.empty_batch` (the fused
    decodes, :func:`trivium.core.stack_batch`) go out in shared-memory buffers that are
    reused once the main process holds no tensor of them
    (:class:`trivium.core.batching.BatchSlots`, ``prefetch_factor + 2`` per worker).

    Errors name the sample's file (and row of an Arrow file) whatever raised them:
    the dataset, an op, or ``collate_fn`` (a fused decode of a batch), and keep
    their type and ``path`` when they come from a worker process. With
    ``on_error="skip"``, a sample of a map-style dataset whose reading or collating
    raises a data error (a ``trivium.core`` error or ``OSError``; a bug in a
    transform still raises) is dropped. ``skipped`` counts the samples dropped by
    the loader and by ``on_error="skip"`` ops; :attr:`skip_report` names them, and
    the files recovered from damage (a ``DecodeWarning`` while loading them); a
    :class:`~trivium.data.pipes.SkippedSamplesWarning` names the first few at the
    end of each epoch.

    Example:
        >>> loader = DataLoader(list(range(6)), batch_size=2, seed=0)
        >>> it = iter(loader)
        >>> next(it).tolist()
        [0, 1]
        >>> state = loader.state_dict()
        >>> resumed = DataLoader(list(range(6)), batch_size=2, seed=0)
        >>> resumed.load_state_dict(state)
        >>> [b.tolist() for b in resumed]
        [[2, 3], [4, 5]]

        Items that already are batches:

        >>> import numpy as np
        >>> batches = [np.arange(3), np.arange(3, 5)]
        >>> [b.tolist() for b in DataLoader(batches, batch_size=None)]
        [[0, 1, 2], [3, 4]]
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool = False,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        seed: int = 0,
        shuffle_window: int | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        device: str | torch.device | None = None,
        shared_cache: bool = True,
        on_error: str = "raise",
    ) -> None:
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        if num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {num_workers}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers needs num_workers > 0")
        if not 0 <= seed < 2**63:  # it travels to the workers as an int64
            raise ValueError(f"seed must be in [0, 2**63), got {seed}")
        check_on_error(on_error)
        self.on_error = on_error
        self.dataset = dataset
        self._chain = _Chain(dataset, on_error)
        if batch_size is None and self._chain.columnar:
            raise ValueError(
                "DataLoader(batch_size=None) over an Arrow source: the loader shards its rows, "
                "not the source's RecordBatches; pass batch_size=N to get N-row batches"
            )
        self.batch_size = batch_size
        self.shuffle = shuffle or self._chain.pipe_shuffle
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.drop_last = drop_last
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.seed = seed
        self.shuffle_window = shuffle_window or self._pipe_window()
        self.device = device
        self.shared_cache = shared_cache
        dist_rank, dist_world = _distributed()
        self.rank = dist_rank if rank is None else rank
        self.world_size = dist_world if world_size is None else world_size
        self.epoch = 0
        self.skipped = 0
        self._report = SkipReport()
        self._epoch_report = SkipReport()
        self._announced: set[str] = set()  # the dataset's own skips already warned of
        self._resume = 0  # positions already consumed when the next iteration starts
        self._plan: EpochPlan | None = None
        self._yielded = 0
        self._num_samples: int | None = None
        self._workers: tuple[_EpochStream, torch.utils.data.DataLoader] | None = None
        self._retired: list[Iterator[Any]] = []  # workers told to exit, not yet joined
        self._batch_slots: BatchSlots | None = None
        self._read_cache: SharedReadCache | None = None
        self._reader: ReadAhead | None = None

    def _pipe_window(self) -> int | None:
        """The window of a ``shuffle(buffer_size)`` in the pipe: the deprecated reading."""
        window = self._chain.window
        if window is not None and self._chain.columnar:
            warnings.warn(
                f"DataLoader: the pipe's shuffle(buffer_size={window}) is read as "
                f"shuffle_window={window} (rows of the global order), while outside a "
                "DataLoader buffer_size counts the items of the pipe; pass "
                f"DataLoader(..., shuffle_window={window}) and shuffle() without "
                "buffer_size. This reading of buffer_size goes in the next release",
                DeprecationWarning,
                stacklevel=3,
            )
        return window

    def __repr__(self) -> str:
        return (
            f"DataLoader(batch_size={self.batch_size}, shuffle={self.shuffle}, "
            f"num_workers={self.num_workers}, rank={self.rank}/{self.world_size}, "
            f"seed={self.seed}, epoch={self.epoch})"
        )

    @property
    def num_samples(self) -> int:
        """Samples in one epoch of the whole dataset (all ranks together)."""
        if self._num_samples is None:
            self._num_samples = self._chain.num_samples()
        return self._num_samples

    def _new_plan(self) -> EpochPlan:
        return EpochPlan(
            num_samples=self.num_samples,
            batch_size=1 if self.batch_size is None else self.batch_size,
            world_size=self.world_size,
            rank=self.rank,
            start=self._resume,
            drop_last=self.drop_last,
        )

    def __len__(self) -> int:
        return self._new_plan().num_batches

    def set_epoch(self, epoch: int) -> None:
        """Use the order of epoch ``epoch``; a resume point of another epoch is dropped.

        Example:
            >>> loader = DataLoader(list(range(4)), batch_size=4, shuffle=True, seed=3)
            >>> loader.set_epoch(0); a = next(iter(loader)).tolist()
            >>> loader.set_epoch(0); a == next(iter(loader)).tolist()
            True
        """
        if epoch != self.epoch:
            self._resume = 0
        self.epoch = epoch

    def _window(self) -> int | None:
        if not self._chain.columnar:
            return None
        return self.shuffle_window or DEFAULT_ARROW_WINDOW

    def _stream(self, plan: EpochPlan) -> _EpochStream:
        window = self._window()
        if self._chain.columnar:
            rows = self._chain.fragment_rows()
            cached = fragments_for_window(rows, window if self.shuffle else self.batch_size)
            self._chain.root.cache_fragments = min(cached + 1, _MAX_CACHED_FRAGMENTS)
            self._chain.root.read_cache = self._shared_cache()
        unbatched = self.batch_size is None
        if self.num_workers > 0 and self._batch_slots is None:
            self._batch_slots = BatchSlots(self.num_workers, (self.prefetch_factor or 2) + 2)
        return _EpochStream(
            self._chain, plan, window, self.collate_fn, unbatched, self._batch_slots
        )

    def _shared_cache(self) -> SharedReadCache | None:
        """The cache the workers share, when they read an Arrow source.

        Under torchrun with several ranks on this machine, one cache for all of them.
        """
        if not (self.shared_cache and self._chain.columnar and self.num_workers > 0):
            return None
        if self._read_cache is None:
            cache = self._read_cache = SharedReadCache(name=self._machine_cache_name())
            # The source holds it too (and may outlive the loader): let go with the loader.
            weakref.finalize(self, _drop_cache, cache)
        return self._read_cache

    def _machine_cache_name(self) -> str | None:
        """The name of the cache this machine's ranks share, or None for one per rank.

        The same for every local rank of the job reading the same source: a hash of
        torchrun's job variables and the source's fragments, columns and filter.
        """
        if len(_local_ranks(self.rank, self.world_size)) < 2:
            return None
        root = self._chain.root
        job = [os.environ.get(k, "") for k in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR",
                                               "MASTER_PORT", "GROUP_RANK")]  # fmt: skip
        fragments = [(f.path, f.index) for f in root.fragments]
        what = repr((job, type(root).__name__, fragments, root.columns, str(root.filter)))
        return "machine-" + hashlib.sha256(what.encode()).hexdigest()[:20]

    def _fragment_uses(
        self, order: np.ndarray, plan: EpochPlan, rows: list[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """First and last batch using each fragment, over every rank sharing the cache.

        Batch ``k`` of one rank stands for batch ``k`` of all of them (ranks in step,
        as DDP keeps them): a fragment is freed once every local rank is past it.
        """
        ranks = [self.rank]
        if self._read_cache is not None and self._read_cache.shared:
            ranks = _local_ranks(self.rank, self.world_size)
        uses = [fragment_uses(order, dataclasses.replace(plan, rank=r), rows) for r in ranks]
        first = np.minimum.reduce([u[0] for u in uses])
        last = np.maximum.reduce([u[1] for u in uses])
        return first, last

    def _start_reading(self, plan: EpochPlan) -> None:
        """Read the epoch's fragments ahead of the workers, first batches first.

        Started before the workers are forked, so the first batches' fragments are
        being read while the workers start.
        """
        cache = self._read_cache
        if cache is None or self._chain.root.read_cache is not cache:
            return
        rows = self._chain.fragment_rows()
        order = epoch_order(
            rows, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle, window=self._window()
        )
        first, last = self._fragment_uses(order, plan, rows)
        in_flight = self.num_workers * (self.prefetch_factor or 2)
        source = copy.copy(self._chain.root)  # its own open files, not the workers'
        keep = self._keeps_cache()
        self._reader = ReadAhead(cache, source, first, last, in_flight, free=not keep)
        self._reader.start()

    def _keeps_cache(self) -> bool:
        """Whether the read cache keeps its fragments from one epoch to the next.

        When the whole dataset is one shuffle window, every epoch reads every fragment
        again and the cache holds all of them during an epoch anyway: kept, they are
        read once for all epochs, in the same memory (one window). Not for a cache
        shared by several ranks, whose plans free fragments together.
        """
        cache = self._read_cache
        window = self._window()
        return (
            cache is not None
            and not cache.shared
            and self.shuffle
            and window is not None
            and self.num_samples <= window
        )

    def _stop_reading(self, failed: bool) -> None:
        """Stop the reader and free the cache (remove it after a failure, unless shared)."""
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        cache = self._read_cache
        if cache is None:
            return
        if failed and not self.persistent_workers:
            cache.close()
            self._read_cache = None
        elif not cache.shared and not self._keeps_cache():  # shared: other ranks read on
            cache.clear()

    def _forks(self) -> bool:
        """Whether the workers start with ``fork`` (they inherit the main process's memory)."""
        context = self.multiprocessing_context
        if isinstance(context, str):
            return context == "fork"
        if context is None:
            return multiprocessing.get_start_method() == "fork"
        return context.get_start_method() == "fork"

    def _torch_loader(self, stream: _EpochStream) -> torch.utils.data.DataLoader:
        extra: dict[str, Any] = {}
        if self.num_workers > 0:
            extra = {
                # Workers' torch, random and NumPy seeds then follow from (seed, epoch) too.
                "generator": torch.Generator().manual_seed(derive_seed(self.seed, self.epoch)),
                "prefetch_factor": self.prefetch_factor,
                "persistent_workers": self.persistent_workers,
                "multiprocessing_context": self.multiprocessing_context,
                "worker_init_fn": self.worker_init_fn,
                "timeout": self.timeout,
            }
        return torch.utils.data.DataLoader(
            stream,
            batch_size=None,
            num_workers=self.num_workers,
            pin_memory=self.pin_memory and torch.cuda.is_available(),
            **extra,
        )

    def _epoch_loader(self, plan: EpochPlan) -> torch.utils.data.DataLoader:
        """Torch's loader for this epoch: a new one, or the one whose workers persist."""
        if self._workers is None:
            stream = self._stream(plan)
            if stream.slots is not None:  # new worker processes: only held batches stay lent
                stream.slots.reset(fork=self._forks())
            self._start_reading(plan)
            loader = self._torch_loader(stream)
            if self.persistent_workers:
                stream.epoch_state.share_memory_()
                self._workers = stream, loader
        else:
            stream, loader = self._workers
            self._start_reading(plan)
        stream.start_epoch(self.seed, self.epoch, self.shuffle, plan.start)
        return loader

    def _batches(self, plan: EpochPlan) -> Iterator[Any]:
        pending: dict[int, tuple[int, Any]] = {}
        next_k = 0
        _reap(self._retired, wait=False)
        try:
            workers = iter(self._epoch_loader(plan))
        except BaseException:
            self._stop_reading(failed=True)
            raise
        try:
            for k, report, batch in workers:
                pending[k] = (report, batch)
                while next_k in pending:  # yield in plan order whatever the workers do
                    report, batch = pending.pop(next_k)
                    if isinstance(report, _WorkerError):
                        report.raise_it()
                    next_k += 1
                    if self._reader is not None:
                        self._reader.consumed(next_k)
                    if report is not None:
                        self._report.update(report)
                        self._epoch_report.update(report)
                        self.skipped += report.skipped_samples
                    yield next_k, batch
                if next_k == plan.num_batches and not self.persistent_workers:
                    break  # every batch is out: the workers need not be waited for
        except BaseException:
            if not self.persistent_workers:
                _shut_down(workers)
            self._stop_reading(failed=True)
            raise
        if next_k == plan.num_batches and not self.persistent_workers:
            _reap(self._retired, wait=True)  # the previous epoch's, long gone by now
            retired = _retire(workers)
            if retired is not None:
                self._retired.append(retired)
        self._stop_reading(failed=False)

    def __iter__(self) -> Iterator[Any]:
        plan = self._new_plan()
        self._plan, self._yielded, self._resume = plan, 0, 0
        self._epoch_report = SkipReport()
        batches: Iterator[tuple[int, Any]] = self._batches(plan)
        if self.device is not None:
            batches = iter(CUDAPrefetcher(batches, self.device))
        for done, batch in batches:
            self._yielded = done  # counted before the caller sees it: it is consumed
            if batch is not None:
                yield batch[0] if self.batch_size is None else batch
        self._end_epoch()

    def _end_epoch(self) -> None:
        report = self._epoch_report
        names, count = list(report.skipped), report.skipped_samples
        own = getattr(self._chain.root, "skip_report", None)
        if isinstance(own, SkipReport):  # a dataset's own skips, found in any worker
            found = [name for name in own.skipped if name not in self._announced]
            self._announced.update(found)
            names, count = names + found, count + len(found)
        if count:
            warnings.warn(
                f"epoch {self.epoch}: {count} samples skipped "
                f"(on_error='skip'): {name_some(names, len(names))}; "
                "loader.skip_report lists them all",
                SkippedSamplesWarning,
                stacklevel=3,
            )
        self._yielded = self._plan.num_batches if self._plan else 0

    @property
    def skip_report(self) -> SkipReport:
        """The files skipped and recovered so far, in every worker and epoch.

        What ``on_error="skip"`` dropped (the loader's, a ``map``'s or a
        ``map_batches``'s, or a dataset's own such as ``ImageFolder(on_error="skip")``)
        and the files whose decoders issued a ``DecodeWarning`` while being loaded,
        each named once: its file, and the row of an Arrow file.

        Example:
            >>> loader = DataLoader(list(range(4)), batch_size=2)
            >>> _ = list(loader)
            >>> loader.skip_report.summary()
            'no file skipped or recovered'
        """
        report = SkipReport()
        report.update(self._report)
        own = getattr(self._chain.root, "skip_report", None)
        if isinstance(own, SkipReport):
            report.update(own)
        return report

    def _consumed(self) -> int:
        plan = self._plan
        if plan is None:
            return self._resume
        if self._yielded >= plan.num_batches:
            return self.num_samples
        return plan.consumed_after(self._yielded)

    def state_dict(self) -> dict[str, Any]:
        """Where the epoch stands: seed, epoch and positions consumed by all ranks together.

        Example:
            >>> DataLoader([1, 2, 3], batch_size=2).state_dict()["samples_consumed"]
            0
        """
        return {
            "version": _STATE_VERSION,
            "seed": self.seed,
            "epoch": self.epoch,
            "shuffle": self.shuffle,
            "num_samples": self.num_samples,
            "samples_consumed": self._consumed(),
            "skipped": self.skipped,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state``: the next iteration reads exactly the unseen samples.

        Example:
            >>> loader = DataLoader([1, 2, 3], batch_size=1)
            >>> loader.load_state_dict({**loader.state_dict(), "samples_consumed": 2})
            >>> [b.tolist() for b in loader]
            [[3]]
        """
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unknown DataLoader state version {state.get('version')!r}")
        if state["num_samples"] != self.num_samples:
            raise ValueError(
                f"the state is of a dataset of {state['num_samples']} samples, "
                f"this one has {self.num_samples}"
            )
        consumed = int(state["samples_consumed"])
        if not 0 <= consumed <= self.num_samples:
            raise ValueError(f"samples_consumed out of range: {consumed}")
        self.seed, self.epoch, self.shuffle = state["seed"], state["epoch"], state["shuffle"]
        self.skipped = state.get("skipped", 0)
        self._plan, self._yielded, self._resume = None, 0, consumed
